/*
 * test_roundtrip.c - a user records every kind of event, with the most
 * awkward values a field can hold, and reads back exactly what was
 * recorded: same types, times, fields, strings, and each thread's events in
 * the order that thread appended them, with nothing lost or duplicated
 * when eight threads record at once.
 */
#include <pthread.h>
#include <stdint.h>

#include "codec.h"
#include "testutil.h"

#define THREADS 8
#define EVENTS_PER_THREAD 100000
#define LONG_STRING_LEN 3000
#define VALUE_PATTERNS 4

uint32_t sp_crc32c_portable(uint32_t crc, const void *buf, size_t len);

static char long_string[LONG_STRING_LEN + 1];

/* Pattern p of a field: 0, 1, the maximum, and (for signed) the minimum. */
static uint64_t field_value(enum sp_field_kind kind, int p, uint64_t str_id)
{
    if (kind == SP_FK_STR)
        return p == 0 ? 0 : str_id;
    switch (p) {
    case 0: return 0;
    case 1: return 1;
    case 2: return kind == SP_FK_S ? (uint64_t)INT64_MAX : UINT64_MAX;
    default: return kind == SP_FK_S ? (uint64_t)INT64_MIN : UINT64_MAX - 1;
    }
}

static void fill_event(struct sp_event *ev, int type, int p, uint64_t t, uint64_t str_id)
{
    memset(ev, 0, sizeof *ev);
    ev->type = (uint8_t)type;
    ev->t = t;
    int n;
    const struct sp_field_desc *f = sp_event_fields(type, &n);
    for (int i = 0; i < n; i++) {
        uint64_t v = field_value(f[i].kind, p, str_id);
        memcpy((char *)ev + f[i].offset, &v, sizeof v);
    }
}

static void check_same(const struct sp_event *a, const struct sp_event *b, const char *what)
{
    CHECK(a->type == b->type, "%s: type %d != %d", what, a->type, b->type);
    CHECK(a->t == b->t, "%s: t %llu != %llu", what, (unsigned long long)a->t,
          (unsigned long long)b->t);
    int n;
    const struct sp_field_desc *f = sp_event_fields(a->type, &n);
    for (int i = 0; i < n; i++)
        CHECK(!memcmp((char *)a + f[i].offset, (char *)b + f[i].offset, 8),
              "%s: %s.%s differs", what, sp_event_name(a->type), f[i].name);
}

/* Times that jump forward, backward, to 0 and to the top of the range. */
static const uint64_t times[] = {0, 1, UINT64_MAX, 5, UINT64_MAX / 2, 0, 1000000000000ull};
#define NTIMES (sizeof times / sizeof times[0])

