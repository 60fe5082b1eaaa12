/*
 * test_levels.c - a user who picks a zstd level for the trace gets it
 * compressed at that level and reads back what was recorded.
 *
 * Stories:
 *   - at the default level (whose match length the compressor sets once
 *     per context, compress.h) and at levels above and below it, a trace
 *     of reads with noisy times reads back event for event, and every
 *     frame is compressed (under its payload: a context that could
 *     not be set up would leave the chunks in raw frames, as large as
 *     their payload, and still readable).
 */
#include <stdint.h>

#include "testutil.h"
#include "xorshift.h"

#define EVENTS 200000
#define SLOT_SIZE (128u * 1024u)
#define SLOT_COUNT 8
/* A frame of these reads compresses to about half its payload at any
 * level; a raw frame is larger than its payload. */
#define MAX_FRAME_SHARE 0.75

static uint32_t rnd_state;

static uint32_t rnd(uint32_t n)
{
    return xorshift_below(&rnd_state, n);
}

static void fill_read(struct sp_event *ev, uint64_t *t, uint64_t path)
{
    memset(ev, 0, sizeof *ev);
    ev->type = SP_EV_IO;
    *t += 300 + rnd(200); /* the job's time between reads, jittered */
    ev->t = *t;
    ev->io.dur = 1000 + rnd(700);
    ev->io.op = SP_IO_READ;
    ev->io.fd = 7;
    ev->io.path = path;
    ev->io.bytes = 4096;
    ev->io.ret = rnd(50) ? 4096 : 17; /* now and then a short read */
    *t += ev->io.dur;
}

static void level_round_trip(const char *dir, int level)
{
    char name[64], path[4200];
    snprintf(name, sizeof name, "level%d.sprof", level);
    struct sp_writer_opts o = {.slot_size = SLOT_SIZE, .slot_count = SLOT_COUNT, .zstd_level = level};
    struct sp_writer *w = test_writer(dir, name, &o, path, sizeof path);
    uint64_t str = sp_writer_intern(w, "/data/shard-0001", 16);
    rnd_state = (uint32_t)(level + 100);
    uint64_t t = 1000000000ull;
    struct sp_event ev, got;
    for (int i = 0; i < EVENTS; i++) {
        fill_read(&ev, &t, str);
        CHECK(sp_writer_append(w, &ev) == 0, "append %d", i);
    }
    CHECK(sp_writer_close(w) == 0, "close");

    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open: %s", sp_strerror(err));
    rnd_state = (uint32_t)(level + 100);
    t = 1000000000ull;
    int n = 0;
    for (; sp_reader_next(r, &got); n++) {
        fill_read(&ev, &t, str);
        CHECK(got.type == SP_EV_IO && got.t == ev.t && got.io.dur == ev.io.dur && got.io.ret == ev.io.ret &&
                  got.io.bytes == ev.io.bytes && got.io.path == str,
              "level %d: event %d is the one recorded", level, n);
    }
    CHECK(sp_reader_diag(r)[0] == 0, "level %d: no damage: %s", level, sp_reader_diag(r));
    sp_reader_close(r);
    CHECK(n == EVENTS, "level %d: %d events of %d", level, n, EVENTS);

    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    struct sp_file_header h;
    struct sp_frame_header fh;
    CHECK(fread(&h, sizeof h, 1, f) == 1 && fseek(f, (long)h.frames_offset, SEEK_SET) == 0, "header");
    unsigned frames = 0;
    for (; fread(&fh, sizeof fh, 1, f) == 1 && fh.magic == SP_FRAME_MAGIC; frames++) {
        double share = (double)fh.csize / (double)(fh.usize & SP_FRAME_SIZE_MASK);
        CHECK(share < MAX_FRAME_SHARE, "level %d: frame %u is %.2f of its payload", level, frames, share);
        CHECK(fseek(f, (long)fh.csize, SEEK_CUR) == 0, "frame %u's payload", frames);
    }
    fclose(f);
    CHECK(frames > 5, "level %d: %u frames", level, frames);
    printf("ok: level %d: %d events back, %u frames compressed\n", level, n, frames);
}

static void levels(const char *dir)
{
    static const int levels[] = {0, 1, 3, -1};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        level_round_trip(dir, levels[i]);
}

int main(void)
{
    static void (*const tests[])(const char *) = {levels, NULL};
    return tmpdir_run(tests);
}
