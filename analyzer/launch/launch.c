/*
 * launch.c - the launcher of `scaleprof run`: a job started with the
 * recorder attached, its ranks waited for, and what to run next.
 *
 * The recorder needs only environment variables, so this is a small
 * launcher: LD_PRELOAD gets libscaleprof.so prepended (found beside this
 * binary: <bindir>/../preload in a build tree, <bindir>/../lib* installed,
 * or --preload), SCALEPROF_DIR names the output, and the CUDA and NVTX
 * injection variables point at the same library so CUPTI and header-only
 * NVTX attach in every process of the tree without code changes (setting
 * them here, before any thread exists, is the safe place).
 *
 * With nproc N it starts N copies with the variables torchrun sets
 * (RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR,
 * MASTER_PORT) and a private rendezvous directory (SCALEPROF_RENDEZVOUS).
 * With sim it puts the stand-in CUDA libraries first on LD_LIBRARY_PATH
 * (and names the rendezvous for them too); it is the only thing the
 * launcher knows about them.  nnodes M (with sim) gives each node's ranks
 * their own hostname through `unshare --uts`, which needs root.  With a
 * node_rank R it starts node R's ranks of a job of M nodes (RANK R x P + i),
 * one such launcher per real node, as torchrun runs on each.
 *
 * It forwards SIGINT and SIGTERM to every process and returns the worst
 * status: the highest exit code, or 128+signal.  As torchrun does, a rank
 * that fails (a non-zero exit, or a signal) while others still run stops
 * them: SIGTERM, then SIGKILL after STOP_GRACE_S, since the others would
 * otherwise wait in their next collective for ever.  A rank ended by that
 * signal does not count towards the status; the traces of every rank are
 * kept (the recorder loses nothing to a kill), so `scaleprof hang` can
 * still say where each stood.  keep_going waits for every rank instead.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ended.h"
#include "launch.h"
#include "model.h"
#include "seen.h"

#define EXIT_LAUNCH SP_LAUNCH_NOT_STARTED
#define SIGNAL_EXIT_BASE 128
#define STOP_GRACE_S 10
#define STOP_POLL_NS 20000000L

static volatile pid_t children[SP_LAUNCH_MAX_PROCS];
static volatile int nchildren;

/* ---- the ranks ------------------------------------------------------------------- */

int sp_launch_settle(struct sp_launch_opts *o)
{
    if (o->per_node && o->nproc) {
        fprintf(stderr, "scaleprof run: --nproc (all ranks) and --nproc_per_node (ranks per node) say "
                        "the same thing two ways: give one of them\n");
        return -1;
    }
    if (o->node_rank >= 0 && o->node_rank >= o->nnodes) {
        fprintf(stderr, "scaleprof run: --node_rank %d: the nodes are 0..%d (--nnodes %d)\n", o->node_rank,
                o->nnodes - 1, o->nnodes);
        return -1;
    }
    if (o->node_rank >= 0) { /* one real node: its ranks only, no simulated hostnames */
        o->nproc = o->per_node ? o->per_node : (o->nproc ? o->nproc : 1);
        o->world = o->nproc * o->nnodes;
    } else if (o->per_node) {
        o->nproc = o->per_node * o->nnodes;
    }
    if (!o->cmd[0]) {
        fprintf(stderr, "scaleprof run: no command given (put it after --)\n");
        return -1;
    }
    if (o->nproc < 0 || o->nproc > SP_LAUNCH_MAX_PROCS || o->nnodes < 1) {
        fprintf(stderr, "scaleprof run: --nproc must be 1..%d and --nnodes at least 1\n", SP_LAUNCH_MAX_PROCS);
        return -1;
    }
    if (o->nnodes > 1 && o->node_rank < 0) {
        if (!o->sim || o->nproc % o->nnodes) {
            fprintf(stderr, "scaleprof run: --nnodes needs --sim and --nproc divisible by it\n");
            return -1;
        }
        if (geteuid() != 0) {
            fprintf(stderr, "scaleprof run: --nnodes gives each simulated node its own hostname "
                            "with unshare --uts, which needs root: run as root or drop --nnodes\n");
            return -1;
        }
    }
    if (o->nnodes > 1 && o->nproc == 0)
        o->nproc = o->nnodes;
    if (o->node_rank < 0)
        o->world = o->nproc;
    return 0;
}

/* ---- finding our libraries ---------------------------------------------------- */

static int bindir(char *out, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", out, len - 1);
    if (n <= 0)
        return 0;
    out[n] = 0;
    char *slash = strrchr(out, '/');
    if (!slash)
        return 0;
    *slash = 0;
    return 1;
}

static int first_existing(const char *bin, const char *const *rel, size_t n, char *out, size_t len)
{
    for (size_t i = 0; i < n; i++) {
        char path[PATH_MAX * 2];
        snprintf(path, sizeof path, "%s/%s", bin, rel[i]);
        if (access(path, R_OK) == 0 && realpath(path, out)) {
            (void)len;
            return 1;
        }
    }
    return 0;
}