static void every_type_survives_the_file(const char *dir)
{
    char path[4200];
    struct sp_writer *w = test_writer(dir, "extremes.sprof", NULL, path, sizeof path);
    uint32_t long_id = sp_writer_intern(w, long_string, LONG_STRING_LEN);
    uint32_t empty_id = sp_writer_intern(w, "", 0);
    CHECK(long_id > 0 && empty_id > 0 && long_id != empty_id, "intern ids %u %u", long_id, empty_id);
    CHECK(sp_writer_add_tlv(w, SP_TLV_HOST, "node-7", 6) == 0, "tlv");
    CHECK(sp_writer_add_tlv(w, SP_TLV_ARGV, "python\0train.py\0--epochs=3", 26) == 0, "tlv");
    sp_writer_header(w)->rank = 3;

    struct sp_event sent[SP_EV_MAX * VALUE_PATTERNS * NTIMES];
    int nsent = 0;
    for (size_t ti = 0; ti < NTIMES; ti++)
        for (int type = 1; type < SP_EV_MAX; type++)
            for (int p = 0; p < VALUE_PATTERNS; p++) {
                fill_event(&sent[nsent], type, p, times[ti] + (uint64_t)p, long_id);
                CHECK(sp_writer_append(w, &sent[nsent]) == 0, "append %d", nsent);
                nsent++;
            }
    CHECK(sp_writer_close(w) == 0, "close");

    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    const struct sp_file_info *info = sp_reader_info(r);
    CHECK(info->closed, "closed flag");
    CHECK(!strcmp(info->host, "node-7"), "host '%s'", info->host);
    CHECK(!strcmp(info->argv, "python train.py --epochs=3"), "argv '%s'", info->argv);
    CHECK(info->hdr.rank == 3 && info->hdr.world_size == -1, "rank %d", info->hdr.rank);
    CHECK(info->hdr.end_mono >= info->hdr.start_mono && info->hdr.start_real > 0, "clocks");
    struct sp_event ev;
    int got = 0;
    while (sp_reader_next(r, &ev)) {
        CHECK(got < nsent, "more events than recorded");
        char what[64];
        snprintf(what, sizeof what, "event %d", got);
        check_same(&sent[got], &ev, what);
        CHECK(ev.tid == (uint32_t)gettid(), "tid %u", ev.tid);
        got++;
    }
    CHECK(got == nsent, "read %d of %d events", got, nsent);
    CHECK(!strcmp(sp_reader_string(r, long_id), long_string), "long string resolves");
    CHECK(!strcmp(sp_reader_string(r, empty_id), ""), "empty string");
    CHECK(!strcmp(sp_reader_string(r, 0), "") && !strcmp(sp_reader_string(r, 1u << 30), ""),
          "unknown ids resolve to empty text");
    CHECK(!strcmp(sp_reader_diag(r), ""), "no damage reported: %s", sp_reader_diag(r));
    sp_reader_close(r);
    printf("ok: %d events of %d types with extreme values round-trip\n", nsent, SP_EV_MAX - 1);
}

/* ---- IO repeats (version 4) ------------------------------------------------ */

#define REPEAT_EVENTS 6000
#define REPEAT_SLOT 4096 /* a few hundred events a chunk: many chunks, each from empty memory */

/* Event i of a job that reads in runs: most events repeat the one before
 * (op, fd, fd_kind, bytes, offset, err), with their own times, durations,
 * results and paths; every 7th changes one of the six (an extreme value
 * at times), and GPU events come between. */
static void repeat_event(struct sp_event *ev, int i, uint64_t path_id)
{
    static const int64_t fds[] = {3, INT64_MIN, -1, INT64_MAX};
    static const uint64_t big[] = {4096, UINT64_MAX, 0, 1};
    memset(ev, 0, sizeof *ev);
    if (i % 11 == 10) {
        ev->type = SP_EV_GPU;
        ev->t = 1000000 + (uint64_t)i * 900;
        ev->gpu.dur = 50;
        ev->gpu.kind = SP_GPU_KERNEL;
        return;
    }
    int run = i / 7, change = run % 7;
    ev->type = SP_EV_IO;
    ev->t = 1000000 + (uint64_t)i * 900;
    ev->io.dur = (uint64_t)(i * 37 % 500);
    ev->io.ret = i % 13 ? 4096 : -1;
    ev->io.path = i % 5 == 0 ? path_id : (uint64_t)(run % 3);
    ev->io.op = change == 0 ? (uint64_t)(run % SP_IO_OP_MAX) : SP_IO_READ;
    ev->io.fd = change == 1 ? fds[run % 4] : 3;
    ev->io.fd_kind = change == 2 ? big[run % 4] : 1;
    ev->io.bytes = change == 3 ? big[run % 4] : 4096;
    ev->io.offset = change == 4 ? (uint64_t)run * 4096 : (change == 5 ? UINT64_MAX - (uint64_t)run : 0);
    ev->io.err = change == 6 ? big[run % 4] : 0;
}

/* Reads `path` with IO's fields limited to `fields` (all: UINT64_MAX) and
 * compares every event with what was sent, the fields left out read 0.
 * Returns the chunks read from slots (rows) and from frames, in *slots
 * and *frames. */
