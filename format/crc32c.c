/* crc32c.c: being written */
#include "sprof.h"
