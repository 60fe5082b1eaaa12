/*
 * test_logical.c - one thread writing as several logical threads
 * (sp_writer_append_as), as `scaleprof import` does with its lanes, and a
 * tool keeping its own end clocks (sp_writer_set_end_clocks).
 *
 * The stories: three lanes written event by event, interleaved, read back
 * as three threads, each with exactly its events in its order; more lanes
 * than the writer has slots, and every event still comes back, in order,
 * with nothing counted as lost; a converted trace keeps the end clocks
 * its converter set, while a plain close stamps the machine's clock.
 *
 * Each event carries its lane and its index within the lane in its
 * fields (io.fd = lane, io.bytes = index), so the check needs no copy of
 * what was written.
 */
#include <inttypes.h>
#include <time.h>

#include "testutil.h"

#define INTERLEAVED_LANES 3u
#define INTERLEAVED_EVENTS 100000u
#define TID_BASE 1000u        /* logical tids: TID_BASE + lane */
#define SMALL_SLOT_SIZE 4096u /* many chunks per lane */
#define FEW_SLOTS 4u
#define MANY_LANES 11u /* more lanes than FEW_SLOTS */
#define MANY_LANES_EVENTS 30000u
#define LANE_STRIDE_NS 7u
#define KEPT_END_MONO 123456789ull
#define KEPT_END_REAL 1700000000123456789ull
#define NS_PER_S 1000000000ull

/* What the reader gave back for one lane. */
struct lane_seen {
    uint64_t n;          /* events read */
    uint64_t next_index; /* the index the next event must carry */
    int out_of_order;
};

static struct sp_event lane_event(uint32_t lane, uint64_t index)
{
    struct sp_event ev;
    memset(&ev, 0, sizeof ev);
    ev.type = SP_EV_IO;
    ev.t = index * LANE_STRIDE_NS * 3 + lane; /* each lane's times grow */
    ev.io.fd = lane;
    ev.io.bytes = index;
    ev.io.dur = LANE_STRIDE_NS;
    return ev;
}

static struct sp_writer *inline_writer(const char *path, uint32_t slot_size, uint32_t slot_count)
{
    struct sp_writer_opts o;
    memset(&o, 0, sizeof o);
    o.background = 0;
    o.slot_size = slot_size;
    o.slot_count = slot_count;
    int err = 0;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w != NULL, "create %s: %s", path, sp_strerror(err));
    return w;
}

/* Writes `total` events round robin over `lanes` logical threads. */
static void write_round_robin(struct sp_writer *w, uint32_t lanes, uint64_t total)
{
    for (uint64_t i = 0; i < total; i++) {
        uint32_t lane = (uint32_t)(i % lanes);
        struct sp_event ev = lane_event(lane, i / lanes);
        int rc = sp_writer_append_as(w, &ev, TID_BASE + lane);
        CHECK(rc == 0, "append_as event %" PRIu64 " lane %u: %s", i, lane, sp_strerror(rc));
    }
}

/* Reads the file and checks that each lane's events come back complete,
 * in order, under that lane's tid. */
static void check_lanes(const char *path, uint32_t lanes, uint64_t total)
{
    struct lane_seen seen[MANY_LANES];
    memset(seen, 0, sizeof seen);
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r != NULL, "open %s: %s", path, sp_strerror(err));
    struct sp_event ev;
    while (sp_reader_next(r, &ev) == 1) {
        CHECK(ev.type == SP_EV_IO, "only the lanes' events, got type %d", ev.type);
        uint32_t lane = (uint32_t)ev.io.fd;
        CHECK(lane < lanes, "lane %u out of range", lane);
        CHECK(ev.tid == TID_BASE + lane, "lane %u came back as tid %u", lane, ev.tid);
        struct lane_seen *s = &seen[lane];
        if (ev.io.bytes != s->next_index || ev.t != lane_event(lane, s->next_index).t)
            s->out_of_order = 1;
        s->next_index = ev.io.bytes + 1;
        s->n++;
    }
    CHECK(sp_reader_info(r)->hdr.events_dropped == 0, "no event lost, %" PRIu64 " counted",
          sp_reader_info(r)->hdr.events_dropped);
    CHECK(!sp_reader_diag(r)[0], "no damage: %s", sp_reader_diag(r));
    sp_reader_close(r);
    for (uint32_t l = 0; l < lanes; l++) {
        uint64_t want = total / lanes + (l < total % lanes);
        CHECK(seen[l].n == want, "lane %u: %" PRIu64 " events back, %" PRIu64 " written", l,
              seen[l].n, want);
        CHECK(!seen[l].out_of_order, "lane %u: events out of the order written", l);
    }
}

static void three_lanes_interleaved_read_back_per_tid(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/three.sprof", dir);
    struct sp_writer *w = inline_writer(path, SMALL_SLOT_SIZE, 0);
    write_round_robin(w, INTERLEAVED_LANES, INTERLEAVED_EVENTS);
    CHECK(sp_writer_close(w) == 0, "close");
    check_lanes(path, INTERLEAVED_LANES, INTERLEAVED_EVENTS);
}

static void more_lanes_than_slots_lose_nothing(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/many.sprof", dir);
    struct sp_writer *w = inline_writer(path, SMALL_SLOT_SIZE, FEW_SLOTS);
    write_round_robin(w, MANY_LANES, MANY_LANES_EVENTS);
    CHECK(sp_writer_close(w) == 0, "close");
    check_lanes(path, MANY_LANES, MANY_LANES_EVENTS);
}

static uint64_t now_ns(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_S + (uint64_t)ts.tv_nsec;
}

static struct sp_file_header header_of(const char *path)
{
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r != NULL, "open %s: %s", path, sp_strerror(err));
    struct sp_file_header h = sp_reader_info(r)->hdr;
    sp_reader_close(r);
    return h;
}

static void converter_keeps_its_end_clocks(const char *dir)
{
    char kept[4200], stamped[4200];
    snprintf(kept, sizeof kept, "%s/kept.sprof", dir);
    snprintf(stamped, sizeof stamped, "%s/stamped.sprof", dir);

    struct sp_writer *w = inline_writer(kept, 0, 0);
    struct sp_event ev = lane_event(0, 0);
    CHECK(sp_writer_append_as(w, &ev, TID_BASE) == 0, "append");
    CHECK(sp_writer_set_end_clocks(w, KEPT_END_MONO, KEPT_END_REAL) == 0, "set end clocks");
    CHECK(sp_writer_close(w) == 0, "close");
    struct sp_file_header h = header_of(kept);
    CHECK(h.end_mono == KEPT_END_MONO && h.end_real == KEPT_END_REAL,
          "end clocks kept: %" PRIu64 " %" PRIu64, h.end_mono, h.end_real);
    CHECK(h.flags & SP_FLAG_CLOSED, "closed cleanly");

    uint64_t before = now_ns(CLOCK_MONOTONIC);
    w = inline_writer(stamped, 0, 0);
    CHECK(sp_writer_close(w) == 0, "close");
    h = header_of(stamped);
    CHECK(h.end_mono >= before && h.end_mono <= now_ns(CLOCK_MONOTONIC),
          "a plain close stamps the machine's clock: %" PRIu64, h.end_mono);
}

int main(void)
{
    char dir[4096];
    tmpdir_make(dir, sizeof dir);
    three_lanes_interleaved_read_back_per_tid(dir);
    more_lanes_than_slots_lose_nothing(dir);
    converter_keeps_its_end_clocks(dir);
    tmpdir_remove(dir);
    printf("ok: logical threads read back per tid, in order; end clocks kept\n");
    return 0;
}
