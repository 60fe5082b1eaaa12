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
 * Layout, as in the JSON writer: a process track per rank ("rank R
 * (host, pid)") with child tracks, ordered explicitly: steps, one per
 * NCCL communicator, GPU streams, host threads, their I/O and waits,
 * helper processes' tracks, a CPU counter per process; with --whatif a
 * process "rank R what-if: CAUSE" beside each.  A slice is a
 * SLICE_BEGIN and a SLICE_END packet (the format has no complete
 * event); the late-rank arrows are flow ids on the transfer slices.
 *
 * Size: a job past SUMMARY_RANK_STEPS rank-steps gets the summary
 * timeline unless --full: every rank's step bars, each holding its
 * categories as child slices laid end to end (shares of the step, not
 * their positions in it), the findings, and the ranks the findings name
 * (up to DETAIL_MAX) in full detail.  Only those ranks' traces are read
 * again, so a summary costs little more than the report.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "export_trace.h"
#include "text.h"
#include "traceset.h"
#include "units.h"

#define SUMMARY_RANK_STEPS 6400 /* 64 ranks x 100 steps: what the UI holds in full */
#define DETAIL_MAX 16           /* ranks in full detail in a summary */
#define WHATIF_PID_BASE 1000000
#define PACKET_MAX (256 * 1024)
#define OUT_BUFFER (1 << 20) /* > PACKET_MAX + its head */
#define STR_MAX 4096         /* longest string written, in bytes */
#define NESTED_LEN 3         /* bytes reserved for a nested message's length (< 2 MiB) */
#define INTERN_MAX (1u << 20)
#define SEQ_ID 1
#define TRACK_BITS 12           /* child tracks of a process: uuid = process's + 1.. */
#define PB_BYTES_PER_EVENT 60.0 /* a written slice with its annotations, measured */
#define PB_BYTES_PER_STEP 200.0

/* field numbers: Trace, TracePacket */
enum { F_TRACE_PACKET = 1 };
enum {
    F_PKT_TIMESTAMP = 8,
    F_PKT_SEQ_ID = 10,
    F_PKT_TRACK_EVENT = 11,
    F_PKT_INTERNED = 12,
    F_PKT_SEQ_FLAGS = 13,
    F_PKT_TRACK_DESCRIPTOR = 60,
};
enum { SEQ_INCREMENTAL_STATE_CLEARED = 1,
       SEQ_NEEDS_INCREMENTAL_STATE = 2 };
/* TrackDescriptor, ProcessDescriptor */
enum {
    F_TD_UUID = 1,
    F_TD_NAME = 2,
    F_TD_PROCESS = 3,
    F_TD_PARENT = 5,
    F_TD_COUNTER = 8,
    F_TD_CHILD_ORDERING = 11,
    F_TD_SIBLING_RANK = 12,
};
enum { CHILD_ORDERING_EXPLICIT = 3 };
enum { F_PD_PID = 1,
       F_PD_NAME = 6 };
/* TrackEvent */
enum {
    F_TE_CATEGORY_IIDS = 3,
    F_TE_ANNOTATIONS = 4,
    F_TE_TYPE = 9,
    F_TE_NAME_IID = 10,
    F_TE_TRACK = 11,
    F_TE_NAME = 23,
    F_TE_DOUBLE_COUNTER = 44,
    F_TE_FLOW_IDS = 47,
    F_TE_TERMINATING_FLOW_IDS = 48,
};
enum { TYPE_SLICE_BEGIN = 1,
       TYPE_SLICE_END = 2,
       TYPE_INSTANT = 3,
       TYPE_COUNTER = 4 };
/* DebugAnnotation */
enum { F_DA_NAME_IID = 1,
       F_DA_BOOL = 2,
       F_DA_UINT = 3,
       F_DA_INT = 4,
       F_DA_DOUBLE = 5,
       F_DA_STRING = 6 };
/* InternedData; EventCategory, EventName, DebugAnnotationName are {iid = 1, name = 2} */
enum { F_ID_CATEGORIES = 1,
       F_ID_NAMES = 2,
       F_ID_ANNOTATION_NAMES = 3 };
enum { F_INTERNED_IID = 1,
       F_INTERNED_NAME = 2 };
enum { WT_VARINT = 0,
       WT_I64 = 1,
       WT_LEN = 2 };

/* Categories: the JSON writer's "cat" values, interned as 1.. in this order. */
#define CATEGORIES(X)               \
    X(C_STEP, "step")               \
    X(C_BREAKDOWN, "breakdown")     \
    X(C_FINDING, "finding")         \
    X(C_WAIT, "nccl_wait")          \
    X(C_TRANSFER, "nccl_transfer")  \
    X(C_KERNEL, "kernel")           \
    X(C_NCCL_KERNEL, "nccl_kernel") \
    X(C_MEMCPY, "memcpy")           \
    X(C_MEMSET, "memset")           \
    X(C_GPU, "gpu")                 \
    X(C_CUDA, "cuda")               \
    X(C_NCCL_CALL, "nccl_call")     \
    X(C_IO, "io")                   \
    X(C_WAITS, "wait")              \
    X(C_MARKER, "marker")           \
    X(C_PROCESS, "process")
#define AS_ENUM(e, s) e,
#define AS_NAME(e, s) s,
enum { C_NONE,
       CATEGORIES(AS_ENUM) C_N };
static const char *const category_names[] = {"", CATEGORIES(AS_NAME)};

/* Annotation names, interned as 1.. in this order. */
#define ANNOTATIONS(X)                \
    X(A_STEP, "step")                 \
    X(A_STEP_MS, "step_ms")           \
    X(A_ANALYZED, "analyzed")         \
    X(A_FINDINGS, "findings")         \
    X(A_OVERLAP_MS, "overlap_ms")     \
    X(A_CAT_MS, "ms")                 \
    X(A_CAUSE, "cause")               \
    X(A_SEVERITY, "severity")         \
    X(A_GAIN, "gain")                 \
    X(A_IF_FIXED, "step_ms_if_fixed") \
    X(A_STEPS, "steps")               \
    X(A_EVIDENCE, "evidence")         \
    X(A_FIRST_TRY, "first_try")       \
    X(A_OP, "op")                     \
    X(A_BYTES, "bytes")               \
    X(A_COMM, "comm")                 \
    X(A_SEQ, "seq")                   \
    X(A_INSTANCE, "instance")         \
    X(A_LAST_RANK, "last_rank")       \
    X(A_WAIT_MS, "wait_ms")           \
    X(A_OP_MS, "op_ms")               \
    X(A_TIMING, "timing")             \
    X(A_CORRELATION, "correlation")   \
    X(A_STREAM, "stream")             \
    X(A_KERNEL, "kernel")             \
    X(A_STACK, "stack")               \
    X(A_FD, "fd")                     \
    X(A_RET, "ret")                   \
    X(A_FD_KIND, "fd_kind")           \
    X(A_PATH, "path")                 \
    X(A_NFDS, "nfds")
enum { A_NONE,
       ANNOTATIONS(AS_ENUM) A_N };
static const char *const annotation_names[] = {"", ANNOTATIONS(AS_NAME)};


struct track {
    uint8_t kind;
    int32_t file;
    uint32_t pushed; /* marker ranges open on it (pushes not yet popped) */
    uint64_t id, uuid;
};

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
    struct sp_model *m;
    const struct sp_export_opts *o;
    struct sp_export_stats st;
    int64_t origin;
    struct buf pk;     /* the packet being built */
    struct buf fresh;  /* its new interned names, EventName messages */
    struct buf outbuf; /* packets not yet written */
    int first_packet;
    /* interned event names: open addressing, power-of-two size */
    struct intern *names;
    size_t names_cap, names_n;
    char *detail; /* per rank index: written in full */
    int summary;
    /* the rank being written */
    int ri, pid;
    uint64_t proc_uuid;
    int64_t w0, w1;
    struct track *tracks;
    int ntracks, cap;
    struct sp_export_file f;
    struct sp_export_colls c;
    int64_t **wa, **we;
    int oom;
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
        w->st.dropped++; /* a packet past PACKET_MAX: a string the size cap missed */
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
        f_str(b, F_INTERNED_NAME, category_names[i]);
        msg_close(b, at);
    }
    for (int i = 1; i < A_N; i++) {
        size_t at = msg_open(b, F_ID_ANNOTATION_NAMES);
        f_uint(b, F_INTERNED_IID, (uint64_t)i);
        f_str(b, F_INTERNED_NAME, annotation_names[i]);
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
    w->st.slices += type != TYPE_SLICE_END;
    return at;
}

