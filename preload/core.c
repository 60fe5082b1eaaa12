/* core.c: being written */
#include "preload.h"
__thread int sp_guard_depth __attribute__((tls_model("initial-exec")));
volatile int sp_recording;
