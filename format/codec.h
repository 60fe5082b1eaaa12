/*
 * codec.h - the event encoder and decoder as inline functions, private to
 * format/.
 *
 * schema.c exports them as sp_encode_event() and sp_decode_event();
 * writer.c inlines the encoder into the append hot path and reader.c the
 * decoder into its event loop, where a call, a generic type switch and a
 * walk over a field table were most of the cost.  One definition each, so
 * the exported and the inlined codec cannot differ.
 *
 * Both are generated per event type from the SP_EVENTS table: a type's
 * encoder is a straight line of varint stores, one per field, with no loop
 * and no table; its decoder is the same straight line of loads.  The
 * per-chunk memory (struct sp_codec_state) is indexed by type at compile
 * time inside each generated function.
 *
 * Encoding of one event (docs/format.md, "Events"):
 *
 *   type      1 byte, never 0 (0 is padding: the end of a chunk)
 *   length    unsigned varint: bytes that follow it, up to the next event
 *   delta     zigzag varint: t minus end[type], where the previous event of
 *             the same type in the chunk ended (its t + dur; 0 at chunk start)
 *   fields    one varint each, in schema order: U, D, DUR and STR plain,
 *             S zigzag, DS zigzag of (value - the previous event's value)
 *
 * Invariants the decoder keeps in step with the encoder:
 *   - end[type] becomes t + dur (t for types without a DUR field) after
 *     each event of the type, with dur read as 0 when it is missing;
 *   - a DS field present in the bytes updates the remembered value; a
 *     missing one (an older writer) reads 0 and leaves it alone, as the
 *     older writer, which did not know the field, did;
 *   - an unknown type (a newer writer) touches no state, so skipping it
 *     cannot shift the times or ids of the types that are known.
 *
 * The decoder is defensive: every varint is bounded by the event's length,
 * which is bounded by the buffer.  Its one-byte varint case is inline; the
 * rest is out of line in schema.c.
 */
#ifndef SP_CODEC_H
#define SP_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "sprof.h"

/* A varint carries 7 bits per byte; 64 bits need at most this many. */
#define SP_VARINT_MAX 10
/* Lengths below this fit one varint byte. */
#define SP_ONE_BYTE_LIMIT 128u

/* ---- varints -------------------------------------------------------------- */

/* The high bit of each byte of a little-endian word: a varint ends at the
 * first byte where it is clear. */
#define SP_CONT_BITS 0x8080808080808080ull
#define SP_WORD 8


/* The low 56 bits of v as eight 7-bit groups, one per byte of the word
 * (little endian, continuation bits clear), in three steps. */
static inline __attribute__((always_inline)) uint64_t sp_varint_spread(uint64_t v)
{
    uint64_t x = (v & 0x000000000fffffffull) | ((v & 0x00fffffff0000000ull) << 4);
    x = (x & 0x00003fff00003fffull) | ((x & 0x0fffc0000fffc000ull) << 2);
    return (x & 0x007f007f007f007full) | ((x & 0x3f803f803f803f80ull) << 1);
}

/* For the word path (v >= 2^21, so clz(v) <= 42): the varint's bytes, and
 * how far SP_CONT_BITS shifts right to leave the continuation bits of all
 * but its last byte, by clz(v). */
static const uint8_t sp_varint_len_by_clz[64] = {
    10, 9, 9, 9, 9, 9, 9, 9, 8, 8, 8, 8, 8, 8, 8, 7, 7, 7, 7, 7, 7, 7,
    6, 6, 6, 6, 6, 6, 6, 5, 5, 5, 5, 5, 5, 5, 4, 4, 4, 4, 4, 4, 4, 3,
    3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 1, 1, 1, 1, 1, 1, 1};
static const uint8_t sp_varint_cont_shift_by_clz[64] = {
    0, 0, 0, 0, 0, 0, 0, 0, 8, 8, 8, 8, 8, 8, 8, 16, 16, 16, 16, 16, 16, 16,
    24, 24, 24, 24, 24, 24, 24, 32, 32, 32, 32, 32, 32, 32, 40, 40, 40, 40, 40, 40, 40, 48,
    48, 48, 48, 48, 48, 48, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};

