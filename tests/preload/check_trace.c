/*
 * check_trace.c - what a user checks in the traces of a profiled job,
 * as a command the preload tests run after the job:
 *
 *   check_trace collectives DIR NPROC
 *       one trace per process, ranks 0..NPROC-1; every collective appears
 *       on every rank under the same communicator id and sequence number.
 *   check_trace cupti DIR TRUTHDIR PCT
 *       every kernel and collective of the stand-in runtime's ground truth
 *       is in the trace of its process (same correlation id) with start and
 *       end within PCT percent of its duration.
 *   check_trace events DIR TRUTHDIR PCT
 *       without CUPTI: each collective's GPU time, measured with CUDA
 *       events, is within PCT percent of the truth's arrival-to-end span,
 *       and the GPU event names the NCCL call it times (correlation).
 *   check_trace launches DIR NPROC
 *       an nvcc-built job (versioned cudart symbols, <<<>>> launches):
 *       every rank's trace has kernel launches from the host side, GPU
 *       kernels from CUPTI, and all-reduces.
 *   check_trace p2p DIR NPROC SENDS
 *       a pipeline's sends and receives pair up by (communicator, sender,
 *       receiver, peer_seq): every send has exactly one receive with the
 *       same key and the same bytes, and the other way round; each rank
 *       but the last sent SENDS messages; collectives carry peer_seq 0.
 *   check_trace markers DIR FIRST LAST
 *       NVTX ranges are recorded: pushes "step K" exactly for FIRST..LAST
 *       (0 0: every step), each with its "forward" and "backward" ranges,
 *       and one NCCL all-reduce per recorded step.
 *
 * Prints what it found; exits 0 when the check holds, 1 when not, 2 on
 * usage or unreadable input.
 */
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sprof.h"
#include "sp_gpu.h"

#define MAX_PROCS 64
#define MAX_EVENTS 100000
#define MAX_STEPS 1000
#define ABS_SLACK_NS 2000 /* clock reads around a call: a few µs at most */

struct trace {
    int pid, rank;
    struct sp_event *ev;
    char (*name)[64]; /* resolved string of each event, "" when none */
    int n;
};

static struct trace traces[MAX_PROCS];
static int ntraces;

static int fail(const char *what)
{
    printf("FAIL: %s\n", what);
    return 1;
}

/* ---- loading ------------------------------------------------------------------ */

static uint64_t name_field(const struct sp_event *e)
{
    switch (e->type) {
    case SP_EV_GPU: return e->gpu.name;
    case SP_EV_MARKER: return e->marker.name;
    case SP_EV_CUDA: return e->cuda.stack;
    default: return 0;
    }
}

static int load_file(const char *path)
{
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (!r) {
        fprintf(stderr, "check_trace: %s: %s\n", path, sp_strerror(err));
        return 0;
    }
    if (ntraces == MAX_PROCS)
        return 0;
    struct trace *t = &traces[ntraces++];
    t->pid = sp_reader_info(r)->hdr.pid;
    t->rank = sp_reader_info(r)->hdr.rank;
    t->ev = calloc(MAX_EVENTS, sizeof *t->ev);
    t->name = calloc(MAX_EVENTS, sizeof *t->name);
    while (t->ev && t->name && t->n < MAX_EVENTS && sp_reader_next(r, &t->ev[t->n]) == 1) {
        uint64_t id = name_field(&t->ev[t->n]);
        snprintf(t->name[t->n], sizeof t->name[0], "%s", id ? sp_reader_string(r, id) : "");
        t->n++;
    }
    sp_reader_close(r);
    return 1;
}

/* DIR/<host>/<pid>.sprof */
static int load_dir(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *h;
    while ((h = readdir(d))) {
        if (h->d_name[0] == '.')
            continue;
        char sub[4096];
        snprintf(sub, sizeof sub, "%s/%s", dir, h->d_name);
        DIR *hd = opendir(sub);
        if (!hd)
            continue;
        struct dirent *f;
        while ((f = readdir(hd))) {
            size_t n = strlen(f->d_name);
            if (n > 6 && !strcmp(f->d_name + n - 6, ".sprof")) {
                char path[8192];
                snprintf(path, sizeof path, "%s/%s", sub, f->d_name);
                load_file(path);
            }
        }
        closedir(hd);
    }
    closedir(d);
    return ntraces;
}

/* ---- ground truth (flat JSON lines) ----------------------------------------------------- */

