/*
 * test_crash.c - a training process is killed with SIGKILL at a random
 * moment (the scheduler's time limit, the OOM killer).  Every event it had
 * finished recording must be in its trace: the reader recovers at least
 * every event the process reported as appended, each exactly once, in its
 * thread's order, with the payload it was given - nothing invented.
 *
 * The child records from several threads, with events of varied types and
 * sizes, and after each completed append writes (thread, sequence) to a
 * pipe.  The parent kills it after a random delay, drains the pipe and
 * compares.  Repeated for many kills, so that kills land while slots are
 * being filled, handed over, compressed and written as frames.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"

#define ITERATIONS 60
#define THREADS 4
#define MAX_DELAY_US 40000
#define RETRY_US 200

struct report {
    uint32_t thread, seq;
};

static int report_fd;
static struct sp_writer *writer;
static uint32_t names[THREADS];

/* Deterministic payload, so the reader can tell a real event from noise. */
static uint64_t payload(uint32_t thread, uint64_t seq)
{
    uint64_t x = (seq + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)thread << 56);
    return x >> (seq % 50); /* varied sizes: 1 to 10 varint bytes */
}

static void make_event(struct sp_event *ev, uint32_t thread, uint64_t seq)
{
    memset(ev, 0, sizeof *ev);
    ev->t = 1000000000ull + seq * 1500 + (seq % 7) * 100;
    uint64_t pay = payload(thread, seq);
    uint32_t name = names[thread];
    /* (thread, seq, payload) where parse_event reads them back */
    switch (seq % 3) {
    case 0:
        ev->type = SP_EV_IO;
        ev->io = (struct sp_ev_io){.op = SP_IO_READ, .fd = thread, .offset = seq, .bytes = pay, .path = name};
        break;
    case 1:
        ev->type = SP_EV_GPU;
        ev->gpu = (struct sp_ev_gpu){.kind = SP_GPU_KERNEL, .device = thread, .correlation = seq, .bytes = pay, .name = name};
        break;
    default:
        ev->type = SP_EV_MARKER;
        ev->marker = (struct sp_ev_marker){.kind = SP_MARK_INSTANT, .domain = thread, .depth = seq, .dur = pay, .name = name};
        break;
    }
}

/* (thread, seq, payload) of an event the child wrote; 0 if not one. */
static int parse_event(const struct sp_event *ev, uint32_t *thread, uint64_t *seq, uint64_t *pay)
{
    // clang-format off
    switch (ev->type) {
    case SP_EV_IO: *thread = (uint32_t)ev->io.fd; *seq = ev->io.offset; *pay = ev->io.bytes; return 1;
    case SP_EV_GPU: *thread = (uint32_t)ev->gpu.device; *seq = ev->gpu.correlation; *pay = ev->gpu.bytes; return 1;
    case SP_EV_MARKER: *thread = (uint32_t)ev->marker.domain; *seq = ev->marker.depth; *pay = ev->marker.dur; return 1;
    default: return 0;
    }
    // clang-format on
}

static void *record_forever(void *arg)
{
    uint32_t thread = (uint32_t)(uintptr_t)arg;
    struct sp_event ev;
    for (uint64_t seq = 0;; seq++) {
        make_event(&ev, thread, seq);
        while (sp_writer_append(writer, &ev) != 0)
            usleep(RETRY_US); /* refused (counted): try the same event again */
        struct report rep = {thread, (uint32_t)seq};
        if (write(report_fd, &rep, sizeof rep) != sizeof rep)
            _exit(3);
    }
    return NULL;
}

static void child(const char *path)
{
    struct sp_writer_opts o = {
        .slot_size = 8192,
        .slot_count = 64,
        .background = 1,
        .flush_interval_ms = 2,
        .strings_size = 4096,
    };
    int err;
    writer = sp_writer_create(path, &o, &err);
    if (!writer)
        _exit(2);
    for (int i = 0; i < THREADS; i++) {
        char name[32];
        snprintf(name, sizeof name, "worker-%d", i);
        names[i] = sp_writer_intern(writer, name, strlen(name));
    }
    pthread_t th;
    for (int i = 1; i < THREADS; i++)
        pthread_create(&th, NULL, record_forever, (void *)(uintptr_t)i);
    record_forever(0);
}