static void repeats_read_back(const char *path, const struct sp_event *sent, int nsent, uint64_t fields,
                              const char *what, uint64_t *slots, uint64_t *frames)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    if (fields != UINT64_MAX)
        sp_reader_set_fields(r, SP_EV_IO, fields);
    struct sp_event ev;
    int got = 0;
    while (sp_reader_next(r, &ev)) {
        CHECK(got < nsent, "%s: more events than recorded", what);
        struct sp_event want = sent[got];
        if (want.type == SP_EV_IO && fields != UINT64_MAX) {
            int n;
            const struct sp_field_desc *f = sp_event_fields(SP_EV_IO, &n);
            for (int i = 0; i < n; i++)
                if (!((fields >> i) & 1) && strcmp(f[i].name, "dur") != 0) /* durations are always read */
                    memset((char *)&want + f[i].offset, 0, sizeof(uint64_t));
        }
        char at[96];
        snprintf(at, sizeof at, "%s, event %d", what, got);
        check_same(&want, &ev, at);
        got++;
    }
    CHECK(got == nsent, "%s: read %d of %d events", what, got, nsent);
    CHECK(!strcmp(sp_reader_diag(r), ""), "%s: no damage reported: %s", what, sp_reader_diag(r));
    *slots = sp_reader_stats(r)->slots_recovered;
    *frames = sp_reader_stats(r)->frames;
    sp_reader_close(r);
}

/* Frames of the closed trace `path` in the column layout, and in all. */
static void count_column_frames(const char *path, int *columns, int *all)
{
    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    struct sp_file_header h;
    CHECK(fread(&h, sizeof h, 1, f) == 1, "header");
    *columns = *all = 0;
    struct sp_frame_header fh;
    for (uint64_t at = h.frames_offset;
         fseek(f, (long)at, SEEK_SET) == 0 && fread(&fh, sizeof fh, 1, f) == 1 && fh.magic == SP_FRAME_MAGIC;
         at += sizeof fh + fh.csize) {
        *columns += (fh.usize & SP_FRAME_COLUMNS) != 0;
        ++*all;
    }
    fclose(f);
}

/* Repeated IO events (codec.h) leave six fields out, and those whose
 * result is their size (most here, and a -1 for UINT64_MAX bytes) their
 * result; every one of them comes back, in frames (columns) and in the
 * slots a running process holds (rows), whichever fields a reader asks
 * for. */
static void io_repeats_round_trip(const char *dir)
{
    char path[4200];
    struct sp_writer_opts o = {.slot_size = REPEAT_SLOT, .slot_count = 64, .background = 0};
    struct sp_writer *w = test_writer(dir, "repeats.sprof", &o, path, sizeof path);
    uint64_t path_id = sp_writer_intern(w, "/data/shard-00017.bin", 21);
    static struct sp_event sent[REPEAT_EVENTS];
    for (int i = 0; i < REPEAT_EVENTS; i++) {
        repeat_event(&sent[i], i, path_id);
        CHECK(sp_writer_append(w, &sent[i]) == 0, "append %d", i);
    }
    /* Before close: the chunks the writer has not compressed are read
     * from their slots, in rows. */
    uint64_t slots, frames;
    repeats_read_back(path, sent, REPEAT_EVENTS, UINT64_MAX, "open writer, every field", &slots, &frames);
    CHECK(slots >= 1, "the open writer's last chunk read from its slot (%llu)", (unsigned long long)slots);
    CHECK(sp_writer_close(w) == 0, "close");
    int columns, all;
    count_column_frames(path, &columns, &all);
    CHECK(all > 1 && columns == all, "every frame in columns (%d of %d)", columns, all);
    /* Field i of an IO event: dur 0, op 1, fd 2, fd_kind 3, path 4, ret 5,
     * bytes 6, offset 7, err 8. */
    static const struct {
        uint64_t fields;
        const char *what;
    } masks[] = {
        {UINT64_MAX, "every field"},
        {1u << 7, "offset alone"},
        {1u << 4, "path alone"},
        {1u << 5, "ret alone"},
        {~(UINT64_C(1) << 4), "all but the path"},
        {(1u << 1) | (1u << 8), "op and err"},
    };
    for (size_t m = 0; m < sizeof masks / sizeof masks[0]; m++) {
        repeats_read_back(path, sent, REPEAT_EVENTS, masks[m].fields, masks[m].what, &slots, &frames);
        CHECK(slots == 0 && frames > 1, "%s: the closed trace's chunks read from frames (%llu)", masks[m].what,
              (unsigned long long)frames);
    }

    /* A repeat is smaller than the event it repeats. */
    struct sp_codec_state st;
    sp_codec_reset(&st);
    uint8_t buf[SP_EVENT_MAX_BYTES];
    size_t first = sp_encode_event(buf, &sent[0], &st), again;
    struct sp_event next = sent[0];
    next.t += 1000;
    again = sp_encode_event(buf, &next, &st);
    /* Each of the six fields left out takes a byte at least. */
    CHECK(again + 6 <= first, "a repeat codes to %zu bytes, the first to %zu", again, first);
    printf("ok: %d IO events, most of them repeats, read back in rows and columns under 6 field masks\n",
           REPEAT_EVENTS);
}

