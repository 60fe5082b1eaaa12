/*
 * io_story.c - small jobs that do what real training jobs do to their
 * process tree and their input, for the input-side tests to run under the
 * preload.  Each story prints what it did (pids, counts) as "key value"
 * lines so the driver can compare the trace against it.
 *
 *   threads T N FILE    T threads each read FILE N times, one byte a call
 *   waves W T N FILE    W waves, one after another, of T such threads
 *   reopen K FILE       opens FILE, reads one byte and closes it, K times
 *                       (a data loader's epochs over the same files)
 *   forkbusy K N FILE   threads keep reading while the main thread forks K
 *                       children; each child reads N times, then once more
 *                       through an fd its parent opened, and _exits
 *   exec N FILE PROG... read N times, then execve PROG with an environment
 *                       that has no LD_PRELOAD
 *   execfail N FILE PROG  reads N times, execs PROG (which must fail),
 *                       reads N more times
 *   cloneexec N FILE PROG  reads N times; a helper child made with
 *                       clone(CLONE_VM|CLONE_VFORK) execs PROG; another
 *                       such child _exits; N more reads after each
 *   spawn PROG ARGS...  posix_spawnp PROG with an environment that has no
 *                       LD_PRELOAD, waits for it
 *   exit N FILE         a child reads N times and leaves through _exit(3)
 *   sigterm N FILE      a child reads N times, then is killed by SIGTERM
 *   burn T S            T threads spin for S seconds; prints its CPU time
 *   control N FILE DIR  reads N times, writes "stop" to DIR/control, reads
 *                       N times, writes "start", reads N times
 *   stdfds N FILE OUT   a daemon's start: closes 0, 1 and 2, reads 2N times,
 *                       reopens 0, 1, 2 on /dev/null, reads N times and
 *                       reports to OUT which numbers it got
 *   closeall N FILE OUT HOW  reads N times, opens a few spare fds, closes
 *                       every fd above 2 as daemons do (HOW: close,
 *                       close_range or closefrom), prints how many are
 *                       left open, creates OUT and writes "hello" to it,
 *                       reads N more times, closes OUT
 *   vfork N FILE        a vfork'd child reads N times and _exits(4) (a real
 *                       vfork under the preload too: the child borrows the
 *                       parent's memory)
 *   timeout N FILE      puts a timeout on a read that never completes (an
 *                       empty pipe) the classic way, alarm() and a SIGALRM
 *                       handler that siglongjmps out of the read; then reads
 *                       FILE N times; twice, the second time from a deeper
 *                       function than the reads that follow
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <setjmp.h>
#include <spawn.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define BUSY_THREADS 8

extern char **environ;

static const char *g_file;
static int g_reads;
static atomic_int g_stop;

static int read_n_times(const char *file, int n)
{
    int fd = open(file, O_RDONLY);
    if (fd < 0) {
        perror(file);
        return -1;
    }
    char c;
    int ok = 0;
    for (int i = 0; i < n; i++)
        ok += read(fd, &c, 1) == 1;
    close(fd);
    return ok;
}

static void *reader_thread(void *arg)
{
    (void)arg;
    read_n_times(g_file, g_reads);
    return NULL;
}

static int story_threads(int nthreads, int n, const char *file)
{
    pthread_t th[MAX_THREADS];
    g_file = file;
    g_reads = n;
    if (nthreads > MAX_THREADS)
        return 2;
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, reader_thread, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    printf("reads %d\n", nthreads * n);
    return 0;
}

/* A pause between waves, as a thread pool that shrinks and grows has: the
 * recorder drops (and counts) rather than wait when its compressor is
 * starved, and a loaded test machine should not be mistaken for a bug. */
#define WAVE_PAUSE_US 100000

static int story_waves(int waves, int nthreads, int n, const char *file)
{
    for (int w = 0; w < waves; w++) {
        if (story_threads(nthreads, n, file) != 0)
            return 1;
        usleep(WAVE_PAUSE_US);
    }
    return 0;
}

static int story_reopen(int k, const char *file)
{
    int ok = 0;
    for (int i = 0; i < k; i++)
        ok += read_n_times(file, 1);
    printf("reads %d\n", ok);
    return ok != k;
}

static void *busy_thread(void *arg)
{
    (void)arg;
    while (!atomic_load(&g_stop))
        read_n_times(g_file, 16);
    return NULL;
}

