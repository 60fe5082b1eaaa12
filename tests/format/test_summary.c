/*
 * test_summary.c - every chunk comes with a summary that says exactly
 * what its events say: per type the count and the earliest and latest
 * start, and per pair of types the disorder, whether the summary was
 * stored by the writer (frames) or computed by the reader (chunks a
 * killed process left in its slots); a chunk holding nothing a reader
 * asks for is stepped over without being decompressed, its summary still
 * given; and a reader that asks for no summaries reads the same events.
 *
 * The events: two threads, one issuing host calls whose times go back
 * when a call is recorded at its exit (a collective around launches),
 * one delivering GPU records grouped by stream (times back and forth),
 * plus markers, over many small chunks.
 */
#include <pthread.h>

#include "testutil.h"

#define STEPS 300
#define MAX_CHUNKS 4096

/* What one chunk's events said, counted while reading them. */
struct seen {
    struct sp_chunk_summary want; /* built from the events */
    struct sp_chunk_summary got;  /* the summary the reader gave */
    uint64_t latest;
};

struct reading {
    struct seen *c;
    int n;
    int stored;
};

static void on_summary(void *ctx, const struct sp_chunk_summary *s)
{
    struct reading *rd = ctx;
    CHECK(rd->n < MAX_CHUNKS, "too many chunks");
    struct seen *c = &rd->c[rd->n++];
    memset(c, 0, sizeof *c);
    c->got = *s;
    c->want.tid = s->tid;
    rd->stored += s->stored;
}

/* The definition, applied event by event. */
static void count(struct reading *rd, const struct sp_event *ev)
{
    CHECK(rd->n > 0, "an event before any summary");
    struct seen *c = &rd->c[rd->n - 1];
    struct sp_chunk_summary *w = &c->want;
    unsigned t = ev->type;
    CHECK(ev->tid == w->tid, "event of tid %u in a chunk of tid %u", ev->tid, w->tid);
    for (unsigned a = 1; a < SP_EV_MAX; a++)
        if ((w->types & SP_TYPE_BIT(a)) && w->t_max[a] > ev->t && w->t_max[a] - ev->t > w->lag[a][t])
            w->lag[a][t] = w->t_max[a] - ev->t;
    if (!(w->types & SP_TYPE_BIT(t)) || ev->t < w->t_min[t])
        w->t_min[t] = ev->t;
    if (!(w->types & SP_TYPE_BIT(t)) || ev->t > w->t_max[t])
        w->t_max[t] = ev->t;
    w->types |= SP_TYPE_BIT(t);
    w->count[t]++;
    w->events++;
}

static void compare(const struct seen *c, int i)
{
    const struct sp_chunk_summary *g = &c->got, *w = &c->want;
    CHECK(g->types == w->types, "chunk %d: types %#x, events say %#x", i, g->types, w->types);
    CHECK(g->events == w->events, "chunk %d: %llu events, read %llu", i,
          (unsigned long long)g->events, (unsigned long long)w->events);
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!(w->types & SP_TYPE_BIT(t)))
            continue;
        CHECK(g->count[t] == w->count[t], "chunk %d type %u: count", i, t);
        CHECK(g->t_min[t] == w->t_min[t] && g->t_max[t] == w->t_max[t], "chunk %d type %u: bounds", i, t);
        for (unsigned a = 1; a < SP_EV_MAX; a++)
            CHECK(g->lag[a][t] == w->lag[a][t], "chunk %d: lag[%u][%u] %llu, events say %llu", i, a, t,
                  (unsigned long long)g->lag[a][t], (unsigned long long)w->lag[a][t]);
    }
}

struct job {
    struct sp_writer *w;
    int gpu, retire;
};

