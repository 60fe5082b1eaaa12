/*
 * limits.c - is this process too near a limit on tasks for the recorder
 * to add its thread?
 *
 * Why.  The recorder adds one thread to every process it records (fd.c's
 * service thread).  Under a limit on tasks - a pids cgroup's pids.max, as
 * container runtimes set, or RLIMIT_NPROC (`ulimit -u`) - that thread is
 * one the job may need: a job of 40 workers under a limit of 60 fits bare,
 * and not with 40 recorder threads beside them (its forks failed).  So
 * the service thread, first thing after it has a descriptor table of its
 * own (the files below are opened there, never in the job's table), looks
 * at the limits, and where the tasks they count (itself included) are
 * above half of the limit it ends at once: that process is not recorded,
 * and says so in one line (core.c's open_trace, through sp_fd_refusal).
 * Half, because the job may yet need every task it has left: the recorder
 * takes no thread once half of the room is used.  The thread's short life
 * before it ends is the one task the check costs.
 *
 * The pids cgroup.  /proc/self/cgroup names the process's cgroup (v2:
 * "0::PATH"; v1: the line whose controllers hold "pids"), and
 * /proc/self/mountinfo the mount that shows that hierarchy (cgroup2, or
 * cgroup with "pids" among its options; a mount of a cgroup below the
 * root, as in a container, shows PATH less its root).  Every cgroup from
 * that one up to the mount has its own pids.max and pids.current; each
 * with a number for pids.max is checked.  The directory is found once per
 * program and inherited by fork children (the same cgroup, unless the job
 * moves them); pids.max and pids.current are read at every start.
 *
 * RLIMIT_NPROC counts the tasks of the process's real user, everywhere,
 * and root is not held to it.  sysinfo's count of all tasks bounds that
 * count from above: when it is within half of the limit, nothing more is
 * read; otherwise the user's tasks are counted from /proc (the owner of
 * /proc/PID, and /proc/PID/task's link count, two plus its threads).
 *
 * Free disk.  A live trace holds its reservation on the file system of
 * SCALEPROF_DIR (SP_DISK_FULL_RES, 4.3 MiB at first: docs/reliability.md,
 * "The footprint budget"), and a job that writes beside its traces needs
 * that room.  At the trace's creation sp_limits_disk reads the file
 * system's free space (fstatfs on the trace directory's descriptor: no
 * path walk) and answers:
 *  - roomy: free space at least 64 usual reservations (a node of 8 ranks
 *    with 8 data-loader workers each, all alive together) and 5% of the
 *    file system (at most 1 GiB: 5% of a large disk is more than any
 *    node's traces take): the usual trace;
 *  - low: less than that: a smaller trace, SP_DISK_LOW_RES (1.1 MiB)
 *    reserved and never more mapped;
 *  - off: less than the floor plus that smaller reservation, the floor
 *    being two usual reservations or 1% of the file system (at most 256
 *    MiB), whichever is larger: this process is not recorded.  The recorder never takes the
 *    floor's room: a job whose own writes fit in it never loses one to
 *    the recorder (core.c holds a flock on the trace directory from this
 *    read to the new trace's reservation, so that processes starting
 *    together do not each reserve against the same free space).
 * Free space is what an unprivileged writer may use (f_bavail).  The
 * floor goes to the writer too (opts.grow_floor): a trace that grows
 * later (more threads, more names) reads the free space again before
 * each reservation and does not grow into the floor, so that a disk the
 * job fills after the trace was made still keeps the floor's room for
 * the job.
 *
 * Everything here runs on the service thread, with raw system calls (the
 * thread holds the re-entry guard anyway) and no malloc.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include "preload.h"

#define SP_LIM_PATH 1024
#define SP_LIM_LINE 4096
#define SP_LIM_LEVELS 32                 /* cgroups checked, from ours up */
#define SP_AS_ROOMY (4ull << 30)         /* RLIMIT_AS at or above this: the recorder takes its usual room */
#define SP_DISK_SHARE_MAX (1ull << 30)   /* 5% of a file system, up to this: a smaller trace below */
#define SP_DISK_FLOOR_MAX (256ull << 20) /* 1% of a file system, up to this: not recorded below */

static char g_pids_dir[SP_LIM_PATH]; /* the process's pids cgroup directory, "" when none */
static size_t g_pids_top;            /* length of its mount point: the walk stops there */
static int g_pids_found;             /* 0: not looked yet, 1: looked (inherited by fork) */

static int lim_open(const char *path)
{
    return (int)syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
}