/* A stretch of kernels' durations, each value of one varint length or of
 * mixed ones: runs of two-byte values (the column decoder joins four to
 * a word, word after word), of three-byte ones (two to six bytes), the
 * edges of each length one after another, and longer ones. */
#define RUN_EVENTS 6000
#define RUN_STRETCH 37 /* events of one shape; not a multiple of 2, 4 or 8 */
static uint64_t run_value(int i)
{
    static const uint64_t edges[] = {0, 127, 128, 16383, 16384, (1u << 21) - 1, 1u << 21, 300, 20000};
    uint64_t k = (uint64_t)i;
    switch ((i / RUN_STRETCH) % 4) {
    case 0:
        return 128 + k * 7919 % (16384 - 128);
    case 1:
        return 16384 + k * 104729 % ((1u << 21) - 16384);
    case 2:
        return edges[k % (sizeof edges / sizeof edges[0])];
    default:
        return k * 2654435761u % (1u << 30);
    }
}

/* Every kernel comes back with its duration and its time (a gap after
 * the kernel before of the same shapes, so the deltas' column holds
 * them too), from the column frames of the closed trace. */
static void durations_of_every_length(const char *dir)
{
    char path[4200];
    struct sp_writer_opts o = {.slot_size = REPEAT_SLOT, .slot_count = 64, .background = 0};
    struct sp_writer *w = test_writer(dir, "durations.sprof", &o, path, sizeof path);
    static struct sp_event sent[RUN_EVENTS];
    uint64_t end = 1000000000000ull;
    for (int i = 0; i < RUN_EVENTS; i++) {
        struct sp_event *ev = &sent[i];
        memset(ev, 0, sizeof *ev);
        ev->type = SP_EV_GPU;
        ev->t = end + run_value(i + RUN_STRETCH) / 2; /* the delta is zigzagged: twice the gap */
        ev->gpu.dur = run_value(i);
        ev->gpu.kind = SP_GPU_KERNEL;
        ev->gpu.stream = (uint64_t)(i % 3);
        end = ev->t + ev->gpu.dur;
        CHECK(sp_writer_append(w, ev) == 0, "append %d", i);
    }
    CHECK(sp_writer_close(w) == 0, "close");
    int columns, all;
    count_column_frames(path, &columns, &all);
    CHECK(all > 1 && columns == all, "every frame in columns (%d of %d)", columns, all);
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    const struct sp_event *ev;
    int got = 0;
    while ((ev = sp_reader_next_ref(r))) {
        CHECK(got < RUN_EVENTS, "more events than recorded");
        const struct sp_event *want = &sent[got];
        CHECK(ev->type == SP_EV_GPU && ev->t == want->t && ev->gpu.dur == want->gpu.dur &&
                  ev->gpu.kind == want->gpu.kind && ev->gpu.stream == want->gpu.stream,
              "kernel %d: t %llu dur %llu stream %llu, recorded t %llu dur %llu stream %llu", got,
              (unsigned long long)ev->t, (unsigned long long)ev->gpu.dur, (unsigned long long)ev->gpu.stream,
              (unsigned long long)want->t, (unsigned long long)want->gpu.dur, (unsigned long long)want->gpu.stream);
        got++;
    }
    CHECK(got == RUN_EVENTS, "read %d of %d kernels", got, RUN_EVENTS);
    CHECK(!strcmp(sp_reader_diag(r), ""), "no damage reported: %s", sp_reader_diag(r));
    sp_reader_close(r);
    printf("ok: %d kernels, durations and gaps of every varint length in runs, read back from columns\n",
           RUN_EVENTS);
}

