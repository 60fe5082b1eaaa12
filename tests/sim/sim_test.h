/*
 * sim_test.h: small helpers shared by the simulator's tests (header-only,
 * each test is one C program).
 *
 * - fake kernels: a C program has no nvcc, so it registers host stubs under
 *   mangled names exactly as nvcc-generated code does, and launches them
 *   with cudaLaunchKernel;
 * - the ncclUniqueId exchange through $SIM_RENDEZVOUS (rank 0 writes the
 *   file atomically with rename, the others poll);
 * - running simrun from a test, and reading ground-truth JSON lines.
 */
#ifndef SIM_TEST_H
#define SIM_TEST_H

#include <cuda_runtime_api.h>
#include <dirent.h>
#include <errno.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define SIM_CHECK(cond)                                                              \
    do {                                                                             \
        if (!(cond)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            exit(1);                                                                 \
        }                                                                            \
    } while (0)

#define SIM_CUDA(call) SIM_CHECK((call) == cudaSuccess)

/* The host-side registration entry points nvcc's generated code calls. */
void **__cudaRegisterFatBinary(void *fatCubin);
void __cudaRegisterFatBinaryEnd(void **fatCubinHandle);
void __cudaRegisterFunction(void **fatCubinHandle, const char *hostFun, char *deviceFun,
                            const char *deviceName, int thread_limit, uint3 *tid, uint3 *bid,
                            dim3 *bDim, dim3 *gDim, int *wSize);

__attribute__((unused)) static void sim_test_busy_stub(void) {}
__attribute__((unused)) static void sim_test_other_stub(void) {}
#define SIM_TEST_BUSY_NAME "_Z4busyPfi"
#define SIM_TEST_OTHER_NAME "_Z5otherv"

static inline void sim_test_register_kernels(void)
{
    void **h = __cudaRegisterFatBinary(NULL);
    __cudaRegisterFunction(h, (const char *)(uintptr_t)sim_test_busy_stub, NULL,
                           SIM_TEST_BUSY_NAME, -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFunction(h, (const char *)(uintptr_t)sim_test_other_stub, NULL,
                           SIM_TEST_OTHER_NAME, -1, NULL, NULL, NULL, NULL, NULL);
    __cudaRegisterFatBinaryEnd(h);
}

/* Launches the busy kernel for about MS milliseconds of the default model
 * (1000 threads per microsecond): MS * 1000 blocks of 1000 threads. */
static inline cudaError_t sim_test_kernel_ms(double ms, cudaStream_t s)
{
    dim3 grid = {(unsigned)(ms * 1000), 1, 1}, block = {1000, 1, 1};
    return cudaLaunchKernel((const void *)(uintptr_t)sim_test_busy_stub, grid, block, NULL, 0, s);
}

static inline uint64_t sim_test_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline void sim_test_sleep_ms(double ms)
{
    struct timespec ts = {(time_t)(ms / 1000), (long)((ms - (long)(ms / 1000) * 1000) * 1e6)};
    nanosleep(&ts, NULL);
}

static inline int sim_test_env_int(const char *name, int fallback)
{
    const char *s = getenv(name);
    return s && *s ? atoi(s) : fallback;
}

/* Rank 0 publishes LEN bytes as $SIM_RENDEZVOUS/NAME; the others wait for it. */
static inline void sim_test_exchange(const char *name, void *data, size_t len, int rank)
{
    const char *dir = getenv("SIM_RENDEZVOUS");
    SIM_CHECK(dir != NULL);
    char path[4096], tmp[4200];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (rank == 0) {
        snprintf(tmp, sizeof tmp, "%s.tmp.%d", path, (int)getpid());
        FILE *f = fopen(tmp, "wb");
        SIM_CHECK(f && fwrite(data, 1, len, f) == len);
        fclose(f);
        SIM_CHECK(rename(tmp, path) == 0);
        return;
    }
    for (;;) {
        FILE *f = fopen(path, "rb");
        if (f) {
            size_t got = fread(data, 1, len, f);
            fclose(f);
            if (got == len)
                return;
        }
        sim_test_sleep_ms(2);
    }
}

/* Runs simrun (path in SIMRUN, else next to the libraries) with ARGV; returns
 * its exit status. */
/* The communicator of all n ranks: rank 0's id, shared through the
 * exchange. */
static inline ncclComm_t sim_test_comm(int rank, int n)
{
    ncclUniqueId id;
    if (rank == 0)
        SIM_CHECK(ncclGetUniqueId(&id) == ncclSuccess);
    sim_test_exchange("nccl-id", &id, sizeof id, rank);
    ncclComm_t comm;
    SIM_CHECK(ncclCommInitRank(&comm, n, id, rank) == ncclSuccess);
    return comm;
}

static inline int sim_test_run(char *const argv[])
{
    pid_t pid = fork();
    if (pid == 0) {
        execv(argv[0], argv);
        fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static inline char *sim_test_mkdtemp(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/simtest-XXXXXX");
    SIM_CHECK(mkdtemp(dir) != NULL);
    return dir;
}

/* ---- ground truth ---- */

struct sim_truth {
    char **lines;
    int n;
};

/* Reads every truth-*.jsonl line of DIR. */
static inline struct sim_truth sim_truth_read(const char *dir)
{
    struct sim_truth t = {0};
    DIR *d = opendir(dir);
    SIM_CHECK(d != NULL);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, "truth-", 6))
            continue;
        char path[4096], line[8192];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "r");
        SIM_CHECK(f != NULL);
        while (fgets(line, sizeof line, f)) {
            t.lines = realloc(t.lines, (size_t)(t.n + 1) * sizeof *t.lines);
            t.lines[t.n++] = strdup(line);
        }
        fclose(f);
    }
    closedir(d);
    return t;
}

