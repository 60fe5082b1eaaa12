/*
 * fuzz_roundtrip.c - libFuzzer target for the writer and reader together:
 * any events written give back the same events.
 *
 * The input is read as a program: a few option bytes (slot size, slot
 * count, compression level, how many logical threads), then events, each
 * a type, a thread, a time step and one value per field of its type (any
 * width, so that small, large and negative values all occur), strings
 * interned from the input's own bytes.  The events go through
 * sp_writer_append_as (a single-threaded tool's writer, as `scaleprof
 * import` uses: small slots retire and compress often, in rows or in the
 * column layout) into a file; the file is closed, then read back whole.
 *
 * What must hold, for every input:
 *  - the writer accepts every event (no drops: nothing fills);
 *  - the reader gives back exactly the events written, per thread in the
 *    order written, each field for field as the codec alone would give it
 *    back (sp_encode_event then sp_decode_event of the same event: the
 *    codec is the reference, the writer's columns, chunks, frames and
 *    compression must add nothing and lose nothing);
 *  - every string id resolves to the bytes interned under it;
 *  - the reader reports no damage (diagnostics empty, no corrupt frame).
 * A difference aborts, which libFuzzer reports with the input.
 *
 * Built with -Dfuzz=enabled (clang); the suite 'fuzz' runs it from no seed
 * for FUZZ_SECONDS, bench/fuzz.sh for longer.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sprof.h"

#define MAX_EVENTS 2048
#define MAX_THREADS 6
#define MAX_STRINGS 64
#define MAX_STRING_LEN 48

struct input {
    const uint8_t *p, *end;
};

static unsigned take(struct input *in)
{
    return in->p < in->end ? *in->p++ : 0;
}

/* A value of 0 to 8 bytes (the width from the input), little-endian. */
static uint64_t take_value(struct input *in)
{
    unsigned width = take(in) % 9;
    uint64_t v = 0;
    for (unsigned i = 0; i < width; i++)
        v |= (uint64_t)take(in) << (8 * i);
    return v;
}

struct written {
    struct sp_event ev; /* as the codec alone gives it back */
    uint32_t tid;
};

static struct written g_events[MAX_EVENTS];
static char g_strings[MAX_STRINGS + 1][MAX_STRING_LEN + 1];
static uint64_t g_string_id[MAX_STRINGS + 1];
static char g_dir[64];

static void fail(const char *what, long i)
{
    fprintf(stderr, "fuzz_roundtrip: %s (event %ld)\n", what, i);
    abort();
}

/* The event as the codec gives it back alone: a fresh chunk, one event. */
static void through_codec(const struct sp_event *ev, struct sp_event *out)
{
    uint8_t buf[SP_EVENT_MAX_BYTES];
    struct sp_codec_state st;
    sp_codec_reset(&st);
    size_t n = sp_encode_event(buf, ev, &st);
    sp_codec_reset(&st);
    memset(out, 0, sizeof *out);
    if (n == 0 || sp_decode_event(buf, buf + n, out, &st) != (long)n)
        fail("the codec cannot decode what it encoded", -1);
}

