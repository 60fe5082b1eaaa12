/*
 * compress_zstd.c - compress.h for programs linked with libzstd (the
 * scaleprof command and the tests).  See compress.h.
 */
#include <zstd.h>

#include "compress.h"

int (*sp_zc_load_refused)(void); /* the preload's; never set here */

int sp_zc_load(void)
{
    return 1;
}

int sp_zc_loaded(void)
{
    return 1;
}

struct sp_zc *sp_zc_create(int level)
{
    ZSTD_CCtx *z = ZSTD_createCCtx();
    if (z && (ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, level)) ||
              (level == SP_ZC_TUNED_LEVEL &&
               ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_minMatch, SP_ZC_MIN_MATCH))))) {
        ZSTD_freeCCtx(z);
        return NULL;
    }
    return (struct sp_zc *)z;
}

void sp_zc_free(struct sp_zc *z)
{
    ZSTD_freeCCtx((ZSTD_CCtx *)z);
}

size_t sp_zc_compress(struct sp_zc *z, void *dst, size_t cap, const void *src, size_t n, int level)
{
    (void)level; /* set in the context */
    size_t r = ZSTD_compress2((ZSTD_CCtx *)z, dst, cap, src, n);
    return ZSTD_isError(r) ? 0 : r;
}