static void ev_close(struct writer *w, size_t at)
{
    msg_close(&w->pk, at);
    packet_close(w);
}

/* A slice's end, dur after its start. */
static void slice_end(struct writer *w, uint64_t track, int64_t global, int64_t dur)
{
    ev_close(w, ev_open(w, TYPE_SLICE_END, track, global + (dur > 0 ? dur : 0), NULL, 0));
}

/* An annotation of the TrackEvent being built: a_open, its value, then
 * msg_close. */
static size_t a_open(struct writer *w, int name)
{
    size_t at = msg_open(&w->pk, F_TE_ANNOTATIONS);
    f_uint(&w->pk, F_DA_NAME_IID, (uint64_t)name);
    return at;
}

static void a_uint(struct writer *w, int name, uint64_t v)
{
    size_t at = a_open(w, name);
    f_uint(&w->pk, F_DA_UINT, v);
    msg_close(&w->pk, at);
}

static void a_int(struct writer *w, int name, int64_t v)
{
    size_t at = a_open(w, name);
    f_int(&w->pk, F_DA_INT, v);
    msg_close(&w->pk, at);
}

static void a_double(struct writer *w, int name, double v)
{
    size_t at = a_open(w, name);
    f_double(&w->pk, F_DA_DOUBLE, v);
    msg_close(&w->pk, at);
}

