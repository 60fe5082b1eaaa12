/*
 * test_select.c - what the reader hands out when a pass asks for less:
 * a selection by a field's value (sp_reader_select), a field mask
 * narrowed in the middle of a chunk, and the column decoder's runs of
 * two- and three-byte varints.
 *
 * The trace interleaves GPU events of three kinds with CUDA calls, in
 * runs whose durations and gaps are one, two, three and four bytes long
 * (and runs that mix them), with a correlation that is a difference
 * field; small slots make it many column chunks.  A GPU event's bytes
 * are 0 for runs of hundreds of events and not 0 between them, and its
 * correlation runs through 0, a constant (when the mask narrows), 0 and
 * changing values: a field 0 in every event of a block is not stored
 * again (reader.c), which must not leave a value behind when a run ends.
 * Every expectation is the list of events as written, not another read:
 * each event handed out must be the written one (time, duration, kind,
 * stream, bytes, correlation), in order, and the events left out exactly
 * those asked; handed out a batch at a time (sp_reader_next_refs), the
 * same events in the same order.
 */
#include "testutil.h"

#define EVENTS 12000
#define RUN 240           /* events of one varint width in a row */
#define BLOCK_EVENTS 64   /* the reader's block (reader.c's RD_BLOCK) */
#define NARROW_AFTER 1000 /* events read before a mask or selection changes */
#define OUTSIDE_FROM 8000 /* events from here on lie outside the test's window */
#define ZERO_RUN 500      /* GPU bytes: 0 for this many events, then not, and so on */
#define CORR_RUN 700      /* GPU correlations by runs: 0, a constant, 0, changing */
#define CORR_CONST 5000
#define BATCH 7 /* events asked for at a time (not a divisor of a block) */

static struct sp_event written[EVENTS];

/* Durations and gaps by run: 1, 2, 3 and 4 bytes, then mixed widths. */
static uint64_t width_value(uint64_t i, uint64_t salt)
{
    static const uint64_t base[] = {60, 9000, 70000, 20000000};
    uint64_t run = (i / RUN) % 5;
    if (run < 4)
        return base[run] + (i * 7 + salt) % 50;
    return base[(i * 13 + salt) % 4] + i % 17;
}

static void record(const char *path)
{
    struct sp_writer_opts o = {.slot_size = 16384, .slot_count = 4, .strings_size = 4096, .background = 0};
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    uint64_t t = 1000000, corr = 100;
    for (uint64_t i = 0; i < EVENTS; i++) {
        struct sp_event ev = {.t = t};
        if (i % 3 == 2) {
            ev.type = SP_EV_CUDA;
            ev.cuda.api = SP_CUDA_LAUNCH;
            ev.cuda.dur = width_value(i, 3);
            ev.cuda.correlation = corr;
        } else {
            ev.type = SP_EV_GPU;
            ev.gpu.kind = i % 7 == 3 ? SP_GPU_NCCL_KERNEL : i % 11 == 5 ? SP_GPU_MEMCPY
                                                                        : SP_GPU_KERNEL;
            ev.gpu.dur = width_value(i, 1);
            ev.gpu.stream = 7 + i % 3;
            uint64_t phase = (i / CORR_RUN) % 4;
            ev.gpu.correlation = phase == 1 ? CORR_CONST : phase == 3 ? corr
                                                                      : 0;
            ev.gpu.device = (int64_t)(i % 2);
            ev.gpu.bytes = (i / ZERO_RUN) % 2 ? 4096 + i : 0;
        }
        corr += 1 + i % 5 * 40; /* differences of one and two bytes */
        t += width_value(i, 2);
        written[i] = ev;
        CHECK(sp_writer_append(w, &ev) == 0, "append %llu", (unsigned long long)i);
    }
    CHECK(sp_writer_close(w) == 0, "close");
}

/* The written event i against the one handed out: the fields read (a GPU
 * event's stream and bytes only with_stream, else they read 0). */
