/*
 * reader.c - the streaming trace reader.
 *
 * Reading order: the frames, from frames_offset to the end of the file,
 * then the chunks a process left in its slots (it was killed, or is still
 * running) whose chunk id no intact frame carried.  Within a chunk events
 * come in their thread's order.
 *
 * Trust nothing: every offset and size in the file is checked against the
 * file's size and against fixed limits before it is used, and data is read
 * with pread into buffers this reader owns (never mmap, which would fault
 * past the end of a file truncated under us).  Memory is one slot's worth
 * of chunk and compressed buffer, the strings arena, and one record per
 * slot that held a chunk at open time - never proportional to the number
 * of events.
 *
 * Damage is skipped, counted and described, never fatal after open:
 *   - a frame header whose CRC fails: scan forward byte by byte for the next
 *     frame magic whose header CRC holds, and say how many bytes were lost.
 *     Holes (SEEK_DATA/SEEK_HOLE, where the file system tells) are stepped
 *     over unread: they read as zeros, and no frame magic is zero.  The
 *     data scanned is bounded (scan_limit): past it the frames are given
 *     up, with the offset and the bytes left unread said;
 *   - a payload whose CRC fails, or that does not decompress to the size
 *     its header claims: skip exactly that frame (its header is trusted);
 *   - a frame cut short by the end of the file: stop reading frames (the
 *     chunk usually survives in its slot, which is read next);
 *   - a malformed event inside a chunk: the rest of that chunk is skipped.
 * Event types this reader does not know (added by a newer writer) are
 * skipped silently, as the format's compatibility rules promise.
 *
 * A frame in the column layout (columns.h) is decoded straight from its
 * columns, with no rows rebuilt: a block of one type's events at a time,
 * column after column, handed out in the chunk's order (sp_reader_next_ref
 * in place, sp_reader_next_refs those decoded already a batch at a time,
 * sp_reader_next as a copy); one whose columns do not hold together is
 * skipped whole.  A field found 0 in every event of a block is not
 * stored again for a run of 0s (type_block's zero), nor one found the
 * same one-byte varint in a whole block for a run of that byte
 * (type_block's same).  A type mask (sp_reader_set_types) is fixed for a chunk
 * at its start: masked types are stepped over by their length in rows,
 * by one byte of the type stream in columns, and their codec memory is
 * left alone, which is exact because only a type's own events use it.
 * A field mask (sp_reader_set_fields) is fixed per chunk the same way: in
 * columns a left-out field's column is simply never read (every column
 * has its own cursor, so the others do not move), and a DS field's memory
 * goes stale only for a field nobody reads until the chunk ends; in rows
 * the event is decoded whole and the left-out fields are cleared, so both
 * layouts give the same answer.  Duration fields are always read: the
 * next event's time is counted from this one's end.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "codec.h"
#include "columns.h"
#include "sprof.h"
#include "summary.h"

#define SP_MIN_SLOT_SIZE 1024u
#define SP_MAX_SLOT_SIZE (64u * 1024u * 1024u)
#define SP_MAX_SLOT_COUNT 65536u
#define SP_MAX_STRINGS_SIZE (1ull << 31)
#define SP_MAX_HEADER_SIZE (1u << 20)
#define SP_FRAME_HCRC_BYTES 28u
#define SP_TLV_HEAD 8u
#define SP_TLV_ALIGN 8u
#define DIAG_MAX 65536u            /* bytes of diagnostics kept; later ones counted */
#define SCAN_WINDOW 65536u         /* bytes read at a time while resynchronising */
#define SCAN_LIMIT_MIN (64u << 20) /* data scanned for the next frame, at least */

enum phase { PHASE_FRAMES,
             PHASE_SLOTS,
             PHASE_DONE };

/* A chunk found in a slot at open, recovered unless a frame carried it. */
struct slot_chunk {
    uint64_t chunk_id;
    uint32_t slot;
    uint32_t seen;
};

/* The decoded events of one type of a column chunk (see fill_block). */
struct type_block {
    const struct sp_event *next, *end; /* the next event to hand out, the block's end */
    uint32_t left;                     /* the type's events in the chunk not decoded yet */
    uint32_t bad;                      /* the type's event after the block is malformed */
    uint64_t dirty;                    /* fields written since the block was last cleared */
    uint64_t zero;                     /* fields 0 in every event of the block */
    uint64_t same;                     /* fields of one value in every event of the block: */
    uint8_t same_byte[SP_MAX_COLUMNS]; /* per field, the one-byte varint that gave it */
    uint64_t tid;                      /* the tid in every event of the block, NO_TID: not set */
};
struct blocks;

/* At most this many type ids handed out from a chunk let the reader find
 * their events in the type stream 16 bytes at a time (plan_sparse). */
#define SPARSE_IDS 2

/* A selection (sp_reader_select): the field's index and its values kept,
 * and the time window outside which every event is kept. */
struct select {
    int field; /* -1: none */
    uint64_t values, lo, span;
};

struct sp_reader {
    int fd;
    uint64_t file_size;
    uint64_t frames_start, frames_stop; /* SP_TLV_FRAMES, 0 when absent */
    uint64_t *moved;                    /* chunk ids of the frames in [start, stop) */
    size_t nmoved, moved_cap;
    int moved_sorted;
    struct sp_file_info info;
    uint32_t slot_cap; /* event bytes a slot holds */

    uint8_t *strings;
    uint64_t strings_len;

    struct slot_chunk *chunks; /* sorted by chunk_id */
    uint32_t nchunks, next_chunk;

    enum phase phase;
    uint64_t pos; /* next frame's offset */
    int truncation_noted;

    uint8_t *chunk; /* the chunk being streamed, + SP_WORD bytes */
    uint8_t *zeros; /* the columns an older writer did not have */
    size_t chunk_len, chunk_pos;
    uint64_t chunk_at; /* a column chunk's frame offset, for diagnostics */
    uint64_t chunk_id;
    struct sp_codec_state codec; /* the chunk's codec memory */
    uint32_t tid;
    int chunk_from_slot;
    int columnar;                    /* the chunk is in the column layout */
    struct sp_columns cols;          /* its cursors, when columnar */
    uint32_t types;                  /* the type mask in force for this chunk */
    uint32_t types_next;             /* sp_reader_set_types: from the next chunk */
    uint64_t fields[SP_EV_MAX];      /* per type, the fields filled in this chunk */
    uint64_t fields_next[SP_EV_MAX]; /* sp_reader_set_fields: from the next chunk */
    int partial, partial_next;       /* some type has fields left out */
    struct select sel[SP_EV_MAX];    /* sp_reader_select: in force for this chunk */
    struct select sel_next[SP_EV_MAX];
    int selecting, selecting_next; /* some type has a selection */
    uint8_t act[SP_TYPE_IDS];      /* per type id, what this chunk does: enum act */
    struct blocks *blocks;         /* a column chunk's events, decoded by type */
    struct sp_event row;           /* a row chunk's event */
    struct type_block block[SP_EV_MAX];
    struct type_block *block_of[SP_TYPE_IDS]; /* per type id: its block, NULL when skipped */
    uint8_t sparse[SPARSE_IDS];               /* plan_sparse: the ids handed out, when few */
    unsigned nsparse;                         /* how many; 0: the stream is read byte by byte */

    uint8_t *cbuf;
    size_t cbuf_cap;
    size_t chunk_alloc, cbuf_alloc; /* bytes allocated (a spare's may be more) */
    uint64_t scan_limit;            /* bytes of data resync reads before giving up */
    ZSTD_DCtx *dctx;

    sp_summary_fn summary_fn; /* sp_reader_set_summary */
    void *summary_ctx;
    struct sp_summary_build *summary; /* the chunk's, stored or computed */

    char *diag;
    size_t diag_len;
    uint64_t diag_lost;
    struct sp_reader_stats stats;
};

/* ---- small helpers ------------------------------------------------------- */