static void a_bool(struct writer *w, int name, int v)
{
    size_t at = a_open(w, name);
    f_uint(&w->pk, F_DA_BOOL, v != 0);
    msg_close(&w->pk, at);
}

static void a_str(struct writer *w, int name, const char *v)
{
    size_t at = a_open(w, name);
    f_str(&w->pk, F_DA_STRING, v);
    msg_close(&w->pk, at);
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

/* A process track's uuid; its child tracks follow it (short varints). */
static uint64_t proc_uuid(int pid)
{
    return (uint64_t)pid << TRACK_BITS;
}

static uint64_t track(struct writer *w, int kind, int32_t file, uint64_t id, const char *name,
                      int sort)
{
    for (int i = w->ntracks - 1; i >= 0; i--) {
        const struct track *t = &w->tracks[i];
        if (t->kind == kind && t->file == file && t->id == id) return t->uuid;
    }
    if (w->ntracks + 2 >= 1 << TRACK_BITS) return w->proc_uuid + 1; /* the rest join steps */
    if (w->ntracks == w->cap) {
        int cap = w->cap ? 2 * w->cap : 32;
        void *p = realloc(w->tracks, (size_t)cap * sizeof *w->tracks);
        if (!p) return w->proc_uuid + 1; /* out of memory: the event joins the steps track */
        w->tracks = p;
        w->cap = cap;
    }
    uint64_t uuid = w->proc_uuid + (uint64_t)w->ntracks + 2; /* +1 is the steps track */
    w->tracks[w->ntracks++] = (struct track){(uint8_t)kind, file, 0, id, uuid};
    track_descriptor(w, uuid, w->proc_uuid, name, 0, sort, kind == TRK_CPU);
    return uuid;
}

/* The track behind a uuid track() gave, or NULL (the steps track, which
 * events join when tracks ran out). */
static struct track *track_of(struct writer *w, uint64_t uuid)
{
    uint64_t i = uuid - w->proc_uuid - 2;
    return uuid >= w->proc_uuid + 2 && i < (uint64_t)w->ntracks ? &w->tracks[i] : NULL;
}

/* The track of file w->f.fi that sp_export_file_track names. */
static uint64_t file_track(struct writer *w, int kind, int64_t device, uint64_t id)
{
    struct sp_export_track t;
    sp_export_file_track(w->m, w->f.fi, w->f.fsort, kind, device, id, &t);
    return track(w, t.kind, t.file, t.id, t.name, t.sort);
}

static uint64_t comm_track(struct writer *w, uint64_t comm)
{
    char name[64];
    snprintf(name, sizeof name, "NCCL comm %016" PRIx64, comm);
    return track(w, TRK_COMM, -1, comm, name, sp_export_kind_sort[TRK_COMM] + w->ntracks);
}

/* ---- the window ---- */

static int64_t global_of(const struct writer *w, int64_t t)
{
    return sp_model_global(w->m, &w->m->ranks[w->ri], t);
}

static int in_window(const struct writer *w, int64_t t, int64_t dur)
{
    return sp_export_in_window(w->w0, w->w1, t, dur);
}

/* ---- events of the traces ---- */

/* A slice of a trace event: its begin (annotations follow, then
 * ev_close) after which the caller writes slice_end. */
static size_t trace_slice(struct writer *w, uint64_t track, int64_t t, const char *name, int cat)
{
    w->st.events++;
    return ev_open(w, TYPE_SLICE_BEGIN, track, global_of(w, t), name, cat);
}

static int on_gpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_gpu *g = &ev->gpu;
    if (!in_window(w, (int64_t)ev->t, (int64_t)g->dur)) return 0;
    char buf[1024];
    const char *name = buf, *k = sp_reader_string(r, g->name);
    if (g->kind != SP_GPU_MEMCPY && g->kind != SP_GPU_MEMSET && k[0])
        name = k; /* a kernel: its name as recorded, no copy */
    else
        sp_export_gpu_name(r, g, buf, sizeof buf);
    uint64_t tr = file_track(w, TRK_STREAM, (int64_t)g->device, g->stream);
    /* the category is the kind's name, as in the JSON; "gpu" for one unknown */
    const char *kind = sp_export_enum(SP_EV_GPU, "kind", g->kind, "gpu");
    int cat = C_GPU;
    for (int i = C_KERNEL; i <= C_GPU; i++)
        if (!strcmp(kind, category_names[i])) cat = i;
    size_t at = trace_slice(w, tr, (int64_t)ev->t, name, cat);
    a_uint(w, A_CORRELATION, g->correlation);
    if (g->bytes) a_uint(w, A_BYTES, g->bytes);
    ev_close(w, at);
    slice_end(w, tr, global_of(w, (int64_t)ev->t), (int64_t)g->dur);
    return 0;
}