static int story_forkbusy(int kids, int n, const char *file)
{
    pthread_t th[BUSY_THREADS];
    g_file = file;
    for (int i = 0; i < BUSY_THREADS; i++)
        pthread_create(&th[i], NULL, busy_thread, NULL);
    printf("parent %d\n", (int)getpid());
    int inherited = open(file, O_RDONLY);
    for (int k = 0; k < kids; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            char c;
            int ok = read_n_times(file, n) == n && pread(inherited, &c, 1, 0) == 1;
            _exit(ok ? 0 : 1);
        }
        printf("child %d\n", (int)pid);
    }
    int failed = 0;
    for (int k = 0; k < kids; k++) {
        int st;
        if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
            failed++;
    }
    atomic_store(&g_stop, 1);
    for (int i = 0; i < BUSY_THREADS; i++)
        pthread_join(th[i], NULL);
    printf("failed %d\n", failed);
    return failed != 0;
}

/* The environment minus LD_PRELOAD, as `env -u LD_PRELOAD` would pass. */
static char **environ_without_preload(void)
{
    int n = 0;
    while (environ[n])
        n++;
    char **env = calloc((size_t)n + 1, sizeof *env);
    int k = 0;
    for (int i = 0; i < n; i++)
        if (strncmp(environ[i], "LD_PRELOAD=", 11) != 0)
            env[k++] = environ[i];
    return env;
}

static int story_exec(int n, const char *file, char **prog)
{
    printf("reads %d\npid %d\n", read_n_times(file, n), (int)getpid());
    fflush(stdout);
    execve(prog[0], prog, environ_without_preload());
    perror(prog[0]);
    return 1;
}

static int story_execfail(int n, const char *file, const char *prog)
{
    int total = read_n_times(file, n);
    char *argv[] = {(char *)prog, NULL};
    int r = execv(prog, argv);
    int e = errno;
    total += read_n_times(file, n);
    printf("exec %d errno %d\nreads %d\npid %d\n", r, e, total, (int)getpid());
    return 0;
}

/* Spawn helpers' children share the parent's memory until they exec. */
#define HELPER_STACK (256 * 1024)

static const char *g_helper_prog;

static int helper_exec(void *arg)
{
    (void)arg;
    execl(g_helper_prog, g_helper_prog, (char *)NULL);
    _exit(127);
}

static int helper_exit(void *arg)
{
    (void)arg;
    _exit(5);
}