static int read_at(const struct sp_reader *r, void *buf, size_t len, uint64_t off)
{
    if (off > r->file_size || len > r->file_size - off)
        return -1;
    size_t done = 0;
    while (done < len) {
        ssize_t n = pread(r->fd, (uint8_t *)buf + done, len - done, (off_t)(off + done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        done += (size_t)n;
    }
    return 0;
}

static void add_diag(struct sp_reader *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void add_diag(struct sp_reader *r, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = strlen(line);
    if (r->diag_len + len + 2 > DIAG_MAX) {
        r->diag_lost++;
        return;
    }
    memcpy(r->diag + r->diag_len, line, len);
    r->diag_len += len;
    r->diag[r->diag_len++] = '\n';
    r->diag[r->diag_len] = 0;
}

/* ---- header and TLVs ------------------------------------------------------- */

static int check_magic(const struct sp_file_header *h, uint64_t size)
{
    if (size < sizeof h->magic || memcmp(h->magic, SP_MAGIC, sizeof h->magic))
        return SP_E_MAGIC;
    if (size < SP_HEADER_SIZE)
        return SP_E_TRUNCATED;
    if (h->version == 0)
        return SP_E_CORRUPT;
    if (h->version > SP_VERSION)
        return SP_E_VERSION;
    if (h->version < SP_VERSION_OLDEST)
        return SP_E_OLD_VERSION;
    return 0;
}

/* The regions must be in order, within fixed limits, and not overlap. */
static int check_layout(const struct sp_file_header *h)
{
    if (h->header_size < sizeof *h || h->header_size > SP_MAX_HEADER_SIZE)
        return SP_E_CORRUPT;
    if (h->strings_offset < h->header_size || h->strings_offset > UINT64_MAX / 4 ||
        h->strings_size > SP_MAX_STRINGS_SIZE)
        return SP_E_CORRUPT;
    if (h->slots_offset < h->strings_offset + h->strings_size)
        return SP_E_CORRUPT;
    if (h->slot_size < SP_MIN_SLOT_SIZE || h->slot_size > SP_MAX_SLOT_SIZE ||
        h->slot_count > SP_MAX_SLOT_COUNT)
        return SP_E_CORRUPT;
    if (h->slots_offset > UINT64_MAX / 4 ||
        h->frames_offset < h->slots_offset + (uint64_t)h->slot_size * h->slot_count)
        return SP_E_CORRUPT;
    return 0;
}

static void copy_text(char *dst, size_t cap, const uint8_t *src, uint32_t len, char sep)
{
    size_t n = len < cap - 1 ? len : cap - 1;
    for (size_t i = 0; i < n; i++)
        dst[i] = src[i] ? (char)src[i] : sep;
    /* A trailing separator from a final NUL is noise. */
    while (n > 0 && dst[n - 1] == sep && sep != 0)
        n--;
    dst[n] = 0;
}

static void parse_tlvs(struct sp_reader *r, const uint8_t *page, size_t page_len)
{
    struct sp_file_info *in = &r->info;
    size_t at = sizeof(struct sp_file_header);
    size_t end = at + r->info.hdr.tlv_size;
    if (end > page_len)
        end = page_len;
    while (at + SP_TLV_HEAD <= end) {
        uint16_t id;
        uint32_t len;
        memcpy(&id, page + at, 2);
        memcpy(&len, page + at + 4, 4);
        if (id == 0 || len > end - at - SP_TLV_HEAD)
            break;
        const uint8_t *v = page + at + SP_TLV_HEAD;
        switch (id) {
        case SP_TLV_HOST: copy_text(in->host, sizeof in->host, v, len, 0); break;
        case SP_TLV_EXE: copy_text(in->exe, sizeof in->exe, v, len, 0); break;
        case SP_TLV_ARGV: copy_text(in->argv, sizeof in->argv, v, len, ' '); break;
        case SP_TLV_SOURCE: copy_text(in->source, sizeof in->source, v, len, 0); break;
        case SP_TLV_CLOCK: copy_text(in->clock, sizeof in->clock, v, len, 0); break;
        case SP_TLV_CLOCK_CAL: copy_text(in->clock_cal, sizeof in->clock_cal, v, len, 0); break;
        case SP_TLV_CUDA_DEVICES:
            copy_text(in->cuda_devices, sizeof in->cuda_devices, v, len, 0);
            break;
        case SP_TLV_RUN: copy_text(in->run, sizeof in->run, v, len, 0); break;
        case SP_TLV_FRAMES:
            if (len == 2 * sizeof(uint64_t)) {
                memcpy(&r->frames_start, v, sizeof(uint64_t));
                memcpy(&r->frames_stop, v + sizeof(uint64_t), sizeof(uint64_t));
            }
            break;
        default: break; /* unknown feature: skip */
        }
        at += (SP_TLV_HEAD + (size_t)len + SP_TLV_ALIGN - 1) / SP_TLV_ALIGN * SP_TLV_ALIGN;
    }
}

static int read_header(struct sp_reader *r)
{
    uint8_t page[SP_HEADER_SIZE] = {0};
    size_t n = r->file_size < SP_HEADER_SIZE ? (size_t)r->file_size : SP_HEADER_SIZE;
    if (read_at(r, page, n, 0) < 0)
        return SP_E_IO;
    struct sp_file_header *h = &r->info.hdr;
    memcpy(h, page, sizeof *h);
    int rc = check_magic(h, r->file_size);
    if (rc == 0)
        rc = check_layout(h);
    if (rc < 0)
        return rc;
    if (h->tlv_size > SP_HEADER_SIZE - sizeof *h)
        h->tlv_size = SP_HEADER_SIZE - sizeof *h;
    parse_tlvs(r, page, sizeof page);
    r->info.closed = (h->flags & SP_FLAG_CLOSED) != 0;
    r->slot_cap = h->slot_size - (uint32_t)sizeof(struct sp_slot_header);
    return 0;
}

/* The arena is read once; strings written after this are not seen. */
static int read_strings(struct sp_reader *r)
{
    const struct sp_file_header *h = &r->info.hdr;
    uint64_t len = h->strings_used < h->strings_size ? h->strings_used : h->strings_size;
    if (h->strings_offset >= r->file_size)
        len = 0;
    else if (len > r->file_size - h->strings_offset)
        len = r->file_size - h->strings_offset;
    r->strings = calloc(1, len + 1);
    if (!r->strings)
        return SP_E_NOMEM;
    if (len && read_at(r, r->strings, len, h->strings_offset) < 0)
        return SP_E_IO;
    r->strings_len = len;
    return 0;
}

const char *sp_reader_string(const struct sp_reader *r, uint64_t id)
{
    if (!r || id == 0 || id > r->strings_len)
        return "";
    uint64_t off = id - 1;
    uint32_t len;
    if (off + sizeof len > r->strings_len)
        return "";
    memcpy(&len, r->strings + off, sizeof len);
    uint64_t body = off + sizeof len;
    if (len == 0 || len > r->strings_len - body || r->strings[body + len - 1] != 0)
        return "";
    return (const char *)r->strings + body;
}

/* ---- slot chunks ------------------------------------------------------------- */

static uint64_t slot_offset(const struct sp_reader *r, uint32_t i)
{
    return r->info.hdr.slots_offset + (uint64_t)i * r->info.hdr.slot_size;
}

static int holds_chunk(const struct sp_slot_header *s)
{
    return s->magic == SP_SLOT_MAGIC && s->chunk_id != 0 && s->used != 0 &&
           (s->state == SP_SLOT_ACTIVE || s->state == SP_SLOT_FULL ||
            s->state == SP_SLOT_FLUSHING);
}

static int by_chunk_id(const void *a, const void *b)
{
    const struct slot_chunk *x = a, *y = b;
    return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

static int scan_slots(struct sp_reader *r)
{
    uint32_t count = r->info.hdr.slot_count;
    r->chunks = calloc(count ? count : 1, sizeof *r->chunks);
    if (!r->chunks)
        return SP_E_NOMEM;
    for (uint32_t i = 0; i < count; i++) {
        struct sp_slot_header s;
        if (read_at(r, &s, sizeof s, slot_offset(r, i)) < 0) {
            add_diag(r, "slots from %u on lie past the end of the file (%llu bytes): "
                        "file truncated",
                     i, (unsigned long long)r->file_size);
            break;
        }
        if (holds_chunk(&s))
            r->chunks[r->nchunks++] = (struct slot_chunk){s.chunk_id, i, 0};
    }
    qsort(r->chunks, r->nchunks, sizeof *r->chunks, by_chunk_id);
    return 0;
}

static void mark_seen(struct sp_reader *r, uint64_t chunk_id)
{
    struct slot_chunk key = {chunk_id, 0, 0};
    struct slot_chunk *c = bsearch(&key, r->chunks, r->nchunks, sizeof key, by_chunk_id);
    if (!c)
        return;
    /* Duplicate ids (damage) sit next to each other: mark them all. */
    while (c > r->chunks && c[-1].chunk_id == chunk_id)
        c--;
    for (; c < r->chunks + r->nchunks && c->chunk_id == chunk_id; c++)
        c->seen = 1;
}

/* ---- field masks ----------------------------------------------------------- */

/* The duration fields of a type, which are always read. */
#define RD_IS_DUR_U 0
#define RD_IS_DUR_S 0
#define RD_IS_DUR_D 0
#define RD_IS_DUR_DS 0
#define RD_IS_DUR_STR 0
#define RD_IS_DUR_DUR 1
#define RD_X_DUR_BIT(kind, field) b |= (uint64_t)RD_IS_DUR_##kind << i++;
static uint64_t dur_fields(unsigned type)
{
    uint64_t b = 0;
    unsigned i = 0;
    switch (type) {
#define RD_X_DUR_CASE(id, NAME, name, FIELDS) \
    case id:                                  \
        FIELDS(RD_X_DUR_BIT)                  \
        break;
        SP_EVENTS(RD_X_DUR_CASE)
#undef RD_X_DUR_CASE
    default:
        break;
    }
    (void)i;
    return b;
}
#undef RD_X_DUR_BIT

/* Every field of the type, as a mask. */
static uint64_t all_fields(unsigned type)
{
    unsigned n = sp_columns_of(type);
    return n <= 1 ? 0 : (n - 1 >= 64 ? UINT64_MAX : (UINT64_C(1) << (n - 1)) - 1);
}

static void take_fields(struct sp_reader *r)
{
    r->partial = r->partial_next;
    if (r->partial)
        memcpy(r->fields, r->fields_next, sizeof r->fields);
    r->selecting = r->selecting_next;
    if (r->selecting)
        memcpy(r->sel, r->sel_next, sizeof r->sel);
}

/* Whether the selection of the event's type leaves it out. */
static inline int left_out(const struct select *s, const struct sp_event *ev)
{
    uint64_t v;
    memcpy(&v, (const unsigned char *)&ev->nccl + (size_t)s->field * sizeof v, sizeof v);
    return v < 64 && !((s->values >> v) & 1) && ev->t - s->lo <= s->span;
}

/* What a column chunk does with each type id, worked out once per chunk
 * from the masks in force so that each event costs one table lookup. */
enum act { ACT_SKIP,
           ACT_ALL,
           ACT_SOME };

static int wanted(uint32_t mask, unsigned type);

static void plan_chunk(struct sp_reader *r)
{
    memset(r->act, ACT_SKIP, sizeof r->act);
    memset(r->block_of, 0, sizeof r->block_of);
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        if (sp_codec_known(t) && wanted(r->types, t)) {
            r->act[t] = !r->partial || r->fields[t] == UINT64_MAX ? ACT_ALL : ACT_SOME;
            r->block_of[t] = &r->block[t];
        }
}

/* The columns of `type` its action reads: none, all, or the delta and
 * the wanted fields (field i is column i + 1). */
static uint64_t columns_read(const struct sp_reader *r, unsigned type)
{
    switch (r->act[type]) {
    case ACT_ALL:
        return UINT64_MAX;
    case ACT_SOME:
        return (r->fields[type] | (r->selecting && r->sel[type].field >= 0 ? UINT64_C(1) << r->sel[type].field : 0))
                   << 1 |
               1;
    default:
        return 0;
    }
}

/* Checks, in an open column chunk, every column the plan will read (the
 * others are never touched, so they cannot lead a cursor astray).  0, or
 * SP_E_CORRUPT. */
static int check_planned_columns(struct sp_reader *r)
{
    for (unsigned t = 1; t < SP_EV_MAX; t++)
        if (r->act[t] != ACT_SKIP && sp_columns_check(&r->cols, t, columns_read(r, t)) < 0)
            return SP_E_CORRUPT;
    return 0;
}

/* Column chunks are decoded a block of events of one type at a time, one
 * column after the other: each column is a run of varints read in a tight
 * loop, where decoding event by event would jump between a type's columns
 * and pay a call and the field mask's tests per event.  The type stream
 * then hands out the decoded events in the chunk's order.  Only the
 * columns a plan reads are touched (the same ones, checked the same way,
 * as event by event), and the codec memory is the same: a type's memory is
 * only used by the type's own events, which are decoded in their order.
 * A varint that does not decode (a column's check cannot rule out one
 * longer than 64 bits) ends the block before the event it belongs to;
 * that event is then malformed where the type stream reaches it, as it
 * was when decoded alone. */
#define RD_BLOCK 64
#define NO_TID UINT64_MAX /* no event's: a tid is 32 bits */

/* Per type, its block: whole events, handed out in place. */
struct blocks {
    struct sp_event ev[SP_EV_MAX][RD_BLOCK];
};

/* The type's fields of e[i]: each decoder defines rd_ev as its type. */
#define RD_EV(i) ((rd_ev *)(base + (size_t)(i) * sizeof(struct sp_event)))
/* The stores of a column's loop (RD_COLUMN): the k-th event from the
 * loop's place q, k a constant, so that each store is one instruction
 * at a fixed displacement. */
#define RD_AT(k) (q + (size_t)(k) * sizeof(struct sp_event))
#define RD_BF_U(f, k, v) ((rd_ev *)RD_AT(k))->f = (v);
#define RD_BF_D(f, k, v) ((rd_ev *)RD_AT(k))->f = (v);
#define RD_BF_STR(f, k, v) ((rd_ev *)RD_AT(k))->f = (v);
#define RD_BF_DUR(f, k, v) ((rd_ev *)RD_AT(k))->f = (v);
#define RD_BF_S(f, k, v) ((rd_ev *)RD_AT(k))->f = sp_unzigzag(v);
/* A DS field's running value is kept in a local (acc) for the column's
 * loop and stored back after it: through prev, each event's store to the
 * block, which the compiler cannot tell apart from prev, reloaded it. */
#define RD_BF_DS(f, k, v) ((rd_ev *)RD_AT(k))->f = acc += (uint64_t)sp_unzigzag(v);
#define RD_PRE_U(f)
#define RD_PRE_D(f)
#define RD_PRE_STR(f)
#define RD_PRE_DUR(f)
#define RD_PRE_S(f)
#define RD_PRE_DS(f) uint64_t acc = prev->f;
#define RD_POST_U(f)
#define RD_POST_D(f)
#define RD_POST_STR(f)
#define RD_POST_DUR(f)
#define RD_POST_S(f)
#define RD_POST_DS(f) prev->f = acc;
/* Two-byte varints four to a word, three-byte ones two to six bytes: the
 * continuation bits such a word has (durations of launches and of
 * kernels, the gaps between launches). */
#define RD_CONT_2X4 0x0080008000800080ull
#define RD_BYTES_LOW 0x0101010101010101ull /* each byte's low bit */
#define RD_CONT_MASK_3X2 0x0000808080808080ull
#define RD_CONT_3X2 0x0000008080008080ull
#define RD_BYTES_3X2 0x0000ffffffffffffull
#define RD_HI_2X4 0xff00ff00ff00ff00ull /* each varint's second byte */
#define RD_MID_3X2 0x000000ff0000ff00ull
#define RD_HI_3X2 0x0000ff0000ff0000ull
#define RD_V2_BITS 0x3fff
#define RD_V3_BITS 0x1fffff
/* Such a word's varints joined in place, the k-th value at bit 16k (or
 * 24k) with nothing above it: with its continuation bits cleared, a
 * varint's byte j stands at 8j and must stand at 7j, so each byte is
 * lowered by (8j - 7j) bits by subtracting its excess (b 2^8j - b 2^7j),
 * which never borrows from the varint after it.  A few instructions for
 * the word, where each value on its own took three shifts and masks. */
static inline uint64_t rd_join_2x4(uint64_t x)
{
    uint64_t t = x ^ RD_CONT_2X4;
    return t - ((t & RD_HI_2X4) >> 1);
}
static inline uint64_t rd_join_3x2(uint64_t x)
{
    uint64_t t = (x & RD_BYTES_3X2) ^ RD_CONT_3X2, hi = t & RD_HI_3X2;
    /* b 2^16 - b 2^14 is 3/4 of b 2^16 (hi's bytes), in one lea and a shift */
    return t - ((t & RD_MID_3X2) >> 1) - ((hi * 3) >> 2);
}
/* A column's next n varints to STORE(field, k, value), the k-th from the
 * event at q (qbase for the first, then moved on): eight one-byte
 * varints at a time where a word holds them (no continuation bit in it),
 * four two-byte or two three-byte ones where it holds those (then word
 * after word while the next holds the same, without the tests before
 * them: a column of durations is most often one run), else one by one.  Each word's varints are the column's next ones (the column holds
 * n or more), so they never run past its end.  With SKIP0 (the field is
 * 0 in every event of the block, and a 0 varint stores 0), eight 0s are
 * not stored; nz is left non-zero when a value that may not be 0 was. */
#define RD_COLUMN(cur, STORE, STORE8, field, qbase, SKIP0)             \
    {                                                                  \
        const uint8_t *p = *(cur);                                     \
        char *q = (qbase);                                             \
        for (i = 0; i < n;) {                                          \
            uint64_t x;                                                \
            memcpy(&x, p, sizeof x);                                   \
            uint64_t cont = x & SP_CONT_BITS;                          \
            if (!cont && n - i >= 8) {                                 \
                nz |= x;                                               \
                if ((SKIP0) && !x) {                                   \
                    i += 8;                                            \
                    q += 8 * sizeof(struct sp_event);                  \
                    p += 8;                                            \
                    continue;                                          \
                }                                                      \
                STORE8(STORE, field, x)                                \
                i += 8;                                                \
                q += 8 * sizeof(struct sp_event);                      \
                p += 8;                                                \
                continue;                                              \
            }                                                          \
            if (cont == RD_CONT_2X4 && n - i >= 4) {                   \
                nz = 1;                                                \
                do {                                                   \
                    x = rd_join_2x4(x);                                \
                    STORE(field, 0, (x & RD_V2_BITS))                  \
                    STORE(field, 1, (x >> 16) & RD_V2_BITS)            \
                    STORE(field, 2, (x >> 32) & RD_V2_BITS)            \
                    STORE(field, 3, x >> 48)                           \
                    i += 4;                                            \
                    q += 4 * sizeof(struct sp_event);                  \
                    p += 8;                                            \
                    if (n - i < 4)                                     \
                        break;                                         \
                    memcpy(&x, p, sizeof x);                           \
                } while ((x & SP_CONT_BITS) == RD_CONT_2X4);           \
                continue;                                              \
            }                                                          \
            if ((x & RD_CONT_MASK_3X2) == RD_CONT_3X2 && n - i >= 2) { \
                nz = 1;                                                \
                do {                                                   \
                    x = rd_join_3x2(x);                                \
                    STORE(field, 0, (x & RD_V3_BITS))                  \
                    STORE(field, 1, x >> 24)                           \
                    i += 2;                                            \
                    q += 2 * sizeof(struct sp_event);                  \
                    p += 6;                                            \
                    if (n - i < 2)                                     \
                        break;                                         \
                    memcpy(&x, p, sizeof x);                           \
                } while ((x & RD_CONT_MASK_3X2) == RD_CONT_3X2);       \
                continue;                                              \
            }                                                          \
            if (__builtin_expect(sp_column_get(&p, &v) < 0, 0)) {      \
                n = i;                                                 \
                break;                                                 \
            }                                                          \
            nz |= v;                                                   \
            STORE(field, 0, v)                                         \
            i++;                                                       \
            q += sizeof(struct sp_event);                              \
        }                                                              \
        *(cur) = p;                                                    \
    }
/* A word of eight one-byte varints, each to STORE. */
#define RD_STORE8(STORE, field, x) \
    {                              \
        uint8_t b_[8];             \
        memcpy(b_, &x, sizeof b_); \
        STORE(field, 0, b_[0])     \
        STORE(field, 1, b_[1])     \
        STORE(field, 2, b_[2])     \
        STORE(field, 3, b_[3])     \
        STORE(field, 4, b_[4])     \
        STORE(field, 5, b_[5])     \
        STORE(field, 6, b_[6])     \
        STORE(field, 7, b_[7])     \
    }
/* Whether a 0 varint stores 0: always, but in a DS field only while its
 * running value is 0; and what else may have made a stored value other
 * than 0 (a DS field's running value at the end). */
#define RD_SKIP0_U 1
#define RD_SKIP0_D 1
#define RD_SKIP0_STR 1
#define RD_SKIP0_DUR 1
#define RD_SKIP0_S 1
#define RD_SKIP0_DS !acc
#define RD_NZ_U
#define RD_NZ_D
#define RD_NZ_STR
#define RD_NZ_DUR
#define RD_NZ_S
#define RD_NZ_DS || acc
/* Whether a field's value is its varint's alone (not a DS field's, which
 * adds to the one before). */
#define RD_SAME_U 1
#define RD_SAME_D 1
#define RD_SAME_STR 1
#define RD_SAME_DUR 1
#define RD_SAME_S 1
#define RD_SAME_DS 0
/* Whether the column's next n bytes are all c (below 0x80): then they
 * are its next n varints, each c.  A word at a time, the last masked to
 * the bytes left (a column holds n bytes or more, and a word past the
 * payload is readable). */
static inline int rd_all_byte(const uint8_t *p, uint32_t n, uint8_t c)
{
    const uint64_t cs = c * RD_BYTES_LOW;
    uint64_t x;
    uint32_t i = 0;
    for (; n - i >= 8; i += 8) {
        memcpy(&x, p + i, sizeof x);
        if (x != cs)
            return 0;
    }
    if (i == n)
        return 1;
    memcpy(&x, p + i, sizeof x);
    return !((x ^ cs) & (UINT64_MAX >> (64 - 8 * (n - i))));
}
/* One field's column, when the field is wanted.  A field found 0 in
 * every event stays so in the block (the kernels' copy fields, say), and
 * a run of n zero bytes (n varints, each a 0) is stepped over whole,
 * where the column's loop took ten instructions for eight.  The same
 * for a field whose column gave every event of a whole block one
 * one-byte varint (a GPU thread's device, a launch's API, most of an
 * NCCL call's fields): a run of n of that byte leaves nothing to store.
 * Only a whole block makes a field the same (the events past a shorter
 * one keep older values). */
#define RD_X_BFIELD(kind, field)                                                                      \
    if (want & 1) {                                                                                   \
        RD_PRE_##kind(field)                                                                          \
            nz = 0;                                                                                   \
        if (RD_SAME_##kind && (b->same & zbit) && rd_all_byte(*col, n, b->same_byte[fi])) {           \
            *col += n;                                                                                \
        } else if ((b->zero & zbit) && RD_SKIP0_##kind && rd_all_byte(*col, n, 0)) {                  \
            *col += n;                                                                                \
        } else {                                                                                      \
            const uint8_t *from = *col;                                                               \
            RD_COLUMN(col, RD_BF_##kind, RD_STORE8, field, base, (b->zero & zbit) && RD_SKIP0_##kind) \
            if (nz RD_NZ_##kind)                                                                      \
                b->zero &= ~zbit;                                                                     \
            b->same &= ~zbit;                                                                         \
            if (RD_SAME_##kind && n == RD_BLOCK && *col - from == RD_BLOCK &&                         \
                rd_all_byte(from, RD_BLOCK, from[0])) {                                               \
                b->same |= zbit;                                                                      \
                b->same_byte[fi] = from[0];                                                           \
            }                                                                                         \
        }                                                                                             \
        RD_POST_##kind(field)                                                                         \
    }                                                                                                 \
    col++;                                                                                            \
    want >>= 1;                                                                                       \
    zbit <<= 1;                                                                                       \
    fi++;
/* The time deltas, decoded last: each event's time is the end of the
 * one before (end) plus its delta, and its end that time plus its
 * duration, decoded already (the duration is at dur_at in the event,
 * when the type has one: a type has one duration field at most).  The
 * tid is the block's already (fill_block). */
#define RD_TIME(k, d)                                                                   \
    {                                                                                   \
        struct sp_event *ev_ = (struct sp_event *)RD_AT(k);                             \
        ev_->t = end + (uint64_t)(d);                                                   \
        end = ev_->t + (has_dur ? *(const uint64_t *)((const char *)ev_ + dur_at) : 0); \
    }
#define RD_BF_DELTA(f, k, v) RD_TIME(k, sp_unzigzag(v))
/* Eight one-byte deltas (kernels one after the other, most of a GPU
 * thread's) undone from zigzag in the word at once: each byte's half,
 * flipped where its low bit was set (s * 0xff makes each such byte 0xff
 * and carries nowhere), is its delta as a signed byte, which a shift
 * pair extends.  Where each delta on its own took five instructions. */
#define RD_BYTES_HALF 0x3f3f3f3f3f3f3f3full
#define RD_SBYTE(y, k) ((int64_t)((y) << (56 - 8 * (k))) >> 56)
#define RD_STORE8_DELTA(STORE, f, x)                                                  \
    {                                                                                 \
        const uint64_t y_ = ((x >> 1) & RD_BYTES_HALF) ^ ((x & RD_BYTES_LOW) * 0xff); \
        RD_TIME(0, RD_SBYTE(y_, 0))                                                   \
        RD_TIME(1, RD_SBYTE(y_, 1))                                                   \
        RD_TIME(2, RD_SBYTE(y_, 2))                                                   \
        RD_TIME(3, RD_SBYTE(y_, 3))                                                   \
        RD_TIME(4, RD_SBYTE(y_, 4))                                                   \
        RD_TIME(5, RD_SBYTE(y_, 5))                                                   \
        RD_TIME(6, RD_SBYTE(y_, 6))                                                   \
        RD_TIME(7, RD_SBYTE(y_, 7))                                                   \
    }
#define RD_DURAT_U(f)
#define RD_DURAT_D(f)
#define RD_DURAT_STR(f)
#define RD_DURAT_S(f)
#define RD_DURAT_DS(f)
#define RD_DURAT_DUR(f) +offsetof(rd_ev, f)
#define RD_X_DURAT(kind, field) RD_DURAT_##kind(field)
#define RD_HASDUR_U(f)
#define RD_HASDUR_D(f)
#define RD_HASDUR_STR(f)
#define RD_HASDUR_S(f)
#define RD_HASDUR_DS(f)
#define RD_HASDUR_DUR(f) +1
#define RD_X_HASDUR(kind, field) RD_HASDUR_##kind(field)
/* Decodes the next n events of the type from its columns into e[]: the
 * fields in `want` (the others are left as they are), then the times;
 * returns how many decoded: n, or the index of the first malformed one
 * (its fields and time, and those of the events after it, unset). */
#define RD_X_BDECODER(id, NAME, name, FIELDS)                                                   \
    static uint32_t block_##name(const uint8_t **col, struct sp_codec_state *st, uint64_t want, \
                                 uint32_t n, struct sp_event *e, struct type_block *b)          \
    {                                                                                           \
        typedef struct sp_ev_##name rd_ev;                                                      \
        struct sp_ev_##name *prev = &st->name;                                                  \
        char *base = (char *)&e->name;                                                          \
        const uint8_t **delta = col++;                                                          \
        uint64_t v, nz = 0, zbit = 1;                                                           \
        uint32_t i;                                                                             \
        unsigned fi = 0;                                                                        \
        (void)prev;                                                                             \
        (void)base;                                                                             \
        FIELDS(RD_X_BFIELD)                                                                     \
        (void)want;                                                                             \
        (void)b;                                                                                \
        (void)fi;                                                                               \
        (void)zbit;                                                                             \
        const size_t dur_at = (size_t)(base - (char *)e) FIELDS(RD_X_DURAT);                    \
        const int has_dur = 0 FIELDS(RD_X_HASDUR);                                              \
        uint64_t end = st->end[id];                                                             \
        RD_COLUMN(delta, RD_BF_DELTA, RD_STORE8_DELTA, t, (char *)e, 0)                         \
        st->end[id] = end;                                                                      \
        return n;                                                                               \
    }
SP_EVENTS(RD_X_BDECODER)
#undef RD_X_BDECODER
#undef RD_X_BFIELD
#undef RD_COLUMN
#undef RD_BF_DELTA
#undef RD_TIME
#undef RD_STORE8_DELTA
#undef RD_STORE8
#undef RD_SBYTE
#undef RD_AT
#undef RD_X_DURAT
#undef RD_X_HASDUR
#undef RD_EV

/* ---- IO events since version 4 ------------------------------------------------ *
 * A repeated IO event (codec.h) has no varint in the columns of the six
 * fields it repeats (op, fd, fd_kind, bytes, offset, err): its values are
 * the previous IO event's; one whose result is its size has none in
 * ret's.  Decoded event by event, since which columns an event reads
 * depends on the marks in its path; the path column is read whenever one
 * of those seven fields is wanted (sp_columns_check has then checked it
 * and counted the varints of each column), and bytes whenever ret is. */

/* Whether IO events are coded as before version 4 (no repeats). */
static uint32_t io_plain(const struct sp_reader *r)
{
    return r->info.hdr.version < 4;
}

/* Field i of an IO event (bit i of a field mask); column i + 1. */
enum { IO_F_DUR,
       IO_F_OP,
       IO_F_FD,
       IO_F_FD_KIND,
       IO_F_PATH,
       IO_F_RET,
       IO_F_BYTES,
       IO_F_OFFSET,
       IO_F_ERR };
#define IO_F(f) (UINT64_C(1) << (f))
#define IO_F_REPEATED \
    (IO_F(IO_F_OP) | IO_F(IO_F_FD) | IO_F(IO_F_FD_KIND) | IO_F(IO_F_BYTES) | IO_F(IO_F_OFFSET) | IO_F(IO_F_ERR))

/* block_io's counterpart (the generated decoder of the same shape): the
 * next n IO events into e[], the fields in `want`, then the times;
 * returns n, or the index of the first malformed one. */
static uint32_t block_io_v4(const uint8_t **col, struct sp_codec_state *st, uint64_t want, uint32_t n,
                            uint32_t tid, struct sp_event *e)
{
    struct sp_ev_io *prev = &st->io;
    const uint8_t *c[SP_MAX_COLUMNS];
    memcpy(c, col, sizeof c);
    int need_path = (want & (IO_F(IO_F_PATH) | IO_F(IO_F_RET) | IO_F_REPEATED)) != 0;
    /* ret may be bytes: then bytes is decoded (and its memory kept) */
    uint64_t get = want & IO_F(IO_F_RET) ? want | IO_F(IO_F_BYTES) : want;
    uint64_t v = 0;
    uint32_t i;
/* Column f + 1 into v, or the block ends before event i. */
#define IO_GET(f)                                                  \
    if (__builtin_expect(sp_column_get(&c[(f) + 1], &v) < 0, 0)) { \
        n = i;                                                     \
        break;                                                     \
    }
/* A field a repeat takes from the previous event. */
#define IO_REPEATED(f, field, value)   \
    if (get & IO_F(f)) {               \
        if (!(marks & SP_IO_REPEAT)) { \
            IO_GET(f)                  \
            prev->field = (value);     \
        }                              \
        if (want & IO_F(f))            \
            io->field = prev->field;   \
    }
    for (i = 0; i < n; i++) {
        struct sp_ev_io *io = &e[i].io;
        uint64_t marks = 0;
        if (want & IO_F(IO_F_DUR)) {
            IO_GET(IO_F_DUR)
            io->dur = v;
        }
        if (need_path) {
            IO_GET(IO_F_PATH)
            marks = v & ((1u << SP_IO_MARK_BITS) - 1);
            if (want & IO_F(IO_F_PATH))
                io->path = v >> SP_IO_MARK_BITS;
        }
        IO_REPEATED(IO_F_OP, op, v)
        IO_REPEATED(IO_F_FD, fd, sp_unzigzag(v))
        IO_REPEATED(IO_F_FD_KIND, fd_kind, v)
        IO_REPEATED(IO_F_BYTES, bytes, v)
        IO_REPEATED(IO_F_OFFSET, offset, prev->offset + (uint64_t)sp_unzigzag(v))
        IO_REPEATED(IO_F_ERR, err, v)
        if (want & IO_F(IO_F_RET)) {
            if (marks & SP_IO_RET_BYTES)
                v = sp_zigzag((int64_t)prev->bytes);
            else
                IO_GET(IO_F_RET)
            io->ret = sp_unzigzag(v);
        }
    }
#undef IO_REPEATED
#undef IO_GET
    memcpy(col + 1, c + 1, sizeof c - sizeof c[0]);
    const uint8_t *p = col[0];
    uint64_t end = st->end[SP_EV_IO];
    for (i = 0; i < n; i++) {
        if (__builtin_expect(sp_column_get(&p, &v) < 0, 0)) {
            n = i;
            break;
        }
        e[i].tid = tid;
        e[i].t = end + (uint64_t)sp_unzigzag(v);
        end = e[i].t + e[i].io.dur;
    }
    col[0] = p;
    st->end[SP_EV_IO] = end;
    return n;
}

/* The fields of `type` its action fills (bit i: field i). */
static uint64_t fields_read(const struct sp_reader *r, unsigned type)
{
    if (r->act[type] == ACT_ALL)
        return all_fields(type);
    uint64_t f = r->fields[type];
    if (r->selecting && r->sel[type].field >= 0)
        f |= UINT64_C(1) << r->sel[type].field;
    return f;
}

/* The block's events the selection keeps, moved to its front; the type
 * stream's bytes of the others become 0 (no type: stepped over like a
 * masked one), so that it hands out exactly the kept ones.  `at` is the
 * stream position of the block's first event; the others are found by
 * the type.  The chunk is this reader's own buffer, so the stream may be
 * written. */
static uint32_t select_block(struct sp_reader *r, unsigned type, struct sp_event *e, uint32_t got, uint32_t at)
{
    /* The selection in a local: a store to the type stream (bytes) could
     * be to it as far as the compiler knows, and would reload it. */
    const struct select s = r->sel[type];
    uint8_t *types = r->chunk + (r->cols.types - r->chunk);
    uint32_t kept = 0, i = 0;
#ifdef __SSE2__
    /* The events' places found 16 bytes of the stream at a time (a GPU
     * thread's chunk is nearly all of one type), and most of them left
     * out (pass 1 keeps the NCCL kernels): the 16 bytes are stored back
     * with every event of the type cleared, then the few kept set again. */
    const __m128i mine = _mm_set1_epi8((char)type);
    const uint32_t n = r->cols.n;
    while (i < got && n - at >= 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(types + at));
        __m128i is_mine = _mm_cmpeq_epi8(x, mine);
        uint32_t m = (uint32_t)_mm_movemask_epi8(is_mine), all = m, keep = 0;
        /* the event by a pointer stepped on: its index times the event's
         * size was three instructions an event */
        for (const struct sp_event *ev = e + i; m && i < got; m &= m - 1, i++, ev++) {
            if (left_out(&s, ev))
                continue;
            keep |= m & -m;
            if (kept != i)
                e[kept] = e[i];
            kept++;
        }
        if (!m) {
            _mm_storeu_si128((__m128i *)(types + at), _mm_andnot_si128(is_mine, x));
        } else {
            keep |= m; /* the next block's events: not this one's to clear */
            for (uint32_t d = all & ~keep; d; d &= d - 1)
                types[at + (uint32_t)__builtin_ctz(d)] = 0;
            keep = 0;
        }
        for (; keep; keep &= keep - 1)
            types[at + (uint32_t)__builtin_ctz(keep)] = (uint8_t)type;
        at += 16;
    }
#endif
    for (; i < got; i++, at++) {
        while (types[at] != type)
            at++;
        if (left_out(&s, &e[i])) {
            types[at] = 0;
            continue;
        }
        if (kept != i)
            e[kept] = e[i];
        kept++;
    }
    return kept;
}

/* Decodes the type's next block.  Fields the plan leaves out read 0: the
 * block's fields are cleared when it holds some written under another
 * plan. */
static uint32_t fill_block(struct sp_reader *r, unsigned type, uint32_t at)
{
    struct type_block *b = &r->block[type];
    uint32_t n = b->left < RD_BLOCK ? b->left : RD_BLOCK;
    uint64_t want = fields_read(r, type);
    struct sp_event *e = r->blocks->ev[type];
    if (b->dirty & ~want) { /* also the first time: the block is not initialized */
        for (unsigned i = 0; i < RD_BLOCK; i++) {
            memset(&e[i], 0, sizeof e[i]);
            e[i].type = (uint8_t)type;
        }
        b->dirty = 0;
        b->zero = UINT64_MAX;
        b->same = 0;
        b->tid = NO_TID;
    }
    if (b->tid != r->tid) { /* a new chunk's thread: the decoders leave the tid alone */
        for (unsigned i = 0; i < RD_BLOCK; i++)
            e[i].tid = r->tid;
        b->tid = r->tid;
    }
    b->dirty |= want;
    uint32_t got = 0;
    if (type == SP_EV_IO && !r->codec.io_plain) {
        got = block_io_v4(r->cols.col[SP_EV_IO], &r->codec, want, n, r->tid, e);
        b->zero &= ~want; /* its fields, stored whatever their values */
        b->same &= ~want;
        goto filled;
    }
    switch (type) {
#define RD_X_FILL(id, NAME, name, FIELDS)                              \
    case id:                                                           \
        got = block_##name(r->cols.col[id], &r->codec, want, n, e, b); \
        break;
        SP_EVENTS(RD_X_FILL)
#undef RD_X_FILL
    default:
        break;
    }
filled:
    b->next = e;
    b->end = e + (r->selecting && r->sel[type].field >= 0 ? select_block(r, type, e, got, at) : got);
    b->left -= got;
    b->bad = got < n;
    return got;
}

/* Rows are decoded whole; the fields left out are cleared so that both
 * layouts read alike.  Fields are 64-bit words in schema order. */
static void clear_fields(struct sp_event *ev, uint64_t want)
{
    uint64_t drop = all_fields(ev->type) & ~want;
    unsigned char *base = (unsigned char *)&ev->nccl; /* the union's start */
    for (unsigned i = 0; drop; i++, drop >>= 1)
        if (drop & 1)
            memset(base + i * sizeof(uint64_t), 0, sizeof(uint64_t));
}

/* A new chunk starts with empty codec memory, and with the type and field
 * masks last asked for: a type's memory is only right if the type was
 * decoded from the chunk's start. */
static void start_chunk(struct sp_reader *r, size_t len, uint64_t id, uint32_t tid, int from_slot)
{
    r->chunk_len = len;
    memset(r->chunk + len, 0, SP_WORD); /* what the column decoder reads past the end */
    r->chunk_pos = 0;
    r->chunk_id = id;
    r->tid = tid;
    sp_codec_reset(&r->codec);
    r->codec.io_plain = io_plain(r);
    r->chunk_from_slot = from_slot;
    r->columnar = 0;
    r->nsparse = 0;
    r->types = r->types_next;
    take_fields(r);
    plan_chunk(r);
}

/* A frame's stored summary, when its payload (r->cbuf, CRC checked)
 * starts with one: 1, else 0 (the summary is then computed once the chunk
 * is loaded). */
static int stored_summary(struct sp_reader *r, const struct sp_frame_header *fh)
{
    r->summary->s.tid = fh->tid;
    return sp_summary_decode(&r->summary->s, r->cbuf, fh->csize) > 0;
}

/* Hands the loaded chunk's summary to the callback: the stored one, or
 * one computed from the chunk's times.  A chunk whose times do not walk
 * (damage) is summarized as far as they do; its events then end at the
 * same place. */
static void give_summary(struct sp_reader *r, int stored)
{
    if (!r->summary_fn)
        return;
    if (!stored) {
        sp_summary_begin(r->summary, r->tid);
        if (r->columnar)
            sp_summary_from_columns(r->summary, &r->cols);
        else
            sp_summary_from_rows(r->summary, r->chunk, r->chunk_len);
    }
    r->summary_fn(r->summary_ctx, &r->summary->s);
}

/* Loads the next slot chunk no frame carried; 0 when there is none. */
static int load_next_slot(struct sp_reader *r)
{
    while (r->next_chunk < r->nchunks) {
        struct slot_chunk *c = &r->chunks[r->next_chunk++];
        if (c->seen)
            continue;
        struct sp_slot_header s;
        uint64_t off = slot_offset(r, c->slot);
        if (read_at(r, &s, sizeof s, off) < 0 || !holds_chunk(&s) || s.chunk_id != c->chunk_id)
            continue; /* a live writer moved on since open */
        size_t used = s.used < r->slot_cap ? s.used : r->slot_cap;
        if (read_at(r, r->chunk, used, off + sizeof s) < 0) {
            add_diag(r, "slot %u (chunk %llu): data past the end of the file", c->slot,
                     (unsigned long long)c->chunk_id);
            continue;
        }
        r->stats.slots_recovered++;
        start_chunk(r, used, s.chunk_id, s.tid, 1);
        give_summary(r, 0);
        return 1;
    }
    return 0;
}

/* ---- frames -------------------------------------------------------------------- */

static int frame_header_ok(const struct sp_reader *r, const struct sp_frame_header *fh)
{
    uint32_t usize = fh->usize & SP_FRAME_SIZE_MASK;
    return fh->magic == SP_FRAME_MAGIC &&
           fh->hcrc == sp_crc32c(0, fh, SP_FRAME_HCRC_BYTES) && usize != 0 &&
           usize <= r->slot_cap && fh->csize != 0 && fh->csize <= r->cbuf_cap;
}

/* The data at or after `from`, as [*start, *end) up to the next hole,
 * within the file's size; *start is the file's size when only a hole is
 * left.  Where the file system cannot say (no SEEK_DATA), all is data. */
static void data_extent(const struct sp_reader *r, uint64_t from, uint64_t *start, uint64_t *end)
{
    *start = from;
    *end = r->file_size;
    off_t d = lseek(r->fd, (off_t)from, SEEK_DATA);
    if (d >= 0 && (uint64_t)d < from)
        d = (off_t)from;
    if (d < 0) {
        if (errno == ENXIO) /* a hole to the end */
            *start = r->file_size;
        return;
    }
    off_t h = lseek(r->fd, d, SEEK_HOLE);
    *start = (uint64_t)d < r->file_size ? (uint64_t)d : r->file_size;
    if (h > d && (uint64_t)h < r->file_size)
        *end = (uint64_t)h;
}

struct scan {
    uint64_t data;  /* bytes read looking for a frame */
    uint64_t holes; /* bytes stepped over unread */
    int gave_up;    /* scan_limit reached: the offset returned is where */
};

/* Finds the next offset >= from holding a valid frame header, or the end
 * of the file.  Reads SCAN_WINDOW bytes at a time, holes never (a magic
 * cannot lie in zeros, nor run from data into them); gives up after
 * scan_limit bytes of data. */
static uint64_t resync(struct sp_reader *r, uint64_t from, struct scan *sc)
{
    const uint32_t magic = SP_FRAME_MAGIC;
    uint8_t *win = r->cbuf; /* free while scanning */
    size_t win_cap = r->cbuf_cap < SCAN_WINDOW ? r->cbuf_cap : SCAN_WINDOW;
    uint64_t data_end = from; /* end of the data extent `from` is in */
    *sc = (struct scan){0, 0, 0};
    while (from + sizeof(struct sp_frame_header) <= r->file_size) {
        if (from >= data_end) {
            uint64_t start;
            data_extent(r, from, &start, &data_end);
            sc->holes += start - from;
            from = start;
            continue;
        }
        if (sc->data >= r->scan_limit) {
            sc->gave_up = 1;
            return from;
        }
        uint64_t left = data_end - from;
        if (left > r->scan_limit - sc->data)
            left = r->scan_limit - sc->data;
        size_t n = left < win_cap ? (size_t)left : win_cap;
        if (read_at(r, win, n, from) < 0)
            break;
        for (size_t i = 0; i + sizeof magic <= n; i++) {
            if (memcmp(win + i, &magic, sizeof magic))
                continue;
            struct sp_frame_header fh;
            if (read_at(r, &fh, sizeof fh, from + i) == 0 && frame_header_ok(r, &fh))
                return from + i;
        }
        sc->data += n;
        if (from + n == data_end) { /* a hole (or the end) follows */
            from = data_end;
            continue;
        }
        if (sc->data >= r->scan_limit) {
            sc->gave_up = 1;
            return from + n;
        }
        if (n <= sizeof magic)
            break;
        sc->data -= sizeof magic - 1; /* read again: a magic across windows */
        from += n - (sizeof magic - 1);
    }
    return r->file_size;
}

static void skip_damage(struct sp_reader *r, uint64_t at, const char *why)
{
    struct scan sc;
    uint64_t next = resync(r, at + 1, &sc);
    r->stats.frames_bad++;
    if (sc.gave_up) {
        r->stats.bytes_skipped += r->file_size - at;
        add_diag(r, "frame at offset %llu: %s, and no frame in the %llu bytes of data after it "
                    "(to offset %llu): frames no longer read, %llu bytes to the end of the file skipped",
                 (unsigned long long)at, why, (unsigned long long)sc.data, (unsigned long long)next,
                 (unsigned long long)(r->file_size - at));
        r->pos = r->file_size;
        return;
    }
    r->stats.bytes_skipped += next - at;
    if (sc.holes)
        add_diag(r, "frame at offset %llu: %s, skipped %llu bytes (%llu of them holes, not read)",
                 (unsigned long long)at, why, (unsigned long long)(next - at),
                 (unsigned long long)sc.holes);
    else
        add_diag(r, "frame at offset %llu: %s, skipped %llu bytes", (unsigned long long)at, why,
                 (unsigned long long)(next - at));
    r->pos = next;
}

static int decompress_frame(struct sp_reader *r, const struct sp_frame_header *fh)
{
    size_t n = ZSTD_decompressDCtx(r->dctx, r->chunk, r->slot_cap, r->cbuf, fh->csize);
    return !ZSTD_isError(n) && n == (fh->usize & SP_FRAME_SIZE_MASK);
}

/* A column chunk whose table does not hold together, or one of whose
 * columns to be read does not, is skipped whole; its CRC held, so a
 * writer made it: say so. */
static void skip_bad_columns(struct sp_reader *r)
{
    r->stats.bytes_skipped += r->chunk_len;
    add_diag(r, "frame at offset %llu (chunk %llu): malformed column table, skipped",
             (unsigned long long)r->chunk_at, (unsigned long long)r->chunk_id);
    r->chunk_len = 0;
    r->columnar = 0;
}

/* The type ids a column chunk hands out, when they are at most
 * SPARSE_IDS and, but for those selected, hold at most one event in
 * SPARSE_SHARE of the stream: pass 1 takes NCCL calls and the few NCCL
 * kernels its selection keeps from a stream of launches and kernels, most
 * of whose bytes it would step over one by one.  sp_reader_next_refs then
 * looks for them 16 bytes at a time.  Only the speed depends on it: a
 * plan made before a selection, or kept after one ends, reads the same
 * events. */
#define SPARSE_SHARE 4
static void plan_sparse(struct sp_reader *r)
{
    unsigned k = 0;
    uint64_t dense = 0;
    r->nsparse = 0;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!r->block_of[t] || !r->cols.count[t])
            continue;
        if (k == SPARSE_IDS)
            return;
        r->sparse[k++] = (uint8_t)t;
        if (!r->selecting || r->sel[t].field < 0)
            dense += r->cols.count[t];
    }
    if (k && dense * SPARSE_SHARE <= r->cols.n)
        r->nsparse = k;
}

static int open_columns(struct sp_reader *r, uint64_t at)
{
    r->chunk_at = at;
    if (sp_columns_open(&r->cols, r->chunk, r->chunk_len, r->zeros) == 0) {
        r->cols.io_plain = io_plain(r);
        r->columnar = 1;
        for (unsigned t = 1; t < SP_EV_MAX; t++) {
            struct type_block *b = &r->block[t];
            b->next = b->end = NULL;
            b->bad = 0;
            b->left = r->cols.count[t];
        }
        if (check_planned_columns(r) == 0) {
            plan_sparse(r);
            return 1;
        }
    }
    skip_bad_columns(r);
    return 0;
}

/* After the masks changed at a chunk's start: the columns they now read
 * are checked too. */
static void replan_chunk(struct sp_reader *r)
{
    plan_chunk(r);
    if (r->columnar && check_planned_columns(r) < 0)
        skip_bad_columns(r);
    if (r->columnar)
        plan_sparse(r);
}

static int by_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* A trace compacted at close (SP_TLV_FRAMES, writer.c) may still hold,
 * after the frames moved down, the copy they were moved from: a close cut
 * short between its last two steps.  A frame past the moved ones whose
 * chunk was read among them is that copy: 1, skip it.  Any other frame
 * there (a file extended since) is read as usual. */
static int moved_already(struct sp_reader *r, uint64_t at, uint64_t chunk_id)
{
    if (!r->frames_stop || r->frames_start != r->info.hdr.frames_offset)
        return 0;
    if (at < r->frames_stop) {
        if (r->nmoved == r->moved_cap) {
            size_t cap = r->moved_cap ? r->moved_cap * 2 : 64;
            uint64_t *p = realloc(r->moved, cap * sizeof *p);
            if (!p)
                return 0;
            r->moved = p;
            r->moved_cap = cap;
        }
        r->moved[r->nmoved++] = chunk_id;
        r->moved_sorted = 0;
        return 0;
    }
    if (!r->moved_sorted && r->nmoved) { /* qsort of none would take a null array */
        qsort(r->moved, r->nmoved, sizeof *r->moved, by_u64);
        r->moved_sorted = 1;
    }
    return r->nmoved && bsearch(&chunk_id, r->moved, r->nmoved, sizeof chunk_id, by_u64) != NULL;
}

/* Loads the next intact frame into r->chunk; 0 when frames are over. */
static int load_next_frame(struct sp_reader *r)
{
    const size_t hsize = sizeof(struct sp_frame_header);
    while (r->pos < r->file_size) {
        uint64_t at = r->pos;
        struct sp_frame_header fh;
        if (r->file_size - at < hsize) {
            r->stats.bytes_skipped += r->file_size - at;
            add_diag(r, "frame at offset %llu: truncated header (%llu bytes), skipped",
                     (unsigned long long)at, (unsigned long long)(r->file_size - at));
            r->pos = r->file_size;
            break;
        }
        if (read_at(r, &fh, hsize, at) < 0 || !frame_header_ok(r, &fh)) {
            skip_damage(r, at, "bad header");
            continue;
        }
        uint64_t end = at + hsize + fh.csize;
        if (end > r->file_size) {
            r->stats.bytes_skipped += r->file_size - at;
            r->stats.frames_bad++;
            add_diag(r, "frame at offset %llu: truncated (needs %llu bytes, file ends at %llu), skipped",
                     (unsigned long long)at, (unsigned long long)end,
                     (unsigned long long)r->file_size);
            r->pos = r->file_size;
            break;
        }
        r->pos = end;
        if (read_at(r, r->cbuf, fh.csize, at + hsize) < 0 ||
            sp_crc32c(0, r->cbuf, fh.csize) != fh.crc) {
            r->stats.frames_bad++;
            r->stats.bytes_skipped += end - at;
            add_diag(r, "frame at offset %llu (chunk %llu): checksum mismatch, skipped %llu bytes",
                     (unsigned long long)at, (unsigned long long)fh.chunk_id,
                     (unsigned long long)(end - at));
            continue;
        }
        if (moved_already(r, at, fh.chunk_id))
            continue;
        int stored = r->summary_fn && stored_summary(r, &fh);
        if (stored && !(r->summary->s.types & r->types_next)) {
            /* nothing in it is asked for: its summary is all it gives */
            r->stats.frames++;
            r->stats.frames_skipped++;
            mark_seen(r, fh.chunk_id);
            r->summary_fn(r->summary_ctx, &r->summary->s);
            continue;
        }
        if (!decompress_frame(r, &fh)) {
            r->stats.frames_bad++;
            r->stats.bytes_skipped += end - at;
            add_diag(r, "frame at offset %llu (chunk %llu): does not decompress, skipped",
                     (unsigned long long)at, (unsigned long long)fh.chunk_id);
            continue;
        }
        r->stats.frames++;
        mark_seen(r, fh.chunk_id);
        start_chunk(r, fh.usize & SP_FRAME_SIZE_MASK, fh.chunk_id, fh.tid, 0);
        if ((fh.usize & SP_FRAME_COLUMNS) && !open_columns(r, at))
            continue;
        give_summary(r, stored);
        return 1;
    }
    return 0;
}

static int load_next_chunk(struct sp_reader *r)
{
    if (r->phase == PHASE_FRAMES) {
        if (load_next_frame(r))
            return 1;
        r->phase = PHASE_SLOTS;
    }
    if (r->phase == PHASE_SLOTS) {
        if (load_next_slot(r))
            return 1;
        r->phase = PHASE_DONE;
    }
    return 0;
}

/* ---- public API -------------------------------------------------------------------- */

static int wanted(uint32_t mask, unsigned type)
{
    return type < SP_TYPE_MASK_BITS ? (mask >> type) & 1u : mask == SP_TYPES_ALL;
}

static void malformed(struct sp_reader *r, uint64_t at)
{
    add_diag(r, "chunk %llu (%s, tid %u): malformed event at %s %llu, rest of chunk skipped",
             (unsigned long long)r->chunk_id, r->chunk_from_slot ? "slot" : "frame", r->tid,
             r->columnar ? "event" : "byte", (unsigned long long)at);
    if (!r->columnar)
        r->stats.bytes_skipped += r->chunk_len - r->chunk_pos;
    r->chunk_pos = r->chunk_len;
    r->cols.next = r->cols.n;
}

/* The next wanted event of a row chunk, decoded into r->row; NULL at
 * its end.  A type left out by the mask is stepped over by its length,
 * its fields unread and its codec memory untouched (only its own events
 * use that memory). */
static const struct sp_event *next_from_rows(struct sp_reader *r)
{
    struct sp_event *ev = &r->row;
    const uint8_t *end = r->chunk + r->chunk_len;
    ev->tid = r->tid;
    while (r->chunk_pos < r->chunk_len) {
        const uint8_t *p = r->chunk + r->chunk_pos;
        long n = wanted(r->types, *p) ? sp_codec_decode(p, end, ev, &r->codec) : sp_codec_skip(p, end);
        if (n == 0) {
            r->chunk_pos = r->chunk_len; /* padding: end of chunk */
            break;
        }
        if (n < 0) {
            malformed(r, r->chunk_pos);
            break;
        }
        r->chunk_pos += (size_t)n;
        if (!wanted(r->types, *p) || !sp_codec_known(*p))
            continue; /* masked out, or a type from a newer writer */
        if (r->selecting && r->sel[*p].field >= 0 && left_out(&r->sel[*p], ev))
            continue;
        if (r->partial && r->fields[*p] != UINT64_MAX)
            clear_fields(ev, r->fields[*p]);
        return ev;
    }
    return NULL;
}

/* The same for a column chunk: a type left out is one byte of the type
 * stream to step over; its columns are never read.  The others come from
 * their type's block, decoded when it runs out. */
static const struct sp_event *next_from_columns(struct sp_reader *r)
{
    struct sp_columns *c = &r->cols;
    while (c->next < c->n) {
        unsigned type = c->types[c->next++];
        if (r->act[type] == ACT_SKIP)
            continue; /* masked out, or a type from a newer writer */
        struct type_block *b = &r->block[type];
        if (b->next == b->end) {
            if (b->bad || fill_block(r, type, c->next - 1) == 0) {
                malformed(r, c->next - 1);
                break;
            }
            if (!c->types[c->next - 1])
                continue; /* the block's first event: left out by the selection */
        }
        return b->next++;
    }
    return NULL;
}

/* Everything but the next event of a decoded block: a block to decode,
 * the next chunk, the rows. */
static __attribute__((noinline)) const struct sp_event *next_slow(struct sp_reader *r)
{
    for (;;) {
        const struct sp_event *ev = r->columnar ? next_from_columns(r) : next_from_rows(r);
        if (ev) {
            r->stats.events++;
            return ev;
        }
        if (!load_next_chunk(r))
            return NULL;
    }
}

/* The common case inline, without a call: the next event of the chunk is
 * in its type's block already. */
const struct sp_event *sp_reader_next_ref(struct sp_reader *r)
{
    if (!r)
        return NULL;
    if (r->columnar) {
        struct sp_columns *c = &r->cols;
        while (c->next < c->n) {
            struct type_block *b = r->block_of[c->types[c->next]];
            if (!b) {
                c->next++; /* masked out, or a type from a newer writer */
                continue;
            }
            if (b->next == b->end)
                break;
            c->next++;
            r->stats.events++;
            return b->next++;
        }
    }
    return next_slow(r);
}

/* sp_reader_next_ref's loop, without a call per event: the events of
 * the chunk's type stream whose blocks are decoded already, up to the
 * first that needs its block decoded (a decode overwrites the block). */
size_t sp_reader_next_refs(struct sp_reader *r, const struct sp_event **out, size_t max)
{
    if (!r || !max)
        return 0;
    size_t k = 0;
    if (r->columnar) {
        struct sp_columns *c = &r->cols;
        const uint8_t *tp = c->types + c->next, *tend = c->types + c->n;
        struct type_block *const *block_of = r->block_of;
        const struct sp_event **o = out, **oend = out + max;
#ifdef __SSE2__
        if (r->nsparse) {
            /* the ids' bytes among the next 16, the others stepped over
             * together (with one id, both compares are with it) */
            const __m128i id0 = _mm_set1_epi8((char)r->sparse[0]);
            const __m128i id1 = _mm_set1_epi8((char)r->sparse[r->nsparse - 1]);
            while (tend - tp >= 16) {
                __m128i x = _mm_loadu_si128((const __m128i *)tp);
                uint32_t m = (uint32_t)_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(x, id0), _mm_cmpeq_epi8(x, id1)));
                if (!m) {
                    tp += 16;
                    continue;
                }
                tp += __builtin_ctz(m);
                struct type_block *b = block_of[*tp];
                const struct sp_event *ev = b->next;
                if (ev == b->end || o == oend)
                    goto stop;
                b->next = ev + 1;
                *o++ = ev;
                tp++;
            }
        }
#endif
        for (; tp < tend; tp++) {
            struct type_block *b = block_of[*tp];
            if (!b)
                continue; /* masked out, or a type from a newer writer */
            const struct sp_event *ev = b->next;
            if (ev == b->end || o == oend)
                break;
            b->next = ev + 1;
            *o++ = ev;
        }
#ifdef __SSE2__
    stop:
#endif
        c->next = (uint32_t)(tp - c->types);
        k = (size_t)(o - out);
        r->stats.events += k;
    }
    if (!k && (out[0] = next_slow(r)))
        k = 1;
    return k;
}