static void *record_thread(void *arg)
{
    struct job *j = arg;
    uint64_t t = 1000000;
    for (int k = 0; k < STEPS; k++, t += 100000) {
        if (j->gpu) {
            /* records of two streams, each stream's in order, streams apart */
            for (int s = 0; s < 2; s++)
                for (int i = 0; i < 8; i++) {
                    struct sp_event ev = {.type = SP_EV_GPU, .t = t + (uint64_t)i * 1000 + (uint64_t)s * 300};
                    ev.gpu.kind = SP_GPU_KERNEL;
                    ev.gpu.stream = (uint64_t)s + 7;
                    ev.gpu.dur = 200;
                    ev.gpu.correlation = (uint64_t)(k * 16 + s * 8 + i + 1);
                    CHECK(sp_writer_append(j->w, &ev) == 0, "append gpu");
                }
            continue;
        }
        struct sp_event m = {.type = SP_EV_MARKER, .t = t};
        m.marker.kind = SP_MARK_PUSH;
        CHECK(sp_writer_append(j->w, &m) == 0, "append marker");
        for (int i = 0; i < 6; i++) {
            struct sp_event ev = {.type = SP_EV_CUDA, .t = t + 100 + (uint64_t)i * 500};
            ev.cuda.api = SP_CUDA_LAUNCH;
            ev.cuda.dur = 40;
            CHECK(sp_writer_append(j->w, &ev) == 0, "append cuda");
        }
        /* the collective that enclosed the launches, recorded at its exit */
        struct sp_event n = {.type = SP_EV_NCCL, .t = t + 50};
        n.nccl.op = SP_NCCL_ALLREDUCE;
        n.nccl.seq = (uint64_t)k + 1;
        n.nccl.dur = 4000;
        CHECK(sp_writer_append(j->w, &n) == 0, "append nccl");
        struct sp_event io = {.type = SP_EV_IO, .t = t + 60000};
        io.io.op = SP_IO_READ;
        io.io.dur = 9000;
        CHECK(sp_writer_append(j->w, &io) == 0, "append io");
        m.t = t + 90000;
        m.marker.kind = SP_MARK_POP;
        CHECK(sp_writer_append(j->w, &m) == 0, "append pop");
    }
    if (j->retire)
        sp_writer_thread_exit(j->w);
    return NULL;
}

static void record(const char *path, int close)
{
    struct sp_writer_opts o = {.slot_size = 2048, .slot_count = 256, .strings_size = 4096};
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    pthread_t th[2];
    /* Killed: each thread's last chunk is still ACTIVE, in its slot. */
    struct job jobs[2] = {{w, 0, close}, {w, 1, close}};
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&th[i], NULL, record_thread, &jobs[i]) == 0, "thread");
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    if (close)
        CHECK(sp_writer_close(w) == 0, "close");
    else
        sp_writer_abandon(w); /* as after a kill: the chunks stay in their slots */
}

/* Reads the trace with summaries, types in mask; returns events read. */
static uint64_t read_checked(const char *path, uint32_t mask, struct reading *rd,
                             struct sp_reader_stats *stats)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    CHECK(sp_reader_set_summary(r, on_summary, rd) == 0, "set summary");
    sp_reader_set_types(r, mask);
    struct sp_event ev;
    uint64_t n = 0;
    while (sp_reader_next(r, &ev)) {
        count(rd, &ev);
        n++;
    }
    CHECK(sp_reader_diag(r)[0] == 0, "damage: %s", sp_reader_diag(r));
    *stats = *sp_reader_stats(r);
    sp_reader_close(r);
    return n;
}

static uint64_t read_plain(const char *path)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    struct sp_event ev;
    uint64_t n = 0;
    while (sp_reader_next(r, &ev))
        n++;
    sp_reader_close(r);
    return n;
}

/* The trace as a writer without summaries would have left it: each
 * frame's leading skippable frame cut out, checksums made again. */
