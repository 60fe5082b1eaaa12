/*
 * grow.h - the analyzer's growing arrays: an array, its count in use and
 * its capacity, doubled when full.  One function, so that every such
 * array grows the same way and leaves itself whole when memory runs out.
 */
#ifndef SP_GROW_H
#define SP_GROW_H

#include <stdlib.h>

/* V (room for *CAP elements of ELT bytes, N of them in use) with room for
 * one more: V itself, or V moved to twice its capacity (FIRST elements the
 * first time).  NULL when that fails, V and *CAP as they were. */
static inline void *sp_grow(void *v, size_t n, size_t *cap, size_t elt, size_t first)
{
    if (n < *cap)
        return v;
    size_t c = *cap ? 2 * *cap : first;
    void *p = realloc(v, c * elt);
    if (p)
        *cap = c;
    return p;
}

#endif