/* The varint of v (128 <= v < 2^14: two bytes) at p; returns its end. */
static inline __attribute__((always_inline)) uint8_t *sp_put_two(uint8_t *p, uint64_t v)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* both bytes in one store: v plus its high group moves that group up
     * one bit (to byte 1), and 0x80 is byte 0's continuation */
    uint16_t w = (uint16_t)(v + (v & 0x3f80) + 0x80);
    memcpy(p, &w, sizeof w);
#else
    p[0] = (uint8_t)(v | 0x80);
    p[1] = (uint8_t)(v >> 7);
#endif
    return p + 2;
}

/* Writes v as a varint at p and returns its end.  May store up to
 * SP_WORD - 1 bytes past that end (callers leave room: see
 * SP_EVENT_MAX_BYTES).  One byte is the common case (kinds, streams,
 * devices, +1 steps of ids); up to 8 bytes (56 bits: durations, gaps,
 * sizes, string ids) the 7-bit groups are spread over a word in three
 * steps, the continuation bits set on all bytes but the last, and the
 * word stored whole, with no branch on the length; a wider value (a
 * 64-bit hash) is that word and one or two bytes more, with no loop. */
static inline __attribute__((always_inline)) uint8_t *sp_put_uvarint(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v < (1u << 7), 1)) {
        p[0] = (uint8_t)v;
        return p + 1;
    }
    if (v < (1u << 14)) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)(v >> 7);
        return p + 2;
    }
    if (v < (1u << 21)) {
        p[0] = (uint8_t)(v | 0x80);
        p[1] = (uint8_t)((v >> 7) | 0x80);
        p[2] = (uint8_t)(v >> 14);
        return p + 3;
    }
    if (__builtin_expect(v < (1ull << 56), 1)) {
        unsigned clz = (unsigned)__builtin_clzll(v);
        uint64_t x = sp_varint_spread(v) | SP_CONT_BITS >> sp_varint_cont_shift_by_clz[clz];
        memcpy(p, &x, sizeof x);
        return p + sp_varint_len_by_clz[clz];
    }
    /* 57 to 64 bits (hashes: communicator ids): the low 56 in eight
     * bytes, all continued, then the top 8 bits in one or two. */
    uint64_t x = sp_varint_spread(v & ((1ull << 56) - 1)) | SP_CONT_BITS;
    memcpy(p, &x, sizeof x);
    uint64_t top = v >> 56;
    if (top < 0x80) {
        p[8] = (uint8_t)top;
        return p + 9;
    }
    p[8] = (uint8_t)(top | 0x80);
    p[9] = 1;
    return p + 10;
}

/* sp_put_uvarint for a value of two bytes most often (an I/O call's
 * duration: a system call alone is over 100 ns, and a page-cache read
 * of a few KiB takes 0.3-16 us): that case first, on the straight path;
 * the same bytes. */
static inline __attribute__((always_inline)) uint8_t *sp_put_uvarint_2(uint8_t *p, uint64_t v)
{
    if (__builtin_expect(v - (1u << 7) < (1u << 14) - (1u << 7), 1))
        return sp_put_two(p, v);
    return sp_put_uvarint(p, v);
}

static inline uint64_t sp_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t sp_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* Out of line (schema.c): a varint of two bytes or more, or a malformed
 * one.  0 on success, SP_E_CORRUPT when it runs past `end` or 64 bits. */
int sp_get_uvarint_long(const uint8_t **pp, const uint8_t *end, uint64_t *out);

/* A varint of up to SP_WORD bytes from the word x that starts with it:
 * its value, and in *len its bytes (0 when it is longer).  No branch on
 * the length: the bytes past the varint are masked off, then the 7-bit
 * groups are moved together in three steps (pairs of bytes into 14 bits,
 * pairs of those into 28, then the two halves). */
static inline __attribute__((always_inline)) uint64_t sp_varint_from_word(uint64_t x, unsigned *len)
{
    uint64_t stops = ~x & SP_CONT_BITS;
    if (__builtin_expect(stops == 0, 0)) {
        *len = 0;
        return 0;
    }
    *len = (unsigned)__builtin_ctzll(stops) / 8 + 1;
    x &= (stops ^ (stops - 1)) & ~SP_CONT_BITS;
    x = (x & 0x007f007f007f007full) | ((x & 0x7f007f007f007f00ull) >> 1);
    x = (x & 0x00003fff00003fffull) | ((x & 0x3fff00003fff0000ull) >> 2);
    return (x & 0x000000000fffffffull) | ((x & 0x0fffffff00000000ull) >> 4);
}