/* ---- the tool interface -------------------------------------------------- */

struct counts {
    int any, gpu, nccl;
};
static int count_any(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    (void)ev;
    ((struct counts *)ctx)->any++;
    return 0;
}
static int count_gpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    CHECK(ev->type == SP_EV_GPU, "gpu callback gets gpu events");
    ((struct counts *)ctx)->gpu++;
    return 0;
}
static int stop_at_nccl(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    (void)ev;
    return ++((struct counts *)ctx)->nccl == 3 ? 42 : 0;
}

/* A tool sees each event once through `any`, typed events through their
 * callback, and can stop the stream with a value. */
static void tools_are_fed(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/extremes.sprof", dir);
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    struct counts c = {0};
    struct sp_tool tool = {.gpu = count_gpu, .any = count_any};
    CHECK(sp_reader_feed(r, &tool, &c) == 0, "feed to the end");
    CHECK(c.any == (SP_EV_MAX - 1) * VALUE_PATTERNS * (int)NTIMES, "any saw %d", c.any);
    CHECK(c.gpu == VALUE_PATTERNS * (int)NTIMES, "gpu saw %d", c.gpu);
    sp_reader_close(r);
    r = sp_reader_open(path, &err);
    struct sp_tool stopper = {.nccl = stop_at_nccl};
    c = (struct counts){0};
    CHECK(sp_reader_feed(r, &stopper, &c) == 42 && c.nccl == 3, "a callback stops the stream");
    sp_reader_close(r);
    printf("ok: tool callbacks fed, typed and stoppable\n");
}

/* ---- eight threads ------------------------------------------------------ */

struct worker {
    struct sp_writer *w;
    int index;
    uint32_t path_id;
};

static void *record_reads(void *arg)
{
    struct worker *k = arg;
    struct sp_event ev = {.type = SP_EV_IO};
    for (uint64_t i = 0; i < EVENTS_PER_THREAD; i++) {
        ev.t = 1000000 + i * 997;
        ev.io.op = SP_IO_READ;
        ev.io.fd = k->index;
        ev.io.path = k->path_id;
        ev.io.offset = i; /* the sequence number */
        ev.io.bytes = (i * 4096) % 1000003;
        ev.io.ret = (int64_t)ev.io.bytes;
        if (sp_writer_append(k->w, &ev) != 0)
            return (void *)1;
    }
    sp_writer_thread_exit(k->w);
    return NULL;
}

/* With the compressor thread (background) or with each thread compressing
 * its own full slots (inline, under the writer's lock). */