/* A host call's slice: slice_open writes its begin (annotations follow),
 * slice_close its end. */
struct slice {
    uint64_t tr;
    int64_t t, dur;
    size_t at;
};

/* 0 (nothing written) when the call is outside the window. */
static int slice_open(struct writer *w, const struct sp_event *ev, int cat, struct slice *x)
{
    struct sp_export_slice s;
    if (!sp_export_host_slice(ev, w->w0, w->w1, &s)) return 0;
    x->tr = file_track(w, s.kind, 0, ev->tid);
    x->t = s.t;
    x->dur = s.dur;
    x->at = trace_slice(w, x->tr, s.t, s.name, cat);
    return 1;
}

static void slice_close(struct writer *w, const struct slice *x)
{
    ev_close(w, x->at);
    slice_end(w, x->tr, global_of(w, x->t), x->dur);
}

static int on_cuda(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_cuda *c = &ev->cuda;
    struct slice x;
    if (!slice_open(w, ev, C_CUDA, &x)) return 0;
    a_uint(w, A_STREAM, c->stream);
    a_uint(w, A_CORRELATION, c->correlation);
    const char *k = sp_reader_string(r, c->name), *stack = sp_reader_string(r, c->stack);
    if (k[0]) a_str(w, A_KERNEL, k);
    if (stack[0]) a_str(w, A_STACK, stack);
    slice_close(w, &x);
    return 0;
}

static int on_nccl(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    const struct sp_ev_nccl *n = &ev->nccl;
    struct slice x;
    if (!slice_open(w, ev, C_NCCL_CALL, &x)) return 0;
    char comm[20];
    snprintf(comm, sizeof comm, "%016" PRIx64, n->comm);
    a_str(w, A_COMM, comm);
    a_uint(w, A_SEQ, n->seq);
    a_uint(w, A_BYTES, n->bytes);
    slice_close(w, &x);
    return 0;
}

static int on_io(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_io *io = &ev->io;
    struct slice x;
    if (!slice_open(w, ev, C_IO, &x)) return 0;
    a_str(w, A_OP, sp_export_enum(SP_EV_IO, "op", io->op, "io"));
    a_int(w, A_FD, (int64_t)io->fd);
    a_int(w, A_RET, (int64_t)io->ret);
    a_uint(w, A_BYTES, io->bytes);
    a_str(w, A_FD_KIND, sp_export_enum(SP_EV_IO, "fd_kind", io->fd_kind, "unknown"));
    const char *path = sp_reader_string(r, io->path);
    if (path[0]) a_str(w, A_PATH, path);
    slice_close(w, &x);
    return 0;
}

static int on_wait(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    const struct sp_ev_wait *wt = &ev->wait;
    struct slice x;
    if (!slice_open(w, ev, C_WAITS, &x)) return 0;
    a_uint(w, A_NFDS, wt->nfds);
    a_int(w, A_RET, (int64_t)wt->ret);
    a_str(w, A_FD_KIND, sp_export_enum(SP_EV_WAIT, "fd_kind", wt->fd_kind, "unknown"));
    slice_close(w, &x);
    return 0;
}