/* A small file's text, NUL-terminated; its length or -1. */
static long read_small(const char *path, char *buf, size_t size)
{
    int fd = lim_open(path);
    if (fd < 0)
        return -1;
    size_t got = 0;
    while (got < size - 1) {
        long r = syscall(SYS_read, fd, buf + got, size - 1 - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    syscall(SYS_close, fd);
    buf[got] = 0;
    return (long)got;
}

/* Whether the comma-separated list names the pids controller (a v1
 * cgroup line's controllers, a v1 cgroup mount's options). */
static int lists_pids(const char *list)
{
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if (n == 4 && memcmp(p, "pids", 4) == 0)
            return 1;
        p += n + (p[n] == ',');
    }
    return 0;
}

/* The path of the process's pids cgroup in /proc/self/cgroup: v1's pids
 * line when there is one, else v2's.  Sets *v2.  0 when found. */
static int cgroup_path(char *out, size_t size, int *v2)
{
    char buf[SP_LIM_LINE];
    if (read_small("/proc/self/cgroup", buf, sizeof buf) <= 0)
        return -1;
    int found = 0;
    for (char *line = buf; *line;) {
        char *end = strchr(line, '\n');
        if (end)
            *end = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2) {
            *c2 = 0;
            const char *ctl = c1 + 1, *path = c2 + 1;
            int is_pids = lists_pids(ctl);
            if ((is_pids || (!found && *ctl == 0)) && strlen(path) < size) {
                strcpy(out, path);
                *v2 = !is_pids;
                found = 1;
                if (is_pids)
                    return 0;
            }
        }
        if (!end)
            break;
        line = end + 1;
    }
    return found ? 0 : -1;
}

/* The next space-separated field of a mountinfo line, cut in place;
 * NULL at the line's end. */
static char *field(char **rest)
{
    char *p = *rest;
    while (*p == ' ')
        p++;
    if (!*p)
        return NULL;
    char *end = strchr(p, ' ');
    if (end) {
        *end = 0;
        *rest = end + 1;
    } else
        *rest = p + strlen(p);
    return p;
}

/* One mountinfo line: when it mounts the hierarchy of `path`, the
 * directory of the cgroup into g_pids_dir.  1 when it did. */
static int match_mount(char *line, const char *path, int v2)
{
    char *rest = line, *f[5];
    for (int i = 0; i < 5; i++)
        if (!(f[i] = field(&rest)))
            return 0;
    const char *root = f[3], *point = f[4];
    char *sep = strstr(rest, " - ");
    if (!sep)
        return 0;
    rest = sep + 3;
    char *type = field(&rest), *source = field(&rest), *opts = field(&rest);
    (void)source;
    if (!type || !opts)
        return 0;
    if (v2 ? strcmp(type, "cgroup2") != 0 : strcmp(type, "cgroup") != 0)
        return 0;
    if (!v2 && !lists_pids(opts))
        return 0;
    size_t rl = strlen(root);
    const char *below = path;
    if (strcmp(root, "/") != 0) {
        if (strncmp(path, root, rl) != 0 || (path[rl] != '/' && path[rl] != 0))
            return 0; /* a mount of another part of the hierarchy */
        below = path + rl;
    }
    int n = snprintf(g_pids_dir, sizeof g_pids_dir, "%s%s", point, strcmp(below, "/") == 0 ? "" : below);
    if (n < 0 || (size_t)n >= sizeof g_pids_dir) {
        g_pids_dir[0] = 0;
        return 0;
    }
    g_pids_top = strlen(point);
    return 1;
}

/* Find the process's pids cgroup directory, once per program. */
static void find_pids_dir(void)
{
    g_pids_found = 1;
    g_pids_dir[0] = 0;
    char path[SP_LIM_PATH];
    int v2 = 0;
    if (cgroup_path(path, sizeof path, &v2) != 0)
        return;
    int fd = lim_open("/proc/self/mountinfo");
    if (fd < 0)
        return;
    char buf[SP_LIM_LINE + 1];
    size_t have = 0;
    for (;;) {
        long r = syscall(SYS_read, fd, buf + have, SP_LIM_LINE - have);
        if (r <= 0)
            break;
        have += (size_t)r;
        buf[have] = 0;
        char *line = buf, *end;
        while ((end = strchr(line, '\n')) != NULL) {
            *end = 0;
            if (match_mount(line, path, v2)) {
                syscall(SYS_close, fd);
                return;
            }
            line = end + 1;
        }
        have = (size_t)(buf + have - line);
        if (have == SP_LIM_LINE) /* a line too long to hold: skip it */
            have = 0;
        memmove(buf, line, have);
    }
    syscall(SYS_close, fd);
}

