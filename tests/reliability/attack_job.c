/*
 * attack_job.c - small jobs that do to their own descriptors, signals and
 * threads what real programs do, and print what they saw as "key value"
 * lines for reliability.py to compare with and without the preload.
 *
 *   pipes FILE          a second thread exists; a pipe is dup2'd onto 513
 *                       and 514, the job sleeps 0.35 s (the sampler ticks),
 *                       then writes and reads through both; prints "pipe_ok"
 *                       and the fds it holds (/proc/self/fd) and FDSize
 *   lowest FILE SECS    single-threaded: close(3); open() again and again for
 *                       SECS seconds; prints how often open did not return 3
 *   rlimit N FILE       RLIMIT_NOFILE=N, then opens FILE until it fails;
 *                       prints how many opens succeeded
 *   sigexit FILE SEED   a timer signal lands during a tight read loop; its
 *                       handler calls _exit(3); prints nothing
 *   count FILE          reads FILE one byte at a time forever, printing the
 *                       number of reads completed every 64, then pausing
 *                       1 ms (for SIGKILL runs)
 *   threads N FILE      N threads alive at once each read FILE once
 *   touch FILE SECS     reads FILE for SECS seconds (a job to truncate under)
 *   notsc FILE WHEN     makes rdtsc trap (prctl PR_SET_TSC, PR_TSC_SIGSEGV)
 *                       and reads FILE 200 times over 80 ms, reading no clock
 *                       but through the system call (the vDSO's reads the
 *                       TSC too): WHEN "first" before any recorded call,
 *                       "later" after 100 ms of recording; prints the mode
 *                       and the reads done (no "exec": the mode survives
 *                       exec, and the dynamic loader's own start-up timer
 *                       reads the TSC, so no dynamic program starts so)
 *   bigenv FILE N KEEP  a thread with a 256 KiB stack execs this program
 *                       ("envcount FILE") with N more environment variables
 *                       (BIGENV_i=x): after the job's own (KEEP 1) or alone
 *                       (KEEP 0: no LD_PRELOAD in it)
 *   envcount FILE       reads FILE once; prints how many BIGENV_ variables
 *                       it got and whether LD_PRELOAD is set
 *   vfork FILE          reads FILE, then vfork()s a child that fails to exec
 *                       a missing program, stores errno in a global and
 *                       _exits: prints what the parent saw of the store and
 *                       of errno (a vfork child shares its parent's memory)
 *   spawntime FILE MB N touches MB MiB of heap, reads FILE, then spawns
 *                       /bin/true N times with vfork+exec and N times with
 *                       posix_spawn, each waited for: prints the medians in
 *                       ms
 *   idle FILE SECS N    reads FILE N times (4000 fill a chunk, which is
 *                       compressed), prints "ready", then sleeps SECS (a
 *                       process whose footprint is measured)
 *   fillwrite FILE OUT MB SECS  reads FILE, sleeps SECS (its siblings start),
 *                       then writes MB MiB to OUT, 1 MiB at a time; prints
 *                       how many writes failed and the first errno
 *   reexec FILE N       reads FILE once, then execs itself with N-1 until
 *                       N is 0 (one pid, N+1 program images)
 *   forker N FILE       reads FILE, then forks N workers one after another,
 *                       each reading FILE and saying so before the next is
 *                       forked, all alive together until the last fork;
 *                       prints how many forks failed (a process limit)
 *                       and how many workers ended well
 *   aslimit MB N FILE   sets RLIMIT_AS to MB MiB (0: leaves it as it is),
 *                       reads FILE N times, then mallocs 1 MiB blocks
 *                       until one fails; prints how many it got
 *   clonevm N FILE      a child made with clone(CLONE_VM), no CLONE_SETTLS
 *                       (it runs on its parent's thread-local storage, as
 *                       a raw clone does), and the parent each pread FILE
 *                       N times at once; prints the reads each did
 *   growfill FILE DIR KEEP_KIB N READS WRITE_KIB
 *                       reads FILE (the trace is made), fills DIR's file
 *                       system until KEEP_KIB KiB are free, then N threads
 *                       alive at once each read FILE once (a trace then
 *                       wants more slots), then reads FILE READS times (a
 *                       trace then appends compressed chunks), then writes
 *                       WRITE_KIB KiB to DIR/out and fsyncs: prints
 *                       "write_failed N"
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <spawn.h>
#include <sys/time.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#define PIPE_FD_A 513
#define PIPE_FD_B 514
#define SAMPLER_TICKS_US 350000
#define LOWEST_FD 3
#define COUNT_PACE_US 1000

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_once(const char *file)
{
    char c;
    int fd = open(file, O_RDONLY);
    if (fd < 0) return -1;
    int r = (int)read(fd, &c, 1);
    close(fd);
    return r == 1 ? 0 : -1;
}

static void *sleeper(void *arg)
{
    (void)arg;
    for (;;)
        pause();
    return NULL;
}

/* The fds this process holds, as /proc/self/fd lists them. */
static void print_fds(void)
{
    DIR *d = opendir("/proc/self/fd");
    int self = d ? dirfd(d) : -1;
    printf("fds");
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL)
        if (e->d_name[0] != '.' && atoi(e->d_name) != self) printf(" %s", e->d_name);
    printf("\n");
    if (d) closedir(d);
}

