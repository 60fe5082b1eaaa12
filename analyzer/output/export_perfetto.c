/*
 * export_perfetto.c - `scaleprof export`'s default timeline: Perfetto's
 * native protobuf trace (a Trace message: a stream of TracePacket, each
 * holding a TrackDescriptor or a TrackEvent), which ui.perfetto.dev and
 * trace_processor load far past the size their JSON importer holds.
 * docs/export.md lists the facts of the format relied on.
 *
 * The wire format is a few varints, written here by hand: a field is a
 * tag (number << 3 | wire type) then a varint, 8 bytes (double,
 * fixed64) or a length and that many bytes (string, nested message).
 * Each packet is built in one buffer: a nested message reserves room
 * for its length and is moved back over the unused part when it closes,
 * so every length is written in its shortest form.  Packets go out one
 * after another as field 1 of the Trace, which is how a Trace file is
 * read (a concatenation of `packet` fields).
 *
 * Everything is on one packet sequence.  Event names, categories and
 * annotation names are interned: a string is sent once in the packet's
 * InternedData with an id, then referred to by that id; the first packet
 * clears the sequence's incremental state and every later one says it
 * needs it.  Names with a count in them (an op's sequence number) keep
 * that count in an annotation instead, so the table stays small; past
 * INTERN_MAX strings, names are written inline.
 *
 * This is the encoder of export_walk.c's walk (export_int.h), which
 * decides the layout for both formats.  Here a group is a process track
 * (uuid pid << TRACK_BITS) and its tracks are child tracks numbered
 * after it, ordered explicitly, from 0 again in the what-if group (past
 * the bits, events join the steps track); a CPU counter is a counter
 * track of its own.  A slice is a SLICE_BEGIN and a SLICE_END packet (the
 * format has no complete event), so a step's categories can be its
 * child slices, and a marker's pop is written only over its push; the
 * late-rank arrows are flow ids on the transfer slices.  Only this
 * format has the summary timeline (the walk's choose_detail) and kernel
 * names as long as recorded.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "export_trace.h"
#include "text.h"
#include "units.h"

#define PACKET_MAX (256 * 1024)
#define OUT_BUFFER (1 << 20) /* > PACKET_MAX + its head */
#define STR_MAX 4096         /* longest string written, in bytes */
#define NESTED_LEN 3         /* bytes reserved for a nested message's length (< 2 MiB) */
#define INTERN_MAX (1u << 20)
#define SEQ_ID 1
#define TRACK_BITS 12           /* child tracks of a process: uuid = process's + 1.. */
#define PB_BYTES_PER_EVENT 60.0 /* a written slice with its annotations, measured */
#define PB_BYTES_PER_STEP 200.0

/* Field numbers and values of the messages written (Perfetto's
 * protos/perfetto/trace), one message a line. */
// clang-format off
enum { F_TRACE_PACKET = 1 };                                            /* Trace */
enum { F_PKT_TIMESTAMP = 8, F_PKT_SEQ_ID = 10, F_PKT_TRACK_EVENT = 11,   /* TracePacket */
       F_PKT_INTERNED = 12, F_PKT_SEQ_FLAGS = 13, F_PKT_TRACK_DESCRIPTOR = 60 };
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1, SEQ_NEEDS_INCREMENTAL_STATE = 2 };
enum { F_TD_UUID = 1, F_TD_NAME = 2, F_TD_PROCESS = 3, F_TD_PARENT = 5,  /* TrackDescriptor */
       F_TD_COUNTER = 8, F_TD_CHILD_ORDERING = 11, F_TD_SIBLING_RANK = 12 };
enum { CHILD_ORDERING_EXPLICIT = 3 };
enum { F_PD_PID = 1, F_PD_NAME = 6 };                                   /* ProcessDescriptor */
enum { F_TE_CATEGORY_IIDS = 3, F_TE_ANNOTATIONS = 4, F_TE_TYPE = 9,     /* TrackEvent */
       F_TE_NAME_IID = 10, F_TE_TRACK = 11, F_TE_NAME = 23, F_TE_DOUBLE_COUNTER = 44,
       F_TE_FLOW_IDS = 47, F_TE_TERMINATING_FLOW_IDS = 48 };
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { F_DA_NAME_IID = 1, F_DA_BOOL = 2, F_DA_UINT = 3, F_DA_INT = 4,    /* DebugAnnotation */
       F_DA_DOUBLE = 5, F_DA_STRING = 6 };