static int on_marker(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_marker *k = &ev->marker;
    int64_t dur = k->kind == SP_MARK_RANGE ? (int64_t)k->dur : 0;
    if (!in_window(w, (int64_t)ev->t, dur)) return 0;
    uint64_t tr = file_track(w, TRK_THREAD, 0, ev->tid);
    const char *name = sp_reader_string(r, k->name);
    int64_t g = global_of(w, (int64_t)ev->t);
    w->st.events++;
    struct track *t = track_of(w, tr);
    switch (k->kind) {
    case SP_MARK_PUSH:
        if (!t) /* no track of its own left: a range would nest in the steps' */
            break;
        ev_close(w, ev_open(w, TYPE_SLICE_BEGIN, tr, g, name, C_MARKER));
        t->pushed++;
        break;
    case SP_MARK_POP:
        /* A pop whose push is not in the timeline (before the window, or
         * in a chunk the trace lost) ends nothing: Perfetto would read
         * it as the end of whatever slice is open, or of none. */
        if (!t || !t->pushed)
            break;
        t->pushed--;
        ev_close(w, ev_open(w, TYPE_SLICE_END, tr, g, NULL, 0));
        break;
    case SP_MARK_RANGE:
        ev_close(w, ev_open(w, TYPE_SLICE_BEGIN, tr, g, name, C_MARKER));
        slice_end(w, tr, g, dur);
        break;
    default:
        ev_close(w, ev_open(w, TYPE_INSTANT, tr, g, name, C_MARKER));
    }
    return 0;
}

static int on_cpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    char name[64];
    double cores;
    if (!sp_export_cpu_cores(w->m, &w->f, w->w0, w->w1, ev, &cores, name, sizeof name))
        return 0;
    uint64_t tr = track(w, TRK_CPU, w->f.fi, 0, name, w->f.fsort + sp_export_kind_sort[TRK_CPU]);
    size_t at = ev_open(w, TYPE_COUNTER, tr, global_of(w, (int64_t)ev->t), NULL, 0);
    f_double(&w->pk, F_TE_DOUBLE_COUNTER, cores);
    ev_close(w, at);
    w->st.events++;
    return 0;
}

static int on_proc(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    if (!in_window(w, (int64_t)ev->t, 0)) return 0;
    char name[1200];
    sp_export_proc_name(r, ev, name, sizeof name);
    w->st.events++;
    ev_close(w, ev_open(w, TYPE_INSTANT, file_track(w, TRK_THREAD, 0, ev->tid), global_of(w, (int64_t)ev->t),
                        name, C_PROCESS));
    return 0;
}

/* A thread's name: its track described again under the new name, as the
 * JSON gives a second thread_name. */
static int on_thread(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    struct sp_export_track t;
    sp_export_file_track(w->m, w->f.fi, w->f.fsort, TRK_THREAD, 0, ev->tid, &t);
    uint64_t tr = track(w, t.kind, t.file, t.id, t.name, t.sort);
    sp_export_thread_name(w->m, w->f.fi, r, ev, t.name, sizeof t.name);
    track_descriptor(w, tr, w->proc_uuid, t.name, 0, t.sort, 0);
    return 0;
}

static const struct sp_pass perfetto_pass = SP_EXPORT_PASS;

/* ---- what the model knows: steps, findings, collectives ---- */

/* The categories of step k as child slices of its bar, end to end. */
static void write_breakdown(struct writer *w, uint64_t tr, int k)
{
    const struct sp_rank *r = &w->m->ranks[w->ri];
    int64_t t = global_of(w, r->steps[k].start), span = r->steps[k].end - r->steps[k].start;
    double sum = 0;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        sum += r->cat[k][c];
    double scale = sum > (double)span && sum > 0 ? (double)span / sum : 1;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++) {
        int64_t d = (int64_t)(r->cat[k][c] * scale);
        if (d <= 0) continue;
        size_t at = ev_open(w, TYPE_SLICE_BEGIN, tr, t, sp_model_cat_name(c), C_BREAKDOWN);
        if (scale < 1) a_double(w, A_CAT_MS, r->cat[k][c] / NS_PER_MS); /* else the duration */
        ev_close(w, at);
        slice_end(w, tr, t, d);
        t += d;
    }
}