int sp_reader_next(struct sp_reader *r, struct sp_event *ev)
{
    if (!r || !ev)
        return 0;
    const struct sp_event *e = sp_reader_next_ref(r);
    if (!e)
        return 0;
    *ev = *e;
    return 1;
}

int sp_reader_set_summary(struct sp_reader *r, sp_summary_fn fn, void *ctx)
{
    if (!r)
        return SP_E_ARG;
    if (fn && !r->summary && !(r->summary = malloc(sizeof *r->summary)))
        return SP_E_NOMEM;
    r->summary_fn = fn;
    r->summary_ctx = ctx;
    return 0;
}

void sp_reader_set_types(struct sp_reader *r, uint32_t mask)
{
    if (!r)
        return;
    r->types_next = mask;
    if (r->chunk_pos == 0 && (!r->columnar || r->cols.next == 0)) {
        r->types = mask; /* nothing of this chunk decoded yet */
        replan_chunk(r);
    }
}

/* Fewer fields of a type in the chunk being read, from the type's next
 * block on: a column left unread simply stops (each has its own cursor),
 * and nobody reads the field again before the chunk ends (a wider mask
 * waits for the next chunk), so a DS field's memory going stale harms
 * nothing.  The block's copies of the dropped fields are cleared at its
 * next fill (fill_block's dirty fields), a row event's at once. */