/* InternedData; EventCategory, EventName, DebugAnnotationName are {iid = 1, name = 2} */
enum { F_ID_CATEGORIES = 1, F_ID_NAMES = 2, F_ID_ANNOTATION_NAMES = 3 };
enum { F_INTERNED_IID = 1, F_INTERNED_NAME = 2 };
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2 };                          /* wire types */
// clang-format on

struct buf {
    uint8_t *p;
    size_t n, cap;
};

struct intern {
    char *s; /* NULL: empty slot */
    uint64_t iid;
};

struct writer {
    FILE *out;
    int64_t origin;
    uint64_t slices, dropped; /* struct sp_export_stats' */
    struct buf pk;            /* the packet being built */
    struct buf fresh;         /* its new interned names, EventName messages */
    struct buf outbuf;        /* packets not yet written */
    int first_packet;
    /* interned event names: open addressing, power-of-two size */
    struct intern *names;
    size_t names_cap, names_n;
    uint64_t proc_uuid; /* the group being written */
};

/* ---- the wire ---- */

static void put_byte(struct buf *b, uint8_t v)
{
    if (b->n < b->cap) b->p[b->n] = v;
    b->n++; /* past cap: counted, and the packet is dropped when closed */
}

static void put_varint(struct buf *b, uint64_t v)
{
    while (v >= 0x80) {
        put_byte(b, (uint8_t)(v | 0x80));
        v >>= 7;
    }
    put_byte(b, (uint8_t)v);
}

static void put_tag(struct buf *b, int field, int wt)
{
    put_varint(b, (uint64_t)field << 3 | (uint64_t)wt);
}

static void f_uint(struct buf *b, int field, uint64_t v)
{
    put_tag(b, field, WT_VARINT);
    put_varint(b, v);
}

static void f_int(struct buf *b, int field, int64_t v)
{
    f_uint(b, field, (uint64_t)v); /* int64: two's complement, ten bytes when negative */
}

static void put_fixed64(struct buf *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        put_byte(b, (uint8_t)(v >> (8 * i)));
}

static void f_double(struct buf *b, int field, double d)
{
    uint64_t v;
    memcpy(&v, &d, sizeof v);
    put_tag(b, field, WT_I64);
    put_fixed64(b, v);
}

static void f_fixed64(struct buf *b, int field, uint64_t v)
{
    put_tag(b, field, WT_I64);
    put_fixed64(b, v);
}

/* The length of the well-formed UTF-8 sequence at s[0..n), 0 when the
 * byte there starts none. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
    unsigned c = s[0];
    size_t k = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2
                          : c >= 0xe0 && c < 0xf0   ? 3
                          : c >= 0xf0 && c < 0xf5   ? 4
                                                    : 0;
    if (!k || k > n) return 0;
    for (size_t i = 1; i < k; i++)
        if ((s[i] & 0xc0) != 0x80) return 0;
    if (k == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0))) return 0;
    if (k == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90))) return 0;
    return k;
}

/* A string field: at most STR_MAX bytes, valid UTF-8 (a byte that is not
 * part of a well-formed sequence becomes '?'), whatever a trace held. */
static void f_str(struct buf *b, int field, const char *s)
{
    size_t n = strlen(s);
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0;
    while (i < n && u[i] >= 0x20 && u[i] < 0x80)
        i++;
    if (i == n && n <= STR_MAX) { /* plain ASCII: the common case */
        put_tag(b, field, WT_LEN);
        put_varint(b, n);
        if (b->n + n <= b->cap) memcpy(b->p + b->n, s, n);
        b->n += n;
        return;
    }
    char clean[STR_MAX];
    size_t o = 0;
    for (i = 0; i < n;) {
        size_t k = utf8_seq(u + i, n - i);
        if (o + (k ? k : 1) > sizeof clean) break;
        if (!k || u[i] < 0x20) {
            clean[o++] = u[i] < 0x20 && k ? ' ' : '?';
            i++;
        } else {
            memcpy(clean + o, u + i, k);
            o += k;
            i += k;
        }
    }
    put_tag(b, field, WT_LEN);
    put_varint(b, o);
    if (b->n + o <= b->cap) memcpy(b->p + b->n, clean, o);
    b->n += o;
}