static void threads_lose_nothing(const char *dir, int background)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/threads-%d.sprof", dir, background);
    int err;
    /* Slots enough for everything even if the compressor never ran. */
    struct sp_writer_opts o = {.slot_size = 256 * 1024, .slot_count = 256, .background = background};
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    pthread_t th[THREADS];
    struct worker k[THREADS];
    for (int i = 0; i < THREADS; i++) {
        char name[32];
        snprintf(name, sizeof name, "/data/shard-%d.bin", i);
        k[i] = (struct worker){w, i, sp_writer_intern(w, name, strlen(name))};
        CHECK(pthread_create(&th[i], NULL, record_reads, &k[i]) == 0, "thread");
    }
    for (int i = 0; i < THREADS; i++) {
        void *rc;
        pthread_join(th[i], &rc);
        CHECK(rc == NULL, "thread %d saw a dropped append", i);
    }
    CHECK(sp_writer_close(w) == 0, "close");

    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    uint64_t next[THREADS] = {0};
    uint32_t tid_of[THREADS] = {0};
    struct sp_event ev;
    while (sp_reader_next(r, &ev)) {
        CHECK(ev.type == SP_EV_IO, "only reads were recorded, got %d", ev.type);
        int i = (int)ev.io.fd;
        CHECK(i >= 0 && i < THREADS, "fd %d", i);
        CHECK(ev.io.offset == next[i],
              "thread %d: event %llu where %llu expected (lost, duplicated or reordered)",
              i, (unsigned long long)ev.io.offset, (unsigned long long)next[i]);
        CHECK(ev.t == 1000000 + ev.io.offset * 997, "time of thread %d event", i);
        if (!tid_of[i])
            tid_of[i] = ev.tid;
        CHECK(ev.tid == tid_of[i], "tid stays the thread's");
        char name[32];
        snprintf(name, sizeof name, "/data/shard-%d.bin", i);
        CHECK(!strcmp(sp_reader_string(r, ev.io.path), name), "path '%s'",
              sp_reader_string(r, ev.io.path));
        next[i]++;
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(next[i] == EVENTS_PER_THREAD, "thread %d: %llu of %d events", i,
              (unsigned long long)next[i], EVENTS_PER_THREAD);
    CHECK(sp_reader_info(r)->hdr.events_dropped == 0, "no drops");
    CHECK(sp_reader_stats(r)->frames > 0 && sp_reader_stats(r)->slots_recovered == 0,
          "all in frames after close");
    sp_reader_close(r);
    printf("ok: %d threads x %d events, none lost, duplicated or reordered (%s compression)\n",
           THREADS, EVENTS_PER_THREAD, background ? "background" : "inline");
}

/* ---- codec compatibility --------------------------------------------------- */

/* A newer writer appended a field, an older one wrote fewer: both read. */
static void schema_can_grow(void)
{
    struct sp_event ev = {.type = SP_EV_DROPPED, .t = 42};
    ev.dropped.count = 300;
    ev.dropped.reason = SP_DROP_CUPTI;
    uint8_t buf[SP_EVENT_MAX_BYTES + 8];
    struct sp_codec_state st;
    sp_codec_reset(&st);
    size_t n = sp_encode_event(buf, &ev, &st);
    CHECK(n == 6, "dropped event is 6 bytes, got %zu", n);
    /* Newer: one more field (value 7) after reason. */
    uint8_t newer[16];
    memcpy(newer, buf, n);
    newer[1]++;
    newer[n] = 7;
    struct sp_event out;
    sp_codec_reset(&st);
    CHECK(sp_decode_event(newer, newer + n + 1, &out, &st) == (long)n + 1, "skips extra field");
    CHECK(out.dropped.count == 300 && out.dropped.reason == SP_DROP_CUPTI && out.t == 42,
          "known fields kept");
    /* Older: reason missing. */
    uint8_t older[16];
    memcpy(older, buf, n - 1);
    older[1]--;
    sp_codec_reset(&st);
    CHECK(sp_decode_event(older, older + n - 1, &out, &st) == (long)n - 1, "short event");
    CHECK(out.dropped.count == 300 && out.dropped.reason == 0, "missing field reads zero");
    /* Garbage: a length past the end. */
    uint8_t bad[] = {SP_EV_IO, 90, 1, 2};
    sp_codec_reset(&st);
    CHECK(sp_decode_event(bad, bad + sizeof bad, &out, &st) < 0, "overlong length rejected");
    uint8_t pad[] = {0, 0};
    CHECK(sp_decode_event(pad, pad + 2, &out, &st) == 0, "padding ends a chunk");
    printf("ok: extra fields skipped, missing fields zero, malformed rejected\n");
}

/* A trace written before nccl events had peer_seq (the last field) reads
 * with peer_seq 0, every other field intact. */