static void narrow_fields(struct sp_reader *r, unsigned type, uint64_t fields)
{
    uint64_t cur = r->partial ? r->fields[type] : UINT64_MAX;
    if (fields == cur || (cur != UINT64_MAX && (fields & ~cur)))
        return;
    if (!r->partial)
        for (unsigned i = 0; i < SP_EV_MAX; i++)
            r->fields[i] = UINT64_MAX;
    r->partial = 1;
    r->fields[type] = fields;
    if (r->act[type] == ACT_ALL)
        r->act[type] = ACT_SOME;
}

void sp_reader_set_fields(struct sp_reader *r, unsigned type, uint64_t fields)
{
    if (!r || type >= SP_EV_MAX || !sp_codec_known(type))
        return;
    if (!r->partial_next)
        for (unsigned i = 0; i < SP_EV_MAX; i++)
            r->fields_next[i] = UINT64_MAX;
    uint64_t all = all_fields(type);
    r->fields_next[type] = (fields & all) == all ? UINT64_MAX : (fields | dur_fields(type)) & all;
    r->partial_next = 0;
    for (unsigned i = 0; i < SP_EV_MAX; i++)
        if (r->fields_next[i] != UINT64_MAX)
            r->partial_next = 1;
    if (r->chunk_pos == 0 && (!r->columnar || r->cols.next == 0)) {
        take_fields(r); /* nothing of this chunk decoded yet */
        replan_chunk(r);
    } else {
        narrow_fields(r, type, r->fields_next[type]);
    }
}

