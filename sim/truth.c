/*
 * truth.c: the ground-truth log, DIR/truth-<host>-<pid>.jsonl when SIM_TRUTH
 * names a directory.  One JSON object per line, times in CLOCK_MONOTONIC ns.
 *
 * Writers on any thread append whole lines to one buffer under a lock; the
 * buffer goes to the file when it passes 64 KiB, at exit, and when the
 * runtime asks (device synchronisation, reset, communicator destruction).
 * The file is opened on first use, with a {"type":"process"} header line; a
 * forked child notices its new pid and starts its own file.
 */
#include "cudart_internal.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SIM_TRUTH_FLUSH_BYTES (64 * 1024)

static pthread_mutex_t sim_truth_lock = PTHREAD_MUTEX_INITIALIZER;
static int sim_truth_fd = -1;
static pid_t sim_truth_pid;
static int sim_truth_disabled;
static char *sim_truth_buf;
static size_t sim_truth_len, sim_truth_cap;
static int sim_truth_atexit_done;

static void sim_truth_write_out_locked(void)
{
    size_t off = 0;
    while (off < sim_truth_len) {
        ssize_t n = write(sim_truth_fd, sim_truth_buf + off, sim_truth_len - off);
        if (n <= 0)
            break;
        off += (size_t)n;
    }
    sim_truth_len = 0;
}

static void sim_truth_atexit(void) { sim_truth_flush(); }

static void sim_truth_append_locked(const char *s, size_t n)
{
    if (sim_truth_len + n > sim_truth_cap) {
        size_t cap = sim_truth_cap ? sim_truth_cap : 2 * SIM_TRUTH_FLUSH_BYTES;
        while (cap < sim_truth_len + n)
            cap *= 2;
        char *p = realloc(sim_truth_buf, cap);
        if (!p)
            return;
        sim_truth_buf = p;
        sim_truth_cap = cap;
    }
    memcpy(sim_truth_buf + sim_truth_len, s, n);
    sim_truth_len += n;
}

/* Opens this process's file; returns 0 when ground truth is off. */
static int sim_truth_open_locked(void)
{
    pid_t pid = getpid();
    if (sim_truth_fd >= 0 && sim_truth_pid == pid)
        return 1;
    if (sim_truth_fd >= 0) { /* forked child: the parent's buffer is not ours */
        close(sim_truth_fd);
        sim_truth_fd = -1;
        sim_truth_len = 0;
        sim_truth_disabled = 0;
    }
    const char *dir = getenv("SIM_TRUTH");
    if (sim_truth_disabled || !dir || !*dir) {
        sim_truth_disabled = 1;
        return 0;
    }
    char host[256], path[4096];
    sim_host_name(host, sizeof host);
    snprintf(path, sizeof path, "%s/truth-%s-%d.jsonl", dir, host, (int)pid);
    sim_truth_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (sim_truth_fd < 0) {
        fprintf(stderr, "sim(cudart): cannot write ground truth to %s\n", path);
        sim_truth_disabled = 1;
        return 0;
    }
    sim_truth_pid = pid;
    if (!sim_truth_atexit_done) {
        atexit(sim_truth_atexit);
        sim_truth_atexit_done = 1;
    }
    char head[512];
    const char *rank = getenv("RANK");
    int n = snprintf(head, sizeof head, "{\"type\":\"process\",\"pid\":%d,\"host\":\"%s\"%s%s}\n",
                     (int)pid, host, rank ? ",\"rank\":" : "", rank ? rank : "");
    if (rank && !*rank)
        n = snprintf(head, sizeof head, "{\"type\":\"process\",\"pid\":%d,\"host\":\"%s\"}\n",
                     (int)pid, host);
    sim_truth_append_locked(head, (size_t)n);
    return 1;
}

void sim_truth_line(const char *json)
{
    pthread_mutex_lock(&sim_truth_lock);
    if (sim_truth_open_locked()) {
        sim_truth_append_locked(json, strlen(json));
        sim_truth_append_locked("\n", 1);
        if (sim_truth_len > SIM_TRUTH_FLUSH_BYTES)
            sim_truth_write_out_locked();
    }
    pthread_mutex_unlock(&sim_truth_lock);
}

void sim_truth_flush(void)
{
    pthread_mutex_lock(&sim_truth_lock);
    if (sim_truth_fd >= 0 && sim_truth_pid == getpid())
        sim_truth_write_out_locked();
    pthread_mutex_unlock(&sim_truth_lock);
}
