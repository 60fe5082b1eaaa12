/* io.c: being written */
#include "preload.h"
