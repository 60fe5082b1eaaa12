/*
 * test_column_masks.c - a reader that asks for only some fields reads
 * only their columns: a chunk whose damage lies in a column nobody asked
 * for is read whole, while a reader asking for everything skips that chunk
 * and says why.
 *
 * The damage is made the way a buggy writer would make it, with valid
 * checksums: the first column frame is decompressed, the last byte of its
 * `fd_kind` column (an io field) is given a continuation bit, so the column
 * no longer holds one varint per event, and the frame is compressed and
 * checksummed again.  The expectations come from the undamaged file read
 * with every field: the same io events, by their offsets, in the same
 * order, less the damaged chunk when every field is asked for.
 */
#include <zstd.h>

#include "testutil.h"

#define EVENTS 2000
#define MAX_EVENTS 4096
#define FRAME_MAX 65536
#define FRAME_HCRC_BYTES 28 /* the frame header bytes its hcrc covers (sprof.h) */
/* dur, op, fd, fd_kind: the fourth field (not the path, which an IO
 * event's other fields need since version 4: it says which repeat) */
#define IO_FIELD_FD_KIND 3

static void record(const char *path)
{
    struct sp_writer_opts o = {.slot_size = 2048, .slot_count = 4, .strings_size = 4096, .background = 0};
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    CHECK(sp_writer_intern(w, "/data/train.bin", 15) == 1, "first string id is 1");
    for (uint64_t i = 0; i < EVENTS; i++) {
        struct sp_event ev = {.type = SP_EV_IO, .t = 5000 + i * 3};
        ev.io.op = SP_IO_READ;
        ev.io.offset = i;
        ev.io.bytes = 1u << (i % 20);
        ev.io.path = 1;
        ev.io.dur = 2;
        CHECK(sp_writer_append(w, &ev) == 0, "append");
    }
    CHECK(sp_writer_close(w) == 0, "close");
}

static uint8_t *slurp(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    CHECK(f, "open %s", path);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*size);
    CHECK(b && fread(b, 1, *size, f) == *size, "read %s", path);
    fclose(f);
    return b;
}

static uint64_t get_varint(const uint8_t **p)
{
    uint64_t v = 0;
    for (unsigned s = 0;; s += 7) {
        uint8_t b = *(*p)++;
        v |= (uint64_t)(b & 0x7f) << s;
        if (b < 0x80)
            return v;
    }
}

/* In a column payload, the offset of the last byte of column `col` of
 * type `type`. */
static size_t last_byte_of_column(const uint8_t *pay, unsigned type, unsigned col)
{
    const uint8_t *p = pay;
    uint64_t n = get_varint(&p);
    p += n;
    uint64_t ntypes = get_varint(&p);
    const uint8_t *t = p;
    for (uint64_t i = 0; i < ntypes; i++) { /* where the data starts */
        t++;
        uint64_t k = get_varint(&t);
        for (uint64_t j = 0; j < k; j++)
            get_varint(&t);
    }
    size_t data = (size_t)(t - pay);
    for (uint64_t i = 0; i < ntypes; i++) {
        unsigned id = *p++;
        uint64_t k = get_varint(&p);
        for (uint64_t j = 0; j < k; j++) {
            uint64_t size = get_varint(&p);
            if (id == type && j == col)
                return data + size - 1;
            data += size;
        }
    }
    CHECK(0, "type %u column %u in the table", type, col);
    return 0;
}

/* Writes to `out` the file with its first column frame's fd_kind column
 * damaged (checksums valid); returns the events that frame holds. */
static uint64_t damage_first_column_frame(const uint8_t *orig, size_t size, const char *out)
{
    struct sp_file_header h;
    memcpy(&h, orig, sizeof h);
    static uint8_t pay[FRAME_MAX], comp[FRAME_MAX];
    for (uint64_t at = h.frames_offset; at < size;) {
        struct sp_frame_header fh;
        memcpy(&fh, orig + at, sizeof fh);
        CHECK(fh.magic == SP_FRAME_MAGIC, "frame magic");
        uint64_t next = at + sizeof fh + fh.csize;
        if (!(fh.usize & SP_FRAME_COLUMNS)) {
            at = next;
            continue;
        }
        size_t n = ZSTD_decompress(pay, sizeof pay, orig + at + sizeof fh, fh.csize);
        CHECK(n == (fh.usize & SP_FRAME_SIZE_MASK), "frame decompresses");
        const uint8_t *p = pay;
        uint64_t events = get_varint(&p);
        pay[last_byte_of_column(pay, SP_EV_IO, 1 + IO_FIELD_FD_KIND)] |= 0x80;
        size_t c = ZSTD_compress(comp, sizeof comp, pay, n, 1);
        CHECK(!ZSTD_isError(c), "recompress");
        fh.csize = (uint32_t)c;
        fh.crc = sp_crc32c(0, comp, c);
        fh.hcrc = sp_crc32c(0, &fh, FRAME_HCRC_BYTES);
        FILE *f = fopen(out, "wb");
        CHECK(f, "create %s", out);
        CHECK(fwrite(orig, 1, at, f) == at && fwrite(&fh, sizeof fh, 1, f) == 1 &&
                  fwrite(comp, 1, c, f) == c &&
                  fwrite(orig + next, 1, size - next, f) == size - next,
              "write %s", out);
        fclose(f);
        return events;
    }
    CHECK(0, "the trace has a column frame");
    return 0;
}

/* Reads the io offsets of `path` into `offs`, every field or all but
 * fd_kind; returns how many, and whether damage was reported. */
static size_t read_offsets(const char *path, int all_fields, uint64_t *offs, int *reported)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open %s: %s", path, sp_strerror(err));
    if (!all_fields)
        sp_reader_set_fields(r, SP_EV_IO, ~(UINT64_C(1) << IO_FIELD_FD_KIND));
    struct sp_event ev;
    size_t n = 0;
    while (sp_reader_next(r, &ev))
        if (ev.type == SP_EV_IO && n < MAX_EVENTS)
            offs[n++] = ev.io.offset;
    *reported = sp_reader_diag(r)[0] != 0;
    sp_reader_close(r);
    return n;
}

int main(void)
{
    char dir[4096], good[4200], bad[4200];
    tmpdir_make(dir, sizeof dir);
    snprintf(good, sizeof good, "%s/good.sprof", dir);
    snprintf(bad, sizeof bad, "%s/bad.sprof", dir);
    record(good);
    size_t size;
    uint8_t *orig = slurp(good, &size);
    uint64_t lost = damage_first_column_frame(orig, size, bad);

    static uint64_t want[MAX_EVENTS], got[MAX_EVENTS];
    int reported;
    size_t n = read_offsets(good, 1, want, &reported);
    CHECK(n == EVENTS && !reported, "the undamaged trace reads all %d events (%zu)", EVENTS, n);

    size_t m = read_offsets(bad, 0, got, &reported);
    CHECK(m == n && memcmp(got, want, n * sizeof *got) == 0 && !reported,
          "without the fd_kind field, all %zu events read from the damaged trace (%zu)", n, m);
    printf("ok: a damaged column nobody asked for costs nothing: %zu of %zu events\n", m, n);

    m = read_offsets(bad, 1, got, &reported);
    CHECK(m == n - lost && reported,
          "with every field, the damaged chunk (%llu events) is skipped and reported (%zu read)",
          (unsigned long long)lost, m);
    printf("ok: asked for every field, the damaged chunk's %llu events are skipped, and said\n",
           (unsigned long long)lost);
    free(orig);
    tmpdir_remove(dir);
    return 0;
}
