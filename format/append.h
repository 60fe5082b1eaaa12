/*
 * append.h - the writer's append fast path as inline functions, private
 * to format/ and to the recorder (preload/), which is linked with it into
 * libscaleprof.so.
 *
 * sp_writer_append() is this path behind a call, for any caller.  The
 * recorder inlines it instead into the code that builds each event, in
 * two steps:
 *
 *   if (sp_writer_reserve(w, ev.t))
 *       sp_writer_put(&ev);
 *
 * Nothing out of line is ever given the event's address (the slow path of
 * sp_writer_reserve takes only the time), so the event can stay a local
 * the compiler keeps in registers: the encoder (codec.h) reads each field
 * where the caller computed it, and a field that is a constant at that
 * call (an op, a zero) is stored as a constant byte.  The bytes written
 * are those sp_writer_append writes for the same event.
 *
 * The calling thread's slot state lives in sp_writer_tls, keyed by the
 * writer's generation (writer.c's top comment): sp_writer_reserve's fast
 * path is one compare of a thread-local word with the writer's
 * generation, sp_writer_put the encoder and one release store.
 */
#ifndef SP_APPEND_H
#define SP_APPEND_H

#include <stdint.h>

#include "codec.h"
#include "sprof.h"

/* The first member of struct sp_writer (writer.c): its generation, a
 * number unique to each writer in this process. */
struct sp_writer_head {
    uint64_t gen;
};

/* The calling thread's current slot, valid only while gen == the writer's. */
struct sp_tls_slot {
    /* Two words of the program the writer is linked into, which the
     * writer never reads or writes: the recorder keeps its re-entry guard
     * and its in-flight counter here (preload.h, emit.h), so that its
     * fast path reaches them and the slot state from one thread-pointer
     * offset, not one per variable. */
    uintptr_t host_word;
    void *host_ptr;
    uint64_t ready; /* gen while the slot has room for one more event, else 0:
                     * the fast path's one compare */
    uint64_t gen;   /* the writer this state belongs to */
    uint8_t *pos;   /* where the next event goes */
    uint8_t *limit; /* past this, the next event might not fit: slow path */
    struct sp_slot_header *slot;
    uint8_t *data; /* the slot's first event byte */
    uint64_t pending_drops;
    uint32_t drop_reason;
    struct chunk_link {
        uint64_t chunk_id; /* 0: the thread's first chunk */
        uint32_t slot;
    } last;                      /* the chunk this thread retired last */
    struct sp_codec_state codec; /* the chunk's codec memory: last, it is large */
};

extern __thread struct sp_tls_slot sp_writer_tls __attribute__((tls_model("initial-exec")));

/* Out of line (writer.c): a slot for the calling thread when it has none
 * with room (its first event in this writer, or its slot is full); the
 * DROPPED record of earlier losses is put first, stamped `t`.  0 when no
 * slot is free: the event is counted as dropped. */
int sp_writer_reserve_slow(struct sp_writer *w, uint64_t t);

/* Room for one event (at most SP_EVENT_MAX_BYTES) in the calling
 * thread's slot: 1, or 0 when the event must be dropped (counted). */
static inline __attribute__((always_inline)) int sp_writer_reserve(struct sp_writer *w, uint64_t t)
{
    if (__builtin_expect(sp_writer_tls.ready == ((const struct sp_writer_head *)w)->gen, 1))
        return 1;
    return sp_writer_reserve_slow(w, t);
}

/* Makes the bytes up to ts->pos visible, and sends the next append down
 * the slow path when the slot may not have room for it. */
static inline __attribute__((always_inline)) void sp_writer_publish(struct sp_tls_slot *ts)
{
    uint8_t *pos = ts->pos;
    __atomic_store_n(&ts->slot->used, (uint32_t)(pos - ts->data), __ATOMIC_RELEASE);
    if (__builtin_expect(pos > ts->limit, 0))
        ts->ready = 0;
}

/* Encodes `ev` into the calling thread's reserved slot and publishes it. */
static inline __attribute__((always_inline)) void sp_writer_put(const struct sp_event *ev)
{
    struct sp_tls_slot *ts = &sp_writer_tls;
    uint8_t *pos = ts->pos;
    ts->pos = pos + sp_codec_encode(pos, ev, &ts->codec);
    sp_writer_publish(ts);
}

#endif