static int json_u64(const char *line, const char *key, uint64_t *out)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *p = strstr(line, pat);
    if (!p)
        return 0;
    *out = strtoull(p + strlen(pat), NULL, 10);
    return 1;
}

static int json_is(const char *line, const char *key, const char *value)
{
    char pat[128];
    snprintf(pat, sizeof pat, "\"%s\":\"%s\"", key, value);
    return strstr(line, pat) != NULL;
}

/* Calls fn on each line of the truth file of process `pid`. */
static int truth_lines(const char *dir, int pid, int (*fn)(const char *, void *), void *ctx)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    struct dirent *f;
    int bad = 0, found = 0;
    char suffix[32];
    snprintf(suffix, sizeof suffix, "-%d.jsonl", pid);
    while ((f = readdir(d))) {
        size_t n = strlen(f->d_name), s = strlen(suffix);
        if (strncmp(f->d_name, "truth-", 6) || n <= s || strcmp(f->d_name + n - s, suffix))
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, f->d_name);
        FILE *fp = fopen(path, "r");
        char line[8192];
        while (fp && fgets(line, sizeof line, fp))
            bad += fn(line, ctx);
        if (fp)
            fclose(fp);
        found = 1;
    }
    closedir(d);
    return found ? bad : -1;
}

/* ---- collectives ---------------------------------------------------------------------------- */

static int knows_comm(const struct trace *t, uint64_t comm)
{
    for (int j = 0; j < t->n; j++)
        if (t->ev[j].type == SP_EV_NCCL && t->ev[j].nccl.comm == comm)
            return 1;
    return 0;
}

static int has_collective(const struct trace *t, const struct sp_event *e)
{
    for (int j = 0; j < t->n; j++) {
        const struct sp_event *o = &t->ev[j];
        if (o->type == SP_EV_NCCL && o->nccl.comm == e->nccl.comm && o->nccl.seq == e->nccl.seq &&
            o->nccl.op == e->nccl.op && o->nccl.bytes == e->nccl.bytes &&
            o->nccl.nranks == e->nccl.nranks)
            return 1;
    }
    return 0;
}

/* Every all-reduce of every rank is on each rank that uses its
 * communicator, and each communicator has as many members as it says. */
static int check_collectives(int nproc)
{
    if (ntraces != nproc) {
        printf("traces: %d, processes: %d\n", ntraces, nproc);
        return fail("one trace per process");
    }
    int colls = 0;
    uint64_t comms[64];
    int ncomms = 0;
    for (int i = 0; i < ntraces; i++) {
        for (int k = 0; k < traces[i].n; k++) {
            const struct sp_event *e = &traces[i].ev[k];
            if (e->type != SP_EV_NCCL || e->nccl.op != SP_NCCL_ALLREDUCE)
                continue;
            colls++;
            if (!e->nccl.comm || !e->nccl.seq)
                return fail("a collective without communicator id or sequence number");
            int members = 0;
            for (int r = 0; r < ntraces; r++) {
                if (!knows_comm(&traces[r], e->nccl.comm))
                    continue;
                members++;
                if (!has_collective(&traces[r], e)) {
                    printf("comm %016llx seq %llu of rank %d missing on rank %d\n",
                           (unsigned long long)e->nccl.comm, (unsigned long long)e->nccl.seq,
                           traces[i].rank, traces[r].rank);
                    return fail("every collective on every member rank");
                }
            }
            if ((uint64_t)members != e->nccl.nranks) {
                printf("comm %016llx: %d ranks use it, it has %llu\n",
                       (unsigned long long)e->nccl.comm, members,
                       (unsigned long long)e->nccl.nranks);
                return fail("communicator ids agree across its members");
            }
            int seen = 0;
            for (int c = 0; c < ncomms; c++)
                seen |= comms[c] == e->nccl.comm;
            if (!seen && ncomms < 64)
                comms[ncomms++] = e->nccl.comm;
        }
    }
    printf("%d traces; %d all-reduces over %d communicators, each found on every member\n",
           ntraces, colls, ncomms);
    return colls ? 0 : fail("all-reduces recorded");
}

/* ---- GPU times against the truth -------------------------------------------------------------- */

struct match_ctx {
    struct trace *t;
    double pct;
    int matched, checked;
    double worst_pct;
    int own_correlation; /* events mode */
    int nth;             /* events mode: collectives seen so far */
};

