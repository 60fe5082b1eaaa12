/*
 * compress.h - the writer's compressor, behind a seam.
 *
 * The tools (scaleprof import, the tests) link libzstd: compress_zstd.c
 * calls it directly.  The preload must not: every traced process would map
 * libzstd (and pay for its relocation) at start, most of them short lives
 * that never fill a chunk.  compress_lazy.c loads it with dlopen the first
 * time a chunk is worth compressing, from the thread that writes frames
 * (the recorder's service thread, whose descriptor table is its own, so
 * the loader's open of the library never takes a number of the job's).
 *
 * A chunk written before the compressor is loaded, or when it cannot be,
 * is stored in a zstd frame of raw blocks (RFC 8878, section 3.1.1.2):
 * any zstd decoder reads it, so readers see no difference.
 */
#ifndef SP_COMPRESS_H
#define SP_COMPRESS_H

#include <stddef.h>

struct sp_zc; /* a compression context */

/* 1 when compression is possible, loading the library on the first call
 * (compress_lazy.c) or always (compress_zstd.c).  Not thread-safe against
 * itself: the writer calls it under its compression lock. */
int sp_zc_load(void);
/* compress_lazy.c: when set and it returns 1, sp_zc_load loads nothing
 * (chunks stay in raw frames): the preload's "address space is short"
 * (the loader mallocs on the loading thread, and a thread's first malloc
 * makes it a malloc arena of 64 MiB of address space). */
extern int (*sp_zc_load_refused)(void);
/* 1 when the library is in memory already (sp_zc_load succeeded). */
int sp_zc_loaded(void);
/* A context for zstd `level`, its parameters set once (a frame then
 * only resets its tables).  At the writer's default level, 1, the
 * shortest match zstd looks for is SP_ZC_MIN_MATCH bytes instead of the
 * 6 it picks for a 128 KiB chunk: the column layout's noisy columns (a
 * read's time delta and duration, two bytes each) hold many 6-byte
 * repeats that are not worth a sequence, and the match finder, the
 * sequences and their coding are most of what zstd spends on them
 * (bench/RESULTS.md, "zstd's parameters").  Other levels keep zstd's own
 * parameters. */
#define SP_ZC_TUNED_LEVEL 1
#define SP_ZC_MIN_MATCH 7
struct sp_zc *sp_zc_create(int level);
void sp_zc_free(struct sp_zc *z);
/* Compresses n bytes of src into dst (cap bytes) at the level z was made
 * for: the frame's size, or 0 on error. */
size_t sp_zc_compress(struct sp_zc *z, void *dst, size_t cap, const void *src, size_t n, int level);

/* A zstd frame of raw blocks holding src: its size, or 0 when cap is too
 * small (sp_zc_raw_bound(n) is always enough, and never more than
 * ZSTD_COMPRESSBOUND(n)). */
size_t sp_zc_raw_frame(void *dst, size_t cap, const void *src, size_t n);
size_t sp_zc_raw_bound(size_t n);

#endif