/* Opens a nested message: its tag, then NESTED_LEN bytes for the length. */
static size_t msg_open(struct buf *b, int field)
{
    put_tag(b, field, WT_LEN);
    size_t at = b->n;
    b->n += NESTED_LEN;
    return at;
}

/* Closes the message opened at `at`: its length in the shortest form, the
 * body moved back over the bytes not needed. */
static void msg_close(struct buf *b, size_t at)
{
    if (b->n > b->cap) return;
    size_t body = at + NESTED_LEN, len = b->n - body;
    uint8_t v[10];
    size_t k = 0;
    uint64_t x = len;
    do {
        v[k++] = (uint8_t)(x >= 0x80 ? (x | 0x80) : x);
        x >>= 7;
    } while (x);
    if (k > NESTED_LEN) { /* cannot happen under PACKET_MAX; drop the packet */
        b->n = b->cap + 1;
        return;
    }
    memmove(b->p + at + k, b->p + body, len);
    memcpy(b->p + at, v, k);
    b->n = at + k + len;
}

/* ---- packets ---- */

/* Packets are gathered in outbuf and written OUT_BUFFER at a time: two
 * stdio calls per packet cost more than encoding it. */
static void flush_out(struct writer *w)
{
    if (w->outbuf.n) fwrite(w->outbuf.p, 1, w->outbuf.n, w->out);
    w->outbuf.n = 0;
}

static void packet_open(struct writer *w)
{
    w->pk.n = 0;
    w->fresh.n = 0;
}

/* Writes the packet built, with the sequence fields and the names
 * interned while building it, as one `packet` of the Trace. */
static void packet_close(struct writer *w)
{
    struct buf *b = &w->pk;
    f_uint(b, F_PKT_SEQ_ID, SEQ_ID);
    f_uint(b, F_PKT_SEQ_FLAGS,
           w->first_packet ? SEQ_INCREMENTAL_STATE_CLEARED : SEQ_NEEDS_INCREMENTAL_STATE);
    if (w->fresh.n && w->fresh.n <= w->fresh.cap) {
        put_tag(b, F_PKT_INTERNED, WT_LEN);
        put_varint(b, w->fresh.n);
        if (b->n + w->fresh.n <= b->cap) memcpy(b->p + b->n, w->fresh.p, w->fresh.n);
        b->n += w->fresh.n;
    }
    if (b->n > b->cap || w->fresh.n > w->fresh.cap) {
        w->dropped++; /* a packet past PACKET_MAX: a string the size cap missed */
        return;
    }
    struct buf *o = &w->outbuf;
    if (o->n + b->n + 12 > o->cap) flush_out(w);
    put_tag(o, F_TRACE_PACKET, WT_LEN);
    put_varint(o, b->n);
    memcpy(o->p + o->n, b->p, b->n);
    o->n += b->n;
    w->first_packet = 0;
}

/* The first packet: the sequence cleared, the fixed tables interned. */
static void write_preamble(struct writer *w)
{
    packet_open(w);
    struct buf *b = &w->fresh;
    for (int i = 1; i < C_N; i++) {
        size_t at = msg_open(b, F_ID_CATEGORIES);
        f_uint(b, F_INTERNED_IID, (uint64_t)i);
        f_str(b, F_INTERNED_NAME, sp_export_cat_names[i]);
        msg_close(b, at);
    }
    for (int i = 1; i < A_N; i++) {
        size_t at = msg_open(b, F_ID_ANNOTATION_NAMES);
        f_uint(b, F_INTERNED_IID, (uint64_t)i);
        f_str(b, F_INTERNED_NAME, sp_export_annotation_names[i]);
        msg_close(b, at);
    }
    w->first_packet = 1;
    packet_close(w);
}