static int run_helper(int (*fn)(void *))
{
    static char stack[HELPER_STACK] __attribute__((aligned(16)));
    pid_t pid = clone(fn, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static int story_cloneexec(int n, const char *file, const char *prog)
{
    g_helper_prog = prog;
    int total = read_n_times(file, n);
    int a = run_helper(helper_exec);
    total += read_n_times(file, n);
    int b = run_helper(helper_exit);
    total += read_n_times(file, n);
    printf("exec_status %d\nexit_status %d\nreads %d\npid %d\n", a, b, total, (int)getpid());
    return 0;
}

/* Waits for the child and prints its pid and exit status (-1: it did not
 * exit), what the story's checks read. */
static int say_exit_status(pid_t pid)
{
    int st;
    waitpid(pid, &st, 0);
    printf("child %d\nstatus %d\n", (int)pid, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return 0;
}

static int story_spawn(char **prog)
{
    pid_t pid;
    int r = posix_spawnp(&pid, prog[0], NULL, NULL, prog, environ_without_preload());
    if (r != 0) {
        fprintf(stderr, "posix_spawnp: %s\n", strerror(r));
        return 1;
    }
    return say_exit_status(pid);
}

static int story_exit(int n, const char *file)
{
    pid_t pid = fork();
    if (pid == 0) {
        read_n_times(file, n);
        _exit(3);
    }
    return say_exit_status(pid);
}

static int story_sigterm(int n, const char *file)
{
    int ready[2];
    if (pipe(ready) != 0)
        return 1;
    pid_t pid = fork();
    if (pid == 0) {
        read_n_times(file, n);
        if (write(ready[1], "r", 1) != 1)
            _exit(1);
        for (;;)
            pause();
    }
    char c;
    if (read(ready[0], &c, 1) != 1)
        return 1;
    kill(pid, SIGTERM);
    int st;
    waitpid(pid, &st, 0);
    printf("child %d\nsignal %d\n", (int)pid, WIFSIGNALED(st) ? WTERMSIG(st) : 0);
    return 0;
}

static double seconds_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double g_burn_s;

static void *burn_thread(void *arg)
{
    (void)arg;
    volatile unsigned long x = 0;
    double end = seconds_now() + g_burn_s;
    while (seconds_now() < end)
        for (int i = 0; i < 100000; i++)
            x += (unsigned long)i;
    return (void *)(x & 0); /* read once: the sum is the work, not a result */
}

static int story_burn(int nthreads, double secs)
{
    pthread_t th[MAX_THREADS];
    g_burn_s = secs;
    if (nthreads > MAX_THREADS)
        return 2;
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, burn_thread, NULL);
    for (int i = 0; i < nthreads; i++)
        pthread_join(th[i], NULL);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("cpu_ns %lld\n", (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000000LL +
                                (long long)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1000LL);
    return 0;
}

static int write_control(const char *dir, const char *word)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/control", dir);
    FILE *fp = fopen(path, "w");
    if (!fp || fputs(word, fp) < 0 || fclose(fp) != 0) {
        perror(path);
        return -1;
    }
    return 0;
}

/* The sampler looks at the control file 10 times a second by default;
 * wait long enough for it to look, even on a loaded machine. */
#define CONTROL_SETTLE_US 800000

static int story_control(int n, const char *file, const char *dir)
{
    int total = read_n_times(file, n);
    if (write_control(dir, "stop\n") != 0)
        return 1;
    usleep(CONTROL_SETTLE_US);
    total += read_n_times(file, n);
    if (write_control(dir, "start\n") != 0)
        return 1;
    usleep(CONTROL_SETTLE_US);
    total += read_n_times(file, n);
    printf("reads %d\n", total);
    return 0;
}

static int story_stdfds(int n, const char *file, const char *out)
{
    close(0);
    close(1);
    close(2);
    int total = read_n_times(file, n);
    total += read_n_times(file, n);
    int a = open("/dev/null", O_RDONLY), b = open("/dev/null", O_WRONLY), c = open("/dev/null", O_WRONLY);
    total += read_n_times(file, n);
    FILE *fp = fopen(out, "w");
    if (!fp)
        return 1;
    fprintf(fp, "fds %d %d %d\nreads %d\n", a, b, c, total);
    return fclose(fp) != 0;
}

#define CLOSEALL_MAX_FD 1024

/* Open fds above 2 (the recorder's own trace is one of them, when traced). */
static int open_fds_above_2(void)
{
    int n = 0;
    for (int fd = 3; fd < CLOSEALL_MAX_FD; fd++)
        n += fcntl(fd, F_GETFD) != -1;
    return n;
}

#define CLOSEALL_SPARES 3

static int story_closeall(int n, const char *file, const char *out, const char *how)
{
    int total = read_n_times(file, n);
    for (int i = 0; i < CLOSEALL_SPARES; i++) /* fds a daemon means to close */
        if (open("/dev/null", O_RDONLY) < 0)
            return 1;
    if (strcmp(how, "close_range") == 0) {
        if (close_range(3, ~0U, 0) != 0)
            return 1;
    } else if (strcmp(how, "closefrom") == 0) {
        closefrom(3);
    } else {
        for (int fd = 3; fd < CLOSEALL_MAX_FD; fd++)
            close(fd);
    }
    printf("left_open %d\n", open_fds_above_2());
    int o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (o < 0 || write(o, "hello", 5) != 5)
        return 1;
    total += read_n_times(file, n);
    close(o);
    printf("reads %d\n", total);
    return 0;
}

static int story_vfork(int n, const char *file)
{
    /* More than POSIX allows a vfork child (exec or _exit), but what
     * spawn helpers do between the two: system calls on the parent's
     * memory.  The recorder must record none of it as the parent's. */
    pid_t pid = vfork();
    if (pid == 0) {
        read_n_times(file, n);
        _exit(4);
    }
    return say_exit_status(pid);
}

static sigjmp_buf g_timeout_jump;

static void on_alarm(int sig)
{
    (void)sig;
    siglongjmp(g_timeout_jump, 1);
}

/* read() on an empty pipe, abandoned by siglongjmp when the alarm rings.
 * Returns 1 when the read was jumped out of. */
static int read_with_timeout(int fd)
{
    char c;
    if (sigsetjmp(g_timeout_jump, 1) == 0) {
        alarm(1);
        (void)read(fd, &c, 1); /* nobody writes: only the alarm ends it */
        alarm(0);
        return 0;
    }
    return 1;
}

/* The same, one call deeper: the later reads come from a shallower frame. */
static __attribute__((noinline)) int read_with_timeout_deeper(int fd)
{
    volatile char pad[256];
    pad[0] = 0;
    return read_with_timeout(fd) + pad[0];
}

static int story_timeout(int n, const char *file)
{
    int p[2];
    if (pipe(p) != 0)
        return 1;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGALRM, &sa, NULL) != 0)
        return 1;
    int jumped = read_with_timeout(p[0]);
    int total = read_n_times(file, n);
    jumped += read_with_timeout_deeper(p[0]);
    total += read_n_times(file, n);
    printf("jumped %d\nreads %d\n", jumped, total);
    return 0;
}