/* Reads a varint from [*pp, end): one byte without more ado, a word at a
 * time where one fits before `end`, the careful loop otherwise. */
static inline __attribute__((always_inline)) int sp_get_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    if (__builtin_expect(end - p >= SP_WORD, 1)) {
        uint64_t x;
        unsigned len;
        memcpy(&x, p, sizeof x);
        if (__builtin_expect(!(x & 0x80), 1)) {
            *out = x & 0x7f;
            *pp = p + 1;
            return 0;
        }
        if (!(x & 0x8000)) { /* two bytes: durations, gaps, sizes under 16 Ki */
            *out = (x & 0x7f) | ((x >> 1) & 0x3f80);
            *pp = p + 2;
            return 0;
        }
        *out = sp_varint_from_word(x, &len);
        if (__builtin_expect(len != 0, 1)) {
            *pp = p + len;
            return 0;
        }
    } else if (p < end && *p < 0x80) {
        *out = *p;
        *pp = p + 1;
        return 0;
    }
    return sp_get_uvarint_long(pp, end, out);
}

/* ---- generated encoders ----------------------------------------------------- *
 * In each: `e` the event's fields, `prev` the previous event of the type in
 * this chunk (DS fields only), `stop` where this one ends in time. */

#define SP_ENC_U(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_D(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_DUR(f)            \
    p = sp_put_uvarint(p, e->f); \
    stop += e->f;
#define SP_ENC_STR(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_S(f) p = sp_put_uvarint(p, sp_zigzag(e->f));
#define SP_ENC_DS(f)                                             \
    p = sp_put_uvarint(p, sp_zigzag((int64_t)(e->f - prev->f))); \
    prev->f = e->f;
#define SP_X_ENC_FIELD(kind, field) SP_ENC_##kind(field)
#define SP_X_ENCODER(id, NAME, name, FIELDS)                                \
    static inline __attribute__((always_inline)) uint8_t *sp_encode_##name( \
        uint8_t *p, uint64_t t,                                             \
        const struct sp_ev_##name *e,                                       \
        struct sp_codec_state *st)                                          \
    {                                                                       \
        struct sp_ev_##name *prev = &st->name;                              \
        uint64_t stop = t;                                                  \
        (void)prev;                                                         \
        p = sp_put_uvarint(p, sp_zigzag((int64_t)(t - st->end[id])));       \
        FIELDS(SP_X_ENC_FIELD)                                              \
        st->end[id] = stop;                                                 \
        return p;                                                           \
    }
SP_EVENTS(SP_X_ENCODER)
#undef SP_X_ENCODER
#undef SP_X_ENC_FIELD

/* ---- IO events: repeats (version 4) ------------------------------------------- *
 * A job that reads a file a block at a time records the same op, fd,
 * kind, size asked, offset and errno event after event, and gets what it
 * asked for.  Since version 4 such an IO event (those six fields equal to
 * the previous IO event's in the chunk: its codec memory, st->io) is a
 * repeat, and leaves them out; and an IO event whose result is the size
 * asked (ret == bytes) leaves out its result.  The two marks are the low
 * bits of the path's varint, which comes first: path << 2 | marks (a
 * string id is 32 bits, docs/format.md).  A body is then
 *
 *   repeat:  delta, dur, path << 2 | marks, [ret]
 *   other:   delta, dur, path << 2 | marks, op, fd, fd_kind, [ret], bytes, offset, err
 *
 * ret present unless SP_IO_RET_BYTES is marked, offset coded as ever (the
 * zigzag difference from the previous one's).  In the column layout each
 * field keeps its column (columns.h); the columns an event leaves out
 * hold the varints of the other IO events only.  An older trace
 * (st->io_plain) is read with the generated decoder. */
#define SP_IO_REPEAT 1u
#define SP_IO_RET_BYTES 2u
#define SP_IO_MARK_BITS 2

/* An IO event's body is its delta and its fields, a varint each of at
 * most SP_VARINT_MAX bytes: under SP_ONE_BYTE_LIMIT, so its length is one
 * byte always (sp_codec_encode), and the long case's memmove, a call, is
 * no part of the code inlined into the recorder's reads. */