static int same_fields(const struct sp_event *a, const struct sp_event *b)
{
    if (a->type != b->type || a->t != b->t)
        return 0;
    int n = 0;
    const struct sp_field_desc *f = sp_event_fields(a->type, &n);
    for (int i = 0; i < n; i++)
        if (memcmp((const char *)a + f[i].offset, (const char *)b + f[i].offset, sizeof(uint64_t)))
            return 0;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!g_dir[0]) {
        snprintf(g_dir, sizeof g_dir, "/tmp/fuzz-roundtrip-XXXXXX");
        if (!mkdtemp(g_dir))
            abort();
    }
    struct input in = {data, data + size};
    static const uint32_t slot_sizes[] = {1024, 2048, 4096, 16384, 131072};
    struct sp_writer_opts o = {
        .slot_size = slot_sizes[take(&in) % 5],
        .slot_count = 2 + take(&in) % 7,
        .strings_size = 64 * 1024,
        .zstd_level = 1 + (int)(take(&in) % 3),
        .background = 0,
    };
    unsigned nthreads = 1 + take(&in) % MAX_THREADS;
    char path[128];
    snprintf(path, sizeof path, "%s/t.sprof", g_dir);
    unlink(path);
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    if (!w)
        fail("sp_writer_create failed", -1);

    int nstrings = 0;
    long n = 0;
    uint64_t t = 1000;
    while (in.p < in.end && n < MAX_EVENTS) {
        unsigned type = 1 + take(&in) % (SP_EV_MAX - 1);
        if (!sp_event_name((int)type))
            continue;
        uint32_t tid = 1 + take(&in) % nthreads;
        t += take_value(&in) >> (take(&in) % 64);
        struct sp_event ev;
        memset(&ev, 0, sizeof ev);
        ev.type = (uint8_t)type;
        ev.t = t;
        int nf = 0;
        const struct sp_field_desc *f = sp_event_fields((int)type, &nf);
        for (int i = 0; i < nf; i++) {
            uint64_t v = take_value(&in);
            if (f[i].kind == SP_FK_STR) {
                if (v % 4 == 0 || nstrings == MAX_STRINGS) { /* none, or one interned before */
                    v = v % 2 && nstrings ? g_string_id[1 + v % (uint64_t)nstrings] : 0;
                } else {
                    size_t len = 1 + take(&in) % MAX_STRING_LEN, k = 0;
                    char *s = g_strings[++nstrings];
                    for (; k < len && in.p < in.end; k++)
                        s[k] = (char)(1 + take(&in) % 255); /* no NUL inside */
                    s[k] = 0;
                    v = g_string_id[nstrings] = sp_writer_intern(w, s, k);
                    if (!v)
                        fail("interning failed", n);
                }
            }
            memcpy((char *)&ev + f[i].offset, &v, sizeof v);
        }
        through_codec(&ev, &g_events[n].ev);
        g_events[n].ev.tid = tid;
        g_events[n].tid = tid;
        if (sp_writer_append_as(w, &ev, tid) != 0)
            fail("the writer dropped an event", n);
        n++;
    }
    if (sp_writer_close(w) != 0)
        fail("sp_writer_close failed", n);

    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r)
        fail("sp_reader_open failed", n);
    long next[MAX_THREADS + 1] = {0}; /* per thread: the index of its next event */
    for (unsigned k = 1; k <= nthreads; k++)
        while (next[k] < n && g_events[next[k]].tid != k)
            next[k]++;
    struct sp_event ev;
    long got = 0;
    while (sp_reader_next(r, &ev) > 0) {
        if (ev.tid < 1 || ev.tid > nthreads)
            fail("an event came back with a thread never written", got);
        long i = next[ev.tid];
        if (i >= n)
            fail("more events came back than were written for a thread", got);
        if (!same_fields(&ev, &g_events[i].ev))
            fail("an event came back different", i);
        int nf = 0;
        const struct sp_field_desc *f = sp_event_fields(ev.type, &nf);
        for (int k = 0; k < nf; k++) {
            uint64_t id;
            memcpy(&id, (const char *)&ev + f[k].offset, sizeof id);
            if (f[k].kind != SP_FK_STR || !id)
                continue;
            const char *s = sp_reader_string(r, id);
            int j = 1;
            while (j <= nstrings && g_string_id[j] != id)
                j++;
            if (j > nstrings)
                fail("an event names a string id never interned", i);
            if (!s || strcmp(s, g_strings[j]))
                fail("a string came back different", i);
        }
        do
            next[ev.tid]++;
        while (next[ev.tid] < n && g_events[next[ev.tid]].tid != ev.tid);
        got++;
    }
    if (got != n)
        fail("fewer events came back than were written", got);
    const char *diag = sp_reader_diag(r);
    if (diag && diag[0]) {
        fprintf(stderr, "fuzz_roundtrip: reader diagnostics: %s\n", diag);
        abort();
    }
    sp_reader_close(r);
    unlink(path);
    return 0;
}
