/* nccl.c: being written */
#include "preload.h"