void sp_reader_select(struct sp_reader *r, unsigned type, uint64_t field, uint64_t values, uint64_t lo,
                      uint64_t span)
{
    if (!r || type >= SP_EV_MAX || !sp_codec_known(type) || (field & (field - 1)) ||
        (field && !(field & all_fields(type))))
        return;
    if (!r->selecting_next)
        for (unsigned i = 0; i < SP_EV_MAX; i++)
            r->sel_next[i].field = -1;
    struct select sel = {field ? __builtin_ctzll(field) : -1, values, lo, span};
    r->sel_next[type] = sel;
    r->selecting_next = 0;
    for (unsigned i = 0; i < SP_EV_MAX; i++)
        if (r->sel_next[i].field >= 0)
            r->selecting_next = 1;
    if (r->chunk_pos == 0 && (!r->columnar || r->cols.next == 0)) {
        take_fields(r); /* nothing of this chunk decoded yet */
        replan_chunk(r);
    } else if (sel.field < 0 || (fields_read(r, type) >> sel.field & 1)) {
        /* The chunk reads the field already: its next block is selected
         * so (a selection changes no decoding, only what is handed out). */
        if (!r->selecting)
            for (unsigned i = 0; i < SP_EV_MAX; i++)
                r->sel[i].field = -1;
        r->sel[type] = sel;
        r->selecting = 0;
        for (unsigned i = 0; i < SP_EV_MAX; i++)
            if (r->sel[i].field >= 0)
                r->selecting = 1;
        if (r->columnar)
            plan_sparse(r);
    }
}