static long read_count(const char *dir, const char *name)
{
    char path[SP_LIM_PATH + 32], text[64];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (read_small(path, text, sizeof text) <= 0)
        return -1;
    if (strncmp(text, "max", 3) == 0)
        return -1;
    long v = 0;
    const char *p = text;
    if (*p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9')
        v = v * 10 + (*p++ - '0');
    return v;
}

/* The pids cgroups from ours up: 1 (and `why`) when one is above half. */
static int pids_near(char *why, size_t size)
{
    if (!g_pids_found)
        find_pids_dir();
    if (!g_pids_dir[0])
        return 0;
    char dir[SP_LIM_PATH];
    memcpy(dir, g_pids_dir, sizeof dir);
    for (int level = 0; level < SP_LIM_LEVELS; level++) {
        long max = read_count(dir, "pids.max");
        if (max > 0) {
            long cur = read_count(dir, "pids.current");
            if (cur >= 0 && cur > max / 2) {
                snprintf(why, size,
                         "%ld tasks of the %ld that pids cgroup %.300s allows (pids.max) are in use: "
                         "no recorder thread past half of a process limit, this process is not recorded",
                         cur, max, dir[g_pids_top] ? dir + g_pids_top : "/");
                return 1;
            }
        }
        char *slash = strrchr(dir, '/');
        if (!slash || (size_t)(slash - dir) < g_pids_top)
            break;
        *slash = 0;
    }
    return 0;
}

struct sp_dirent64 {
    uint64_t ino;
    int64_t off;
    unsigned short reclen;
    unsigned char type;
    char name[];
};

/* Tasks (threads) of processes owned by `uid`, from /proc; -1 when unknown. */
static long user_tasks(uid_t uid)
{
    int dfd = (int)syscall(SYS_openat, AT_FDCWD, "/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    long tasks = 0;
    char buf[8192];
    for (;;) {
        long n = syscall(SYS_getdents64, dfd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            struct sp_dirent64 *d = (struct sp_dirent64 *)(buf + off);
            off += d->reclen;
            if (d->name[0] < '1' || d->name[0] > '9')
                continue;
            struct stat st;
            char task[300];
            if (syscall(SYS_newfstatat, dfd, d->name, &st, 0) != 0 || st.st_uid != uid)
                continue;
            snprintf(task, sizeof task, "%s/task", d->name);
            if (syscall(SYS_newfstatat, dfd, task, &st, 0) == 0 && st.st_nlink > 2)
                tasks += (long)st.st_nlink - 2;
            else
                tasks++;
        }
    }
    syscall(SYS_close, dfd);
    return tasks;
}

/* RLIMIT_NPROC: 1 (and `why`) when the user's tasks are above half. */
static int nproc_near(char *why, size_t size)
{
    struct rlimit rl;
    uid_t uid = (uid_t)syscall(SYS_getuid);
    if (uid == 0 || getrlimit(RLIMIT_NPROC, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    long limit = (long)rl.rlim_cur;
    struct sysinfo si;
    if (sysinfo(&si) == 0 && (long)si.procs <= limit / 2)
        return 0; /* all the tasks there are would fit */
    long mine = user_tasks(uid);
    if (mine < 0 || mine <= limit / 2)
        return 0;
    snprintf(why, size,
             "%ld tasks of the %ld that RLIMIT_NPROC (ulimit -u) allows user %u are in use: "
             "no recorder thread past half of a process limit, this process is not recorded",
             mine, limit, (unsigned)uid);
    return 1;
}

/* Address space: the room under RLIMIT_AS (the limit less what the
 * process maps now), 0 when it is not limited. */
int sp_limits_as_tight(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 0;
    return rl.rlim_cur < SP_AS_ROOMY;
}

int sp_limits_near(char *why, size_t size)
{
    return pids_near(why, size) || nproc_near(why, size);
}

int sp_limits_disk(int dfd, char *why, size_t size, uint64_t *floor_out)
{
    struct statfs fs;
    *floor_out = 0;
    if (syscall(SYS_fstatfs, dfd, &fs) != 0 || fs.f_blocks == 0)
        return SP_DISK_ROOMY; /* not known (or a file system that counts no blocks): as before */
    uint64_t unit = fs.f_frsize ? (uint64_t)fs.f_frsize : (uint64_t)fs.f_bsize;
    uint64_t total = (uint64_t)fs.f_blocks * unit, avail = (uint64_t)fs.f_bavail * unit;
    uint64_t roomy = 64 * SP_DISK_FULL_RES, floor = 2 * SP_DISK_FULL_RES;
    uint64_t share = total / 20 < SP_DISK_SHARE_MAX ? total / 20 : SP_DISK_SHARE_MAX;
    if (roomy < share)
        roomy = share;
    share = total / 100 < SP_DISK_FLOOR_MAX ? total / 100 : SP_DISK_FLOOR_MAX;
    if (floor < share)
        floor = share;
    *floor_out = floor;
    double mib = 1.0 / (1 << 20);
    if (avail < floor + SP_DISK_LOW_RES) {
        snprintf(why, size,
                 "%.1f MiB free on the trace directory's file system, below %.1f MiB (the room left to the job): "
                 "this process is not recorded, nor any other with so little room",
                 (double)avail * mib, (double)(floor + SP_DISK_LOW_RES) * mib);
        return SP_DISK_OFF;
    }
    if (avail < roomy) {
        snprintf(why, size,
                 "%.1f MiB free on the trace directory's file system (below %.0f MiB): smaller traces "
                 "(%.1f MiB, %u threads recording at once), and no process recorded once less than %.1f MiB is free",
                 (double)avail * mib, (double)roomy * mib, (double)SP_DISK_LOW_RES * mib, SP_DISK_LOW_SLOTS,
                 (double)(floor + SP_DISK_LOW_RES) * mib);
        return SP_DISK_LOW;
    }
    return SP_DISK_ROOMY;
}
