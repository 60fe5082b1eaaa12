/*
 * test_fork.c - a DataLoader forks workers while the main process is
 * recording.  The child inherits the parent's writer and the calling
 * thread's cached slot (thread-local storage survives fork); it abandons
 * the parent's writer and records into its own file.  Neither trace may
 * receive the other's events: the parent's file holds exactly the parent's
 * events in order, the child's exactly the child's.
 */
#include <dirent.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>

#include "testutil.h"

#define BEFORE 1000
#define AFTER 1000
#define CHILD_EVENTS 500

static void append_seq(struct sp_writer *w, int who, uint64_t seq)
{
    struct sp_event ev = {.type = SP_EV_MARKER, .t = 1000 + seq};
    ev.marker.kind = SP_MARK_INSTANT;
    ev.marker.domain = (uint64_t)who;
    ev.marker.depth = seq;
    CHECK(sp_writer_append(w, &ev) == 0, "append %d/%llu", who, (unsigned long long)seq);
}

static void expect_only(const char *path, int who, uint64_t count)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    CHECK(r, "open %s: %s", path, sp_strerror(err));
    struct sp_event ev;
    uint64_t n = 0;
    while (sp_reader_next(r, &ev)) {
        CHECK(ev.type == SP_EV_MARKER && ev.marker.domain == (uint64_t)who,
              "%s holds an event of process %llu", path, (unsigned long long)ev.marker.domain);
        CHECK(ev.marker.depth == n, "%s: event %llu where %llu expected", path,
              (unsigned long long)ev.marker.depth, (unsigned long long)n);
        n++;
    }
    CHECK(n == count, "%s: %llu of %llu events", path, (unsigned long long)n,
          (unsigned long long)count);
    sp_reader_close(r);
}

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_ASAN 1
#endif
#endif

#ifdef UNDER_ASAN
#define SETTLE_TRIES 2000
/* ASan's allocator (as of GCC 12's libasan) takes no lock around fork: a
 * thread inside calloc when another forks leaves the child's allocator
 * locked, and the child's first new thread (its compressor) waits for
 * ever.  A starting thread callocs (ASan's own thread set-up), so under
 * ASan the fork waits until every thread of the process is asleep: the
 * writer's compressor has started.  glibc's malloc locks its arenas
 * around fork itself; without ASan the fork goes ahead at once, as a
 * DataLoader's does. */
static void settle_threads(void)
{
    for (int i = 0; i < SETTLE_TRIES; i++) {
        DIR *d = opendir("/proc/self/task");
        int running = 0, threads = 0;
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[300], stat[512];
            if (e->d_name[0] == '.')
                continue;
            threads++;
            snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
            FILE *f = fopen(path, "r");
            size_t n = f ? fread(stat, 1, sizeof stat - 1, f) : 0;
            if (f)
                fclose(f);
            stat[n] = 0;
            const char *state = strrchr(stat, ')');
            running += state && state[1] == ' ' && state[2] == 'R';
        }
        if (d)
            closedir(d);
        if (threads > 1 && running <= 1) /* this thread only */
            return;
        nanosleep(&(struct timespec){0, 1000000}, NULL);
    }
}
#else
static void settle_threads(void)
{
}
#endif

int main(void)
{
    char dir[4096], parent_path[4200], child_path[4200];
    tmpdir_make(dir, sizeof dir);
    snprintf(parent_path, sizeof parent_path, "%s/parent.sprof", dir);
    snprintf(child_path, sizeof child_path, "%s/child.sprof", dir);
    int err;
    struct sp_writer *w = sp_writer_create(parent_path, NULL, &err);
    CHECK(w, "create: %s", sp_strerror(err));
    for (uint64_t i = 0; i < BEFORE; i++)
        append_seq(w, 1, i);
    settle_threads();
    pid_t pid = fork();
    CHECK(pid >= 0, "fork");
    if (pid == 0) {
        sp_writer_abandon(w);
        struct sp_writer *cw = sp_writer_create(child_path, NULL, &err);
        if (!cw)
            _exit(2);
        for (uint64_t i = 0; i < CHILD_EVENTS; i++)
            append_seq(cw, 2, i);
        _exit(sp_writer_close(cw) == 0 ? 0 : 3);
    }
    int status;
    waitpid(pid, &status, 0);
    CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child status %d", status);
    for (uint64_t i = BEFORE; i < BEFORE + AFTER; i++)
        append_seq(w, 1, i);
    CHECK(sp_writer_close(w) == 0, "close");
    expect_only(parent_path, 1, BEFORE + AFTER);
    expect_only(child_path, 2, CHILD_EVENTS);
    printf("ok: after fork, parent and child traces each hold only their own events\n");
    tmpdir_remove(dir);
    return 0;
}