#define SP_X_COUNT_FIELD(kind, field) +1
#define SP_IO_BODY_MAX ((1 SP_FIELDS_IO(SP_X_COUNT_FIELD)) * SP_VARINT_MAX)
_Static_assert(SP_IO_BODY_MAX < SP_ONE_BYTE_LIMIT, "an IO event's length fits one byte");
#undef SP_X_COUNT_FIELD

/* Whether the IO event `e` repeats `prev`: a compare with memory and a
 * branch per field, each taken almost never (an or of the six
 * differences took two more instructions and a register). */
static inline __attribute__((always_inline)) int sp_io_repeats(const struct sp_ev_io *e, const struct sp_ev_io *prev)
{
    return __builtin_expect(e->op == prev->op, 1) && __builtin_expect(e->fd == prev->fd, 1) &&
           __builtin_expect(e->fd_kind == prev->fd_kind, 1) && __builtin_expect(e->bytes == prev->bytes, 1) &&
           __builtin_expect(e->offset == prev->offset, 1) && __builtin_expect(e->err == prev->err, 1);
}

static inline __attribute__((always_inline)) uint8_t *sp_encode_io_v4(uint8_t *p, uint64_t t,
                                                                      const struct sp_ev_io *e,
                                                                      struct sp_codec_state *st)
{
    struct sp_ev_io *prev = &st->io;
    p = sp_put_uvarint(p, sp_zigzag((int64_t)(t - st->end[SP_EV_IO])));
    p = sp_put_uvarint_2(p, e->dur);
    st->end[SP_EV_IO] = t + e->dur;
    int full = (uint64_t)e->ret == e->bytes;
    uint64_t path = (uint64_t)e->path << SP_IO_MARK_BITS;
    if (__builtin_expect(sp_io_repeats(e, prev), 1)) {
        /* The common event (a block read again, all of it) on a branch of
         * its own: its path word's marks are a constant there. */
        if (__builtin_expect(full, 1))
            return sp_put_uvarint(p, (uint64_t)e->path * (1u << SP_IO_MARK_BITS) + (SP_IO_REPEAT | SP_IO_RET_BYTES));
        p = sp_put_uvarint(p, path | SP_IO_REPEAT);
        return sp_put_uvarint(p, sp_zigzag(e->ret));
    }
    if (full)
        path |= SP_IO_RET_BYTES;
    p = sp_put_uvarint(p, path);
    p = sp_put_uvarint(p, e->op);
    p = sp_put_uvarint(p, sp_zigzag(e->fd));
    p = sp_put_uvarint(p, e->fd_kind);
    if (!full)
        p = sp_put_uvarint(p, sp_zigzag(e->ret));
    p = sp_put_uvarint(p, e->bytes);
    p = sp_put_uvarint(p, sp_zigzag((int64_t)(e->offset - prev->offset)));
    p = sp_put_uvarint(p, e->err);
    prev->op = e->op;
    prev->fd = e->fd;
    prev->fd_kind = e->fd_kind;
    prev->bytes = e->bytes;
    prev->offset = e->offset;
    prev->err = e->err;
    return p;
}

/* Writes the body (delta and fields) at `body`; returns its end.  An
 * unknown type gets a delta of 0 and no fields (it cannot be produced
 * through the public structs). */
static inline __attribute__((always_inline)) uint8_t *sp_encode_body(uint8_t *body, const struct sp_event *ev,
                                                                     struct sp_codec_state *st)
{
    if (ev->type == SP_EV_IO) /* a constant where the recorder inlines it */
        return sp_encode_io_v4(body, ev->t, &ev->io, st);
    switch (ev->type) {
#define SP_X_CASE(id, NAME, name, FIELDS) \
    case id:                              \
        return sp_encode_##name(body, ev->t, &ev->name, st);
        SP_EVENTS(SP_X_CASE)
#undef SP_X_CASE
    default:
        *body = 0;
        return body + 1;
    }
}

/* Writes the body one byte after the type, leaving a single byte for the
 * length, because nearly every event is shorter than 128 bytes; the rare
 * longer one is moved up by one byte to make room for a two-byte length. */