static void write_steps(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    uint64_t tr = w->proc_uuid + 1;
    int k0, k1;
    sp_export_step_range(m, r, w->o, &k0, &k1);
    for (int k = k0; k <= k1; k++) {
        int num = k + m->step_number0;
        int analyzed = k >= m->step_lo && k < m->step_hi && r->cat;
        char name[64], findings[512];
        snprintf(name, sizeof name, "step %d", num);
        int64_t g = global_of(w, r->steps[k].start), dur = r->steps[k].end - r->steps[k].start;
        size_t at = ev_open(w, TYPE_SLICE_BEGIN, tr, g, name, C_STEP);
        a_int(w, A_STEP, num);
        a_double(w, A_STEP_MS, (double)dur / NS_PER_MS);
        a_bool(w, A_ANALYZED, analyzed);
        if (analyzed && !w->o->host_only)
            a_double(w, A_OVERLAP_MS, r->cat[k][SP_CAT_OVERLAP] / NS_PER_MS);
        if (!w->o->host_only && sp_export_step_findings(m, r, num, findings, sizeof findings))
            a_str(w, A_FINDINGS, findings);
        ev_close(w, at);
        if (analyzed && !w->o->host_only) write_breakdown(w, tr, k);
        slice_end(w, tr, g, dur);
    }
    for (int i = 0; i < m->nfindings && !w->o->host_only; i++) {
        const struct sp_finding *f = &m->findings[i];
        int k = sp_export_finding_step(m, r, f, k0, k1);
        if (k < 0) continue;
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        char name[128], steps[32];
        sp_export_finding_name(f, name, sizeof name);
        snprintf(steps, sizeof steps, "%d-%d", f->step_first, f->step_last);
        size_t at = ev_open(w, TYPE_INSTANT, tr, global_of(w, r->steps[k].start), name, C_FINDING);
        a_str(w, A_CAUSE, ci->name);
        a_str(w, A_SEVERITY, sp_model_severity_name(f->severity));
        a_double(w, A_GAIN, f->gain);
        a_double(w, A_IF_FIXED, f->step_ms_if_fixed);
        a_str(w, A_STEPS, steps);
        a_str(w, A_EVIDENCE, f->evidence);
        a_str(w, A_FIRST_TRY, sp_finding_first_try(f));
        ev_close(w, at);
    }
}

static int call_in_window(const struct writer *w, int ri, const struct sp_coll_call *c)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[ri];
    if (!sp_export_rank_wanted(m, w->o, ri) || !w->detail[ri]) return 0;
    if (w->o->step_first < 0 || !r->nsteps) return 1;
    int k0, k1;
    sp_export_step_range(m, r, w->o, &k0, &k1);
    return k0 <= k1 && c->start < r->steps[k1].end &&
           (c->start >= r->steps[k0].start || c->end > r->steps[k0].start);
}

/* The flow ids on a transfer slice: the last-arriving rank's starts one
 * arrow to each other participant; each other one ends its own. */
static void write_flows(struct writer *w, const struct sp_coll_call *c)
{
    const struct sp_model *m = w->m;
    if (c->inst < 0 || (size_t)c->inst >= w->c.ninsts) return;
    const struct sp_export_inst *ii = &w->c.insts[c->inst];
    if (ii->n < 2) return;
    const struct sp_coll_ref *last = &w->c.parts[ii->first + ii->last];
    const struct sp_coll_call *lc = &m->ranks[last->r].calls[last->c];
    if (!call_in_window(w, last->r, lc)) return;
    for (int32_t p = 0; p < ii->n; p++) {
        const struct sp_coll_ref *x = &w->c.parts[ii->first + p];
        if (p == ii->last) continue;
        int start = last->r == w->ri, finish = x->r == w->ri;
        if (!start && !finish) continue;
        if (!call_in_window(w, x->r, &m->ranks[x->r].calls[x->c])) continue;
        uint64_t id = (uint64_t)c->inst * (uint64_t)m->nranks + (uint64_t)x->r + 1;
        f_fixed64(&w->pk, start ? F_TE_FLOW_IDS : F_TE_TERMINATING_FLOW_IDS, id);
        w->st.flows += start;
    }
}