/* ---- interned event names ---- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static int names_grow(struct writer *w)
{
    size_t cap = w->names_cap ? 2 * w->names_cap : 4096;
    struct intern *t = calloc(cap, sizeof *t);
    if (!t) return -1;
    for (size_t i = 0; i < w->names_cap; i++) {
        if (!w->names[i].s) continue;
        size_t j = hash_str(w->names[i].s) & (cap - 1);
        while (t[j].s)
            j = (j + 1) & (cap - 1);
        t[j] = w->names[i];
    }
    free(w->names);
    w->names = t;
    w->names_cap = cap;
    return 0;
}

/* The iid of name, sent in this packet's InternedData the first time;
 * 0 when the table is full (the caller writes the name inline). */
static uint64_t name_iid(struct writer *w, const char *name)
{
    if (2 * (w->names_n + 1) > w->names_cap && (w->names_n >= INTERN_MAX || names_grow(w) < 0))
        return 0;
    size_t j = hash_str(name) & (w->names_cap - 1);
    while (w->names[j].s) {
        if (!strcmp(w->names[j].s, name)) return w->names[j].iid;
        j = (j + 1) & (w->names_cap - 1);
    }
    char *s = strdup(name);
    if (!s) return 0;
    w->names[j] = (struct intern){s, ++w->names_n};
    size_t at = msg_open(&w->fresh, F_ID_NAMES);
    f_uint(&w->fresh, F_INTERNED_IID, w->names_n);
    f_str(&w->fresh, F_INTERNED_NAME, name);
    msg_close(&w->fresh, at);
    return w->names_n;
}


/* ---- events ---- */

static uint64_t ts_of(const struct writer *w, int64_t global)
{
    return global > w->origin ? (uint64_t)(global - w->origin) : 0;
}

/* Opens a packet holding a TrackEvent; returns the TrackEvent's offset
 * for ev_close.  name NULL: none (a slice's end). */
static size_t ev_open(struct writer *w, int type, uint64_t track, int64_t global, const char *name,
                      int cat)
{
    packet_open(w);
    f_uint(&w->pk, F_PKT_TIMESTAMP, ts_of(w, global));
    size_t at = msg_open(&w->pk, F_PKT_TRACK_EVENT);
    f_uint(&w->pk, F_TE_TYPE, (uint64_t)type);
    f_uint(&w->pk, F_TE_TRACK, track);
    if (cat) f_uint(&w->pk, F_TE_CATEGORY_IIDS, (uint64_t)cat);
    if (name) {
        uint64_t iid = name_iid(w, name);
        if (iid)
            f_uint(&w->pk, F_TE_NAME_IID, iid);
        else
            f_str(&w->pk, F_TE_NAME, name);
    }
    w->slices += type != TYPE_SLICE_END;
    return at;
}

static void ev_close(struct writer *w, size_t at)
{
    msg_close(&w->pk, at);
    packet_close(w);
}

/* An annotation of the TrackEvent being built: a_open, its value, then
 * msg_close. */
static size_t a_open(struct writer *w, int name)
{
    size_t at = msg_open(&w->pk, F_TE_ANNOTATIONS);
    f_uint(&w->pk, F_DA_NAME_IID, (uint64_t)name);
    return at;
}

/* The walk's arguments as annotations: those of the breakdown are its
 * child slices here, and an optional one that is 0 or "" costs bytes for
 * nothing. */
static void a_list(struct writer *w, const struct sp_export_arg *args, int n)
{
    for (int i = 0; i < n; i++) {
        const struct sp_export_arg *a = &args[i];
        if (a->flags & ARG_BREAKDOWN) continue;
        if (a->flags & ARG_OPTIONAL && (a->type == ARG_STR ? !a->v.s[0] : !a->v.u)) continue;
        size_t at = a_open(w, a->name);
        switch (a->type) {
        case ARG_INT: f_int(&w->pk, F_DA_INT, a->v.i); break;
        case ARG_UINT: f_uint(&w->pk, F_DA_UINT, a->v.u); break;
        case ARG_DOUBLE: f_double(&w->pk, F_DA_DOUBLE, a->v.d); break;
        case ARG_BOOL: f_uint(&w->pk, F_DA_BOOL, a->v.i != 0); break;
        default: f_str(&w->pk, F_DA_STRING, a->v.s);
        }
        msg_close(&w->pk, at);
    }
}