static inline __attribute__((always_inline)) size_t sp_codec_encode(uint8_t *out, const struct sp_event *ev,
                                                                    struct sp_codec_state *st)
{
    out[0] = ev->type;
    uint8_t *body = out + 2;
    uint8_t *end = sp_encode_body(body, ev, st);
    size_t len = (size_t)(end - body);
    if (__builtin_expect(len < SP_ONE_BYTE_LIMIT, 1) || ev->type == SP_EV_IO /* SP_IO_BODY_MAX */) {
        out[1] = (uint8_t)len;
        return (size_t)(end - out);
    }
    /* SP_EVENT_MAX_BYTES < 2^14: two length bytes always suffice. */
    memmove(body + 1, body, len);
    out[1] = (uint8_t)(len | 0x80);
    out[2] = (uint8_t)(len >> 7);
    return (size_t)(end + 1 - out);
}

/* ---- generated decoders ------------------------------------------------------ *
 * Each reads the fields of one type from [p, bend): a field whose bytes
 * are missing reads 0, and so do all after it (only the type's struct is
 * zeroed, never the whole union); bytes after the last known field are
 * left for the caller to skip.  Returns 0 or SP_E_CORRUPT. */

#define SP_DEC_GET(f)                                                \
    if (__builtin_expect(p >= bend, 0)) {                            \
        memset(&e->f, 0, (size_t)((char *)(e + 1) - (char *)&e->f)); \
        goto done;                                                   \
    }                                                                \
    if (sp_get_uvarint(&p, bend, &v) < 0)                            \
        return SP_E_CORRUPT;
#define SP_DEC_U(f) SP_DEC_GET(f) e->f = v;
#define SP_DEC_D(f) SP_DEC_GET(f) e->f = v;
#define SP_DEC_DUR(f) SP_DEC_GET(f) e->f = v;
#define SP_DEC_STR(f) SP_DEC_GET(f) e->f = v;
#define SP_DEC_S(f) SP_DEC_GET(f) e->f = sp_unzigzag(v);
#define SP_DEC_DS(f) SP_DEC_GET(f) e->f = prev->f += (uint64_t)sp_unzigzag(v);
/* The decoder's `stop`: a second pass over the fields, adding the DURs
 * once all of them are known (missing ones zeroed). */
#define SP_STOP_U(f)
#define SP_STOP_D(f)
#define SP_STOP_STR(f)
#define SP_STOP_S(f)
#define SP_STOP_DS(f)
#define SP_STOP_DUR(f) stop += e->f;
#define SP_X_DEC_FIELD(kind, field) SP_DEC_##kind(field)
#define SP_X_STOP_FIELD(kind, field) SP_STOP_##kind(field)
#define SP_X_DECODER(id, NAME, name, FIELDS)                                  \
    static inline int sp_decode_##name(const uint8_t *p, const uint8_t *bend, \
                                       uint64_t t, struct sp_ev_##name *e,    \
                                       struct sp_codec_state *st)             \
    {                                                                         \
        struct sp_ev_##name *prev = &st->name;                                \
        uint64_t v, stop = t;                                                 \
        (void)prev;                                                           \
        (void)v;                                                              \
        FIELDS(SP_X_DEC_FIELD)                                                \
    done:                                                                     \
        FIELDS(SP_X_STOP_FIELD)                                               \
        st->end[id] = stop;                                                   \
        return 0;                                                             \
    }
SP_EVENTS(SP_X_DECODER)
#undef SP_X_DECODER
#undef SP_X_DEC_FIELD
#undef SP_X_STOP_FIELD

/* An IO event's fields since version 4 (the repeats above): the same
 * rules as the generated decoders (a field whose bytes are missing reads
 * 0, and so do all after it; a missing offset leaves its memory alone). */