static int same(uint64_t i, const struct sp_event *ev, int with_stream)
{
    const struct sp_event *w = &written[i];
    if (ev->type != w->type || ev->t != w->t)
        return 0;
    if (w->type == SP_EV_CUDA)
        return ev->cuda.dur == w->cuda.dur && ev->cuda.correlation == w->cuda.correlation;
    return ev->gpu.dur == w->gpu.dur && ev->gpu.kind == w->gpu.kind && ev->gpu.correlation == w->gpu.correlation &&
           ev->gpu.stream == (with_stream ? w->gpu.stream : 0) && ev->gpu.bytes == (with_stream ? w->gpu.bytes : 0);
}

/* The written index of the next event handed out, matched in order from
 * *at; -1 when none matches. */
static int64_t match_next(uint64_t *at, const struct sp_event *ev, int with_stream)
{
    for (uint64_t i = *at; i < EVENTS; i++)
        if (same(i, ev, with_stream)) {
            *at = i + 1;
            return (int64_t)i;
        }
    return -1;
}

static int is_kernel(uint64_t i)
{
    return written[i].type == SP_EV_GPU && written[i].gpu.kind == SP_GPU_KERNEL;
}

int main(void)
{
    char dir[4096], path[4200];
    tmpdir_make(dir, sizeof dir);
    snprintf(path, sizeof path, "%s/t.sprof", dir);
    record(path);
    int err;

    /* Every event, every field: the decoder's runs read back as written. */
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    struct sp_event ev;
    uint64_t n = 0;
    while (sp_reader_next(r, &ev)) {
        CHECK(n < EVENTS && same(n, &ev, 1), "event %llu reads as written", (unsigned long long)n);
        n++;
    }
    CHECK(n == EVENTS && !sp_reader_diag(r)[0], "all %d events read, no damage (%llu)", EVENTS,
          (unsigned long long)n);
    CHECK(sp_reader_stats(r)->frames > 2, "the trace is many column chunks (%llu)",
          (unsigned long long)sp_reader_stats(r)->frames);
    sp_reader_close(r);
    printf("ok: %d events of one- to four-byte varints, in runs and mixed, read as written\n", EVENTS);

    /* The same a batch at a time: each batch's events are the next ones
     * written, and stay whole until the next batch is asked for. */
    r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    const struct sp_event *batch[BATCH];
    size_t k, batches = 0;
    n = 0;
    while ((k = sp_reader_next_refs(r, batch, BATCH)) > 0) {
        CHECK(k <= BATCH, "a batch holds at most what was asked (%zu)", k);
        for (size_t b = 0; b < k; b++, n++)
            CHECK(n < EVENTS && same(n, batch[b], 1), "event %llu (batch %zu) reads as written",
                  (unsigned long long)n, batches);
        batches++;
    }
    CHECK(n == EVENTS && sp_reader_stats(r)->events == EVENTS, "all %d events given and counted (%llu, %llu)",
          EVENTS, (unsigned long long)n, (unsigned long long)sp_reader_stats(r)->events);
    CHECK(batches < EVENTS / 2, "events come several to a batch (%zu batches)", batches);
    sp_reader_close(r);
    printf("ok: the same %d events a batch of up to %d at a time, in %zu batches\n", EVENTS, BATCH, batches);

    /* NCCL kernels and memcpys only, from the start, within a window that
     * leaves the events from OUTSIDE_FROM on outside: those come whatever
     * their kind (damage is counted where it was). */
    r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    uint64_t lo = written[0].t, span = written[OUTSIDE_FROM].t - 1 - lo;
    sp_reader_select(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind),
                     UINT64_C(1) << SP_GPU_NCCL_KERNEL | UINT64_C(1) << SP_GPU_MEMCPY, lo, span);
    uint64_t at = 0, got = 0;
    while (sp_reader_next(r, &ev)) {
        int64_t i = match_next(&at, &ev, 1);
        CHECK(i >= 0, "event %llu handed out is a written one, in order", (unsigned long long)got);
        CHECK(!is_kernel((uint64_t)i) || i >= OUTSIDE_FROM, "kernel %lld inside the window left out",
              (long long)i);
        got++;
    }
    uint64_t expect = 0;
    for (uint64_t i = 0; i < EVENTS; i++)
        expect += !is_kernel(i) || i >= OUTSIDE_FROM;
    CHECK(got == expect, "every event but the kernels inside the window handed out (%llu of %llu)",
          (unsigned long long)got, (unsigned long long)expect);
    sp_reader_close(r);
    printf("ok: selected by kind, %llu of %d events handed out, each as written\n", (unsigned long long)got,
           EVENTS);

    /* NCCL kernels only, the CUDA calls left out by the type mask, a
     * batch at a time: most of the type stream is then neither handed
     * out nor decoded (pass 1's case), and the reader looks for the
     * kernels kept 16 bytes of it at a time; they come in order, each
     * once, and so do the events outside the window. */
    r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    sp_reader_set_types(r, SP_TYPE_BIT(SP_EV_GPU));
    sp_reader_select(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind), UINT64_C(1) << SP_GPU_NCCL_KERNEL, lo, span);
    at = 0;
    got = 0;
    while ((k = sp_reader_next_refs(r, batch, BATCH)) > 0)
        for (size_t b = 0; b < k; b++, got++) {
            int64_t i = match_next(&at, batch[b], 1);
            CHECK(i >= 0, "event %llu handed out is a written one, in order", (unsigned long long)got);
            CHECK(written[i].type == SP_EV_GPU &&
                      (written[i].gpu.kind == SP_GPU_NCCL_KERNEL || i >= OUTSIDE_FROM),
                  "event %lld: an NCCL kernel, or outside the window", (long long)i);
        }
    expect = 0;
    for (uint64_t i = 0; i < EVENTS; i++)
        expect += written[i].type == SP_EV_GPU && (written[i].gpu.kind == SP_GPU_NCCL_KERNEL || i >= OUTSIDE_FROM);
    CHECK(got == expect, "every NCCL kernel, and every GPU event outside the window, handed out (%llu of %llu)",
          (unsigned long long)got, (unsigned long long)expect);
    sp_reader_close(r);
    printf("ok: NCCL kernels alone a batch at a time, %llu events, each as written\n", (unsigned long long)got);

    /* The same selection asked for mid-chunk, and the stream left out
     * mid-chunk: both take effect within a block of GPU events, every
     * event before them is whole, and the times and differences after
     * them stay right. */
    r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    at = 0;
    got = 0;
    uint64_t kernels_after = 0, stream_kept_after = 0;
    int64_t changed_at = -1;
    while (sp_reader_next(r, &ev)) {
        int64_t i = match_next(&at, &ev, 1);
        if (i < 0 && changed_at >= 0) {
            i = match_next(&at, &ev, 0);
        } else if (i >= 0 && changed_at >= 0 && ev.type == SP_EV_GPU) {
            stream_kept_after++;
        }
        CHECK(i >= 0, "event %llu handed out is a written one, in order", (unsigned long long)got);
        if (changed_at >= 0 && is_kernel((uint64_t)i))
            kernels_after++;
        if (++got == NARROW_AFTER) {
            changed_at = i;
            sp_reader_set_fields(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind) | SP_FIELD_BIT(gpu, correlation));
            sp_reader_select(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind), UINT64_C(1) << SP_GPU_NCCL_KERNEL, 0,
                             UINT64_MAX);
        }
    }
    uint64_t last = EVENTS - 1;
    while (is_kernel(last))
        last--;
    CHECK(at > last, "read to the last event not a kernel (%llu of %llu)", (unsigned long long)at,
          (unsigned long long)last);
    CHECK(kernels_after <= BLOCK_EVENTS,
          "kernels handed out after the selection: at most a block's worth (%llu)",
          (unsigned long long)kernels_after);
    CHECK(stream_kept_after <= BLOCK_EVENTS,
          "GPU events with their stream after it was left out: at most a block's worth (%llu)",
          (unsigned long long)stream_kept_after);
    sp_reader_close(r);
    printf("ok: a selection and a narrower mask asked for mid-chunk: %llu kernels and %llu streams after, "
           "every event as written\n",
           (unsigned long long)kernels_after, (unsigned long long)stream_kept_after);
    tmpdir_remove(dir);
    return 0;
}
