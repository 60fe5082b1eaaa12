/* proc.c: being written */
#include "preload.h"
