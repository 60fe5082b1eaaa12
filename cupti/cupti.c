/* cupti.c: being written */
#include "preload.h"
