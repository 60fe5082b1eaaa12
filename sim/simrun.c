/*
 * simrun: start N ranks of a command the way torchrun does, on the simulator.
 *
 *   simrun --nproc N [--nodes M] [--truth DIR] -- CMD ARGS...
 *
 * Each rank gets RANK, LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, NODE_RANK,
 * MASTER_ADDR=127.0.0.1, MASTER_PORT and SIM_RENDEZVOUS (a fresh directory
 * where the ranks exchange what they need, e.g. the ncclUniqueId), and finds
 * the simulated libraries first on LD_LIBRARY_PATH (the directory simrun
 * lives in); --truth DIR (created if missing) sets SIM_TRUTH.  With --nodes M > 1 each node's ranks run in their own UTS
 * namespace with host name node<k>, so the simulator sees M hosts; that
 * needs root (CAP_SYS_ADMIN).  simrun waits for all ranks; when one fails
 * the others are terminated, as torchrun does, and the worst exit status
 * is simrun's (128 + signal for a rank killed by a signal).
 */
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SIM_EXIT_USAGE 2
#define SIM_EXIT_SETUP 1
#define SIM_RMDIR_FDS 8 /* descriptors nftw may hold open (the directory is flat) */

struct sim_args {
    int nproc, nodes;
    const char *truth;
    char **cmd;
};

static void sim_usage(void)
{
    fprintf(stderr, "usage: simrun --nproc N [--nodes M] [--truth DIR] -- CMD ARGS...\n");
    exit(SIM_EXIT_USAGE);
}

static int sim_parse_int(const char *s)
{
    char *end;
    long v = strtol(s ? s : "", &end, 10);
    if (!s || *end || v < 1 || v > 4096)
        sim_usage();
    return (int)v;
}

static struct sim_args sim_parse(int argc, char **argv)
{
    struct sim_args a = {.nproc = 1, .nodes = 1};
    int i = 1;
    for (; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--nproc") || !strcmp(argv[i], "--nproc-per-node")) {
            a.nproc = sim_parse_int(argv[++i < argc ? i : 0]);
        } else if (!strcmp(argv[i], "--nodes")) {
            a.nodes = sim_parse_int(argv[++i < argc ? i : 0]);
        } else if (!strcmp(argv[i], "--truth") && i + 1 < argc) {
            a.truth = argv[++i];
        } else {
            sim_usage();
        }
    }
    if (i >= argc)
        sim_usage();
    a.cmd = argv + i;
    if (a.nproc % a.nodes) {
        fprintf(stderr, "simrun: --nproc %d is not a multiple of --nodes %d\n", a.nproc, a.nodes);
        exit(SIM_EXIT_USAGE);
    }
    return a;
}

static void sim_setenv_int(const char *name, int v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%d", v);
    setenv(name, buf, 1);
}

/* Prepends the directory holding simrun (and the libraries) to LD_LIBRARY_PATH. */
static void sim_set_library_path(void)
{
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash)
        *slash = '\0';
    const char *old = getenv("LD_LIBRARY_PATH");
    size_t len = strlen(exe) + (old ? strlen(old) : 0) + 2;
    char *path = malloc(len);
    if (!path)
        return;
    snprintf(path, len, "%s%s%s", exe, old && *old ? ":" : "", old && *old ? old : "");
    setenv("LD_LIBRARY_PATH", path, 1);
    free(path);
}

/* In the child: become a rank of node NODE and exec the command. */
static void sim_exec_rank(const struct sim_args *a, int rank, const char *rdv)
{
    int per_node = a->nproc / a->nodes, node = rank / per_node;
    if (a->nodes > 1) {
        char host[32];
        snprintf(host, sizeof host, "node%d", node);
        if (unshare(CLONE_NEWUTS) != 0 || sethostname(host, strlen(host)) != 0) {
            fprintf(stderr, "simrun: --nodes needs separate UTS namespaces (unshare --uts), "
                            "which requires root or CAP_SYS_ADMIN: %s\n",
                    strerror(errno));
            _exit(SIM_EXIT_SETUP);
        }
    }
    sim_setenv_int("RANK", rank);
    sim_setenv_int("LOCAL_RANK", rank % per_node);
    sim_setenv_int("WORLD_SIZE", a->nproc);
    sim_setenv_int("LOCAL_WORLD_SIZE", per_node);
    sim_setenv_int("NODE_RANK", node);
    sim_setenv_int("GROUP_RANK", node);
    setenv("MASTER_ADDR", "127.0.0.1", 1);
    setenv("MASTER_PORT", "29500", 1);
    setenv("SIM_RENDEZVOUS", rdv, 1);
    if (a->truth)
        setenv("SIM_TRUTH", a->truth, 1);
    execvp(a->cmd[0], a->cmd);
    fprintf(stderr, "simrun: cannot run %s: %s\n", a->cmd[0], strerror(errno));
    _exit(127);
}

/* nftw's callback: removes what it is given, deepest first. */
static int sim_remove_entry(const char *path, const struct stat *st, int flag, struct FTW *at)
{
    (void)st, (void)flag, (void)at;
    return remove(path);
}

/* Waits for the children (pids, 0 for one that did not start) until none
 * is left; terminates the rest on the first failure. */
static int sim_wait_all(pid_t *pids, int n)
{
    int worst = 0, status;
    pid_t pid;
    while ((pid = wait(&status)) > 0 || errno == EINTR) {
        if (pid < 0)
            continue;
        /* as a shell says it: the exit status, or 128 + the signal */
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : (WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1);
        for (int i = 0; i < n; i++) {
            if (pids[i] == pid)
                pids[i] = 0;
            else if (pids[i] && code && !worst)
                kill(pids[i], SIGTERM);
        }
        if (code > worst)
            worst = code;
    }
    return worst;
}

int main(int argc, char **argv)
{
    struct sim_args a = sim_parse(argc, argv);
    if (a.nodes > 1 && geteuid() != 0) {
        fprintf(stderr, "simrun: --nodes %d needs root: each node runs in its own UTS namespace "
                        "(unshare --uts) to get its own host name\n",
                a.nodes);
        return SIM_EXIT_SETUP;
    }
    char rdv[] = "/tmp/simrun-XXXXXX";
    if (!mkdtemp(rdv)) {
        perror("simrun: mkdtemp");
        return SIM_EXIT_SETUP;
    }
    if (a.truth && mkdir(a.truth, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "simrun: cannot create %s: %s\n", a.truth, strerror(errno));
        return SIM_EXIT_SETUP;
    }
    sim_set_library_path();
    pid_t *pids = calloc((size_t)a.nproc, sizeof *pids);
    if (!pids)
        return SIM_EXIT_SETUP;
    for (int r = 0; r < a.nproc; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            sim_exec_rank(&a, r, rdv);
        if (pids[r] < 0) {
            perror("simrun: fork");
            pids[r] = 0;
        }
    }
    int worst = sim_wait_all(pids, a.nproc);
    nftw(rdv, sim_remove_entry, SIM_RMDIR_FDS, FTW_DEPTH | FTW_PHYS);
    free(pids);
    return worst;
}