static int find_preload(char *out, size_t len)
{
    // clang-format off
    static const char *const rel[] = {
        "../preload/libscaleprof.so",  "../lib/libscaleprof.so",
        "../lib64/libscaleprof.so",    "../lib/x86_64-linux-gnu/libscaleprof.so",
        "../lib/aarch64-linux-gnu/libscaleprof.so",
    };
    // clang-format on
    char bin[PATH_MAX];
    if (bindir(bin, sizeof bin) && first_existing(bin, rel, 1, out, len))
        return 1; /* a build tree: its own library, never an installed one */
    /* Installed: exactly where meson installed the library. */
    if (access(SCALEPROF_LIBDIR "/libscaleprof.so", R_OK) == 0 &&
        realpath(SCALEPROF_LIBDIR "/libscaleprof.so", out))
        return 1;
    return bindir(bin, sizeof bin) && first_existing(bin, rel, sizeof rel / sizeof *rel, out, len);
}

static int find_sim_dir(char *out, size_t len)
{
    const char *env = getenv("SCALEPROF_SIM_DIR");
    if (env && *env)
        return realpath(env, out) != NULL;
    static const char *const rel[] = {"../sim"};
    char bin[PATH_MAX];
    return bindir(bin, sizeof bin) && first_existing(bin, rel, 1, out, len);
}

/* ---- environment -------------------------------------------------------------- */

static void prepend_env(const char *name, const char *value, char sep)
{
    const char *old = getenv(name);
    if (!old || !*old) {
        setenv(name, value, 1);
        return;
    }
    size_t n = strlen(value) + strlen(old) + 2;
    char *v = malloc(n);
    if (!v)
        return;
    snprintf(v, n, "%s%c%s", value, sep, old);
    setenv(name, v, 1);
    free(v);
}

