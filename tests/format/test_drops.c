/*
 * test_drops.c - when the recorder cannot keep up it drops events rather
 * than make the job wait, and the trace says exactly how many it lost:
 *   - a compressor that lags behind (two tiny slots, no timer wake-ups):
 *     appends are refused with SP_E_FULL, the header's events_dropped
 *     equals the number refused, and DROPPED events (reason no_slot) carry
 *     the same total;
 *   - a disk that refuses the frames (file size limit, like a full disk):
 *     the writer stops writing frames, keeps the events in its slots
 *     (every accepted event is still read back) and counts the refused
 *     ones with reason "write".
 */
#include <signal.h>
#include <sys/resource.h>

#include "testutil.h"

#define BURST 200000
#define SLOW_FLUSH_MS 60000

struct tally {
    uint64_t reads, dropped_total, dropped_events, reason_no_slot, reason_write;
};

static int append_burst(struct sp_writer *w, uint64_t *refused)
{
    struct sp_event ev = {.type = SP_EV_IO};
    ev.io.op = SP_IO_READ;
    for (uint64_t i = 0; i < BURST; i++) {
        ev.t = 1000 + i * 50;
        ev.io.offset = i;
        /* Sizes that do not repeat: frames of these cannot shrink to
         * nothing, so the full-disk story reaches its limit. */
        ev.io.bytes = (uint32_t)(i * 2654435761u) >> 8;
        int rc = sp_writer_append(w, &ev);
        if (rc == SP_E_FULL)
            (*refused)++;
        else if (rc != 0)
            return rc;
    }
    return 0;
}

static struct tally read_back(const char *path, uint64_t *hdr_dropped)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open %s: %s", path, sp_strerror(err));
    struct tally t = {0};
    struct sp_event ev;
    while (sp_reader_next(r, &ev)) {
        if (ev.type == SP_EV_IO) {
            t.reads++;
        } else if (ev.type == SP_EV_DROPPED) {
            t.dropped_events++;
            t.dropped_total += ev.dropped.count;
            t.reason_no_slot += ev.dropped.reason == SP_DROP_NO_SLOT;
            t.reason_write += ev.dropped.reason == SP_DROP_WRITE;
        }
    }
    *hdr_dropped = sp_reader_info(r)->hdr.events_dropped;
    sp_reader_close(r);
    return t;
}

static void lagging_compressor_drops_and_counts(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/lagging.sprof", dir);
    struct sp_writer_opts o = {
        .slot_size = 4096,
        .slot_count = 2,
        .background = 1,
        .flush_interval_ms = SLOW_FLUSH_MS,
    };
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    uint64_t refused = 0;
    CHECK(append_burst(w, &refused) == 0, "appends either succeed or are refused");
    CHECK(sp_writer_close(w) == 0, "close");
    CHECK(refused > 0, "a burst into two 4 KiB slots outruns the compressor");
    uint64_t hdr_dropped;
    struct tally t = read_back(path, &hdr_dropped);
    CHECK(hdr_dropped == refused, "header events_dropped %llu == refused %llu",
          (unsigned long long)hdr_dropped, (unsigned long long)refused);
    CHECK(t.dropped_total == refused, "DROPPED events sum to %llu, refused %llu",
          (unsigned long long)t.dropped_total, (unsigned long long)refused);
    CHECK(t.reason_no_slot == t.dropped_events, "reason no_slot");
    CHECK(t.reads == BURST - refused, "every accepted event is there: %llu of %llu",
          (unsigned long long)t.reads, (unsigned long long)(BURST - refused));
    printf("ok: lagging compressor: %llu of %d refused, counted in header and %llu DROPPED "
           "events\n",
           (unsigned long long)refused, BURST, (unsigned long long)t.dropped_events);
}

static void full_disk_keeps_slots_and_counts(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/full-disk.sprof", dir);
    struct sp_writer_opts o = {.slot_size = 8192, .slot_count = 8, .strings_size = 4096, .background = 1};
    /* Room for the mapped regions and a few frames, then EFBIG. */
    uint64_t room = SP_HEADER_SIZE + 4096 + 8 * 8192 + 3000;
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit old, lim;
    getrlimit(RLIMIT_FSIZE, &old);
    lim = old;
    lim.rlim_cur = room;
    CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0, "setrlimit");
    int err;
    struct sp_writer *w = sp_writer_create(path, &o, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    uint64_t refused = 0;
    CHECK(append_burst(w, &refused) == 0, "appends either succeed or are refused");
    int rc = sp_writer_close(w);
    setrlimit(RLIMIT_FSIZE, &old);
    CHECK(rc == SP_E_IO, "close reports the failed writes: %s", sp_strerror(rc));
    CHECK(refused > 0, "events are refused once frames cannot be written");
    uint64_t hdr_dropped;
    struct tally t = read_back(path, &hdr_dropped);
    CHECK(hdr_dropped == refused, "header events_dropped %llu == refused %llu",
          (unsigned long long)hdr_dropped, (unsigned long long)refused);
    CHECK(t.reads == BURST - refused, "accepted events survive in slots and frames: %llu of %llu",
          (unsigned long long)t.reads, (unsigned long long)(BURST - refused));
    CHECK(t.dropped_total <= refused, "DROPPED events never claim more than was refused");
    printf("ok: full disk: recording stopped, %llu accepted events kept, %llu refused and "
           "counted\n",
           (unsigned long long)t.reads, (unsigned long long)refused);
}

int main(void)
{
    static void (*const tests[])(const char *) = {lagging_compressor_drops_and_counts, full_disk_keeps_slots_and_counts, NULL};
    return tmpdir_run(tests);
}
