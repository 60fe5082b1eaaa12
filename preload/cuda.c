/* cuda.c: being written */
#include "preload.h"