static const struct sp_event *gpu_by_correlation(struct trace *t, uint64_t corr)
{
    for (int i = 0; i < t->n; i++)
        if (t->ev[i].type == SP_EV_GPU && t->ev[i].gpu.correlation == corr)
            return &t->ev[i];
    return NULL;
}

/* Start and end within pct of the truth's duration (plus a clock-read slack). */
static int close_enough(struct match_ctx *c, uint64_t s, uint64_t e, uint64_t ts, uint64_t te)
{
    double dur = (double)(te - ts);
    double err = fmax(fabs((double)s - (double)ts), fabs((double)e - (double)te));
    double pct = dur > 0 ? 100.0 * fmax(0, err - ABS_SLACK_NS) / dur : 0;
    if (pct > c->worst_pct)
        c->worst_pct = pct;
    return pct <= c->pct;
}

static int cupti_line(const char *line, void *ctx)
{
    struct match_ctx *c = ctx;
    uint64_t corr, start, end;
    int kernel = json_is(line, "type", "kernel"), coll = json_is(line, "type", "collective");
    if (!kernel && !coll)
        return 0;
    if (!json_u64(line, "correlation", &corr) || !json_u64(line, "end_ns", &end) ||
        !json_u64(line, kernel ? "start_ns" : "arrive_ns", &start))
        return 0;
    c->checked++;
    const struct sp_event *g = gpu_by_correlation(c->t, corr);
    if (!g) {
        printf("truth %s correlation %llu: no GPU event\n", kernel ? "kernel" : "collective",
               (unsigned long long)corr);
        return 1;
    }
    /* the runtime's truth lists NCCL's kernels among the kernels too */
    int nccl = coll || strstr(line, "\"name\":\"nccl") != NULL;
    if (g->gpu.kind != (uint64_t)(nccl ? SP_GPU_NCCL_KERNEL : SP_GPU_KERNEL)) {
        printf("correlation %llu: GPU event of kind %llu\n", (unsigned long long)corr,
               (unsigned long long)g->gpu.kind);
        return 1;
    }
    if (!close_enough(c, g->t, g->t + g->gpu.dur, start, end)) {
        printf("correlation %llu: trace %llu..%llu, truth %llu..%llu\n", (unsigned long long)corr,
               (unsigned long long)g->t, (unsigned long long)(g->t + g->gpu.dur),
               (unsigned long long)start, (unsigned long long)end);
        return 1;
    }
    c->matched++;
    return 0;
}

/* The k-th collective of the truth against the k-th event-timed one. */
static int events_line(const char *line, void *ctx)
{
    struct match_ctx *c = ctx;
    uint64_t start, end;
    if (!json_is(line, "type", "collective") || !json_u64(line, "arrive_ns", &start) ||
        !json_u64(line, "end_ns", &end))
        return 0;
    c->checked++;
    int k = c->nth++, seen = 0;
    for (int i = 0; i < c->t->n; i++) {
        const struct sp_event *g = &c->t->ev[i];
        if (g->type != SP_EV_GPU || g->gpu.kind != SP_GPU_NCCL_KERNEL)
            continue;
        if (seen++ != k)
            continue;
        if (!(g->gpu.correlation & SP_OWN_CORRELATION_BIT) || strcmp(c->t->name[i], "nccl:allreduce"))
            return printf("GPU event %d: not an event-timed all-reduce\n", k), 1;
        int called = 0;
        for (int j = 0; j < c->t->n && !called; j++)
            called = c->t->ev[j].type == SP_EV_NCCL &&
                     c->t->ev[j].nccl.correlation == g->gpu.correlation;
        if (!called)
            return printf("GPU event %d: no NCCL call with its correlation\n", k), 1;
        double dur = (double)(end - start), got = (double)g->gpu.dur;
        double pct = 100.0 * fabs(got - dur) / dur;
        if (pct > c->worst_pct)
            c->worst_pct = pct;
        if (pct > c->pct)
            return printf("collective %d: GPU %.0f ns, truth %.0f ns\n", k, got, dur), 1;
        c->matched++;
        return 0;
    }
    printf("truth collective %d: no event-timed GPU event\n", k);
    return 1;
}

static int check_against_truth(const char *truth, double pct, int own)
{
    int bad = 0, checked = 0;
    double worst = 0;
    for (int i = 0; i < ntraces; i++) {
        struct match_ctx c = {.t = &traces[i], .pct = pct, .own_correlation = own};
        int b = truth_lines(truth, traces[i].pid, own ? events_line : cupti_line, &c);
        if (b < 0)
            continue; /* a process without CUDA (none in these jobs) */
        bad += b;
        checked += c.checked;
        if (c.worst_pct > worst)
            worst = c.worst_pct;
    }
    printf("%d truth records checked over %d traces, %d off; worst error %.3f%% (limit %.1f%%)\n",
           checked, ntraces, bad, worst, pct);
    if (!checked)
        return fail("the truth has records to compare");
    return bad ? fail("GPU times agree with the truth") : 0;
}

