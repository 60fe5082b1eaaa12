/*
 * test_compact.c - a cleanly closed trace ends at its content, whatever
 * it holds, and reads back every event it was given:
 *   - a few events and no string at all (a process that read only
 *     pipes): the file is a few KiB, not its reservation;
 *   - frames larger than the arena's unused tail, which move down into
 *     the slots' space (all free at close): the file ends at the last
 *     frame, before where the slots ended;
 *   - frames larger than all the space before them: the trace keeps its
 *     layout (slots counted, frames where they were), still whole.
 */
#include <sys/stat.h>

#include "testutil.h"

#define SMALL_STRINGS (64u * 1024u)
#define SLOT_SIZE (128u * 1024u)
#define FEW_SLOTS 8u
#define SHORT_LIMIT (16u * 1024u)

struct layout {
    uint64_t size, frames_offset, map_end;
    uint32_t slot_count;
    uint64_t events, bad;
};

/* Appends n reads whose sizes do not repeat (frames of them cannot
 * shrink to nothing), closes, and reads the file back. */
static struct layout write_and_read(const char *path, const struct sp_writer_opts *o, uint64_t n, int intern)
{
    int err = 0;
    struct sp_writer *w = sp_writer_create(path, o, &err);
    CHECK(w != NULL, "create %s: %d", path, err);
    uint32_t sid = intern ? sp_writer_intern(w, "/data/shard-0", 13) : 0;
    struct sp_event ev = {.type = SP_EV_IO};
    ev.io.op = SP_IO_READ;
    ev.io.path = sid;
    for (uint64_t i = 0; i < n; i++) {
        ev.t = 1000 + i * 50;
        ev.io.offset = i;
        ev.io.bytes = (uint32_t)(i * 2654435761u) >> 8;
        CHECK(sp_writer_append(w, &ev) == 0, "append %llu", (unsigned long long)i);
    }
    CHECK(sp_writer_close(w) == 0, "close");
    struct layout l = {0};
    struct stat st;
    CHECK(stat(path, &st) == 0, "stat");
    l.size = (uint64_t)st.st_size;
    l.map_end = 4096 + o->strings_size + (uint64_t)o->slot_size * o->slot_count;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r != NULL, "open %s: %d", path, err);
    l.frames_offset = sp_reader_info(r)->hdr.frames_offset;
    l.slot_count = sp_reader_info(r)->hdr.slot_count;
    struct sp_event got;
    while (sp_reader_next(r, &got)) {
        if (got.type != SP_EV_IO)
            continue;
        if (got.io.offset != l.events || got.io.bytes != ((uint32_t)(l.events * 2654435761u) >> 8) ||
            got.io.path != sid)
            l.bad++;
        l.events++;
    }
    sp_reader_close(r);
    return l;
}

int main(void)
{
    char dir[256], path[512];
    tmpdir_make(dir, sizeof dir);
    struct sp_writer_opts o = {.slot_size = SLOT_SIZE, .slot_count = FEW_SLOTS, .strings_size = SMALL_STRINGS};

    snprintf(path, sizeof path, "%s/no-strings.sprof", dir);
    struct layout a = write_and_read(path, &o, 50, 0);
    printf("no strings, 50 events: %llu bytes, %u slots, %llu events read\n", (unsigned long long)a.size,
           a.slot_count, (unsigned long long)a.events);
    CHECK(a.size < SHORT_LIMIT && a.slot_count == 0, "a trace without strings is compacted (%llu bytes)",
          (unsigned long long)a.size);
    CHECK(a.events == 50 && a.bad == 0, "and reads back whole (%llu, %llu bad)", (unsigned long long)a.events,
          (unsigned long long)a.bad);

    /* About 300 KiB of frames: more than the arena's 64 KiB, less than
     * the arena and the eight 128 KiB slots together. */
    snprintf(path, sizeof path, "%s/into-slots.sprof", dir);
    struct layout b = write_and_read(path, &o, 120000, 1);
    printf("frames past the arena: %llu bytes (the live layout ended at %llu), frames from %llu, %u slots, "
           "%llu events read\n",
           (unsigned long long)b.size, (unsigned long long)b.map_end, (unsigned long long)b.frames_offset,
           b.slot_count, (unsigned long long)b.events);
    CHECK(b.size - b.frames_offset > SMALL_STRINGS, "the frames are larger than the arena (%llu bytes)",
          (unsigned long long)(b.size - b.frames_offset));
    CHECK(b.slot_count == 0 && b.size < b.map_end, "they moved down into the slots' space");
    CHECK(b.events == 120000 && b.bad == 0, "and every event reads back (%llu, %llu bad)",
          (unsigned long long)b.events, (unsigned long long)b.bad);

    /* Several MiB of frames: more than all the space before them. */
    snprintf(path, sizeof path, "%s/too-big.sprof", dir);
    struct layout c = write_and_read(path, &o, 2000000, 1);
    printf("frames past all the space: %llu bytes, frames from %llu, %u slots, %llu events read\n",
           (unsigned long long)c.size, (unsigned long long)c.frames_offset, c.slot_count,
           (unsigned long long)c.events);
    CHECK(c.size - c.map_end > c.map_end, "the frames are larger than the space before them");
    CHECK(c.slot_count == FEW_SLOTS && c.frames_offset == c.map_end, "the trace keeps its layout");
    CHECK(c.events == 2000000 && c.bad == 0, "and every event reads back (%llu, %llu bad)",
          (unsigned long long)c.events, (unsigned long long)c.bad);
    tmpdir_remove(dir);
    printf("ok\n");
    return 0;
}