static void write_collectives(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    for (size_t i = 0; i < r->ncalls; i++) {
        const struct sp_coll_call *c = &r->calls[i];
        if (!in_window(w, c->start, c->end - c->start)) continue;
        char name[160], op[64], b[32], comm[20];
        sp_text_bytes(c->bytes, b, sizeof b);
        snprintf(op, sizeof op, "%s %s", sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), b);
        snprintf(comm, sizeof comm, "%016" PRIx64, c->comm);
        uint64_t tr = comm_track(w, c->comm);
        int64_t wait = c->wait < c->end - c->start ? c->wait : c->end - c->start;
        wait = wait > 0 ? wait : 0;
        int last_ri = sp_export_last_ri(&w->c, c);
        for (int half = 0; half < 2; half++) {
            snprintf(name, sizeof name, "%s %s", half ? "transfer" : "wait", op);
            int64_t g = global_of(w, half ? c->start + wait : c->start);
            size_t at = ev_open(w, TYPE_SLICE_BEGIN, tr, g, name, half ? C_TRANSFER : C_WAIT);
            a_uint(w, A_SEQ, sp_op_is_p2p(c->op) ? (uint64_t)(c->key & ((1ULL << 21) - 1)) : c->seq);
            a_int(w, A_LAST_RANK, last_ri >= 0 ? m->ranks[last_ri].rank : -1);
            a_str(w, A_COMM, comm);
            if (half) { /* the op's facts once, on its transfer */
                a_str(w, A_OP, sp_export_enum(SP_EV_NCCL, "op", c->op, "op"));
                a_uint(w, A_BYTES, c->bytes);
                a_int(w, A_INSTANCE, c->inst);
                a_double(w, A_WAIT_MS, (double)wait / NS_PER_MS);
                a_double(w, A_OP_MS, (double)(c->end - c->start) / NS_PER_MS);
                a_str(w, A_TIMING, sp_export_timing(c));
                write_flows(w, c);
            }
            ev_close(w, at);
            slice_end(w, tr, g, half ? c->end - c->start - wait : wait);
        }
    }
}

/* ---- the what-if group ---- */

static void write_whatif(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    int pid = WHATIF_PID_BASE + w->pid;
    char name[300];
    const char *cause = w->o->whatif == SP_CAUSE_N ? "none (replayed as recorded)"
                                                   : sp_cause_info(w->o->whatif)->name;
    snprintf(name, sizeof name, "rank %d what-if: %s", r->rank, cause);
    /* the group's tracks are its own: the rank's are done with */
    w->proc_uuid = proc_uuid(pid);
    w->ntracks = 0;
    track_descriptor(w, w->proc_uuid, 0, name, pid, 0, 0);
    uint64_t steps = w->proc_uuid + 1;
    track_descriptor(w, steps, w->proc_uuid, "steps (replayed)", 0, sp_export_kind_sort[TRK_STEPS], 0);
    int64_t prev = INT64_MIN;
    for (size_t j = 0; j < r->nnodes; j++) {
        const struct sp_rnode *nd = &r->nodes[j];
        int64_t a = w->wa[w->ri][j], e = w->we[w->ri][j];
        if (a == INT64_MIN) break;
        if (!nd->ncalls) {
            int num = m->step_lo + nd->step + m->step_number0;
            int64_t s = prev;
            if (prev == INT64_MIN)
                s = r->nsteps > m->step_lo ? sp_model_global(m, r, r->steps[m->step_lo].start) : a;
            char sname[64];
            snprintf(sname, sizeof sname, "step %d", num);
            size_t at = ev_open(w, TYPE_SLICE_BEGIN, steps, s, sname, C_STEP);
            a_int(w, A_STEP, num);
            a_double(w, A_STEP_MS, (double)(a - s) / NS_PER_MS);
            ev_close(w, at);
            slice_end(w, steps, s, a - s);
            prev = a;
            continue;
        }
        if (!w->detail[w->ri]) continue;
        for (uint32_t k = 0; k < nd->ncalls; k++) {
            const struct sp_coll_call *c = &r->calls[nd->call + k];
            char op[64], b[32], slice[96];
            sp_text_bytes(c->bytes, b, sizeof b);
            snprintf(op, sizeof op, "%s %s", sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), b);
            uint64_t tr = comm_track(w, c->comm);
            int64_t last = sp_export_replayed_last(m, &w->c, w->wa, c, a);
            last = last < e ? last : e;
            for (int half = 0; half < 2; half++) {
                snprintf(slice, sizeof slice, "%s %s", half ? "transfer" : "wait", op);
                int64_t g = half ? last : a;
                size_t at = ev_open(w, TYPE_SLICE_BEGIN, tr, g, slice, half ? C_TRANSFER : C_WAIT);
                a_uint(w, A_SEQ, c->seq);
                ev_close(w, at);
                slice_end(w, tr, g, half ? e - last : last - a);
            }
        }
    }
}

/* ---- the whole ---- */

