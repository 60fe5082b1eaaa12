/*
 * sp_gpu.h - what the GPU-side interposers of libscaleprof.so tell each
 * other: nccl.c (collectives), cuda.c (runtime calls), nvtx.c (markers) and
 * cupti.c (GPU activity).
 *
 * The split of duties: CUPTI, when this process can own it, is the single
 * source of GPU execution times (kernels, copies).  When it cannot (no
 * libcupti, or another tool subscribed first), cupti.c says so once and
 * switches nccl.c to timing each collective with a pair of CUDA events, so
 * the analyzer still sees how long communication ran on the GPU.
 *
 * Nothing here is called on a hot path except sp_gpu_current_device(),
 * which is one thread-local load once the thread's device is known.
 */
#ifndef SP_GPU_H
#define SP_GPU_H

#include <stdint.h>

/* CUDA device ordinal the calling thread works on (cudaSetDevice, else
 * asked once from the runtime); -1 when no CUDA runtime is loaded. */
int sp_gpu_current_device(void);

/* Attach CUPTI once per process, at the first CUDA or NCCL call seen (or
 * when the driver calls InitializeInjection).  Cheap after the first call. */
void sp_cupti_ensure(void);

/* Non-zero when CUPTI activity recording is running in this process. */
int sp_cupti_active(void);

/* nccl.c: time collectives with CUDA events from now on (CUPTI is absent
 * or taken).  Idempotent. */
void sp_nccl_use_event_timing(void);

/* nccl.c: emit GPU events for collectives whose CUDA events completed.
 * `final`: the process is closing its trace; wait briefly for the last. */
void sp_nccl_drain_event_timing(int final);

/* Intern a name (kernel, marker) once per trace file: a lock-free cache
 * keyed by the text's hash, so the string arena holds each name once. */
uint32_t sp_gpu_intern(const char *s);

/* Correlation ids scaleprof generates itself (event timing) carry this bit,
 * so they can never collide with CUPTI's (which count up from 1). */
#define SP_OWN_CORRELATION_BIT (1ull << 62)

#endif
