/*
 * test_damage.c - a trace damaged on disk (a copy cut short, a flipped bit)
 * still yields everything that is intact, and says what it skipped.
 *
 * The trace is small on purpose (2 KiB slots, several frames, three threads
 * whose chunks are still live in their slots, as after a crash) so that
 * the file can be cut at every byte offset.  The expectations come from an
 * independent walk of the undamaged file (frame by frame with zstd, slot by
 * slot), not from the reader under test:
 *   - cut at any offset: no crash; every frame that ends before the cut and
 *     every live slot that lies before it is recovered; nothing appears
 *     that was not recorded, nothing twice; a cut inside a frame or a live
 *     slot is reported;
 *   - a random bit flipped (1000 times): no crash, no hang; every chunk the
 *     flip did not touch is recovered; a flip inside a frame is reported.
 * An alarm turns any hang into a failure.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <zstd.h>

#include "testutil.h"

#define LIVE_THREADS 3
#define FRAMED_EVENTS 2000
#define LIVE_EVENTS 30
#define FLIPS 1000
#define HANG_LIMIT_S 50
#define MAX_CHUNKS 256

/* One chunk of the undamaged file: where it lies and which events it has. */
struct chunk {
    uint64_t start, end;   /* byte range in the file */
    uint64_t first, count; /* its events' sequence numbers: first..first+count-1 */
    int in_slot;
};

static struct chunk chunks[MAX_CHUNKS];
static int nchunks;
static uint64_t total_events;
static uint8_t *orig;
static size_t orig_size;
static struct sp_file_header hdr;

static struct sp_writer *writer;
static uint64_t next_seq;

static void append_read(void)
{
    struct sp_event ev = {.type = SP_EV_IO, .t = 5000 + next_seq * 3};
    ev.io.op = SP_IO_READ;
    ev.io.offset = next_seq++;
    ev.io.bytes = 1u << (next_seq % 20);
    ev.io.path = 1;
    CHECK(sp_writer_append(writer, &ev) == 0, "append");
}

static void *live_thread(void *arg)
{
    (void)arg;
    for (int i = 0; i < LIVE_EVENTS; i++)
        append_read();
    return NULL; /* its slot stays ACTIVE: no thread_exit, no close */
}

static void record(const char *path)
{
    struct sp_writer_opts o = {.slot_size = 2048, .slot_count = 4, .strings_size = 4096, .background = 0};
    int err;
    writer = sp_writer_create(path, &o, &err);
    CHECK(writer, "create: %s", sp_strerror(err));
    CHECK(sp_writer_intern(writer, "/data/train.bin", 15) == 1, "first string id is 1");
    for (int i = 0; i < FRAMED_EVENTS; i++)
        append_read();
    /* One after another, so that sequence numbers stay contiguous per chunk. */
    for (int i = 0; i < LIVE_THREADS; i++) {
        pthread_t th;
        pthread_create(&th, NULL, live_thread, NULL);
        pthread_join(th, NULL);
    }
    sp_writer_abandon(writer); /* as if the process had died */
}

static void load_original(const char *path)
{
    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    orig_size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    orig = malloc(orig_size);
    CHECK(fread(orig, 1, orig_size, f) == orig_size, "read");
    fclose(f);
    memcpy(&hdr, orig, sizeof hdr);
}

static void add_chunk(uint64_t start, uint64_t end, const uint8_t *ev, size_t len, int in_slot)
{
    struct sp_event e = {0};
    struct sp_codec_state st;
    sp_codec_reset(&st);
    uint64_t n = 0, first = 0;
    for (size_t at = 0; at < len;) {
        long k = sp_decode_event(ev + at, ev + len, &e, &st);
        CHECK(k > 0, "undamaged chunk decodes");
        if (n++ == 0)
            first = e.io.offset;
        CHECK(e.io.offset == first + n - 1, "contiguous chunk");
        at += (size_t)k;
    }
    CHECK(nchunks < MAX_CHUNKS, "chunks");
    chunks[nchunks++] = (struct chunk){start, end, first, n, in_slot};
    total_events += n;
}

/* The oracle: walks the undamaged file without the reader. */
static void map_original(void)
{
    uint8_t out[4096], row_buf[8192];
    for (uint64_t at = hdr.frames_offset; at < orig_size;) {
        struct sp_frame_header fh;
        memcpy(&fh, orig + at, sizeof fh);
        CHECK(fh.magic == SP_FRAME_MAGIC, "frame magic at %llu", (unsigned long long)at);
        size_t n = ZSTD_decompress(out, sizeof out, orig + at + sizeof fh, fh.csize);
        CHECK(n == (fh.usize & SP_FRAME_SIZE_MASK), "frame decompresses");
        if (fh.usize & SP_FRAME_COLUMNS) {
            long rows = sp_columns_to_rows(row_buf, sizeof row_buf, out, n);
            CHECK(rows > 0, "column payload goes back to rows: %s", sp_strerror((int)rows));
            add_chunk(at, at + sizeof fh + fh.csize, row_buf, (size_t)rows, 0);
        } else {
            add_chunk(at, at + sizeof fh + fh.csize, out, n, 0);
        }
        at += sizeof fh + fh.csize;
    }
    int frames = nchunks;
    for (uint32_t i = 0; i < hdr.slot_count; i++) {
        uint64_t off = hdr.slots_offset + (uint64_t)i * hdr.slot_size;
        struct sp_slot_header s;
        memcpy(&s, orig + off, sizeof s);
        if (s.state == SP_SLOT_ACTIVE && s.used)
            add_chunk(off, off + sizeof s + s.used, orig + off + sizeof s, s.used, 1);
    }
    CHECK(frames >= 5 && nchunks - frames == LIVE_THREADS + 1, "%d frames, %d live slots (main thread + live threads)", frames,
          nchunks - frames);
    CHECK(total_events == next_seq, "oracle sees all %llu events", (unsigned long long)next_seq);
}

