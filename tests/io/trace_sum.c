/*
 * trace_sum.c - what the input-side tests check in a directory of traces,
 * one JSON object per trace file on stdout:
 *
 *   {"file": ..., "pid": P, "ppid": Q, "closed": 0|1, "exe": ...,
 *    "rank", "world_size", "local_rank", "local_world_size", "host", "argv",
 *    "source", "cuda_devices", "start_mono", "end_mono",
 *    "events": N, "dropped": D,
 *    "types": {"io": n, "wait": n, ...},          events per type
 *    "io_ops": {"read": n, "open": n, ...},       IO events per op
 *    "read_bytes": {"/path": bytes, ...},          bytes returned by reads
 *    "read_calls": {"/path": n, ...},
 *    "input_wait_ns": W,   WAIT durations + reads/recvs on pipes and sockets
 *    "io": [[op, fd, kind, path, ret, bytes, err], ...]  (with --events)
 *    "proc": [[kind, pid, status, path], ...],
 *    "cpu": [[user_ns, sys_ns, busy_permille, ncores, threads], ...],
 *    "clocks": n}
 *
 * Written against the reader API only, so that the tests do not depend on
 * the dump verb's JSON schema.  Usage: trace_sum [--events] DIR|FILE...
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "sprof.h"
#include "json_out.h"

#define MAX_PATHS 4096
#define MAX_PROC 256
#define MAX_CPU 4096

struct path_sum {
    uint64_t id;
    char name[512];
    uint64_t bytes, calls;
};

struct summary {
    uint64_t events, types[SP_EV_MAX], io_ops[SP_IO_OP_MAX];
    uint64_t input_wait_ns;
    struct path_sum paths[MAX_PATHS];
    int npaths;
};

static int g_list_events;


static int is_read_op(uint64_t op)
{
    return op == SP_IO_READ || op == SP_IO_PREAD || op == SP_IO_READV || op == SP_IO_PREADV ||
           op == SP_IO_FREAD || op == SP_IO_RECV;
}

static void add_read(struct summary *s, const struct sp_reader *r, const struct sp_event *ev)
{
    const char *name = sp_reader_string(r, ev->io.path);
    if (!name[0])
        return;
    int i;
    for (i = 0; i < s->npaths; i++)
        if (strcmp(s->paths[i].name, name) == 0)
            break;
    if (i == s->npaths) {
        if (s->npaths == MAX_PATHS)
            return;
        snprintf(s->paths[i].name, sizeof s->paths[i].name, "%s", name);
        s->npaths++;
    }
    if (ev->io.ret > 0)
        s->paths[i].bytes += (uint64_t)ev->io.ret;
    s->paths[i].calls++;
}

static void print_io_event(const struct sp_reader *r, const struct sp_event *ev, int *first)
{
    printf("%s[\"%s\", %lld, %llu, ", *first ? "" : ", ", sp_enum_name(SP_EV_IO, "op", ev->io.op) ?: "?",
           (long long)ev->io.fd, (unsigned long long)ev->io.fd_kind);
    print_json_string(sp_reader_string(r, ev->io.path));
    printf(", %lld, %llu, %llu]", (long long)ev->io.ret, (unsigned long long)ev->io.bytes,
           (unsigned long long)ev->io.err);
    *first = 0;
}

static int summarize(const char *path)
{
    int err = 0;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r) {
        fprintf(stderr, "trace_sum: %s: %s\n", path, sp_strerror(err));
        return 1;
    }
    static struct summary s;
    memset(&s, 0, sizeof s);
    const struct sp_file_info *info = sp_reader_info(r);
    printf("{\"file\": ");
    print_json_string(path);
    printf(", \"pid\": %d, \"ppid\": %d, \"closed\": %d, \"exe\": ", info->hdr.pid, info->hdr.ppid, info->closed);
    print_json_string(info->exe);
    printf(", \"rank\": %d, \"world_size\": %d, \"local_rank\": %d, \"local_world_size\": %d, \"host\": ",
           info->hdr.rank, info->hdr.world_size, info->hdr.local_rank, info->hdr.local_world_size);
    print_json_string(info->host);
    printf(", \"argv\": ");
    print_json_string(info->argv);
    printf(", \"source\": ");
    print_json_string(info->source);
    printf(", \"cuda_devices\": ");
    print_json_string(info->cuda_devices);
    printf(", \"start_mono\": %llu, \"end_mono\": %llu, \"io\": [", (unsigned long long)info->hdr.start_mono,
           (unsigned long long)info->hdr.end_mono);

    struct sp_event ev;
    int first_io = 1;
    char procs[MAX_PROC][600];
    int nproc = 0;
    static struct sp_ev_cpu cpus[MAX_CPU];
    int ncpu = 0;
    while (sp_reader_next(r, &ev) == 1) {
        s.events++;
        if (ev.type < SP_EV_MAX)
            s.types[ev.type]++;
        if (ev.type == SP_EV_IO) {
            if (ev.io.op < SP_IO_OP_MAX)
                s.io_ops[ev.io.op]++;
            if (is_read_op(ev.io.op))
                add_read(&s, r, &ev);
            if ((ev.io.op == SP_IO_READ || ev.io.op == SP_IO_RECV) &&
                (ev.io.fd_kind == SP_FD_PIPE || ev.io.fd_kind == SP_FD_SOCKET))
                s.input_wait_ns += ev.io.dur;
            if (g_list_events)
                print_io_event(r, &ev, &first_io);
        } else if (ev.type == SP_EV_WAIT) {
            s.input_wait_ns += ev.wait.dur;
        } else if (ev.type == SP_EV_CPU && ncpu < MAX_CPU) {
            cpus[ncpu++] = ev.cpu;
        } else if (ev.type == SP_EV_PROC && nproc < MAX_PROC) {
            snprintf(procs[nproc++], sizeof procs[0], "[\"%s\", %lld, %lld, \"%.500s\"]",
                     sp_enum_name(SP_EV_PROC, "kind", ev.proc.kind) ?: "?", (long long)ev.proc.pid,
                     (long long)ev.proc.status, sp_reader_string(r, ev.proc.path));
        }
    }
    printf("], \"events\": %llu, \"dropped\": %llu, \"types\": {", (unsigned long long)s.events,
           (unsigned long long)info->hdr.events_dropped);
    int first = 1;
    for (int t = 1; t < SP_EV_MAX; t++) {
        if (!s.types[t])
            continue;
        printf("%s\"%s\": %llu", first ? "" : ", ", sp_event_name(t), (unsigned long long)s.types[t]);
        first = 0;
    }
    printf("}, \"io_ops\": {");
    first = 1;
    for (int op = 1; op < SP_IO_OP_MAX; op++) {
        if (!s.io_ops[op])
            continue;
        printf("%s\"%s\": %llu", first ? "" : ", ", sp_enum_name(SP_EV_IO, "op", (uint64_t)op) ?: "?",
               (unsigned long long)s.io_ops[op]);
        first = 0;
    }
    printf("}, \"read_bytes\": {");
    for (int i = 0; i < s.npaths; i++) {
        printf("%s", i ? ", " : "");
        print_json_string(s.paths[i].name);
        printf(": %llu", (unsigned long long)s.paths[i].bytes);
    }
    printf("}, \"read_calls\": {");
    for (int i = 0; i < s.npaths; i++) {
        printf("%s", i ? ", " : "");
        print_json_string(s.paths[i].name);
        printf(": %llu", (unsigned long long)s.paths[i].calls);
    }
    printf("}, \"input_wait_ns\": %llu, \"proc\": [", (unsigned long long)s.input_wait_ns);
    for (int i = 0; i < nproc; i++)
        printf("%s%s", i ? ", " : "", procs[i]);
    printf("], \"cpu\": [");
    for (int i = 0; i < ncpu; i++)
        printf("%s[%llu, %llu, %llu, %llu, %llu]", i ? ", " : "", (unsigned long long)cpus[i].user_ns,
               (unsigned long long)cpus[i].sys_ns, (unsigned long long)cpus[i].busy_permille,
               (unsigned long long)cpus[i].ncores, (unsigned long long)cpus[i].threads);
    printf("], \"diag\": ");
    print_json_string(sp_reader_diag(r));
    printf("}\n");
    sp_reader_close(r);
    return 0;
}

static int is_trace(const char *name)
{
    size_t n = strlen(name);
    return n > 6 && strcmp(name + n - 6, ".sprof") == 0;
}

/* DIR/<host>/<pid>.sprof, or any depth: walk everything below. */
static int walk(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        perror(path);
        return 1;
    }
    if (!S_ISDIR(st.st_mode))
        return is_trace(path) ? summarize(path) : 0;
    struct dirent **list;
    int n = scandir(path, &list, NULL, alphasort), bad = 0;
    for (int i = 0; i < n; i++) {
        if (list[i]->d_name[0] != '.') {
            char sub[4096];
            snprintf(sub, sizeof sub, "%s/%s", path, list[i]->d_name);
            bad |= walk(sub);
        }
        free(list[i]);
    }
    free(list);
    return bad;
}

int main(int argc, char **argv)
{
    int bad = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--events") == 0)
            g_list_events = 1;
        else
            bad |= walk(argv[i]);
    }
    return bad;
}