static inline void sim_truth_remove(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    char path[4096];
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') {
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
            unlink(path);
        }
    if (d)
        closedir(d);
    rmdir(dir);
}

static inline int sim_json_has(const char *line, const char *type)
{
    char key[64];
    snprintf(key, sizeof key, "\"type\":\"%s\"", type);
    return strstr(line, key) != NULL;
}

static inline const char *sim_json_at(const char *line, const char *key)
{
    char k[64];
    snprintf(k, sizeof k, "\"%s\":", key);
    const char *p = strstr(line, k);
    return p ? p + strlen(k) : NULL;
}

static inline double sim_json_num(const char *line, const char *key)
{
    const char *p = sim_json_at(line, key);
    SIM_CHECK(p != NULL);
    return strtod(p, NULL);
}

static inline uint64_t sim_json_u64(const char *line, const char *key)
{
    const char *p = sim_json_at(line, key);
    SIM_CHECK(p != NULL);
    return strtoull(p, NULL, 10);
}

/* Copies the string value of KEY into BUF. */
static inline void sim_json_str(const char *line, const char *key, char *buf, size_t size)
{
    const char *p = sim_json_at(line, key);
    SIM_CHECK(p && *p == '"');
    p++;
    size_t n = strcspn(p, "\"");
    if (n >= size)
        n = size - 1;
    memcpy(buf, p, n);
    buf[n] = '\0';
}

/* Runs this very program as N ranks through simrun ("rank" as argv[1]),
 * with EXTRA options before "--"; returns simrun's exit status. */
static inline int sim_test_simrun(int nproc, const char *extra, const char *truth_dir)
{
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    SIM_CHECK(n > 0);
    self[n] = '\0';
    const char *simrun = getenv("SIMRUN");
    SIM_CHECK(simrun != NULL);
    char np[16];
    snprintf(np, sizeof np, "%d", nproc);
    char *argv[16];
    int i = 0;
    argv[i++] = (char *)simrun;
    argv[i++] = "--nproc";
    argv[i++] = np;
    if (extra) {
        argv[i++] = "--nodes";
        argv[i++] = (char *)extra;
    }
    argv[i++] = "--truth";
    argv[i++] = (char *)truth_dir;
    argv[i++] = "--";
    argv[i++] = self;
    argv[i++] = "rank";
    argv[i] = NULL;
    return sim_test_run(argv);
}

#endif