/* Checks the trace of a killed child against what it reported. */
static uint64_t verify(const char *path, const int64_t reported[THREADS], int iteration)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    int64_t any = 0;
    for (int i = 0; i < THREADS; i++)
        any |= reported[i] + 1;
    if (!r) {
        /* Killed before the file was set up: acceptable only if nothing
         * was reported. */
        CHECK(!any, "iteration %d: %s unreadable (%s) but events were reported", iteration,
              path, sp_strerror(err));
        return 0;
    }
    int64_t next[THREADS] = {0};
    struct sp_event ev;
    uint64_t total = 0;
    while (sp_reader_next(r, &ev)) {
        uint32_t th;
        uint64_t seq, pay;
        CHECK(parse_event(&ev, &th, &seq, &pay), "iteration %d: unexpected event type %d",
              iteration, ev.type);
        CHECK(th < THREADS, "iteration %d: thread %u", iteration, th);
        CHECK((int64_t)seq == next[th], "iteration %d: thread %u: seq %llu where %lld expected",
              iteration, th, (unsigned long long)seq, (long long)next[th]);
        struct sp_event want;
        make_event(&want, th, seq);
        CHECK(pay == payload(th, seq) && ev.t == want.t, "iteration %d: payload of %u/%llu",
              iteration, th, (unsigned long long)seq);
        char name[32];
        snprintf(name, sizeof name, "worker-%u", th);
        const char *got = sp_reader_string(r, ev.type == SP_EV_IO    ? ev.io.path
                                              : ev.type == SP_EV_GPU ? ev.gpu.name
                                                                     : ev.marker.name);
        CHECK(!strcmp(got, name), "iteration %d: name '%s'", iteration, got);
        next[th]++;
        total++;
    }
    for (int i = 0; i < THREADS; i++)
        CHECK(next[i] >= reported[i] + 1,
              "iteration %d: thread %d: recovered %lld events, child reported %lld done",
              iteration, i, (long long)next[i], (long long)reported[i] + 1);
    CHECK(!strcmp(sp_reader_diag(r), "") || strstr(sp_reader_diag(r), "truncated"),
          "iteration %d: unexpected damage: %s", iteration, sp_reader_diag(r));
    sp_reader_close(r);
    return total;
}

static void sleep_us(long us)
{
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

int main(void)
{
    char dir[4096];
    tmpdir_make(dir, sizeof dir);
    srand((unsigned)time(NULL) ^ (unsigned)getpid());
    uint64_t total = 0, with_slots = 0;
    for (int it = 0; it < ITERATIONS; it++) {
        char path[4200];
        snprintf(path, sizeof path, "%s/killed-%d.sprof", dir, it);
        int fds[2];
        CHECK(pipe(fds) == 0, "pipe");
        pid_t pid = fork();
        CHECK(pid >= 0, "fork");
        if (pid == 0) {
            close(fds[0]);
            report_fd = fds[1];
            child(path);
            _exit(0);
        }
        close(fds[1]);
        sleep_us(rand() % MAX_DELAY_US);
        kill(pid, SIGKILL);
        int64_t reported[THREADS];
        for (int i = 0; i < THREADS; i++)
            reported[i] = -1;
        struct report rep;
        ssize_t n;
        while ((n = read(fds[0], &rep, sizeof rep)) == sizeof rep) {
            CHECK(rep.thread < THREADS, "report");
            if ((int64_t)rep.seq > reported[rep.thread])
                reported[rep.thread] = rep.seq;
        }
        close(fds[0]);
        int status;
        waitpid(pid, &status, 0);
        CHECK(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child died of SIGKILL, status %d",
              status);
        total += verify(path, reported, it);
        int err;
        struct sp_reader *r = sp_reader_open(path, &err);
        if (r) {
            struct sp_event ev;
            while (sp_reader_next(r, &ev))
                ;
            with_slots += sp_reader_stats(r)->slots_recovered > 0;
            sp_reader_close(r);
        }
        unlink(path);
    }
    printf("ok: %d SIGKILLs, %llu events recovered, every reported event present once and in "
           "order (%llu traces needed their slots)\n",
           ITERATIONS, (unsigned long long)total, (unsigned long long)with_slots);
    tmpdir_remove(dir);
    return 0;
}