/* ---- launches of an nvcc-built program ------------------------------------------------------- */

/* Worker processes forked by a rank inherit its rank and record no GPU
 * work: the rank is judged by the busiest of its traces. */
static int check_launches(int nproc)
{
    int bad = 0;
    for (int r = 0; r < nproc; r++) {
        int launches = 0, syncs = 0, kernels = 0, colls = 0, sites = 0;
        const char *site = "";
        for (int i = 0; i < ntraces; i++) {
            struct trace *t = &traces[i];
            if (t->rank != r)
                continue;
            for (int j = 0; j < t->n; j++) {
                const struct sp_event *e = &t->ev[j];
                if (e->type == SP_EV_CUDA && e->cuda.api == SP_CUDA_LAUNCH)
                    launches++;
                if (e->type == SP_EV_CUDA && e->cuda.api == SP_CUDA_STREAM_SYNC) {
                    syncs++;
                    sites += e->cuda.stack != 0;
                    if (e->cuda.stack && !*site)
                        site = t->name[j];
                }
                if (e->type == SP_EV_GPU && e->gpu.kind == SP_GPU_KERNEL)
                    kernels++;
                if (e->type == SP_EV_NCCL && e->nccl.op == SP_NCCL_ALLREDUCE)
                    colls++;
            }
        }
        printf("rank %d: %d launches, %d stream syncs (%d with call site), %d GPU kernels, "
               "%d all-reduces\n",
               r, launches, syncs, sites, kernels, colls);
        if (*site)
            printf("  a sync's call site: %s\n", site);
        if (!launches || !kernels || !colls || !syncs || sites != syncs || launches < kernels)
            bad++;
    }
    return bad ? fail("launches, kernels and collectives recorded on every rank") : 0;
}

/* ---- markers ----------------------------------------------------------------------------------------- */

static int check_markers(long first, long last)
{
    int bad = 0;
    for (int i = 0; i < ntraces; i++) {
        struct trace *t = &traces[i];
        int steps[MAX_STEPS] = {0}, fwd = 0, bwd = 0, pops = 0, allreduce = 0, nsteps = 0;
        for (int j = 0; j < t->n; j++) {
            const struct sp_event *e = &t->ev[j];
            if (e->type == SP_EV_NCCL && e->nccl.op == SP_NCCL_ALLREDUCE)
                allreduce++;
            if (e->type != SP_EV_MARKER)
                continue;
            if (e->marker.kind == SP_MARK_POP)
                pops++;
            if (e->marker.kind != SP_MARK_PUSH)
                continue;
            int k;
            if (sscanf(t->name[j], "step %d", &k) == 1 && k > 0 && k < MAX_STEPS) {
                steps[k]++;
                nsteps++;
            }
            fwd += !strcmp(t->name[j], "forward");
            bwd += !strcmp(t->name[j], "backward");
        }
        for (int k = 1; k < MAX_STEPS; k++) {
            int want = first == 0 ? -1 : (k >= first && k <= last);
            if (want >= 0 && steps[k] != want) {
                printf("rank %d: step %d pushed %d times, expected %d\n", t->rank, k, steps[k], want);
                bad++;
            }
        }
        printf("rank %d: %d step ranges, %d forward, %d backward, %d pops, %d all-reduces\n",
               t->rank, nsteps, fwd, bwd, pops, allreduce);
        if (!nsteps || fwd != nsteps || bwd != nsteps || pops != 3 * nsteps || allreduce != nsteps)
            bad++;
    }
    if (!ntraces)
        return fail("traces to read");
    return bad ? fail("NVTX ranges and steps as expected") : 0;
}

/* ---- point-to-point pairing ---------------------------------------------------- */

struct p2p_key {
    uint64_t comm, seq, bytes;
    int sender, receiver;
};

#define MAX_P2P 20000

static int same_key(const struct p2p_key *a, const struct p2p_key *b)
{
    return a->comm == b->comm && a->seq == b->seq && a->sender == b->sender && a->receiver == b->receiver;
}