/* ---- tracks ---- */

static void track_descriptor(struct writer *w, uint64_t uuid, uint64_t parent, const char *name,
                             int pid, int sort, int counter)
{
    packet_open(w);
    size_t at = msg_open(&w->pk, F_PKT_TRACK_DESCRIPTOR);
    f_uint(&w->pk, F_TD_UUID, uuid);
    f_str(&w->pk, F_TD_NAME, name);
    if (parent) {
        f_uint(&w->pk, F_TD_PARENT, parent);
        f_int(&w->pk, F_TD_SIBLING_RANK, sort);
    } else {
        size_t p = msg_open(&w->pk, F_TD_PROCESS);
        f_int(&w->pk, F_PD_PID, pid);
        f_str(&w->pk, F_PD_NAME, name);
        msg_close(&w->pk, p);
        f_uint(&w->pk, F_TD_CHILD_ORDERING, CHILD_ORDERING_EXPLICIT);
    }
    if (counter) msg_close(&w->pk, msg_open(&w->pk, F_TD_COUNTER));
    msg_close(&w->pk, at);
    packet_close(w);
}

/* A track's uuid: its process's, then the steps track, then the walk's
 * numbers (short varints). */
static uint64_t uuid_of(const struct writer *w, int track)
{
    return w->proc_uuid + (uint64_t)(track + 2);
}

/* ---- the encoder ---- */

static void pb_group(struct sp_export_walk *walk, const char *name, int sort)
{
    (void)sort; /* a process track is ordered by its pid */
    struct writer *w = walk->ctx;
    w->proc_uuid = (uint64_t)walk->pid << TRACK_BITS;
    track_descriptor(w, w->proc_uuid, 0, name, walk->pid, 0, 0);
}

static void pb_track(struct sp_export_walk *walk, int track, const char *name, int sort, int kind)
{
    struct writer *w = walk->ctx;
    track_descriptor(w, uuid_of(w, track), w->proc_uuid, name, 0, sort, kind == TRK_CPU);
}

/* A thread's name: its track described again under the new name. */
static void pb_rename(struct sp_export_walk *walk, int track, const char *name, int sort)
{
    pb_track(walk, track, name, sort, TRK_THREAD);
}

/* A slice is a SLICE_BEGIN and a SLICE_END packet (the format has no
 * complete event). */
static void pb_begin(struct sp_export_walk *walk, const struct sp_export_ev *e)
{
    struct writer *w = walk->ctx;
    size_t at = ev_open(w, TYPE_SLICE_BEGIN, uuid_of(w, e->track), e->t, e->name, e->cat);
    a_list(w, e->args, e->nargs);
    ev_close(w, at);
}

static void slice_end(struct writer *w, uint64_t track, int64_t global, int64_t dur)
{
    ev_close(w, ev_open(w, TYPE_SLICE_END, track, global + (dur > 0 ? dur : 0), NULL, 0));
}

static void pb_end(struct sp_export_walk *walk, const struct sp_export_ev *e)
{
    struct writer *w = walk->ctx;
    slice_end(w, uuid_of(w, e->track), e->t, e->dur);
}

static void pb_instant(struct sp_export_walk *walk, const struct sp_export_ev *e)
{
    struct writer *w = walk->ctx;
    size_t at = ev_open(w, TYPE_INSTANT, uuid_of(w, e->track), e->t, e->name, e->cat);
    a_list(w, e->args, e->nargs);
    ev_close(w, at);
}

/* CPU use on a counter track of the file's own. */
static void pb_counter(struct sp_export_walk *walk, int64_t t, const char *name, double cores)
{
    struct writer *w = walk->ctx;
    int tr = sp_export_walk_track(walk, TRK_CPU, walk->f.fi, 0, name,
                                  walk->f.fsort + sp_export_kind_sort[TRK_CPU]);
    size_t at = ev_open(w, TYPE_COUNTER, uuid_of(w, tr), t, NULL, 0);
    f_double(&w->pk, F_TE_DOUBLE_COUNTER, cores);
    ev_close(w, at);
}

/* An op's two slices, named with op and size only (the interned names
 * stay few; the sequence number is an annotation); the op's facts once,
 * on its transfer, with the arrows' flow ids. */
