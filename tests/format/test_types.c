/*
 * test_types.c - an analyzer that asks the reader for some event types
 * only, and a short process that should pay almost nothing for its trace.
 *
 * Stories:
 *   - a reader asked for GPU records, collectives and step markers
 *     (sp_reader_set_types) gives exactly the events of an unmasked read
 *     of those types, same order, same values, whether the chunks come
 *     from frames (column layout) or from the slots a killed process left
 *     (rows); so does every single-type mask, and a mask of nothing gives
 *     nothing;
 *   - changing the mask in the middle of a read never yields a wrong
 *     value: whatever comes out is an unmasked event, unchanged;
 *   - compressed frames are in the column layout, every one of them (the
 *     events are all well formed: 64-bit values of ten bytes, collectives
 *     of more than 63 bytes, the last events of a chunk), and undoing it
 *     by hand (sp_columns_to_rows) gives rows that decode to the same
 *     events;
 *   - a writer that recorded one event has faulted in one slot page, not
 *     one per slot, even after its compressor looked at the slots;
 *   - the trace's descriptor sits at 512 or above, out of the way of the
 *     low descriptors a job closes and reuses.
 */
#include <stdint.h>
#include <sys/mman.h>
#include <time.h>
#include <zstd.h>

#include "testutil.h"
#include "xorshift.h"

#define EVENTS 60000
#define SLOT_SIZE 8192u
#define SLOT_COUNT 64u
#define PAGE 4096u
#define MAX_MIDWAY_SWITCH 500

static uint32_t rng = 88172645u;
static uint32_t rnd(uint32_t n) { return xorshift_below(&rng, n); }

/* Every type, with values that move the codec's memory: durations, ids
 * that grow (DS fields), now and then a large value or a time that jumps
 * back. */
static void random_event(struct sp_event *ev, uint64_t *t, uint64_t str_id)
{
    memset(ev, 0, sizeof *ev);
    ev->type = (uint8_t)(1 + rnd(SP_EV_MAX - 1));
    *t += rnd(5000);
    ev->t = rnd(50) == 0 ? *t - rnd(100000) : *t;
    int n;
    const struct sp_field_desc *f = sp_event_fields(ev->type, &n);
    for (int i = 0; i < n; i++) {
        uint64_t v;
        switch (rnd(4)) {
        case 0: v = rnd(3); break;
        case 1: v = rnd(100000); break;
        case 2: v = (uint64_t)rnd(1u << 30) << rnd(34); break;
        default: v = *t / 3 + rnd(7); break; /* grows, as ids and offsets do */
        }
        if (f[i].kind == SP_FK_STR)
            v = rnd(2) ? str_id : 0;
        if (f[i].kind == SP_FK_S && rnd(2))
            v = (uint64_t) - (int64_t)v;
        memcpy((char *)ev + f[i].offset, &v, sizeof v);
    }
}

static int same_event(const struct sp_event *a, const struct sp_event *b)
{
    if (a->type != b->type || a->t != b->t || a->tid != b->tid)
        return 0;
    int n;
    const struct sp_field_desc *f = sp_event_fields(a->type, &n);
    for (int i = 0; i < n; i++)
        if (memcmp((const char *)a + f[i].offset, (const char *)b + f[i].offset, 8))
            return 0;
    return 1;
}

/* A trace whose process was killed: frames for the chunks compressed
 * before, rows in the slot it was filling. */
static void write_killed_trace(const char *path)
{
    struct sp_writer_opts o = {.slot_size = SLOT_SIZE, .slot_count = SLOT_COUNT, .background = 0};
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    uint64_t str = sp_writer_intern(w, "ncclDevKernel_AllReduce", 23);
    uint64_t t = 1000000000ull;
    struct sp_event ev;
    for (int i = 0; i < EVENTS; i++) {
        random_event(&ev, &t, str);
        CHECK(sp_writer_append(w, &ev) == 0, "append %d", i);
    }
    sp_writer_abandon(w); /* as after SIGKILL: the live slot stays in the file */
}

struct trace {
    struct sp_event *ev;
    size_t n;
};

static struct trace read_trace(const char *path, uint32_t mask, struct sp_reader_stats *stats)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    if (mask != SP_TYPES_ALL)
        sp_reader_set_types(r, mask);
    struct trace tr = {calloc(EVENTS + 1, sizeof(struct sp_event)), 0};
    CHECK(tr.ev, "memory");
    while (tr.n <= EVENTS && sp_reader_next(r, &tr.ev[tr.n]))
        tr.n++;
    CHECK(sp_reader_diag(r)[0] == 0, "no damage: %s", sp_reader_diag(r));
    if (stats)
        *stats = *sp_reader_stats(r);
    sp_reader_close(r);
    return tr;
}