/* Reads `path`; seen[seq] counts each recovered event. */
static int read_all(const char *path, uint8_t *seen, int *err, int *damage_reported)
{
    memset(seen, 0, total_events);
    struct sp_reader *r = sp_reader_open(path, err);
    if (!r)
        return -1;
    struct sp_event ev;
    int invented = 0;
    while (sp_reader_next(r, &ev)) {
        if (ev.type != SP_EV_IO || ev.io.offset >= total_events)
            invented++;
        else if (seen[ev.io.offset] < 255)
            seen[ev.io.offset]++;
    }
    *damage_reported = sp_reader_diag(r)[0] != 0;
    sp_reader_close(r);
    return invented;
}

static int chunk_complete(const struct chunk *c, const uint8_t *seen)
{
    for (uint64_t s = c->first; s < c->first + c->count; s++)
        if (seen[s] == 0)
            return 0;
    return 1;
}

static void every_cut(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/cut.sprof", dir);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    CHECK(fd >= 0 && write(fd, orig, orig_size) == (ssize_t)orig_size, "copy");
    uint8_t *seen = malloc(total_events);
    uint64_t reported_cuts = 0;
    for (size_t len = orig_size; len-- > 0;) {
        CHECK(ftruncate(fd, (off_t)len) == 0, "truncate");
        int err, damage;
        int invented = read_all(path, seen, &err, &damage);
        if (len < SP_HEADER_SIZE) {
            CHECK(invented < 0 && err == (len < 8 ? SP_E_MAGIC : SP_E_TRUNCATED),
                  "cut at %zu: open fails with %s", len, sp_strerror(err));
            continue;
        }
        CHECK(invented == 0, "cut at %zu: %d events that were never recorded", len, invented);
        int cut_inside = 0;
        for (int c = 0; c < nchunks; c++) {
            if (chunks[c].end <= len)
                CHECK(chunk_complete(&chunks[c], seen), "cut at %zu: chunk %d (%s at %llu) lost",
                      len, c, chunks[c].in_slot ? "slot" : "frame",
                      (unsigned long long)chunks[c].start);
            if (chunks[c].start < len && len < chunks[c].end)
                cut_inside = 1;
        }
        for (uint64_t s = 0; s < total_events; s++)
            CHECK(seen[s] <= 1, "cut at %zu: event %llu twice", len, (unsigned long long)s);
        if (cut_inside) {
            CHECK(damage, "cut at %zu inside a chunk is reported", len);
            reported_cuts++;
        }
    }
    close(fd);
    free(seen);
    printf("ok: cut at each of %zu offsets: intact chunks recovered, %llu cuts through data "
           "reported\n",
           orig_size, (unsigned long long)reported_cuts);
}

static void random_flips(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/flip.sprof", dir);
    uint8_t *copy = malloc(orig_size), *seen = malloc(total_events);
    int hit_frames = 0;
    for (int it = 0; it < FLIPS; it++) {
        size_t at = (size_t)rand() % orig_size;
        memcpy(copy, orig, orig_size);
        copy[at] ^= (uint8_t)(1u << (rand() % 8));
        FILE *f = fopen(path, "wb");
        CHECK(f && fwrite(copy, 1, orig_size, f) == orig_size, "write");
        fclose(f);
        int err, damage;
        int invented = read_all(path, seen, &err, &damage);
        if (at < sizeof(struct sp_file_header))
            continue; /* a damaged header may reject or reshape the file: only no crash */
        CHECK(invented >= 0, "flip at %zu: open failed (%s)", at, sp_strerror(err));
        /* Slots carry no checksum: a flip inside a live chunk may change an
         * event (the price of zero-cost appends); frames may not. */
        int in_frame = 0;
        for (int c = 0; c < nchunks; c++) {
            int touched = chunks[c].start <= at && at < chunks[c].end;
            in_frame |= touched && !chunks[c].in_slot;
            if (!touched)
                CHECK(chunk_complete(&chunks[c], seen), "flip at %zu: untouched chunk %d lost",
                      at, c);
        }
        if (in_frame) {
            hit_frames++;
            CHECK(invented == 0, "flip at %zu: events invented from a damaged frame", at);
            CHECK(damage, "flip at %zu inside a frame is reported", at);
        }
    }
    free(copy);
    free(seen);
    printf("ok: %d random bit flips (%d inside frames): untouched chunks recovered, damage "
           "reported\n",
           FLIPS, hit_frames);
}

int main(void)
{
    alarm(HANG_LIMIT_S);
    char dir[4096], path[4200];
    tmpdir_make(dir, sizeof dir);
    srand(12345);
    snprintf(path, sizeof path, "%s/small.sprof", dir);
    record(path);
    load_original(path);
    map_original();
    printf("trace: %zu bytes, %d chunks (%d live in slots), %llu events\n", orig_size, nchunks,
           LIVE_THREADS + 1, (unsigned long long)total_events);
    every_cut(dir);
    random_flips(dir);
    tmpdir_remove(dir);
    return 0;
}
