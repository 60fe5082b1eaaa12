/*
 * sp_gpu.h - what the GPU-side interposers of libscaleprof.so tell each
 * other: nccl.c (collectives), cuda.c (runtime calls), nvtx.c (markers) and
 * cupti.c (GPU activity).
 *
 * The split of duties: CUPTI, when this process can own it, is the single
 * source of GPU execution times (kernels, copies).  When it cannot (no
 * libcupti, or another tool subscribed first), cupti.c says so once and
 * raises sp_cupti_fallback, on which nccl.c times each collective with a
 * pair of CUDA events, so the analyzer still sees how long communication
 * ran on the GPU.  The calls go one way: nccl.c, cuda.c and nvtx.c call
 * cupti.c (to attach it), and cupti.c calls none of them; what it needs
 * of nccl.c at a flush is a hook nccl.c sets.  The names all of them
 * intern are preload/intern.h's.
 *
 * Nothing here is called on a hot path except sp_gpu_current_device(),
 * which is one thread-local load once the thread's device is known.
 */
#ifndef SP_GPU_H
#define SP_GPU_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The library's own (preload.h). */
#pragma GCC visibility push(hidden)

/* CUDA device ordinal the calling thread works on (cudaSetDevice, else
 * asked once from the runtime); -1 when no CUDA runtime is loaded.  One
 * thread-local load once known; the asking is out of line (cuda.c). */
extern __thread int sp_gpu_tls_device __attribute__((tls_model("initial-exec")));
int sp_gpu_ask_device(void);
static inline int sp_gpu_current_device(void)
{
    int d = sp_gpu_tls_device;
    return __builtin_expect(d >= 0, 1) ? d : sp_gpu_ask_device();
}

/* Attach CUPTI once per process, at the first CUDA or NCCL call seen (or
 * when the driver calls InitializeInjection).  One load after the first
 * call: the attaching is out of line (cupti.c). */
extern atomic_int sp_cupti_attach_state; /* 0 until an attach has begun */
void sp_cupti_attach_now(void);
static inline void sp_cupti_ensure(void)
{
    if (__builtin_expect(atomic_load_explicit(&sp_cupti_attach_state, memory_order_acquire) == 0, 0))
        sp_cupti_attach_now();
}

/* Non-zero when CUPTI activity recording is running in this process. */
int sp_cupti_active(void);

/* Set by cupti.c when CUPTI is absent or taken: from then on nccl.c times
 * collectives with CUDA events.  Read with one relaxed load per
 * collective. */
extern atomic_int sp_cupti_fallback;

/* Set by nccl.c once it has CUDA events in flight, called by cupti.c's
 * flush (sp_core_flush_hook): emit GPU events for the collectives whose
 * events completed.  `final`: the process is closing its trace; wait
 * briefly for the last.  A hook rather than a call, so that cupti.c, which
 * nccl.c calls, does not call nccl.c back. */
extern void (*_Atomic sp_cupti_drain_hook)(int final);

/* Correlation ids scaleprof generates itself (event timing) carry this bit,
 * so they can never collide with CUPTI's (which count up from 1). */
#define SP_OWN_CORRELATION_BIT (1ull << 62)

#pragma GCC visibility pop

#endif
