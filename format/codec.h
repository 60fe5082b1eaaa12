/*
 * codec.h - the event encoder as inline functions, private to format/.
 *
 * schema.c exports it as sp_encode_event(); writer.c inlines it into the
 * append hot path, where a call and the generic type switch are a
 * noticeable part of the cost.  One definition, so the two cannot differ.
 * The encoding itself is described in schema.c and docs/format.md.
 */
#ifndef SP_CODEC_H
#define SP_CODEC_H

#include <stdint.h>
#include <string.h>

#include "sprof.h"

/* A varint carries 7 bits per byte; 64 bits need at most this many. */
#define SP_VARINT_MAX 10
/* Lengths below this fit one varint byte. */
#define SP_ONE_BYTE_LIMIT 128u

/* ---- varints -------------------------------------------------------------- */

/* Unrolled for the sizes that dominate (ids, durations, byte counts fit in
 * one to three bytes); the loop handles the rest. */
static inline uint8_t *sp_put_uvarint(uint8_t *p, uint64_t v)
{
    if (v < (1u << 7)) {
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
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline uint64_t sp_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}


/* ---- generated encoders ----------------------------------------------------- */

#define SP_ENC_U(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_D(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_STR(f) p = sp_put_uvarint(p, e->f);
#define SP_ENC_S(f) p = sp_put_uvarint(p, sp_zigzag(e->f));
#define SP_X_ENC_FIELD(kind, field) SP_ENC_##kind(field)
#define SP_X_ENCODER(id, NAME, name, FIELDS)                                   \
    static inline uint8_t *sp_encode_##name(uint8_t *p, const struct sp_ev_##name *e) \
    {                                                                          \
        FIELDS(SP_X_ENC_FIELD)                                                 \
        return p;                                                              \
    }
SP_EVENTS(SP_X_ENCODER)
#undef SP_X_ENCODER
#undef SP_X_ENC_FIELD

/* Writes delta and fields at `body`; returns the end.  An unknown type
 * gets no fields (it cannot be produced through the public structs). */
static inline uint8_t *sp_encode_body(uint8_t *body, const struct sp_event *ev, uint64_t delta)
{
    uint8_t *p = sp_put_uvarint(body, delta);
    switch (ev->type) {
#define SP_X_CASE(id, NAME, name, FIELDS)                                      \
    case id:                                                                   \
        return sp_encode_##name(p, &ev->name);
        SP_EVENTS(SP_X_CASE)
#undef SP_X_CASE
    default:
        return p;
    }
}

static inline size_t sp_codec_encode(uint8_t *out, const struct sp_event *ev, uint64_t *prev_t)
{
    uint64_t delta = sp_zigzag((int64_t)(ev->t - *prev_t));
    *prev_t = ev->t;
    out[0] = ev->type;
    uint8_t *body = out + 2;
    uint8_t *end = sp_encode_body(body, ev, delta);
    size_t len = (size_t)(end - body);
    if (len < SP_ONE_BYTE_LIMIT) {
        out[1] = (uint8_t)len;
        return (size_t)(end - out);
    }
    /* Rare: a two-byte length (SP_EVENT_MAX_BYTES < 2^14) pushes the body
     * up by one byte. */
    memmove(body + 1, body, len);
    out[1] = (uint8_t)(len | 0x80);
    out[2] = (uint8_t)(len >> 7);
    return (size_t)(end + 1 - out);
}


#endif