static void print_fdsize(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, "FDSize:", 7) == 0) printf("fdsize %d\n", atoi(line + 7));
    if (f) fclose(f);
}

static int job_pipes(const char *file)
{
    pthread_t th;
    pthread_create(&th, NULL, sleeper, NULL);
    read_once(file);
    int p[2];
    if (pipe(p) != 0 || dup2(p[0], PIPE_FD_A) != PIPE_FD_A || dup2(p[1], PIPE_FD_B) != PIPE_FD_B)
        return 1;
    close(p[0]);
    close(p[1]);
    usleep(SAMPLER_TICKS_US);
    char c = 0;
    int ok = write(PIPE_FD_B, "x", 1) == 1 && read(PIPE_FD_A, &c, 1) == 1 && c == 'x';
    printf("pipe_ok %d\n", ok);
    close(PIPE_FD_A);
    close(PIPE_FD_B);
    print_fds();
    print_fdsize();
    return 0;
}

static int job_lowest(const char *file, double secs)
{
    int fd = open(file, O_RDONLY);
    if (fd != LOWEST_FD) printf("note first open got %d\n", fd);
    long misses = 0, tries = 0;
    double end = now_s() + secs;
    while (now_s() < end) {
        close(LOWEST_FD);
        fd = open(file, O_RDONLY);
        tries++;
        if (fd != LOWEST_FD) {
            misses++;
            if (fd >= 0 && fd != LOWEST_FD) close(fd);
        }
    }
    printf("tries %ld\nmisses %ld\n", tries, misses);
    return 0;
}

static int job_rlimit(int n, const char *file)
{
    struct rlimit rl = {(rlim_t)n, (rlim_t)n};
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 1;
    int opened = 0;
    while (open(file, O_RDONLY) >= 0)
        opened++;
    printf("opened %d\nerrno %d\n", opened, errno);
    return 0;
}

static const char *g_file;

static void exit_now(int sig)
{
    (void)sig;
    _exit(3);
}

static int job_sigexit(const char *file, unsigned seed)
{
    g_file = file;
    signal(SIGALRM, exit_now);
    int fd = open(file, O_RDONLY);
    /* 2 to 12 ms in: somewhere among the reads' appends */
    struct itimerval it = {{0, 0}, {0, 2000 + (long)(seed % 10000)}};
    setitimer(ITIMER_REAL, &it, NULL);
    char c;
    while (pread(fd, &c, 1, 0) >= 0)
        ;
    return 1;
}

static int job_count(const char *file)
{
    int fd = open(file, O_RDONLY);
    char c;
    setvbuf(stdout, NULL, _IONBF, 0);
    for (long n = 1;; n++) {
        if (pread(fd, &c, 1, 0) != 1) return 1;
        if (n % 64 == 0) {
            printf("done %ld\n", n); /* every read up to n has returned */
            usleep(COUNT_PACE_US);   /* at the pace of a busy loader, not a flood */
        }
    }
}

static pthread_barrier_t g_all_alive;

static void *one_read(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&g_all_alive); /* all threads exist before any reads */
    read_once(g_file);
    pthread_barrier_wait(&g_all_alive); /* and none leaves before all have */
    return NULL;
}

static int job_threads(int n, const char *file)
{
    g_file = file;
    pthread_t *th = calloc((size_t)n, sizeof *th);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    pthread_barrier_init(&g_all_alive, NULL, (unsigned)n);
    int made = 0;
    for (int i = 0; i < n; i++)
        if (pthread_create(&th[i], &attr, one_read, NULL) == 0) made++;
    if (made != n) {
        printf("made %d\n", made);
        return 1; /* the barrier would never open */
    }
    for (int i = 0; i < n; i++)
        pthread_join(th[i], NULL);
    printf("threads %d\n", made);
    return 0;
}