/* The zeros of a reader whose slots are no larger (the default slot is 128
 * KiB): read, never written, so every reader shares them, and a report that
 * opens thousands of files does not clear a slot's worth for each. */
#define SHARED_ZEROS (256u * 1024u)
static uint8_t shared_zeros[SHARED_ZEROS + SP_WORD];

/* A thread's readers come one after another (a pass reads file after
 * file): the buffers of the last one it closed are kept for its next, so
 * that an open does not create a decompression context and map and clear
 * a slot's worth of buffers again (at thousands of small files that was
 * a tenth of the reading).  Nothing of a reader's data lives in them past
 * its close: each is set up again at open (the blocks are cleared at
 * their first use, the diagnostics start empty, a context starts afresh
 * with each frame).  They are freed when the thread ends. */
struct spare {
    ZSTD_DCtx *dctx;
    uint8_t *chunk, *cbuf;
    size_t chunk_cap, cbuf_cap;
    char *diag;
    struct blocks *blocks;
};
static pthread_key_t spare_key;
static pthread_once_t spare_once = PTHREAD_ONCE_INIT;
static int spare_ok;

static void spare_free(void *p)
{
    struct spare *sp = p;
    if (!sp)
        return;
    ZSTD_freeDCtx(sp->dctx);
    free(sp->chunk);
    free(sp->cbuf);
    free(sp->diag);
    free(sp->blocks);
    free(sp);
}

