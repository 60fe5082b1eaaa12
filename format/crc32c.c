/*
 * crc32c.c - CRC-32C (Castagnoli), the checksum of frame headers and
 * frame payloads.
 *
 * Two implementations with identical results: the SSE4.2 crc32 instruction
 * when the CPU has it (checked once at run time, so one binary serves every
 * x86-64 machine), and a portable slicing-by-8 table walk otherwise.  The
 * tables are built on first use; building them twice from two threads
 * writes the same values, so no lock is needed.
 *
 * sp_crc32c(crc, buf, len) continues a running CRC: pass 0 to start, and
 * the previous result to extend it over more bytes.
 */
#include <stdint.h>
#include <string.h>

#include "sprof.h"

#define CRC32C_POLY_REFLECTED 0x82f63b78u
#define SLICES 8

static uint32_t table[SLICES][256];
static volatile int table_ready;

static void build_table(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ CRC32C_POLY_REFLECTED : c >> 1;
        table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int s = 1; s < SLICES; s++)
            table[s][i] = (table[s - 1][i] >> 8) ^ table[0][table[s - 1][i] & 0xff];
    __atomic_store_n(&table_ready, 1, __ATOMIC_RELEASE);
}

static uint32_t crc_soft(uint32_t crc, const uint8_t *p, size_t len)
{
    if (!__atomic_load_n(&table_ready, __ATOMIC_ACQUIRE))
        build_table();
    while (len >= SLICES) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        w ^= crc;
        crc = table[7][w & 0xff] ^ table[6][(w >> 8) & 0xff] ^ table[5][(w >> 16) & 0xff] ^
              table[4][(w >> 24) & 0xff] ^ table[3][(w >> 32) & 0xff] ^
              table[2][(w >> 40) & 0xff] ^ table[1][(w >> 48) & 0xff] ^ table[0][w >> 56];
        p += SLICES;
        len -= SLICES;
    }
    while (len--)
        crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
    return crc;
}

#if defined(__x86_64__)
#include <cpuid.h>
#include <nmmintrin.h>

__attribute__((target("sse4.2"))) static uint32_t crc_sse42(uint32_t crc, const uint8_t *p,
                                                            size_t len)
{
    uint64_t c = crc;
    while (len >= sizeof(uint64_t)) {
        uint64_t w;
        memcpy(&w, p, sizeof w);
        c = _mm_crc32_u64(c, w);
        p += sizeof w;
        len -= sizeof w;
    }
    uint32_t c32 = (uint32_t)c;
    while (len--)
        c32 = _mm_crc32_u8(c32, *p++);
    return c32;
}

static int have_sse42(void)
{
    static int cached = -1;
    int v = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (v < 0) {
        /* CPUID leaf 1, ECX bit 20, asked here when first needed:
         * __builtin_cpu_supports would link libgcc's CPU probe, a
         * constructor that runs dozens of CPUID instructions (each a trap
         * to the hypervisor in a VM) in every process the preload is in. */
        unsigned a, b, c, d;
        v = __get_cpuid(1, &a, &b, &c, &d) && ((c >> 20) & 1);
        __atomic_store_n(&cached, v, __ATOMIC_RELAXED);
    }
    return v;
}
#endif

uint32_t sp_crc32c(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    crc = ~crc;
#if defined(__x86_64__)
    if (have_sse42())
        return ~crc_sse42(crc, p, len);
#endif
    return ~crc_soft(crc, p, len);
}

/* For tests: the portable path, whatever the CPU. */
uint32_t sp_crc32c_portable(uint32_t crc, const void *buf, size_t len);
uint32_t sp_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
    return ~crc_soft(~crc, buf, len);
}