static int job_touch(const char *file, double secs)
{
    double end = now_s() + secs;
    long n = 0;
    while (now_s() < end)
        n += read_once(file) == 0;
    printf("reads %ld\n", n);
    return 0;
}

#define NOTSC_READS 200
#define NOTSC_PAUSE_EVERY 50
#define NOTSC_PAUSE_US 20000
#define NOTSC_LATER_US 100000

static int job_notsc(const char *file, const char *when)
{
    if (strcmp(when, "later") == 0) {
        read_once(file);
        usleep(NOTSC_LATER_US); /* the recorder's clock is calibrated by now */
    }
    if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) != 0) {
        printf("prctl failed %d\n", errno);
        return 1;
    }
    int reads = 0;
    for (int i = 0; i < NOTSC_READS; i++) {
        reads += read_once(file) == 0;
        if (i % NOTSC_PAUSE_EVERY == 0)
            usleep(NOTSC_PAUSE_US);
    }
    int mode = -1;
    prctl(PR_GET_TSC, &mode, 0, 0, 0);
    printf("tsc_mode %d\nreads %d\n", mode, reads);
    return 0;
}

extern char **environ;

#define BIGENV_STACK (256 * 1024)
#define BIGENV_ENTRY 32

struct bigenv {
    const char *self, *file;
    int n, keep;
};

static void *bigenv_exec(void *arg)
{
    struct bigenv *b = arg;
    size_t base = 0;
    while (b->keep && environ[base])
        base++;
    char **env = calloc(base + (size_t)b->n + 1, sizeof *env);
    char *text = malloc((size_t)b->n * BIGENV_ENTRY);
    size_t k = 0;
    for (size_t i = 0; i < base; i++)
        env[k++] = environ[i];
    for (int i = 0; i < b->n; i++) {
        char *v = text + (size_t)i * BIGENV_ENTRY;
        snprintf(v, BIGENV_ENTRY, "BIGENV_%d=x", i);
        env[k++] = v;
    }
    env[k] = NULL;
    char *argv[] = {(char *)b->self, "envcount", (char *)b->file, NULL};
    execve(b->self, argv, env);
    printf("exec_failed %d\n", errno);
    return NULL;
}

static int job_bigenv(const char *self, const char *file, int n, int keep)
{
    struct bigenv b = {self, file, n, keep};
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, BIGENV_STACK);
    pthread_t th;
    if (pthread_create(&th, &attr, bigenv_exec, &b) != 0)
        return 1;
    pthread_join(th, NULL);
    return 1;
}

static int job_envcount(const char *file)
{
    read_once(file);
    int n = 0;
    for (char **e = environ; *e; e++)
        n += strncmp(*e, "BIGENV_", 7) == 0;
    printf("bigenv %d\npreload %d\n", n, getenv("LD_PRELOAD") != NULL);
    return 0;
}

static volatile int g_child_store;

static int job_vfork(const char *file)
{
    read_once(file);
    errno = 0;
    pid_t pid = vfork();
    if (pid == 0) {
        char *argv[] = {"/nonexistent/program", NULL};
        execv(argv[0], argv);
        g_child_store = errno; /* in the parent's memory: vfork shares it */
        _exit(127);
    }
    int seen_errno = errno;
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return 1;
    printf("child_store %d\nerrno_after %d\nstatus %d\n", g_child_store, seen_errno, WEXITSTATUS(st));
    return 0;
}

#define SPAWN_MAX 64

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_ms(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2] * 1e3;
}

static int job_spawntime(const char *file, long mb, int n)
{
    size_t len = (size_t)mb << 20;
    char *heap = malloc(len);
    if (!heap || n < 1 || n > SPAWN_MAX)
        return 1;
    memset(heap, 1, len);
    read_once(file);
    char *argv[] = {"/bin/true", NULL};
    double took[SPAWN_MAX];
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        pid_t pid = vfork();
        if (pid == 0) {
            execv(argv[0], argv);
            _exit(127);
        }
        int st;
        waitpid(pid, &st, 0);
        took[i] = now_s() - t0;
    }
    printf("vfork_ms %.3f\n", median_ms(took, n));
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        pid_t pid;
        if (posix_spawn(&pid, argv[0], NULL, NULL, argv, environ) != 0)
            return 1;
        int st;
        waitpid(pid, &st, 0);
        took[i] = now_s() - t0;
    }
    printf("spawn_ms %.3f\nheap %d\n", median_ms(took, n), heap[len - 1]);
    return 0;
}