static void nccl_before_peer_seq(void)
{
    struct sp_event ev = {.type = SP_EV_NCCL, .t = 1000};
    ev.nccl.dur = 5;
    ev.nccl.comm = 77;
    ev.nccl.seq = 3;
    ev.nccl.op = SP_NCCL_SEND;
    ev.nccl.peer = 2;
    ev.nccl.bytes = 4096;
    ev.nccl.device = 1;
    uint8_t buf[SP_EVENT_MAX_BYTES + 8];
    struct sp_codec_state st;
    sp_codec_reset(&st);
    size_t n = sp_encode_event(buf, &ev, &st); /* peer_seq 0: one byte, last */
    CHECK(n > 3 && buf[1] < 0x80, "a short nccl event (%zu bytes)", n);
    uint8_t older[SP_EVENT_MAX_BYTES + 8];
    memcpy(older, buf, n - 1);
    older[1]--;
    struct sp_event out;
    sp_codec_reset(&st);
    CHECK(sp_decode_event(older, older + n - 1, &out, &st) == (long)n - 1, "the older event decodes");
    CHECK(out.nccl.peer_seq == 0 && out.nccl.comm == 77 && out.nccl.seq == 3 && out.nccl.peer == 2 &&
              out.nccl.bytes == 4096 && out.nccl.device == 1,
          "peer_seq reads 0, the rest as written");
    ev.nccl.peer_seq = 9;
    sp_codec_reset(&st);
    n = sp_encode_event(buf, &ev, &st);
    sp_codec_reset(&st);
    CHECK(sp_decode_event(buf, buf + n, &out, &st) == (long)n && out.nccl.peer_seq == 9, "peer_seq round-trips");
    printf("ok: an nccl event without peer_seq reads it as 0\n");
}

/* The codec's per-type memory: a launch stream with growing correlation
 * ids and GPU records on their own clock, interleaved, cost the same few
 * bytes per event all along, and decode back exactly - also across an
 * event type this reader does not know. */
static void interleaved_types_stay_small(void)
{
    enum { LAUNCHES = 1000 };
    static uint8_t buf[LAUNCHES * 2 * SP_EVENT_MAX_BYTES + 16];
    struct sp_codec_state enc, dec;
    sp_codec_reset(&enc);
    size_t at = 0, first_launch = 0, last_launch = 0;
    for (uint64_t i = 0; i < LAUNCHES; i++) {
        struct sp_event l = {.type = SP_EV_CUDA, .t = 5000000000ull + i * 4000};
        l.cuda.dur = 2500;
        l.cuda.api = SP_CUDA_LAUNCH;
        l.cuda.correlation = 1000000 + i;
        size_t n = sp_encode_event(buf + at, &l, &enc);
        at += n;
        if (i == 0)
            first_launch = n;
        last_launch = n;
        struct sp_event g = {.type = SP_EV_GPU, .t = 9000000000ull + i * 3000 - (i % 2) * 100};
        g.gpu.dur = 2000;
        g.gpu.correlation = 1000000 + i;
        at += sp_encode_event(buf + at, &g, &enc);
        if (i == LAUNCHES / 2) { /* a type from a newer writer */
            uint8_t unknown[] = {SP_EV_MAX + 7, 3, 0xff, 0xff, 0x01};
            memcpy(buf + at, unknown, sizeof unknown);
            at += sizeof unknown;
        }
    }
    CHECK(first_launch > last_launch && last_launch <= 16,
          "a launch after the first costs %zu bytes (first %zu)", last_launch, first_launch);
    sp_codec_reset(&dec);
    struct sp_event out;
    uint64_t launches = 0, records = 0;
    for (size_t p = 0; p < at;) {
        long n = sp_decode_event(buf + p, buf + at, &out, &dec);
        CHECK(n > 0, "decodes at %zu", p);
        p += (size_t)n;
        if (out.type == SP_EV_CUDA) {
            CHECK(out.t == 5000000000ull + launches * 4000 &&
                      out.cuda.correlation == 1000000 + launches && out.cuda.dur == 2500,
                  "launch %llu back as it was", (unsigned long long)launches);
            launches++;
        } else if (out.type == SP_EV_GPU) {
            CHECK(out.t == 9000000000ull + records * 3000 - (records % 2) * 100 &&
                      out.gpu.correlation == 1000000 + records,
                  "record %llu back as it was", (unsigned long long)records);
            records++;
        }
    }
    CHECK(launches == LAUNCHES && records == LAUNCHES, "all events back");
    CHECK(!strcmp(sp_enum_name(SP_EV_NCCL, "op", SP_NCCL_GATHER), "gather") &&
              !strcmp(sp_enum_name(SP_EV_NCCL, "op", SP_NCCL_SCATTER), "scatter"),
          "gather and scatter named");
    printf("ok: %d launches and GPU records interleaved: %zu bytes per launch after the first "
           "(%zu), exact round trip\n",
           LAUNCHES, last_launch, first_launch);
}

