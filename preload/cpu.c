/* cpu.c: being written */
#include "preload.h"
