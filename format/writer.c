/* writer.c: being written */
#include "sprof.h"