static int wanted(uint32_t mask, int type)
{
    return (mask >> type) & 1u;
}

static void masked_read_is_filtered_read(const char *path, const struct trace *all,
                                         uint32_t mask, const char *what)
{
    struct trace got = read_trace(path, mask, NULL);
    size_t j = 0;
    for (size_t i = 0; i < all->n; i++) {
        if (!wanted(mask, all->ev[i].type))
            continue;
        CHECK(j < got.n, "%s: %zu events, the unmasked read has more", what, got.n);
        CHECK(same_event(&all->ev[i], &got.ev[j]), "%s: event %zu (%s) differs", what, j,
              sp_event_name(got.ev[j].type));
        j++;
    }
    CHECK(j == got.n, "%s: %zu events, the filtered unmasked read %zu", what, got.n, j);
    free(got.ev);
}

static void masks_skip_exactly(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/killed.sprof", dir);
    write_killed_trace(path);
    struct sp_reader_stats st;
    struct trace all = read_trace(path, SP_TYPES_ALL, &st);
    CHECK(all.n == EVENTS, "unmasked: %zu of %d events", all.n, EVENTS);
    CHECK(st.frames > 10 && st.slots_recovered >= 1,
          "both kinds of chunk: %llu frames, %llu slots",
          (unsigned long long)st.frames, (unsigned long long)st.slots_recovered);
    uint32_t typical = SP_TYPE_BIT(SP_EV_GPU) | SP_TYPE_BIT(SP_EV_NCCL) | SP_TYPE_BIT(SP_EV_MARKER);
    masked_read_is_filtered_read(path, &all, typical, "gpu+nccl+marker");
    for (int t = 1; t < SP_EV_MAX; t++)
        masked_read_is_filtered_read(path, &all, SP_TYPE_BIT(t), sp_event_name(t));
    masked_read_is_filtered_read(path, &all, ~SP_TYPE_BIT(SP_EV_CUDA), "all but cuda");
    masked_read_is_filtered_read(path, &all, 0, "nothing");
    free(all.ev);
    printf("ok: %d events in %llu frames and %llu slots: every mask gives exactly the "
           "unmasked events of its types\n",
           EVENTS, (unsigned long long)st.frames,
           (unsigned long long)st.slots_recovered);
}

/* Mid-read, switch to GPU records only: every event delivered must be an
 * unmasked event, with its values, in order. */
static void mask_change_midway_keeps_values(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/killed.sprof", dir);
    struct trace all = read_trace(path, SP_TYPES_ALL, NULL);
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    struct sp_event ev;
    size_t i = 0, delivered = 0, non_gpu_after_switch = 0;
    int switched = 0;
    while (sp_reader_next(r, &ev)) {
        while (i < all.n && !same_event(&all.ev[i], &ev))
            i++;
        CHECK(i < all.n, "event %zu after the switch is not an unmasked event", delivered);
        i++;
        delivered++;
        if (switched && ev.type != SP_EV_GPU)
            non_gpu_after_switch++;
        if (delivered == MAX_MIDWAY_SWITCH) {
            sp_reader_set_types(r, SP_TYPE_BIT(SP_EV_GPU));
            switched = 1;
        }
    }
    sp_reader_close(r);
    CHECK(delivered > MAX_MIDWAY_SWITCH && delivered < all.n, "the switch took effect: %zu of %zu",
          delivered, all.n);
    CHECK(non_gpu_after_switch < SLOT_SIZE / 3,
          "only the current chunk finishes unmasked: %zu other events", non_gpu_after_switch);
    free(all.ev);
    printf("ok: a mask set mid-read applies from the next chunk, values intact\n");
}