static int job_idle(const char *file, double secs, int reads)
{
    for (int i = 0; i < reads; i++)
        read_once(file);
    printf("ready\n");
    fflush(stdout);
    usleep((useconds_t)(secs * 1e6));
    return 0;
}

#define FILL_CHUNK (1 << 20)

static int job_fillwrite(const char *file, const char *out, int mb, double secs)
{
    read_once(file);
    usleep((useconds_t)(secs * 1e6));
    static char buf[FILL_CHUNK];
    memset(buf, 'x', sizeof buf);
    int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    int failed = 0, first = 0;
    for (int i = 0; i < mb; i++)
        if (fd < 0 || write(fd, buf, sizeof buf) != (ssize_t)sizeof buf) {
            if (!failed++)
                first = errno;
        }
    if (fd >= 0 && fsync(fd) != 0 && !failed++)
        first = errno;
    if (fd >= 0)
        close(fd);
    printf("write_failed %d\nerrno %d\n", failed, first);
    return 0;
}

/* Writes KIB KiB to PATH and fsyncs; returns the writes that failed. */
static int write_kib(const char *path, long kib, int *first)
{
    static char buf[64 << 10];
    memset(buf, 'x', sizeof buf);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600), failed = 0;
    for (long left = kib << 10; left > 0; left -= (long)sizeof buf) {
        size_t n = left < (long)sizeof buf ? (size_t)left : sizeof buf;
        if (fd < 0 || write(fd, buf, n) != (ssize_t)n) {
            if (!failed++)
                *first = errno;
        }
    }
    if (fd >= 0 && fsync(fd) != 0 && !failed++)
        *first = errno;
    if (fd >= 0)
        close(fd);
    return failed;
}

static int job_growfill(const char *file, const char *dir, long keep_kib, int n, long reads, long write_kib_n)
{
    read_once(file);
    usleep(50000); /* the trace exists and its first reservation is made */
    struct statvfs fs;
    char path[4096];
    if (statvfs(dir, &fs) != 0)
        return 1;
    long avail_kib = (long)((unsigned long long)fs.f_bavail * fs.f_frsize >> 10);
    int first = 0, fill_failed = 0;
    if (avail_kib > keep_kib) {
        snprintf(path, sizeof path, "%s/fill", dir);
        fill_failed = write_kib(path, avail_kib - keep_kib, &first);
    }
    if (statvfs(dir, &fs) == 0)
        printf("free_kib %llu\n", (unsigned long long)fs.f_bavail * fs.f_frsize >> 10);
    if (job_threads(n, file) != 0)
        return 1;
    int rfd = open(file, O_RDONLY);
    char c;
    for (long i = 0; rfd >= 0 && i < reads; i++)
        if (pread(rfd, &c, 1, 0) != 1)
            break;
    if (rfd >= 0)
        close(rfd);
    usleep(100000); /* the trace's passes have run (every 20 ms) */
    snprintf(path, sizeof path, "%s/out", dir);
    int failed = write_kib(path, write_kib_n, &first);
    printf("fill_failed %d\nwrite_failed %d\nerrno %d\n", fill_failed, failed, first);
    return 0;
}

static int job_reexec(const char *self, const char *file, long n)
{
    read_once(file);
    if (n <= 0) {
        printf("images done\n");
        return 0;
    }
    char left[32];
    snprintf(left, sizeof left, "%ld", n - 1);
    execl(self, self, "reexec", file, left, (char *)NULL);
    printf("exec_failed %d\n", errno);
    return 1;
}

static int job_forker(int n, const char *file)
{
    read_once(file);
    int ready[2], release[2];
    if (pipe(ready) != 0 || pipe(release) != 0)
        return 1;
    int failed = 0, forked = 0;
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            failed++;
            continue;
        }
        if (pid == 0) {
            close(ready[0]);
            close(release[1]);
            int ok = read_once(file) == 0;
            char c = ok ? 'y' : 'n';
            if (write(ready[1], &c, 1) != 1)
                _exit(2);
            while (read(release[0], &c, 1) > 0) /* until the parent lets go */
                ;
            _exit(ok ? 0 : 1);
        }
        forked++;
        char c;
        if (read(ready[0], &c, 1) != 1) /* this worker has read: its recorder is up */
            return 1;
    }
    close(release[1]);
    int good = 0, st;
    for (int i = 0; i < forked; i++)
        if (wait(&st) > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0)
            good++;
    printf("forks_failed %d\nworkers_ok %d\n", failed, good);
    return 0;
}