/* checkpoint DIR MB: a training loop's checkpoint, written four ways and
 * flushed two: write + fsync, pwrite + fdatasync, writev, fwrite (each MB
 * MiB); then a write that fails (a read-only fd), whose errno must stay. */
static int checkpoint(const char *dir, long mb)
{
    size_t n = (size_t)mb << 20;
    char *buf = malloc(n), path[4096];
    if (!buf)
        return 1;
    memset(buf, 'c', n);
    snprintf(path, sizeof path, "%s/ckpt.bin", dir);
    int fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
    if (fd < 0 || write(fd, buf, n) != (ssize_t)n || fsync(fd) != 0 ||
        pwrite(fd, buf, n, (off_t)n) != (ssize_t)n || fdatasync(fd) != 0)
        return 1;
    struct iovec iov[2] = {{buf, n / 2}, {buf + n / 2, n - n / 2}};
    if (writev(fd, iov, 2) != (ssize_t)n || close(fd) != 0)
        return 1;
    FILE *fp = fopen(path, "ab");
    if (!fp || fwrite(buf, 1, n, fp) != n || fclose(fp) != 0)
        return 1;
    int ro = open(path, O_RDONLY);
    errno = 0;
    ssize_t r = write(ro, buf, 1);
    int e = errno;
    printf("failed_write %zd\nerrno %d\n", r, e);
    close(ro);
    free(buf);
    return 0;
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc >= 5 && strcmp(argv[1], "threads") == 0)
        return story_threads(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc >= 4 && strcmp(argv[1], "reopen") == 0)
        return story_reopen(atoi(argv[2]), argv[3]);
    if (argc >= 6 && strcmp(argv[1], "waves") == 0)
        return story_waves(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), argv[5]);
    if (argc >= 5 && strcmp(argv[1], "forkbusy") == 0)
        return story_forkbusy(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc >= 5 && strcmp(argv[1], "exec") == 0)
        return story_exec(atoi(argv[2]), argv[3], argv + 4);
    if (argc >= 5 && strcmp(argv[1], "execfail") == 0)
        return story_execfail(atoi(argv[2]), argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "cloneexec") == 0)
        return story_cloneexec(atoi(argv[2]), argv[3], argv[4]);
    if (argc >= 3 && strcmp(argv[1], "spawn") == 0)
        return story_spawn(argv + 2);
    if (argc >= 4 && strcmp(argv[1], "exit") == 0)
        return story_exit(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "sigterm") == 0)
        return story_sigterm(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "burn") == 0)
        return story_burn(atoi(argv[2]), atof(argv[3]));
    if (argc >= 5 && strcmp(argv[1], "control") == 0)
        return story_control(atoi(argv[2]), argv[3], argv[4]);
    if (argc >= 5 && strcmp(argv[1], "stdfds") == 0)
        return story_stdfds(atoi(argv[2]), argv[3], argv[4]);
    if (argc >= 6 && strcmp(argv[1], "closeall") == 0)
        return story_closeall(atoi(argv[2]), argv[3], argv[4], argv[5]);
    if (argc >= 4 && strcmp(argv[1], "vfork") == 0)
        return story_vfork(atoi(argv[2]), argv[3]);
    if (argc >= 4 && strcmp(argv[1], "checkpoint") == 0)
        return checkpoint(argv[2], atol(argv[3]));
    if (argc >= 4 && strcmp(argv[1], "timeout") == 0)
        return story_timeout(atoi(argv[2]), argv[3]);
    fprintf(stderr, "usage: io_story checkpoint|timeout|threads|waves|reopen|forkbusy|exec|execfail|cloneexec|spawn|exit|sigterm|burn|control|stdfds|closeall ...\n");
    return 2;
}