/* How many of list[0..n) have the key of k; *bytes_ok is cleared when one
 * of them has other bytes. */
static int count_key(const struct p2p_key *list, int n, const struct p2p_key *k, int *bytes_ok)
{
    int c = 0;
    for (int i = 0; i < n; i++)
        if (same_key(&list[i], k)) {
            c++;
            if (list[i].bytes != k->bytes)
                *bytes_ok = 0;
        }
    return c;
}

static int check_p2p(int nproc, int sends_per_rank)
{
    static struct p2p_key sends[MAX_P2P], recvs[MAX_P2P];
    int ns = 0, nr = 0, per_rank[MAX_PROCS] = {0};
    if (ntraces != nproc)
        return fail("one trace per process");
    for (int i = 0; i < ntraces; i++) {
        for (int k = 0; k < traces[i].n; k++) {
            const struct sp_event *e = &traces[i].ev[k];
            if (e->type != SP_EV_NCCL)
                continue;
            int send = e->nccl.op == SP_NCCL_SEND, recv = e->nccl.op == SP_NCCL_RECV;
            if (!send && !recv) {
                if (e->nccl.peer_seq)
                    return fail("a collective or group call with a peer_seq");
                continue;
            }
            if (!e->nccl.peer_seq)
                return fail("a send or recv without peer_seq");
            struct p2p_key key = {e->nccl.comm, e->nccl.peer_seq, e->nccl.bytes,
                                  send ? (int)e->nccl.rank : (int)e->nccl.peer,
                                  send ? (int)e->nccl.peer : (int)e->nccl.rank};
            if ((send ? ns : nr) == MAX_P2P)
                return fail("too many point-to-point calls for this checker");
            if (send) {
                sends[ns++] = key;
                if (e->nccl.rank >= 0 && e->nccl.rank < MAX_PROCS)
                    per_rank[e->nccl.rank]++;
            } else {
                recvs[nr++] = key;
            }
        }
    }
    for (int i = 0; i < ns; i++) {
        int bytes_ok = 1;
        if (count_key(sends, ns, &sends[i], &bytes_ok) != 1 || count_key(recvs, nr, &sends[i], &bytes_ok) != 1 ||
            !bytes_ok) {
            printf("send %d -> %d, peer_seq %llu, %llu bytes\n", sends[i].sender, sends[i].receiver,
                   (unsigned long long)sends[i].seq, (unsigned long long)sends[i].bytes);
            return fail("each send pairs with exactly one recv of the same bytes");
        }
    }
    for (int i = 0; i < nr; i++) {
        int bytes_ok = 1;
        if (count_key(recvs, nr, &recvs[i], &bytes_ok) != 1 || count_key(sends, ns, &recvs[i], &bytes_ok) != 1) {
            printf("recv %d <- %d, peer_seq %llu\n", recvs[i].receiver, recvs[i].sender,
                   (unsigned long long)recvs[i].seq);
            return fail("each recv pairs with exactly one send");
        }
    }
    for (int r = 0; r + 1 < nproc && r < MAX_PROCS; r++)
        if (per_rank[r] != sends_per_rank) {
            printf("rank %d sent %d messages, expected %d\n", r, per_rank[r], sends_per_rank);
            return fail("every message of the pipeline recorded");
        }
    printf("%d sends and %d recvs, paired one to one by (comm, sender, receiver, peer_seq) with equal bytes\n",
           ns, nr);
    return ns ? 0 : fail("sends recorded");
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: check_trace collectives|cupti|events|markers DIR ...\n");
        return 2;
    }
    if (!load_dir(argv[2])) {
        fprintf(stderr, "check_trace: no traces in %s\n", argv[2]);
        return 1;
    }
    if (!strcmp(argv[1], "collectives"))
        return check_collectives(atoi(argv[3]));
    if (!strcmp(argv[1], "cupti") && argc == 5)
        return check_against_truth(argv[3], atof(argv[4]), 0);
    if (!strcmp(argv[1], "events") && argc == 5)
        return check_against_truth(argv[3], atof(argv[4]), 1);
    if (!strcmp(argv[1], "launches"))
        return check_launches(atoi(argv[3]));
    if (!strcmp(argv[1], "p2p") && argc == 5)
        return check_p2p(atoi(argv[3]), atoi(argv[4]));
    if (!strcmp(argv[1], "markers") && argc == 5)
        return check_markers(atol(argv[3]), atol(argv[4]));
    fprintf(stderr, "check_trace: bad arguments\n");
    return 2;
}
