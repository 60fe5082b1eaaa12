/* schema.c: being written */
#include "sprof.h"