#define FRAME_HCRC_BYTES 28
static void strip_summaries(const char *from, const char *to)
{
    FILE *f = fopen(from, "rb");
    CHECK(f, "open %s", from);
    fseek(f, 0, SEEK_END);
    size_t size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(size), *out = malloc(size);
    CHECK(b && out && fread(b, 1, size, f) == size, "read %s", from);
    fclose(f);
    struct sp_file_header h;
    memcpy(&h, b, sizeof h);
    size_t at = h.frames_offset, o = at;
    memcpy(out, b, at);
    int stripped = 0;
    while (at + sizeof(struct sp_frame_header) <= size) {
        struct sp_frame_header fh;
        memcpy(&fh, b + at, sizeof fh);
        CHECK(fh.magic == SP_FRAME_MAGIC, "frame at %zu", at);
        const uint8_t *pl = b + at + sizeof fh;
        uint32_t magic, len, cut = 0;
        memcpy(&magic, pl, 4);
        memcpy(&len, pl + 4, 4);
        if ((magic & 0xfffffff0u) == 0x184D2A50u) {
            cut = 8 + len;
            stripped++;
        }
        at += sizeof fh + fh.csize;
        fh.csize -= cut;
        fh.crc = sp_crc32c(0, pl + cut, fh.csize);
        fh.hcrc = sp_crc32c(0, &fh, FRAME_HCRC_BYTES);
        memcpy(out + o, &fh, sizeof fh);
        memcpy(out + o + sizeof fh, pl + cut, fh.csize);
        o += sizeof fh + fh.csize;
    }
    CHECK(stripped > 0, "frames carried summaries");
    f = fopen(to, "wb");
    CHECK(f && fwrite(out, 1, o, f) == o && fclose(f) == 0, "write %s", to);
    free(b);
    free(out);
}

static void check_file(const char *path, int expect_stored)
{
    static struct seen chunks[MAX_CHUNKS];
    struct reading rd = {.c = chunks};
    struct sp_reader_stats st;
    uint64_t n = read_checked(path, SP_TYPES_ALL, &rd, &st);
    uint64_t expect = (uint64_t)STEPS * (10 + 16);
    CHECK(n == expect, "%llu events, wrote %llu", (unsigned long long)n, (unsigned long long)expect);
    CHECK(read_plain(path) == n, "a reader without summaries reads the same events");
    CHECK(rd.n > 20, "many chunks (%d)", rd.n);
    for (int i = 0; i < rd.n; i++)
        compare(&rd.c[i], i);
    if (expect_stored < 0)
        CHECK(rd.stored == 0, "no summary stored, every one computed (%d)", rd.stored);
    else if (expect_stored)
        CHECK(rd.stored == rd.n, "every frame carries its summary (%d of %d)", rd.stored, rd.n);
    else
        CHECK(rd.stored < rd.n, "slot chunks have summaries computed (%d of %d stored)", rd.stored, rd.n);
    int lagged = 0;
    for (int i = 0; i < rd.n; i++)
        lagged += rd.c[i].got.lag[SP_EV_CUDA][SP_EV_NCCL] > 0 || rd.c[i].got.lag[SP_EV_GPU][SP_EV_GPU] > 0;
    CHECK(lagged > rd.n / 2, "the disorder is there to measure (%d chunks)", lagged);

    /* Asking for GPU records only: the host thread's chunks are summaries alone. */
    struct reading only = {.c = chunks};
    uint64_t gpu = read_checked(path, SP_TYPE_BIT(SP_EV_GPU), &only, &st);
    CHECK(gpu == (uint64_t)STEPS * 16, "gpu events");
    CHECK(only.n == rd.n, "every chunk's summary is given (%d of %d)", only.n, rd.n);
    if (expect_stored > 0)
        CHECK(st.frames_skipped > 0 && st.frames_skipped < st.frames,
              "host chunks are not decompressed (%llu of %llu)", (unsigned long long)st.frames_skipped,
              (unsigned long long)st.frames);
}

int main(void)
{
    char dir[256], path[512];
    tmpdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/closed.sprof", dir);
    record(path, 1);
    check_file(path, 1);
    char old[600];
    snprintf(old, sizeof old, "%s/no-summaries.sprof", dir);
    strip_summaries(path, old);
    check_file(old, -1); /* column frames summarized by the reader */
    snprintf(path, sizeof path, "%s/killed.sprof", dir);
    record(path, 0);
    check_file(path, 0);
    tmpdir_remove(dir);
    printf("ok: chunk summaries agree with their events, stored or computed\n");
    return 0;
}
