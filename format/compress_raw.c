/*
 * compress_raw.c - a zstd frame of raw (stored) blocks, RFC 8878 3.1.1:
 * the magic number, a frame header with the single-segment flag and a
 * 4-byte content size (so no window descriptor), then blocks of at most
 * 128 KiB, each a 3-byte header (last-block bit, type 0 = raw, size) and
 * the bytes as they are.  No checksum: the trace's frame header carries a
 * CRC-32C of the payload.  See compress.h.
 */
#include <stdint.h>
#include <string.h>

#include "compress.h"

#define RAW_MAGIC 0xFD2FB528u
#define RAW_FHD 0xA0u /* FCS flag 2 (4 bytes), single segment */
#define RAW_BLOCK_MAX (128u * 1024u)
#define RAW_FRAME_HEAD 9u /* magic 4, descriptor 1, content size 4 */
#define RAW_BLOCK_HEAD 3u

size_t sp_zc_raw_bound(size_t n)
{
    size_t blocks = n ? (n + RAW_BLOCK_MAX - 1) / RAW_BLOCK_MAX : 1;
    return RAW_FRAME_HEAD + blocks * RAW_BLOCK_HEAD + n;
}

static void put_le(uint8_t *p, uint32_t v, int bytes)
{
    for (int i = 0; i < bytes; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

size_t sp_zc_raw_frame(void *dst, size_t cap, const void *src, size_t n)
{
    if (n > UINT32_MAX || cap < sp_zc_raw_bound(n))
        return 0;
    uint8_t *out = dst;
    const uint8_t *in = src;
    put_le(out, RAW_MAGIC, 4);
    out[4] = RAW_FHD;
    put_le(out + 5, (uint32_t)n, 4);
    uint8_t *p = out + RAW_FRAME_HEAD;
    size_t left = n;
    do {
        uint32_t len = left > RAW_BLOCK_MAX ? RAW_BLOCK_MAX : (uint32_t)left;
        left -= len;
        put_le(p, (left == 0 ? 1u : 0u) | (len << 3), RAW_BLOCK_HEAD);
        if (len)
            memcpy(p + RAW_BLOCK_HEAD, in, len);
        p += RAW_BLOCK_HEAD + len;
        in += len;
    } while (left);
    return (size_t)(p - out);
}