static void names_and_checksums(void)
{
    CHECK(!strcmp(sp_event_name(SP_EV_NCCL), "nccl") && !sp_event_name(0) && !sp_event_name(SP_EV_MAX),
          "event names");
    CHECK(!strcmp(sp_enum_name(SP_EV_NCCL, "op", SP_NCCL_ALLREDUCE), "allreduce"), "nccl.op");
    CHECK(!strcmp(sp_enum_name(SP_EV_GPU, "kind", SP_GPU_KERNEL), "kernel"), "gpu.kind");
    CHECK(!strcmp(sp_enum_name(SP_EV_IO, "op", SP_IO_READ), "read"), "io.op");
    CHECK(!strcmp(sp_enum_name(SP_EV_IO, "fd_kind", SP_FD_PIPE), "pipe"), "io.fd_kind");
    CHECK(!strcmp(sp_enum_name(SP_EV_DROPPED, "reason", SP_DROP_WRITE), "write"), "reason");
    CHECK(!sp_enum_name(SP_EV_IO, "op", 999) && !sp_enum_name(SP_EV_IO, "bytes", 1), "no name");
    CHECK(!strcmp(sp_strerror(SP_E_MAGIC), "not a scaleprof trace"), "strerror");
    /* The standard CRC-32C check value. */
    CHECK(sp_crc32c(0, "123456789", 9) == 0xe3069283u, "crc32c check value");
    CHECK(sp_crc32c_portable(0, "123456789", 9) == 0xe3069283u, "portable crc");
    uint8_t big[1000];
    for (size_t i = 0; i < sizeof big; i++)
        big[i] = (uint8_t)(i * 7 + 3);
    CHECK(sp_crc32c(sp_crc32c(0, big, 333), big + 333, 667) == sp_crc32c_portable(0, big, 1000),
          "incremental hardware crc equals portable crc");
    printf("ok: names, enum names, strerror, crc32c\n");
}

/* An I/O event's duration is written by the encoder's two-byte-first
 * varint (codec.h, sp_put_uvarint_2, one 16-bit store): the same bytes as
 * the plain varint for every value, the boundaries of each length
 * included. */
static void short_varints_are_varints(void)
{
    uint8_t a[16], b[16];
    uint64_t tail[] = {1ull << 21, (1ull << 21) - 1, 1ull << 28, UINT64_MAX, UINT64_MAX >> 1, 1ull << 56};
    for (uint64_t i = 0; i < (1u << 16) + 6; i++) {
        uint64_t v = i < (1u << 16) ? i : tail[i - (1u << 16)];
        memset(a, 0xee, sizeof a);
        memset(b, 0xee, sizeof b);
        size_t na = (size_t)(sp_put_uvarint(a, v) - a), nb = (size_t)(sp_put_uvarint_2(b, v) - b);
        CHECK(na == nb && !memcmp(a, b, na), "%llu: the two-byte-first varint is %zu bytes, not the varint's %zu",
              (unsigned long long)v, nb, na);
    }
}

int main(void)
{
    memset(long_string, 'x', LONG_STRING_LEN);
    for (int i = 0; i < LONG_STRING_LEN; i += 61)
        long_string[i] = '"';
    char dir[4096];
    tmpdir_make(dir, sizeof dir);
    names_and_checksums();
    short_varints_are_varints();
    schema_can_grow();
    nccl_before_peer_seq();
    interleaved_types_stay_small();
    every_type_survives_the_file(dir);
    io_repeats_round_trip(dir);
    durations_of_every_length(dir);
    tools_are_fed(dir);
    threads_lose_nothing(dir, 1);
    threads_lose_nothing(dir, 0);
    tmpdir_remove(dir);
    return 0;
}
