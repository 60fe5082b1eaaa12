/*
 * compress_lazy.c - compress.h for the preload: libzstd is loaded with
 * dlopen on first use, never linked.  See compress.h.
 *
 * The writer calls sp_zc_load() under its compression lock, from the
 * thread that writes frames, only once a chunk is worth compressing; a
 * process that never fills a chunk never maps the library.  When it cannot
 * be loaded, chunks are stored in raw frames (one line in the trace's log
 * would be noise: the trace is only larger).  A library older than
 * zstd 1.4 (no ZSTD_compress2, no parameters set on a context) compresses
 * with ZSTD_compressCCtx at the level, zstd's own parameters.
 */
#include <dlfcn.h>
#include <stddef.h>
#include <zstd.h> /* the parameters' numbers only: the library is loaded */

#include "compress.h"

typedef void *(*create_fn)(void);
typedef size_t (*free_fn)(void *);
typedef size_t (*compress_fn)(void *, void *, size_t, const void *, size_t, int);
typedef unsigned (*is_error_fn)(size_t);
typedef size_t (*set_parameter_fn)(void *, ZSTD_cParameter, int);
typedef size_t (*compress2_fn)(void *, void *, size_t, const void *, size_t);

static struct {
    int tried, ok;
    create_fn create;
    free_fn free;
    compress_fn compress;
    is_error_fn is_error;
    set_parameter_fn set_parameter; /* both, or neither: zstd 1.4 and later */
    compress2_fn compress2;
} zl;

static void *sym(void *h, const char *name)
{
    return dlsym(h, name);
}

int (*sp_zc_load_refused)(void);

int sp_zc_load(void)
{
    if (zl.tried)
        return zl.ok;
    if (sp_zc_load_refused && sp_zc_load_refused())
        return 0; /* asked again at the next chunk: the limit may be lifted */
    zl.tried = 1;
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return 0;
    zl.create = (create_fn)sym(h, "ZSTD_createCCtx");
    zl.free = (free_fn)sym(h, "ZSTD_freeCCtx");
    zl.compress = (compress_fn)sym(h, "ZSTD_compressCCtx");
    zl.is_error = (is_error_fn)sym(h, "ZSTD_isError");
    zl.set_parameter = (set_parameter_fn)sym(h, "ZSTD_CCtx_setParameter");
    zl.compress2 = (compress2_fn)sym(h, "ZSTD_compress2");
    if (!zl.set_parameter || !zl.compress2) {
        zl.set_parameter = NULL;
        zl.compress2 = NULL;
    }
    zl.ok = zl.create && zl.free && zl.compress && zl.is_error;
    __atomic_store_n(&zl.ok, zl.ok, __ATOMIC_RELEASE);
    return zl.ok;
}

int sp_zc_loaded(void)
{
    return __atomic_load_n(&zl.ok, __ATOMIC_ACQUIRE);
}

struct sp_zc *sp_zc_create(int level)
{
    void *z = sp_zc_loaded() ? zl.create() : NULL;
    if (z && zl.set_parameter &&
        (zl.is_error(zl.set_parameter(z, ZSTD_c_compressionLevel, level)) ||
         (level == SP_ZC_TUNED_LEVEL && zl.is_error(zl.set_parameter(z, ZSTD_c_minMatch, SP_ZC_MIN_MATCH))))) {
        zl.free(z);
        return NULL;
    }
    return (struct sp_zc *)z;
}

void sp_zc_free(struct sp_zc *z)
{
    if (z && sp_zc_loaded())
        zl.free(z);
}

size_t sp_zc_compress(struct sp_zc *z, void *dst, size_t cap, const void *src, size_t n, int level)
{
    if (!z || !sp_zc_loaded())
        return 0;
    size_t r = zl.compress2 ? zl.compress2(z, dst, cap, src, n) : zl.compress(z, dst, cap, src, n, level);
    return zl.is_error(r) ? 0 : r;
}
