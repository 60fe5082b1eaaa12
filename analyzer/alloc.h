/*
 * alloc.h - whether an allocation of the analyzer's failed (alloc.c: the
 * executable's malloc, calloc, realloc, strdup, asprintf and vasprintf
 * calls all pass through it).
 */
#ifndef SP_ALLOC_H
#define SP_ALLOC_H

/* The exit status of a verb that lost an allocation: whatever it printed
 * may be incomplete. */
#define SP_EXIT_NOMEM 3

/* At start, once: large blocks are kept in the heap when freed, to be
 * reused, not unmapped (alloc.c). */
void sp_alloc_tune(void);

/* 1 once an allocation asked for memory and got none. */
int sp_alloc_failed(void);
/* For a call that allocates where alloc.c cannot see it (inside libc or a
 * library: opendir, regexec, the reader's decompression context) and
 * failed for want of memory: counts as a failed allocation. */
void sp_alloc_lost(void);

#endif
