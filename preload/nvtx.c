/* nvtx.c: being written */
#include "preload.h"
