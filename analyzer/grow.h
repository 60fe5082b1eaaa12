/*
 * grow.h - the analyzer's growing arrays: an array, its count in use and
 * its capacity, doubled when full.  One function, so that every such
 * array grows the same way and leaves itself whole when memory runs out.
 */
#ifndef SP_GROW_H
#define SP_GROW_H

#include <stdlib.h>

/* V (room for *CAP elements of ELT bytes) with room for NEED of them: V
 * itself, or V moved to its capacity doubled (FIRST elements the first
 * time) as often as it takes.  NULL when that fails, V and *CAP as they
 * were. */
static inline void *sp_grow_to(void *v, size_t need, size_t *cap, size_t elt, size_t first)
{
    if (need <= *cap)
        return v;
    size_t c = *cap ? 2 * *cap : first ? first
                                       : 1;
    while (c < need)
        c *= 2;
    void *p = realloc(v, c * elt);
    if (p)
        *cap = c;
    return p;
}

/* V (room for *CAP elements of ELT bytes, N of them in use) with room for
 * one more (sp_grow_to). */
static inline void *sp_grow(void *v, size_t n, size_t *cap, size_t elt, size_t first)
{
    return sp_grow_to(v, n + 1, cap, elt, first);
}

#endif