static inline int sp_decode_io_v4(const uint8_t *p, const uint8_t *bend, uint64_t t, struct sp_ev_io *e,
                                  struct sp_codec_state *st)
{
    struct sp_ev_io *prev = &st->io;
    /* v[i] in the order of the body: dur, path, then op, fd, fd_kind,
     * ret, bytes, offset, err, those the marks leave in. */
    enum { DUR,
           PATH,
           OP,
           FD,
           FD_KIND,
           RET,
           BYTES,
           OFFSET,
           ERR,
           N };
    uint64_t v[N] = {0};
    unsigned i = DUR, have = 0;
    for (; i <= PATH && p < bend; i++)
        if (sp_get_uvarint(&p, bend, &v[i]) < 0)
            return SP_E_CORRUPT;
    uint64_t marks = i > PATH ? v[PATH] & ((1u << SP_IO_MARK_BITS) - 1) : 0;
    unsigned in = (marks & SP_IO_REPEAT) ? 1u << RET : ((1u << N) - 1) & ~((1u << DUR) | (1u << PATH));
    if (marks & SP_IO_RET_BYTES)
        in &= ~(1u << RET);
    for (i = OP; i < N && p < bend; i++)
        if ((in >> i) & 1) {
            if (sp_get_uvarint(&p, bend, &v[i]) < 0)
                return SP_E_CORRUPT;
            have |= 1u << i;
        }
    e->dur = v[DUR];
    e->path = v[PATH] >> SP_IO_MARK_BITS;
    st->end[SP_EV_IO] = t + e->dur;
    if (!(marks & SP_IO_REPEAT)) {
        prev->op = v[OP];
        prev->fd = sp_unzigzag(v[FD]);
        prev->fd_kind = v[FD_KIND];
        prev->bytes = v[BYTES];
        prev->err = v[ERR];
        if ((have >> OFFSET) & 1) /* the offset's varint was there */
            prev->offset += (uint64_t)sp_unzigzag(v[OFFSET]);
    }
    e->op = prev->op;
    e->fd = prev->fd;
    e->fd_kind = prev->fd_kind;
    e->bytes = prev->bytes;
    e->err = prev->err;
    e->offset = (marks & SP_IO_REPEAT) || ((have >> OFFSET) & 1) ? prev->offset : 0;
    e->ret = (marks & SP_IO_RET_BYTES) ? (int64_t)e->bytes : sp_unzigzag(v[RET]);
    return 0;
}

/* True for the types this build knows; others come from a newer writer. */
static inline int sp_codec_known(unsigned type)
{
    switch (type) {
#define SP_X_KNOWN(id, NAME, name, FIELDS) case id:
        SP_EVENTS(SP_X_KNOWN)
#undef SP_X_KNOWN
        return 1;
    default:
        return 0;
    }
}

/* The length of the event at p without decoding it: bytes to step over,
 * 0 at padding, or SP_E_CORRUPT when its length runs past `end`. */
static inline long sp_codec_skip(const uint8_t *p, const uint8_t *end)
{
    const uint8_t *start = p;
    uint64_t len;
    if (p >= end || *p == 0)
        return 0;
    p++;
    if (sp_get_uvarint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
        return SP_E_CORRUPT;
    return (long)(p + len - start);
}

/* One event from [p, end): bytes consumed, 0 at padding, or SP_E_CORRUPT.
 * An unknown type is consumed with ev->type set and the state untouched. */
static inline long sp_codec_decode(const uint8_t *p, const uint8_t *end, struct sp_event *ev,
                                   struct sp_codec_state *st)
{
    const uint8_t *start = p;
    if (p >= end || *p == 0)
        return 0;
    uint8_t type = *p++;
    uint64_t len, delta;
    if (sp_get_uvarint(&p, end, &len) < 0 || len > (uint64_t)(end - p))
        return SP_E_CORRUPT;
    const uint8_t *bend = p + len;
    ev->type = type;
    if (!sp_codec_known(type))
        return (long)(bend - start);
    if (sp_get_uvarint(&p, bend, &delta) < 0)
        return SP_E_CORRUPT;
    int rc;
    if (type == SP_EV_IO && !st->io_plain) {
        ev->t = st->end[SP_EV_IO] + (uint64_t)sp_unzigzag(delta);
        rc = sp_decode_io_v4(p, bend, ev->t, &ev->io, st);
        return rc < 0 ? rc : (long)(bend - start);
    }
    switch (type) {
#define SP_X_DEC_CASE(id, NAME, name, FIELDS)                 \
    case id:                                                  \
        ev->t = st->end[id] + (uint64_t)sp_unzigzag(delta);   \
        rc = sp_decode_##name(p, bend, ev->t, &ev->name, st); \
        break;
        SP_EVENTS(SP_X_DEC_CASE)
#undef SP_X_DEC_CASE
    default:
        rc = 0;
        break;
    }
    return rc < 0 ? rc : (long)(bend - start);
}

#endif
