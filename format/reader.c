/* reader.c: being written */
#include "sprof.h"
