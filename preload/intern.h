/*
 * intern.h - strings interned once per trace file, for the interposers
 * that name things on a hot path: kernels and copies (cupti.c), NVTX
 * markers (nvtx.c), collectives timed by CUDA events (nccl.c), call sites
 * of syncs (cuda.c).
 *
 * sp_intern (core.c) appends a string to the trace's arena and returns
 * its id; called for every kernel record or marker it would store the
 * same name again and again.  The caches here remember, per content,
 * the id it got in the current trace file, without a lock.
 */
#ifndef SP_INTERN_H
#define SP_INTERN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* The library's own (preload.h). */
#pragma GCC visibility push(hidden)

/* Intern a name (kernel, marker) once per trace file: a lock-free cache
 * keyed by the text's hash, so the string arena holds each name once
 * (intern.c). */
uint32_t sp_intern_name(const char *s);

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