static void spare_init(void)
{
    spare_ok = pthread_key_create(&spare_key, spare_free) == 0;
}

/* The thread's spare buffers, taken (NULL: none). */
static struct spare *spare_take(void)
{
    if (pthread_once(&spare_once, spare_init) != 0 || !spare_ok)
        return NULL;
    struct spare *sp = pthread_getspecific(spare_key);
    if (sp)
        pthread_setspecific(spare_key, NULL);
    return sp;
}

/* r's buffers, kept for the thread's next reader when it keeps none; 1
 * when kept (r no longer holds them), else 0. */
static int spare_keep(struct sp_reader *r)
{
    if (pthread_once(&spare_once, spare_init) != 0 || !spare_ok || pthread_getspecific(spare_key) ||
        !r->dctx || !r->chunk || !r->cbuf || !r->diag || !r->blocks)
        return 0;
    struct spare *sp = malloc(sizeof *sp);
    if (!sp)
        return 0;
    *sp = (struct spare){r->dctx, r->chunk, r->cbuf, r->chunk_alloc, r->cbuf_alloc, r->diag, r->blocks};
    if (pthread_setspecific(spare_key, sp) != 0) {
        free(sp);
        return 0;
    }
    return 1;
}

static int alloc_buffers(struct sp_reader *r)
{
    r->cbuf_cap = ZSTD_compressBound(r->info.hdr.slot_size);
    struct spare *sp = spare_take();
    if (sp) { /* what fits is used; a smaller buffer gives way to a new one */
        r->dctx = sp->dctx;
        r->diag = sp->diag;
        r->blocks = sp->blocks;
        if (sp->chunk_cap >= r->slot_cap + SP_WORD) {
            r->chunk = sp->chunk;
            r->chunk_alloc = sp->chunk_cap;
        } else {
            free(sp->chunk);
        }
        if (sp->cbuf_cap >= r->cbuf_cap) {
            r->cbuf = sp->cbuf;
            r->cbuf_alloc = sp->cbuf_cap;
        } else {
            free(sp->cbuf);
        }
        free(sp);
    }
    /* SP_WORD more: the column decoder reads a word at a time (the chunk's
     * bytes past its end are cleared as each chunk is loaded). */
    if (!r->chunk && (r->chunk = malloc(r->slot_cap + SP_WORD)))
        r->chunk_alloc = r->slot_cap + SP_WORD;
    r->zeros = r->slot_cap <= SHARED_ZEROS ? shared_zeros : calloc(1, r->slot_cap + SP_WORD);
    if (!r->cbuf && (r->cbuf = malloc(r->cbuf_cap)))
        r->cbuf_alloc = r->cbuf_cap;
    /* Two frames of the largest size the slots allow: one damaged frame,
     * or two side by side, is always stepped over to the next. */
    r->scan_limit = 2 * (sizeof(struct sp_frame_header) + (uint64_t)r->cbuf_cap);
    if (r->scan_limit < SCAN_LIMIT_MIN)
        r->scan_limit = SCAN_LIMIT_MIN;
    if (!r->dctx)
        r->dctx = ZSTD_createDCtx();
    if (!r->diag)
        r->diag = malloc(DIAG_MAX);
    if (r->diag)
        r->diag[0] = 0;
    if (!r->blocks)
        r->blocks = malloc(sizeof *r->blocks); /* each type's block cleared at its first use */
    for (unsigned t = 0; t < SP_EV_MAX; t++)
        r->block[t].dirty = UINT64_MAX;
    return r->chunk && r->zeros && r->cbuf && r->dctx && r->diag && r->blocks ? 0 : SP_E_NOMEM;
}