static void pb_op(struct sp_export_walk *walk, const struct sp_export_op *x)
{
    struct writer *w = walk->ctx;
    const struct sp_coll_call *c = x->c;
    uint64_t tr = uuid_of(w, x->track);
    char name[160], op[64], b[32], comm[SP_EXPORT_COMM_LEN];
    sp_text_bytes(c->bytes, b, sizeof b);
    snprintf(op, sizeof op, "%s %s", sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), b);
    snprintf(comm, sizeof comm, "%016" PRIx64, c->comm);
    for (int half = 0; half < 2; half++) {
        struct sp_export_args a = {.n = 0};
        sp_export_arg_uint(&a, A_SEQ, x->whatif ? c->seq : sp_export_op_seq(c), 0);
        if (!x->whatif) {
            sp_export_arg_int(&a, A_LAST_RANK, x->last_rank);
            sp_export_arg_str(&a, A_COMM, comm, 0);
        }
        if (half && !x->whatif) {
            sp_export_arg_str(&a, A_OP, sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), 0);
            sp_export_arg_uint(&a, A_BYTES, c->bytes, 0);
            sp_export_arg_int(&a, A_INSTANCE, c->inst);
            sp_export_arg_double(&a, A_WAIT_MS, (double)x->wait / NS_PER_MS, 4);
            sp_export_arg_double(&a, A_OP_MS, (double)x->dur / NS_PER_MS, 4);
            sp_export_arg_str(&a, A_TIMING, sp_export_timing(c), 0);
        }
        snprintf(name, sizeof name, "%s %s", half ? "transfer" : "wait", op);
        int64_t g = half ? x->t + x->wait : x->t;
        size_t at = ev_open(w, TYPE_SLICE_BEGIN, tr, g, name, half ? C_TRANSFER : C_WAIT);
        a_list(w, a.a, a.n);
        for (int i = 0; half && i < x->nflows; i++)
            f_fixed64(&w->pk, x->flows[i].start ? F_TE_FLOW_IDS : F_TE_TERMINATING_FLOW_IDS,
                      x->flows[i].id);
        ev_close(w, at);
        slice_end(w, tr, g, half ? x->dur - x->wait : x->wait);
    }
}

static void pb_start(struct sp_export_walk *walk)
{
    struct writer *w = walk->ctx;
    w->origin = walk->origin;
    write_preamble(w);
}

static void pb_finish(struct sp_export_walk *walk)
{
    flush_out(walk->ctx);
}

/* (in struct sp_export_enc's order) */
static const struct sp_export_enc perfetto_enc = {
    pb_start, pb_finish, pb_group, pb_track, pb_rename, pb_begin, pb_end, pb_instant, pb_counter,
    pb_op, .summary = 1, .group_tracks = 1, .max_tracks = (1 << TRACK_BITS) - 2,
    .breakdown_slices = 1, .matched_pops = 1, .full_names = 1};

int sp_export_perfetto(const struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                       struct sp_export_stats *st)
{
    struct writer w = {.out = out};
    w.pk = (struct buf){malloc(PACKET_MAX), 0, PACKET_MAX};
    w.fresh = (struct buf){malloc(PACKET_MAX), 0, PACKET_MAX};
    w.outbuf = (struct buf){malloc(OUT_BUFFER), 0, OUT_BUFFER};
    struct sp_export_stats s = {0};
    int rc = w.pk.p && w.fresh.p && w.outbuf.p ? sp_export_walk(m, o, &perfetto_enc, &w, &s) : -1;
    if (rc == 0 && ferror(out)) rc = -1;
    s.slices = w.slices;
    s.dropped = w.dropped;
    for (size_t i = 0; i < w.names_cap; i++)
        free(w.names[i].s);
    free(w.names);
    free(w.pk.p);
    free(w.fresh.p);
    free(w.outbuf.p);
    if (st)
        *st = s;
    else
        sp_warn_list_free(&s.warnings);
    return rc;
}

double sp_export_perfetto_estimate(const struct sp_model *m, const struct sp_export_opts *o)
{
    return sp_export_bytes(m, o, PB_BYTES_PER_EVENT, PB_BYTES_PER_STEP, 0);
}