static int job_aslimit(long mb, int n, const char *file)
{
    if (mb > 0) {
        struct rlimit rl = {(rlim_t)mb << 20, (rlim_t)mb << 20};
        if (setrlimit(RLIMIT_AS, &rl) != 0)
            return 1;
    }
    for (int i = 0; i < n; i++)
        read_once(file);
    long got = 0;
    while (malloc(1 << 20) != NULL) /* kept: the point is to run out */
        got++;
    printf("malloc_mib %ld\n", got);
    return 0;
}

#define CLONE_STACK (256 * 1024)

struct clonevm {
    int fd, n;
    _Atomic int go;
    long done;
};

static int clonevm_child(void *arg)
{
    struct clonevm *c = arg;
    char b;
    while (!atomic_load(&c->go))
        ;
    long n = 0;
    for (int i = 0; i < c->n; i++)
        n += pread(c->fd, &b, 1, 0) == 1;
    c->done = n;
    return 0;
}

static int job_clonevm(int n, const char *file)
{
    struct clonevm c = {open(file, O_RDONLY), n, 0, 0};
    char b;
    if (c.fd < 0 || pread(c.fd, &b, 1, 0) != 1) /* the trace is open before the child exists */
        return 1;
    char *stack = mmap(NULL, CLONE_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (stack == MAP_FAILED)
        return 1;
    pid_t pid = clone(clonevm_child, stack + CLONE_STACK, CLONE_VM | CLONE_FS | CLONE_FILES | SIGCHLD, &c);
    if (pid < 0)
        return 1;
    atomic_store(&c.go, 1);
    long mine = 0;
    for (int i = 0; i < n; i++)
        mine += pread(c.fd, &b, 1, 0) == 1;
    int st;
    if (waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return 1;
    printf("parent_reads %ld\nchild_reads %ld\n", mine, c.done);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "clonevm") == 0) return job_clonevm(atoi(argv[2]), argv[3]);
    if (argc >= 5 && strcmp(argv[1], "aslimit") == 0) return job_aslimit(atol(argv[2]), atoi(argv[3]), argv[4]);
    if (argc >= 4 && strcmp(argv[1], "forker") == 0) return job_forker(atoi(argv[2]), argv[3]);
    if (argc >= 6 && strcmp(argv[1], "fillwrite") == 0)
        return job_fillwrite(argv[2], argv[3], atoi(argv[4]), atof(argv[5]));
    if (argc >= 5 && strcmp(argv[1], "idle") == 0) return job_idle(argv[2], atof(argv[3]), atoi(argv[4]));
    if (argc >= 8 && strcmp(argv[1], "growfill") == 0)
        return job_growfill(argv[2], argv[3], atol(argv[4]), atoi(argv[5]), atol(argv[6]), atol(argv[7]));
    if (argc >= 4 && strcmp(argv[1], "reexec") == 0) return job_reexec(argv[0], argv[2], atol(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "vfork") == 0) return job_vfork(argv[2]);
    if (argc >= 5 && strcmp(argv[1], "spawntime") == 0)
        return job_spawntime(argv[2], atol(argv[3]), atoi(argv[4]));
    if (argc >= 5 && strcmp(argv[1], "bigenv") == 0)
        return job_bigenv(argv[0], argv[2], atoi(argv[3]), atoi(argv[4]));
    if (argc >= 3 && strcmp(argv[1], "envcount") == 0) return job_envcount(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "notsc") == 0) return job_notsc(argv[2], argv[3]);
    if (argc >= 3 && strcmp(argv[1], "pipes") == 0) return job_pipes(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "lowest") == 0) return job_lowest(argv[2], atof(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "rlimit") == 0) return job_rlimit(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "sigexit") == 0)
        return job_sigexit(argv[2], (unsigned)atoi(argv[3]));
    if (argc >= 3 && strcmp(argv[1], "count") == 0) return job_count(argv[2]);
    if (argc >= 4 && strcmp(argv[1], "threads") == 0) return job_threads(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "touch") == 0) return job_touch(argv[2], atof(argv[3]));
    fprintf(stderr, "usage: attack_job pipes|lowest|rlimit|sigexit|count|threads|touch ...\n");
    return 2;
}