static int open_file(struct sp_reader *r, const char *path)
{
    /* Non-blocking: a FIFO named like a trace would otherwise wait for a
     * writer for ever (dump x.sprof).  Only a regular file is read, and
     * for one the flag changes nothing. */
    r->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (r->fd < 0)
        return SP_E_IO;
    struct stat st;
    if (fstat(r->fd, &st) < 0)
        return SP_E_IO;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return SP_E_MAGIC;
    }
    r->file_size = (uint64_t)st.st_size;
    return 0;
}

struct sp_reader *sp_reader_open(const char *path, int *err)
{
    int dummy, rc;
    if (!err)
        err = &dummy;
    if (!path) {
        *err = SP_E_ARG;
        return NULL;
    }
    struct sp_reader *r = calloc(1, sizeof *r);
    if (!r) {
        *err = SP_E_NOMEM;
        return NULL;
    }
    r->fd = -1;
    if ((rc = open_file(r, path)) < 0 || (rc = read_header(r)) < 0 ||
        (rc = alloc_buffers(r)) < 0 || (rc = read_strings(r)) < 0 || (rc = scan_slots(r)) < 0) {
        int e = errno;
        sp_reader_close(r);
        errno = e;
        *err = rc;
        return NULL;
    }
    r->pos = r->info.hdr.frames_offset;
    r->phase = PHASE_FRAMES;
    r->types = r->types_next = SP_TYPES_ALL;
    plan_chunk(r);
    *err = 0;
    return r;
}

const struct sp_file_info *sp_reader_info(const struct sp_reader *r)
{
    return r ? &r->info : NULL;
}

const char *sp_reader_diag(const struct sp_reader *r)
{
    if (!r || !r->diag)
        return "";
    if (r->diag_lost) {
        /* Said once, at the end: the text itself is bounded. */
        struct sp_reader *m = (struct sp_reader *)r;
        uint64_t lost = m->diag_lost;
        m->diag_lost = 0;
        add_diag(m, "... and %llu more", (unsigned long long)lost);
    }
    return r->diag;
}

void sp_reader_add_diag(struct sp_reader *r, const char *line)
{
    if (r && r->diag && line)
        add_diag(r, "%s", line);
}

const struct sp_reader_stats *sp_reader_stats(const struct sp_reader *r)
{
    return r ? &r->stats : NULL;
}

void sp_reader_close(struct sp_reader *r)
{
    if (!r)
        return;
    if (r->fd >= 0)
        close(r->fd);
    free(r->strings);
    free(r->chunks);
    free(r->moved);
    if (r->zeros != shared_zeros)
        free(r->zeros);
    if (!spare_keep(r)) {
        free(r->chunk);
        free(r->cbuf);
        ZSTD_freeDCtx(r->dctx);
        free(r->diag);
        free(r->blocks);
    }
    free(r->summary);
    free(r);
}

int sp_reader_feed(struct sp_reader *r, const struct sp_tool *tool, void *ctx)
{
    if (!r || !tool)
        return SP_E_ARG;
    const struct sp_event *ev;
    while ((ev = sp_reader_next_ref(r))) {
        int rc = sp_tool_dispatch(tool, ctx, r, ev);
        if (rc)
            return rc;
    }
    return 0;
}
