/*
 * intern.c - the name cache the GPU-side interposers share (intern.h):
 * kernel and copy names from CUPTI, NVTX markers, "nccl:<op>" for the
 * collectives timed by CUDA events.
 *
 * A name is keyed by a 64-bit FNV-1a hash of its text; the table holds
 * NAME_CACHE_SIZE distinct names, and a name that finds it full is
 * interned every time (correct, at the cost of arena space).
 */
#include <stdint.h>

#include "intern.h"
#include "preload.h"

#define NAME_CACHE_SIZE 8192 /* distinct kernel / marker names, power of two */
#define NAME_HASH_SHIFT 17   /* hash bits that pick the first probe */
#define HASH_SEED 0xcbf29ce484222325ull
#define HASH_PRIME 0x100000001b3ull

/* The content hash stands for the text (64 bits: collisions are not a
 * practical concern); the slots are intern.h's per-file id cache. */
static struct sp_id_slot names[NAME_CACHE_SIZE];

uint32_t sp_intern_name(const char *s)
{
    if (!s || !*s)
        return 0;
    uint64_t h = HASH_SEED;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        h ^= *p;
        h *= HASH_PRIME;
    }
    h |= 1; /* 0 marks a free entry */
    struct sp_id_slot *slot = sp_id_slot_find(names, NAME_CACHE_SIZE, h, NAME_HASH_SHIFT);
    if (!slot)
        return sp_intern(s); /* cache full: still correct, costs arena space */
    uint32_t id = sp_id_slot_get(slot, sp_generation);
    if (id)
        return id;
    id = sp_intern(s);
    sp_id_slot_set(slot, sp_generation, id);
    return id;
}
