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

/* A lock-free cache from a content hash (never 0) to the string id interned
 * for that content in the current trace file: cuda.c keys call sites by
 * their stack, cupti.c names by their text.  An id is only valid in the file
 * it was interned into, so it is stored with that file's generation, packed
 * in one word so readers see both or neither.  Inline, so that each caller
 * compiles to the loop it had before sharing it. */
struct sp_id_slot {
    atomic_uint_fast64_t hash;   /* 0 free */
    atomic_uint_fast64_t gen_id; /* generation << 32 | string id; 0 unset */
};

/* The slot of `table` (`size` a power of two) holding hash `h`, claimed when
 * new; NULL when the table is full.  `shift` picks the hash bits for the
 * first probe. */
static inline struct sp_id_slot *sp_id_slot_find(struct sp_id_slot *table, size_t size,
                                                 uint64_t h, unsigned shift)
{
    size_t i = (size_t)(h >> shift) & (size - 1);
    for (size_t probe = 0; probe < size; probe++, i = (i + 1) & (size - 1)) {
        uint_fast64_t cur = atomic_load_explicit(&table[i].hash, memory_order_acquire);
        if (cur == 0) {
            uint_fast64_t expect = 0;
            if (!atomic_compare_exchange_strong(&table[i].hash, &expect, h) && expect != h)
                continue; /* another key took this entry: probe on */
            cur = h;
        }
        if (cur == h)
            return &table[i];
    }
    return NULL;
}

/* The id the slot holds for trace file `generation`; 0 when none yet. */
static inline uint32_t sp_id_slot_get(struct sp_id_slot *s, uint32_t generation)
{
    uint64_t gid = atomic_load_explicit(&s->gen_id, memory_order_acquire);
    return (uint32_t)gid && gid >> 32 == generation ? (uint32_t)gid : 0;
}

/* Two threads may both intern the same key first: harmless, last one wins. */
static inline void sp_id_slot_set(struct sp_id_slot *s, uint32_t generation, uint32_t id)
{
    atomic_store_explicit(&s->gen_id, (uint64_t)generation << 32 | id, memory_order_release);
}

#pragma GCC visibility pop

#endif