static void setenv_int(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

/* mkdir -p */
static int make_dirs(const char *dir)
{
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s", dir) >= (int)sizeof path) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int make_output_dir(const char *dir, char *abs, size_t len)
{
    (void)len;
    if (make_dirs(dir) != 0) {
        fprintf(stderr, "scaleprof run: cannot create %s: %s\n", dir, strerror(errno));
        return 0;
    }
    if (!realpath(dir, abs)) {
        fprintf(stderr, "scaleprof run: %s: %s\n", dir, strerror(errno));
        return 0;
    }
    return 1;
}

/* Everything every process shares. */
static int set_common_env(const struct sp_launch_opts *o, char *outdir, size_t outlen, char *rdv,
                          size_t rdvlen)
{
    char lib[PATH_MAX];
    if (o->preload) {
        if (!realpath(o->preload, lib)) {
            fprintf(stderr, "scaleprof run: --preload %s: %s\n", o->preload, strerror(errno));
            return 0;
        }
    } else if (!find_preload(lib, sizeof lib)) {
        fprintf(stderr, "scaleprof run: libscaleprof.so not found beside this scaleprof; "
                        "name it with --preload\n");
        return 0;
    }
    if (!make_output_dir(o->dir, outdir, outlen))
        return 0;
    prepend_env("LD_PRELOAD", lib, ':');
    setenv("SCALEPROF_DIR", outdir, 1);
    /* every process of this run writes the same identity into its trace */
    char run[64], host[64] = "";
    gethostname(host, sizeof host - 1);
    snprintf(run, sizeof run, "%s-%d-%lld", host[0] ? host : "host", (int)getpid(), (long long)time(NULL));
    setenv("SCALEPROF_RUN_ID", run, 1);
    setenv("CUDA_INJECTION64_PATH", lib, 0);
    setenv("NVTX_INJECTION64_PATH", lib, 0);
    if (o->sim) {
        char sim[PATH_MAX];
        if (!find_sim_dir(sim, sizeof sim)) {
            fprintf(stderr, "scaleprof run: --sim: the stand-in libraries were not found "
                            "(build tree sim/, or set SCALEPROF_SIM_DIR)\n");
            return 0;
        }
        prepend_env("LD_LIBRARY_PATH", sim, ':');
    }
    rdv[0] = 0;
    if (o->nproc > 0) {
        snprintf(rdv, rdvlen, "%s/scaleprof-rendezvous-XXXXXX",
                 getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
        if (!mkdtemp(rdv)) {
            fprintf(stderr, "scaleprof run: rendezvous directory: %s\n", strerror(errno));
            return 0;
        }
        setenv("SCALEPROF_RENDEZVOUS", rdv, 1);
        if (o->sim)
            setenv("SIM_RENDEZVOUS", rdv, 1);
        setenv_int("WORLD_SIZE", o->world);
        setenv("MASTER_ADDR", o->master_addr ? o->master_addr : "127.0.0.1", o->master_addr != NULL);
        setenv("MASTER_PORT", o->master_port, 1);
    }
    return 1;
}

static void remove_flat_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    char path[PATH_MAX * 2];
    while ((e = readdir(d)))
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    closedir(d);
    rmdir(dir);
}

/* ---- starting and waiting ------------------------------------------------------ */

/* Each rank leads a process group of its own (as torchrun's workers do),
 * so a signal reaches what the rank started too (a shell's children). */
static void forward_signal(int sig)
{
    for (int i = 0; i < nchildren; i++)
        if (children[i] > 0)
            kill(-children[i], sig);
}

static volatile sig_atomic_t interrupted; /* the launcher got SIGINT or SIGTERM */

static void on_signal(int sig)
{
    interrupted = sig;
    forward_signal(sig);
}

/* In the child: rank variables, then the command (under its own hostname
 * for a simulated node). */
static void exec_rank(const struct sp_launch_opts *o, int rank)
{
    if (o->nproc > 0 && o->node_rank >= 0) { /* one real node of several */
        setenv_int("RANK", o->node_rank * o->nproc + rank);
        setenv_int("LOCAL_RANK", rank);
        setenv_int("LOCAL_WORLD_SIZE", o->nproc);
        setenv_int("GROUP_RANK", o->node_rank);
        setenv_int("NODE_RANK", o->node_rank);
    } else if (o->nproc > 0) {
        int per_node = o->nproc / o->nnodes;
        setenv_int("RANK", rank);
        setenv_int("LOCAL_RANK", rank % per_node);
        setenv_int("LOCAL_WORLD_SIZE", per_node);
        setenv_int("GROUP_RANK", rank / per_node);
        setenv_int("NODE_RANK", rank / per_node);
    }
    if (o->nnodes > 1 && o->node_rank < 0) {
        char host[64];
        snprintf(host, sizeof host, "node%d", rank / (o->nproc / o->nnodes));
        int n = 0;
        while (o->cmd[n])
            n++;
        char **argv = calloc((size_t)n + 8, sizeof *argv);
        if (!argv)
            _exit(EXIT_LAUNCH);
        int a = 0;
        argv[a++] = "unshare";
        argv[a++] = "--uts";
        argv[a++] = "sh";
        argv[a++] = "-c";
        /* the recorder attaches to the job, not to unshare, sh or hostname */
        argv[a++] = "hostname \"$0\" && LD_PRELOAD=\"$SCALEPROF_RUN_PRELOAD\" && "
                    "unset SCALEPROF_RUN_PRELOAD && export LD_PRELOAD && exec \"$@\"";
        argv[a++] = host;
        for (int i = 0; i < n; i++)
            argv[a++] = o->cmd[i];
        const char *preload = getenv("LD_PRELOAD");
        setenv("SCALEPROF_RUN_PRELOAD", preload ? preload : "", 1);
        unsetenv("LD_PRELOAD");
        execvp("unshare", argv);
        fprintf(stderr, "scaleprof run: unshare: %s\n", strerror(errno));
        _exit(EXIT_LAUNCH);
    }
    execvp(o->cmd[0], o->cmd);
    fprintf(stderr, "scaleprof run: %s: %s\n", o->cmd[0], strerror(errno));
    _exit(EXIT_LAUNCH);
}

static int status_code(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return SIGNAL_EXIT_BASE + WTERMSIG(st);
    return EXIT_LAUNCH;
}

/* The rank number of the i-th process started here; -1 without ranks. */
static int rank_of(const struct sp_launch_opts *o, int i)
{
    if (o->nproc <= 0)
        return -1;
    return o->node_rank >= 0 ? o->node_rank * o->nproc + i : i;
}

/* "exited with status 3", "was killed by signal 11 (SIGSEGV)". */
static void ended_text(int st, char *out, size_t len)
{
    char name[32];
    if (WIFSIGNALED(st))
        snprintf(out, len, "was killed by signal %d (%s)", WTERMSIG(st), sp_signal_name(WTERMSIG(st), name, sizeof name));
    else
        snprintf(out, len, "exited with status %d", status_code(st));
}

static int launch_and_wait(const struct sp_launch_opts *o, const char *outdir, int *any_failed)
{
    struct sigaction sa = {0};
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int n = o->nproc > 0 ? o->nproc : 1;
    int worst = 0;
    for (int r = 0; r < n; r++) {
        pid_t pid = fork();
        if (pid == 0) {
            setpgid(0, 0);
            signal(SIGINT, SIG_DFL);
            signal(SIGTERM, SIG_DFL);
            /* a launcher killed outright (SIGKILL) takes its ranks along */
            prctl(PR_SET_PDEATHSIG, SIGTERM);
            exec_rank(o, r);
        }
        if (pid < 0) {
            fprintf(stderr, "scaleprof run: fork: %s\n", strerror(errno));
            forward_signal(SIGTERM);
            worst = EXIT_LAUNCH;
            break;
        }
        setpgid(pid, pid); /* also here: no signal may find it not yet moved */
        children[nchildren++] = pid;
    }
    int failed = -1; /* the first rank that failed */
    time_t stop_at = 0;
    for (int left = nchildren; left > 0;) {
        int st;
        pid_t pid = waitpid(-1, &st, stop_at ? WNOHANG : 0);
        if (pid == 0) { /* stopping: the others get STOP_GRACE_S to leave */
            if (time(NULL) >= stop_at + STOP_GRACE_S) {
                forward_signal(SIGKILL);
                stop_at = time(NULL) + 3600; /* once */
            }
            struct timespec ts = {0, STOP_POLL_NS};
            nanosleep(&ts, NULL);
            continue;
        }
        if (pid < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < nchildren; i++)
            if (children[i] == pid) {
                children[i] = 0;
                left--;
                int code = status_code(st);
                /* a rank we stopped does not count: its status is our signal */
                int ours = stop_at && WIFSIGNALED(st) &&
                           (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL);
                if (code > worst && !ours)
                    worst = code;
                /* how each ended, for report and hang (ended.h) */
                sp_ended_record(outdir, rank_of(o, i), (int)pid, st, ours);
                if (code && !ours && !interrupted)
                    *any_failed = 1;
                if (code && failed < 0 && !interrupted) {
                    failed = i;
                    if (!o->keep_going && left > 0) {
                        char how[64];
                        ended_text(st, how, sizeof how);
                        fprintf(stderr,
                                "scaleprof run: rank %d %s: stopping the %d other "
                                "rank%s (SIGTERM, then SIGKILL after %d s; --keep-going to let them "
                                "run)\n",
                                rank_of(o, i) >= 0 ? rank_of(o, i) : i, how, left,
                                left == 1 ? "" : "s", STOP_GRACE_S);
                        kill(-pid, SIGTERM); /* what the failed rank left behind */
                        forward_signal(SIGTERM);
                        stop_at = time(NULL);
                    }
                }
            }
    }
    return worst;
}

int sp_launch_run(const struct sp_launch_opts *o, char *outdir, size_t len, int *failed)
{
    char rdv[PATH_MAX];
    if (!set_common_env(o, outdir, len, rdv, sizeof rdv))
        return -1;
    int worst = launch_and_wait(o, outdir, failed);
    if (rdv[0])
        remove_flat_dir(rdv);
    return worst;
}

/* ---- after ------------------------------------------------------------------------ */

static int traces_under(const char *dir, int depth)
{
    DIR *d = depth < 4 ? opendir(dir) : NULL;
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        size_t l = strlen(e->d_name);
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        struct stat st;
        if (lstat(path, &st) != 0)
            continue;
        if (S_ISDIR(st.st_mode))
            n += traces_under(path, depth + 1);
        else if (l > 6 && !strcmp(e->d_name + l - 6, ".sprof"))
            n++;
    }
    closedir(d);
    return n;
}

int sp_launch_traces_in(const char *dir) { return traces_under(dir, 0); }

static void ended_line(const char *text, void *arg)
{
    (void)arg;
    fprintf(stderr, "scaleprof run: %s\n", text);
}

void sp_launch_next_step(const char *outdir, int failed)
{
    struct sp_model_opts mo;
    struct sp_model m;
    sp_model_opts_default(&mo);
    int rc = sp_model_open(outdir, &mo, &m);
    struct sp_ended_set ended;
    if (failed && rc == 0 && sp_ended_analyze(&m, &ended) == 0) {
        sp_ended_text(&ended, ended_line, NULL);
        sp_ended_free(&ended);
    }
    int none = rc == 0 ? sp_seen_no_gpu("run", &m, "report shows the host-side view only; compare and html "
                                                   "need GPU activity")
                       : m.nfrecs > 0 && !sp_seen_gpu(&m);
    for (int i = 0; rc != 0 && none && i < m.nwarnings; i++) /* what the model could not analyze, and why */
        fprintf(stderr, "scaleprof run: %s\n", m.warnings[i]);
    if (none && rc == 0)
        fprintf(stderr, "scaleprof: next: scaleprof report %s (host side: iterations, input wait, loader "
                        "workers, reads), scaleprof export %s -o timeline.pftrace (the host's timeline)\n",
                outdir, outdir);
    else if (none) /* no rank either: nothing to put on a timeline, the events are still there */
        fprintf(stderr, "scaleprof: next: scaleprof dump %s (its events)\n", m.frecs[0].path);
    else
        fprintf(stderr, "scaleprof: next: scaleprof report %s\n", outdir);
    sp_model_free(&m);
}