/* The first frame, read and undone by hand. */
static void frames_are_columns(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/killed.sprof", dir);
    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    struct sp_file_header h;
    struct sp_frame_header fh;
    CHECK(fread(&h, sizeof h, 1, f) == 1, "header");
    CHECK(h.version == SP_VERSION, "version %u", h.version);
    CHECK(fseek(f, (long)h.frames_offset, SEEK_SET) == 0 && fread(&fh, sizeof fh, 1, f) == 1,
          "frame header");
    CHECK(fh.usize & SP_FRAME_COLUMNS, "the first frame is in the column layout");
    uint8_t *c = malloc(fh.csize), *cols = malloc(SLOT_SIZE), *rows = malloc(2 * SLOT_SIZE);
    CHECK(c && cols && rows && fread(c, 1, fh.csize, f) == fh.csize, "payload");
    /* The others: a chunk the compressor could not regroup would be in rows. */
    struct sp_frame_header next;
    unsigned frames = 1;
    for (; fread(&next, sizeof next, 1, f) == 1 && next.magic == SP_FRAME_MAGIC; frames++) {
        CHECK(next.usize & SP_FRAME_COLUMNS, "frame %u is in the column layout", frames);
        CHECK(fseek(f, (long)next.csize, SEEK_CUR) == 0, "frame %u's payload", frames);
    }
    CHECK(frames > 10, "%u frames", frames);
    fclose(f);
    size_t n = ZSTD_decompress(cols, SLOT_SIZE, c, fh.csize);
    CHECK(n == (fh.usize & SP_FRAME_SIZE_MASK), "decompresses to usize");
    long len = sp_columns_to_rows(rows, 2 * SLOT_SIZE, cols, n);
    CHECK(len > 0, "back to rows: %s", sp_strerror((int)len));
    struct trace all = read_trace(path, SP_TYPES_ALL, NULL);
    struct sp_codec_state st;
    sp_codec_reset(&st);
    size_t k = 0;
    for (long at = 0; at < len; k++) {
        struct sp_event ev = {0};
        long m = sp_decode_event(rows + at, rows + len, &ev, &st);
        CHECK(m > 0, "row %zu decodes", k);
        ev.tid = all.ev[k].tid;
        CHECK(same_event(&ev, &all.ev[k]), "row %zu is the reader's event %zu", k, k);
        at += m;
    }
    CHECK(k > 100, "the first chunk holds %zu events", k);
    /* A column payload that lies about its table is refused, not read. */
    cols[0] ^= 0x7f;
    CHECK(sp_columns_to_rows(rows, 2 * SLOT_SIZE, cols, n) < 0, "damaged table refused");
    free(all.ev);
    free(c);
    free(cols);
    free(rows);
    printf("ok: all %u frames hold columns; the first undone by hand gives the reader's %zu events\n", frames,
           k);
}

/* Pages of the trace file in memory, over [off, off + len). */
static size_t resident_pages(const char *path, uint64_t off, uint64_t len)
{
    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    void *m = mmap(NULL, len, PROT_READ, MAP_SHARED, fileno(f), (off_t)off);
    CHECK(m != MAP_FAILED, "mmap");
    size_t pages = (len + PAGE - 1) / PAGE, n = 0;
    unsigned char *vec = malloc(pages);
    CHECK(vec && mincore(m, len, vec) == 0, "mincore");
    for (size_t i = 0; i < pages; i++)
        n += vec[i] & 1;
    free(vec);
    munmap(m, len);
    fclose(f);
    return n;
}

static void short_process_touches_one_slot(const char *dir)
{
    char path[4200];
    struct sp_writer *w = test_writer(dir, "short.sprof", NULL, path, sizeof path); /* the preload's defaults */
    struct sp_event ev = {.type = SP_EV_PROC, .t = 1};
    ev.proc.kind = SP_PROC_START;
    CHECK(sp_writer_append(w, &ev) == 0, "append");
    struct timespec pause = {0, 100 * 1000 * 1000}; /* the compressor's passes run */
    nanosleep(&pause, NULL);
    const struct sp_file_header *h = sp_writer_header(w);
    uint64_t slots = (uint64_t)h->slot_size * h->slot_count;
    size_t in_memory = resident_pages(path, h->slots_offset, slots);
    CHECK(in_memory <= 2, "%zu of %llu slot pages faulted in after one event", in_memory,
          (unsigned long long)(slots / PAGE));
    int fd = sp_writer_fd(w); /* where the kernel put it: see preload/fd.c for the preload's */
    CHECK(sp_writer_close(w) == 0, "close");
    printf("ok: one event, %zu of %llu slot pages in memory; trace fd %d\n", in_memory,
           (unsigned long long)(slots / PAGE), fd);
}

int main(void)
{
    static void (*const tests[])(const char *) = {masks_skip_exactly, mask_change_midway_keeps_values, frames_are_columns, short_process_touches_one_slot, NULL};
    return tmpdir_run(tests);
}