static void write_rank(struct writer *w)
{
    struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    w->pid = r->rank + 1;
    w->proc_uuid = proc_uuid(w->pid);
    w->ntracks = 0;
    sp_export_window(w->m, w->ri, w->o, &w->w0, &w->w1);
    char name[400];
    int pid0 = r->nfiles ? r->files[0]->pid : -1;
    snprintf(name, sizeof name, "rank %d (%s, pid %d)%s", r->rank, m->hosts[r->host], pid0,
             w->detail[w->ri] ? "" : " summary");
    track_descriptor(w, w->proc_uuid, 0, name, w->pid, 0, 0);
    track_descriptor(w, w->proc_uuid + 1, w->proc_uuid, "steps", 0, sp_export_kind_sort[TRK_STEPS], 0);
    write_steps(w);
    if (w->detail[w->ri]) {
        write_collectives(w);
        sp_export_feed(m, r, &perfetto_pass, w, &w->f);
        w->st.detailed++;
    }
    if (w->wa) write_whatif(w);
    w->st.ranks++;
}

/* Which ranks are written in full: all of them, or in a summary the
 * ranks the findings name (a finding that names every rank names none). */
static void choose_detail(struct writer *w)
{
    const struct sp_model *m = w->m;
    int wanted = 0, k0, k1, steps = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (!sp_export_rank_wanted(m, w->o, i)) continue;
        wanted++;
        sp_export_step_range(m, &m->ranks[i], w->o, &k0, &k1);
        steps = k1 - k0 + 1 > steps ? k1 - k0 + 1 : steps;
    }
    w->summary = w->o->detail == SP_EXPORT_SUMMARY ||
                 (w->o->detail == SP_EXPORT_AUTO &&
                  (int64_t)wanted * steps > SUMMARY_RANK_STEPS);
    memset(w->detail, !w->summary, (size_t)m->nranks);
    if (!w->summary) return;
    int named = 0;
    for (int f = 0; f < m->nfindings && !w->o->host_only && named < DETAIL_MAX; f++) {
        const struct sp_finding *fd = &m->findings[f];
        if (fd->nranks >= m->nranks) continue;
        for (int k = 0; k < fd->nranks && named < DETAIL_MAX; k++)
            for (int i = 0; i < m->nranks; i++)
                if (m->ranks[i].rank == fd->ranks[k] && !w->detail[i] &&
                    sp_export_rank_wanted(m, w->o, i)) {
                    w->detail[i] = 1;
                    named++;
                }
    }
}

int sp_export_perfetto(struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                       struct sp_export_stats *st)
{
    struct writer w = {.out = out, .m = m, .o = o};
    w.origin = sp_export_origin(m);
    w.pk = (struct buf){malloc(PACKET_MAX), 0, PACKET_MAX};
    w.fresh = (struct buf){malloc(PACKET_MAX), 0, PACKET_MAX};
    w.outbuf = (struct buf){malloc(OUT_BUFFER), 0, OUT_BUFFER};
    w.detail = calloc((size_t)m->nranks + 1, 1);
    int rc = w.pk.p && w.fresh.p && w.outbuf.p && w.detail && sp_export_colls_gather(m, &w.c) == 0 ? 0 : -1;
    if (rc == 0 && o->whatif >= 0) {
        if (sp_export_replay(m, o->whatif, &w.wa, &w.we) == 0)
            w.st.whatif_ok = 1;
        else
            sp_model_warn(
                m,
                "what-if %s: the replay could not remove it in this run; the timeline has the "
                "recorded groups only",
                o->whatif == SP_CAUSE_N ? "none" : sp_cause_info(o->whatif)->name);
    }
    if (rc == 0) {
        choose_detail(&w);
        w.st.summary = w.summary;
        write_preamble(&w);
        for (int i = 0; i < m->nranks; i++) {
            if (!sp_export_rank_wanted(m, o, i)) continue;
            w.ri = i;
            write_rank(&w);
            sp_model_progress(m, "export", i + 1, m->nranks);
        }
        flush_out(&w);
        if (ferror(out)) rc = -1;
    }
    sp_export_replay_free(m, w.wa, w.we);
    sp_export_colls_free(&w.c);
    for (size_t i = 0; i < w.names_cap; i++)
        free(w.names[i].s);
    free(w.names);
    free(w.tracks);
    free(w.detail);
    free(w.pk.p);
    free(w.fresh.p);
    free(w.outbuf.p);
    if (st) *st = w.st;
    return rc;
}

double sp_export_perfetto_estimate(const struct sp_model *m, const struct sp_export_opts *o)
{
    double events = 0, steps = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (!sp_export_rank_wanted(m, o, i)) continue;
        for (int fi = 0; fi < m->nfrecs; fi++)
            if (m->frecs[fi].ok && m->frecs[fi].rank == m->ranks[i].rank)
                events += (double)m->frecs[fi].events;
        steps += m->ranks[i].nsteps;
    }
    return events * PB_BYTES_PER_EVENT + steps * PB_BYTES_PER_STEP;
}
