/*
 * model_load.c - pass 1: find every trace under a directory, read them in
 * parallel, and group processes under the ranks they serve.
 *
 * Pass 1 keeps, per file, only what later stages need and what grows with
 * steps rather than with events: the NCCL calls (matched to their NCCL
 * kernels), the step-marker ranges, and the last event time of each
 * recording thread (pass 2 uses those to know when a step can no longer
 * receive events).  Compute kernels, copies, syncs and I/O are left for
 * pass 2, which reduces them per step.
 *
 * Grouping: a file's rank comes from its header, else from a COMM event's
 * rank, else from its parent process on the same host (DataLoader workers
 * and other helpers), followed up the ppid chain.  Files that resolve to no
 * rank are counted but not analyzed.
 *
 * Matching NCCL kernels to calls: by correlation id when both carry one,
 * else the k-th NCCL kernel on a stream belongs to the k-th collective call
 * on that stream.  Without a kernel the call's own gpu_start/gpu_dur is used,
 * else the host call.
 */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "alloc.h"
#include "model_int.h"
#include "model_summary.h"
#include "sprof.h"
#include "traceset.h"

#define MAX_MARK_DEPTH 64
#define MAX_PARENT_HOPS 32
/* ranks listed missing past the highest rank with a trace, at most */
#define MAX_MISSING 4096 /* a ppid chain longer than this is taken as a loop */

struct vec {
    void *p;
    size_t n, cap;
};

static void *vec_push(struct vec *v, size_t elt)
{
    if (v->n == v->cap) {
        size_t cap = v->cap ? v->cap * 2 : 64;
        void *p = realloc(v->p, cap * elt);
        if (!p)
            return NULL;
        v->p = p;
        v->cap = cap;
    }
    return (char *)v->p + elt * v->n++;
}

/* Room in v for `more` elements beyond those it holds (a hint: on
 * failure v is left as it is, and vec_push grows it when it fills). */
static void vec_reserve(struct vec *v, size_t more, size_t elt)
{
    if (v->cap - v->n >= more)
        return;
    size_t cap = v->cap ? v->cap : 64;
    while (cap - v->n < more)
        cap *= 2;
    void *p = realloc(v->p, cap * elt);
    if (p) {
        v->p = p;
        v->cap = cap;
    }
}

/* ---- per-file reading ---- */

struct kernel {
    int64_t start, end;
    uint64_t stream, corr;
    int32_t device;
    int used;
};
/* A call while its file is read: what matching it to its kernel needs
 * besides what the model keeps. */
struct scan_call {
    struct sp_coll_call c;
    uint64_t stream, corr;
    uint32_t group;
};
struct open_mark {
    int64_t t;
    int matched;
    int64_t num;
};
struct tid_stack {
    uint32_t tid;
    int depth;
    struct open_mark m[MAX_MARK_DEPTH];
};

/* ncclGroupStart..End nesting per thread: the calls of one group are
 * launched as one kernel when the group ends. */
#define MAX_GROUP_THREADS 16
struct group_state {
    uint32_t tid;
    int depth;
    uint32_t id;
};

/* The communicator ranks a process was given (init and split), from which
 * the ranks it holds are found at the end of the file. */
#define MAX_HELD 256
#define NCCL_RESULT_IN_PROGRESS 7 /* ncclInProgress: a non-blocking init */
struct held {
    uint64_t comm;
    int64_t nranks, rank, device;
};

struct file_scan {
    struct sp_file_rec *f;
    const regex_t *re;
    int names_dropped;
    int summaries; /* counts and times come from chunk summaries */
    struct vec calls, kernels, marks, tids, stacks, kseq, pauses;
    int kseq_full; /* sp_file_pass's, until the file is read */
    size_t last_tid;
    struct group_state groups[MAX_GROUP_THREADS];
    int ngroups;
    uint32_t next_group;
    struct held held[MAX_HELD];
    int nheld;
    int64_t pause_open;   /* a stop not yet followed by a start, else -1 */
    int64_t pause_status; /* that stop's status (> 0: a step window's edge) */
};

/* Single-GPU step detection needs the compute kernels' names in order;
 * they are kept only while the file shows neither a step marker nor a
 * collective (multi-GPU files drop theirs at the first collective), and
 * at most this many: 24 MiB. */
#define KSEQ_MAX (1u << 20)

static int is_collective_op(uint64_t op)
{
    return op >= SP_NCCL_ALLREDUCE && op < SP_NCCL_GROUP_START;
}

/* The thread's record; the last one found is cached, since a chunk is one
 * thread's events in a row. */
static struct sp_tid_mark *tid_of(struct file_scan *s, uint32_t tid)
{
    struct sp_tid_mark *m = s->tids.p;
    if (s->last_tid < s->tids.n && m[s->last_tid].tid == tid)
        return &m[s->last_tid];
    for (size_t i = 0; i < s->tids.n; i++)
        if (m[i].tid == tid) {
            s->last_tid = i;
            return &m[i];
        }
    struct sp_tid_mark *n = vec_push(&s->tids, sizeof *n);
    if (!n)
        return NULL;
    *n = (struct sp_tid_mark){.tid = tid, .last_t = INT64_MIN, .max_t = INT64_MIN};
    s->last_tid = s->tids.n - 1;
    return n;
}

/* Counts the event for pass 2 and measures the thread's disorder: how far
 * this event starts before the latest start seen on the thread so far. */
static void note_tid(struct file_scan *s, uint32_t tid, int64_t t)
{
    struct sp_tid_mark *m = tid_of(s, tid);
    if (!m)
        return;
    m->count++;
    if (m->max_t != INT64_MIN && m->max_t - t > m->lag)
        m->lag = m->max_t - t;
    if (t > m->max_t)
        m->max_t = t;
    m->last_t = m->max_t;
}

static struct tid_stack *stack_of(struct file_scan *s, uint32_t tid)
{
    struct tid_stack *st = s->stacks.p;
    for (size_t i = 0; i < s->stacks.n; i++)
        if (st[i].tid == tid)
            return &st[i];
    struct tid_stack *n = vec_push(&s->stacks, sizeof *n);
    if (n) {
        n->tid = tid;
        n->depth = 0;
    }
    return n;
}

/* The number at the end of a marker's name ("ProfilerStep#551" 551,
 * "step 12" 12), -1 when it ends in no digits. */
static int64_t mark_number(const char *name)
{
    size_t n = strlen(name), i = n;
    while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
        i--;
    if (i == n || n - i > 15)
        return -1;
    return strtoll(name + i, NULL, 10);
}

static void add_mark(struct file_scan *s, int64_t start, int64_t end, int64_t num)
{
    struct sp_mark *sp = vec_push(&s->marks, sizeof *sp);
    if (sp)
        *sp = (struct sp_mark){start, end, num};
}

static void on_marker(struct file_scan *s, const struct sp_reader *r, const struct sp_event *ev)
{
    const char *name = sp_reader_string(r, ev->marker.name);
    /* glibc's regexec answers "no match" when it has no memory to match
     * with; its allocator's ENOMEM tells the two apart */
    errno = 0;
    int rc = name[0] ? regexec(s->re, name, 0, NULL, 0) : REG_NOMATCH;
    if (rc != 0 && (rc == REG_ESPACE || errno == ENOMEM))
        sp_alloc_lost();
    int matched = rc == 0;
    struct tid_stack *st;
    switch (ev->marker.kind) {
    case SP_MARK_PUSH:
        st = stack_of(s, ev->tid);
        if (st && st->depth < MAX_MARK_DEPTH)
            st->m[st->depth++] = (struct open_mark){(int64_t)ev->t, matched, matched ? mark_number(name) : -1};
        break;
    case SP_MARK_POP:
        st = stack_of(s, ev->tid);
        if (st && st->depth > 0) {
            struct open_mark om = st->m[--st->depth];
            if (om.matched)
                add_mark(s, om.t, (int64_t)ev->t, om.num);
        }
        break;
    case SP_MARK_RANGE:
        if (matched)
            add_mark(s, (int64_t)ev->t, (int64_t)(ev->t + ev->marker.dur), mark_number(name));
        break;
    case SP_MARK_INSTANT:
        if (matched)
            add_mark(s, (int64_t)ev->t, -1, mark_number(name));
        break;
    }
}

static struct group_state *group_of(struct file_scan *s, uint32_t tid)
{
    for (int i = 0; i < s->ngroups; i++)
        if (s->groups[i].tid == tid)
            return &s->groups[i];
    if (s->ngroups == MAX_GROUP_THREADS)
        return NULL;
    s->groups[s->ngroups] = (struct group_state){.tid = tid};
    return &s->groups[s->ngroups++];
}

/* The group a call belongs to, 0 when issued alone. */
static uint32_t track_group(struct file_scan *s, const struct sp_event *ev)
{
    struct group_state *g = group_of(s, ev->tid);
    if (!g)
        return 0;
    if (ev->nccl.op == SP_NCCL_GROUP_START) {
        if (g->depth++ == 0)
            g->id = ++s->next_group;
        return 0;
    }
    if (ev->nccl.op == SP_NCCL_GROUP_END) {
        if (g->depth > 0)
            g->depth--;
        return 0;
    }
    return g->depth > 0 ? g->id : 0;
}

static void on_nccl(struct file_scan *s, const struct sp_event *ev)
{
    const struct sp_ev_nccl *n = &ev->nccl;
    uint32_t group = track_group(s, ev);
    if (!is_collective_op(n->op))
        return;
    struct scan_call *sc = vec_push(&s->calls, sizeof *sc);
    if (!sc)
        return;
    memset(sc, 0, sizeof *sc);
    sc->stream = n->stream;
    sc->corr = n->correlation;
    sc->group = group;
    struct sp_coll_call *c = &sc->c;
    c->comm = n->comm;
    c->seq = n->seq;
    c->bytes = n->bytes;
    c->op = (uint16_t)n->op; /* is_collective_op: an SP_NCCL_* op */
    c->dtype = sp_call_dtype(n->datatype);
    c->nranks = (uint32_t)n->nranks;
    c->crank = (int32_t)n->rank;
    c->peer = (int32_t)n->peer;
    c->peer_seq = (uint32_t)n->peer_seq;
    c->device = sp_call_device((int64_t)n->device);
    c->inst = c->node = -1;
    c->host_t = (int64_t)ev->t;
    if (n->gpu_start && n->gpu_dur) {
        c->start = (int64_t)n->gpu_start;
        c->end = (int64_t)(n->gpu_start + n->gpu_dur);
        c->timing = SP_TIMING_FALLBACK;
    } else {
        c->start = (int64_t)ev->t;
        c->end = (int64_t)(ev->t + n->dur);
        c->timing = SP_TIMING_HOST;
    }
}

static void drop_kernel_seq(struct file_scan *s)
{
    free(s->kseq.p);
    s->kseq = (struct vec){0};
    s->kseq_full = -1; /* never again for this file */
}

static void on_kernel(struct file_scan *s, const struct sp_event *ev)
{
    if (s->kseq_full)
        return;
    if (s->kseq.n >= KSEQ_MAX) {
        s->kseq_full = 1;
        return;
    }
    struct sp_kernel_rec *k = vec_push(&s->kseq, sizeof *k);
    if (k)
        *k = (struct sp_kernel_rec){(uint32_t)ev->gpu.name, (uint32_t)ev->gpu.stream, (int64_t)ev->t,
                                    (int64_t)(ev->t + ev->gpu.dur), ev->gpu.grid};
}

static void on_io(struct sp_file_rec *f, const struct sp_event *ev)
{
    const struct sp_ev_io *io = &ev->io;
    if (sp_io_op_is_read(io->op) && io->fd_kind == SP_FD_FILE && io->ret > 0) {
        f->read_bytes += (uint64_t)io->ret;
        f->read_ns += (int64_t)io->dur;
    }
}

static void on_cpu(struct sp_file_rec *f, const struct sp_event *ev)
{
    struct sp_cpu_span *c = &f->cpu;
    uint64_t ns = ev->cpu.user_ns + ev->cpu.sys_ns;
    if (!c->nsamples) {
        c->t0 = (int64_t)ev->t;
        c->ns0 = ns;
    } else {
        /* the first sample's busy figure covers nothing yet */
        c->busy_sum += ev->cpu.busy_permille;
    }
    c->t1 = (int64_t)ev->t;
    c->ns1 = ns;
    c->nsamples++;
    c->ncores = (uint32_t)ev->cpu.ncores;
}

static void note_held(struct file_scan *s, const struct sp_event *ev)
{
    const struct sp_ev_comm *c = &ev->comm;
    if ((c->kind != SP_COMM_INIT && c->kind != SP_COMM_SPLIT) || c->nranks == 0 || c->rank < 0 ||
        c->device < 0 || (c->result != 0 && c->result != NCCL_RESULT_IN_PROGRESS) ||
        s->nheld == MAX_HELD)
        return;
    s->held[s->nheld++] = (struct held){c->comm, (int64_t)c->nranks, c->rank, c->device};
}

static int cmp_devrank(const void *a, const void *b)
{
    const struct sp_dev_rank *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The ranks a process holds: its ranks in the largest communicator it
 * joined (the world), one per device.  Kept only when there are several:
 * a process with one GPU is its rank as before. */
static void find_devranks(struct file_scan *s)
{
    const struct held *world = NULL;
    for (int i = 0; i < s->nheld; i++)
        if (!world || s->held[i].nranks > world->nranks)
            world = &s->held[i];
    if (!world)
        return;
    struct sp_dev_rank dr[MAX_HELD];
    int n = 0;
    for (int i = 0; i < s->nheld; i++) {
        const struct held *h = &s->held[i];
        int seen = 0;
        for (int j = 0; j < n; j++)
            seen |= dr[j].device == h->device || dr[j].rank == h->rank;
        if (h->comm == world->comm && !seen)
            dr[n++] = (struct sp_dev_rank){(int32_t)h->device, (int32_t)h->rank};
    }
    if (n < 2 || !(s->f->devranks = malloc((size_t)n * sizeof dr[0])))
        return;
    qsort(dr, (size_t)n, sizeof dr[0], cmp_devrank);
    memcpy(s->f->devranks, dr, (size_t)n * sizeof dr[0]);
    s->f->ndevranks = n;
}

/* What every event adds whatever its type: the file's count and bounds. */
static void note_file_time(struct sp_file_rec *f, int64_t t_min, int64_t t_max, uint64_t n)
{
    if (!f->events || t_min < f->first_t)
        f->first_t = t_min;
    if (t_max > f->last_t)
        f->last_t = t_max;
    f->events += n;
}

/* A chunk's summary stands for its events' counts and times: the file's
 * bounds, and for the types pass 2 classifies, each thread's count,
 * latest start and disorder - exactly what note_tid makes of the events
 * one by one (the disorder within the chunk is the largest of the
 * summary's pair lags among those types; across chunks, how far the
 * chunk's earliest start falls below the thread's latest before it). */
static void on_summary(void *ctx, const struct sp_chunk_summary *cs)
{
    struct file_scan *s = ctx;
    struct sp_file_rec *f = s->f;
    if (!cs->events)
        return;
    int64_t lo = INT64_MAX, hi = INT64_MIN, clo = INT64_MAX, chi = INT64_MIN;
    uint64_t n = 0, lag = 0;
    uint32_t classified = cs->types & SP_MODEL_CLASSIFIED_TYPES;
    for (unsigned t = 1; t < SP_EV_MAX; t++) {
        if (!(cs->types & SP_TYPE_BIT(t)))
            continue;
        int64_t a = (int64_t)cs->t_min[t], b = (int64_t)cs->t_max[t];
        lo = a < lo ? a : lo;
        hi = b > hi ? b : hi;
        if (!(classified & SP_TYPE_BIT(t)))
            continue;
        clo = a < clo ? a : clo;
        chi = b > chi ? b : chi;
        n += cs->count[t];
        for (unsigned u = 1; u < SP_EV_MAX; u++)
            if ((classified & SP_TYPE_BIT(u)) && cs->lag[u][t] > lag)
                lag = cs->lag[u][t];
    }
    note_file_time(f, lo, hi, cs->events);
    /* The chunk's NCCL calls bound the collectives it adds, and about as
     * many NCCL kernels come with them: room at once, where doubling from
     * 64 copied both lists about twice over. */
    if (cs->count[SP_EV_NCCL]) {
        vec_reserve(&s->calls, cs->count[SP_EV_NCCL], sizeof(struct scan_call));
        vec_reserve(&s->kernels, cs->count[SP_EV_NCCL], sizeof(struct kernel));
    }
    f->gpu_events += cs->count[SP_EV_GPU];
    f->api_events += cs->count[SP_EV_CUDA] + cs->count[SP_EV_NCCL];
    if (!n)
        return;
    struct sp_tid_mark *m = tid_of(s, cs->tid);
    if (!m)
        return;
    m->count += n;
    if (m->max_t != INT64_MIN && m->max_t - clo > m->lag)
        m->lag = m->max_t - clo;
    if ((int64_t)lag > m->lag)
        m->lag = (int64_t)lag;
    if (chi > m->max_t)
        m->max_t = chi;
    m->last_t = m->max_t;
}

static inline __attribute__((always_inline)) void on_event(struct file_scan *s, const struct sp_reader *r,
                                                           const struct sp_event *ev)
{
    struct sp_file_rec *f = s->f;
    int64_t t = (int64_t)ev->t;
    int counted = s->summaries; /* counts and times came with the chunk's summary */
    if (!counted)
        note_file_time(f, t, t, 1);
    switch (ev->type) {
    case SP_EV_NCCL:
        if (!counted)
            f->api_events++;
        on_nccl(s, ev);
        if (s->kseq_full >= 0 && is_collective_op(ev->nccl.op))
            drop_kernel_seq(s);
        break;
    case SP_EV_COMM:
        note_held(s, ev);
        if (f->comm_rank < 0 && ev->comm.nranks > 0 && ev->comm.rank >= 0 &&
            (ev->comm.kind == SP_COMM_INIT || ev->comm.kind == SP_COMM_SPLIT) &&
            f->world_size > 0 && ev->comm.nranks == (uint64_t)f->world_size)
            f->comm_rank = (int32_t)ev->comm.rank;
        else if (f->comm_rank < 0 && ev->comm.rank >= 0 && f->world_size <= 0)
            f->comm_rank = (int32_t)ev->comm.rank;
        break;
    case SP_EV_GPU:
        if (!counted) {
            note_tid(s, ev->tid, t);
            f->gpu_events++;
        }
        if (ev->gpu.kind == SP_GPU_NCCL_KERNEL) {
            struct kernel *k = vec_push(&s->kernels, sizeof *k);
            if (k)
                *k = (struct kernel){t, t + (int64_t)ev->gpu.dur, ev->gpu.stream, ev->gpu.correlation,
                                     (int32_t)ev->gpu.device, 0};
        } else if (ev->gpu.kind == SP_GPU_KERNEL) {
            on_kernel(s, ev);
        }
        break;
    case SP_EV_IO:
        if (!counted)
            note_tid(s, ev->tid, t);
        on_io(f, ev);
        break;
    case SP_EV_CUDA:
        if (!counted)
            f->api_events++;
        /* fall through */
    case SP_EV_WAIT:
        if (!counted)
            note_tid(s, ev->tid, t);
        break;
    case SP_EV_CPU:
        on_cpu(f, ev);
        break;
    case SP_EV_MARKER:
        on_marker(s, r, ev);
        if (s->kseq_full >= 0 && s->marks.n)
            drop_kernel_seq(s);
        break;
    case SP_EV_DROPPED:
        f->dropped += ev->dropped.count;
        break;
    case SP_EV_PROC:
        /* A step window's edges (SCALEPROF_STEPS) fall between steps, with
         * the step number as status; a pause (the control file) has status
         * 0 or -1 and may fall inside one.  A START with a step number
         * closes a window's gap, not a pause. */
        if (ev->proc.kind == SP_PROC_EXIT && (ev->proc.pid == (int64_t)f->pid || ev->proc.pid == 0)) {
            f->exited = 1;
            f->exit_status = (int32_t)ev->proc.status;
        }
        if (ev->proc.kind == SP_PROC_STOP && s->pause_open < 0) {
            s->pause_open = t;
            s->pause_status = ev->proc.status;
        } else if (ev->proc.kind == SP_PROC_START && ev->proc.status > 0) {
            if (f->window_step < 0) {
                f->window_step = ev->proc.status;
                f->window_t = t;
            }
            s->pause_open = -1;
        } else if (ev->proc.kind == SP_PROC_START && s->pause_open >= 0) {
            struct sp_span *p = vec_push(&s->pauses, sizeof *p);
            if (p)
                *p = (struct sp_span){s->pause_open, t};
            s->pause_open = -1;
        }
        break;
    default:
        break;
    }
}

static int cmp_kernel(const void *a, const void *b)
{
    const struct kernel *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_call_stream(const void *a, const void *b)
{
    const struct scan_call *x = a, *y = b;
    if (x->stream != y->stream)
        return x->stream < y->stream ? -1 : 1;
    return (x->c.host_t > y->c.host_t) - (x->c.host_t < y->c.host_t);
}

static void use_kernel(struct sp_coll_call *c, struct kernel *k)
{
    k->used = 1;
    c->start = k->start;
    c->end = k->end;
    c->timing = SP_TIMING_GPU;
}

/* Calls [i, end) that one kernel ran: a group's calls on one stream are
 * launched together at ncclGroupEnd, so they share its kernel. */
static size_t unit_end(const struct scan_call *c, size_t nc, size_t i)
{
    size_t j = i + 1;
    while (c[i].group && j < nc && c[j].group == c[i].group && c[j].stream == c[i].stream)
        j++;
    return j;
}

/* Correlation first; then by order per stream among the rest, a group's
 * calls taking one kernel.  When the calls' and kernels' stream numbers
 * never meet (a runtime that names streams differently), order over all
 * streams is the best left. */
static void match_kernels_in(struct scan_call *c, size_t nc, struct kernel *k, size_t nk)
{
    if (!nk)
        return;
    for (size_t i = 0; i < nc; i++)
        if (c[i].corr)
            for (size_t j = 0; j < nk; j++)
                if (!k[j].used && k[j].corr == c[i].corr) {
                    use_kernel(&c[i].c, &k[j]);
                    break;
                }
    if (!nc)
        return; /* kernels with no call to match (and qsort must not see NULL) */
    sp_sort(c, nc, sizeof *c, cmp_call_stream);
    sp_sort(k, nk, sizeof *k, cmp_kernel);
    int streams_meet = 0;
    for (size_t i = 0, j = 0; i < nc && j < nk;) {
        if (c[i].stream == k[j].stream) {
            streams_meet = 1;
            break;
        }
        if (c[i].stream < k[j].stream)
            i++;
        else
            j++;
    }
    size_t j = 0;
    for (size_t i = 0; i < nc;) {
        size_t end = unit_end(c, nc, i);
        if (c[i].c.timing != SP_TIMING_GPU) {
            while (j < nk && (k[j].used || (streams_meet && k[j].stream < c[i].stream)))
                j++;
            if (j < nk && (!streams_meet || k[j].stream == c[i].stream)) {
                for (size_t x = i; x < end; x++)
                    if (c[x].c.timing != SP_TIMING_GPU)
                        use_kernel(&c[x].c, &k[j]);
                j++;
            }
        }
        i = end;
    }
}

static int cmp_call_device(const void *a, const void *b)
{
    const struct scan_call *x = a, *y = b;
    return (x->c.device > y->c.device) - (x->c.device < y->c.device);
}

static int cmp_kernel_device(const void *a, const void *b)
{
    const struct kernel *x = a, *y = b;
    return (x->device > y->device) - (x->device < y->device);
}

/* A process that drives several GPUs matches each device's calls with
 * that device's kernels: stream order means nothing across devices. */
static void match_kernels(struct file_scan *s)
{
    struct scan_call *c = s->calls.p;
    struct kernel *k = s->kernels.p;
    size_t nc = s->calls.n, nk = s->kernels.n;
    if (!s->f->ndevranks) {
        match_kernels_in(c, nc, k, nk);
        return;
    }
    if (!nc || !nk)
        return;
    qsort(c, nc, sizeof *c, cmp_call_device);
    qsort(k, nk, sizeof *k, cmp_kernel_device);
    for (size_t i = 0, j = 0; i < nc;) {
        size_t ie = i, je;
        while (ie < nc && c[ie].c.device == c[i].c.device)
            ie++;
        while (j < nk && k[j].device < c[i].c.device)
            j++;
        for (je = j; je < nk && k[je].device == c[i].c.device;)
            je++;
        match_kernels_in(c + i, ie - i, k + j, je - j);
        i = ie;
        j = je;
    }
}

/* Pass 1 reads every event, but of the many (kernels, their launches)
 * it keeps little: a launch's time, a kernel's kind and what matches an
 * NCCL kernel to its call or names a single-GPU step.  The reader leaves
 * the rest of those types unread (their columns are never touched). */
#define PASS1_GPU_FIELDS                                                             \
    (SP_FIELD_BIT(gpu, kind) | SP_FIELD_BIT(gpu, stream) | SP_FIELD_BIT(gpu, name) | \
     SP_FIELD_BIT(gpu, correlation) | SP_FIELD_BIT(gpu, device) | SP_FIELD_BIT(gpu, grid))
static void ask_pass1_fields(struct sp_reader *r)
{
    sp_reader_set_fields(r, SP_EV_CUDA, 0);
    sp_reader_set_fields(r, SP_EV_WAIT, 0);
    sp_reader_set_fields(r, SP_EV_GPU, PASS1_GPU_FIELDS);
    sp_reader_set_fields(r, SP_EV_IO,
                         SP_FIELD_BIT(io, op) | SP_FIELD_BIT(io, fd_kind) | SP_FIELD_BIT(io, ret));
    /* A call's element count (a four-byte varint in most calls), group
     * depth and result are not the pass's (on_nccl, track_group). */
    sp_reader_set_fields(r, SP_EV_NCCL,
                         ~(SP_FIELD_BIT(nccl, count) | SP_FIELD_BIT(nccl, group_depth) | SP_FIELD_BIT(nccl, result)));
}

/* With the chunks' summaries counting the GPU events, on_event looks
 * only at kernels (the kernel sequence) and NCCL kernels: the reader
 * hands out no others. */
static void select_kernels(struct sp_reader *r, uint64_t kinds)
{
    uint64_t lo, span;
    sp_trace_window(r, &lo, &span);
    sp_reader_select(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind), kinds, lo, span);
}

static int pass1_open(void *ctx, struct sp_reader *r)
{
    struct file_scan *s = ctx;
    struct sp_file_rec *f = s->f;
    const struct sp_file_info *info = sp_reader_info(r);
    f->ok = 1;
    snprintf(f->host, sizeof f->host, "%s", info->host[0] ? info->host : "unknown");
    snprintf(f->source, sizeof f->source, "%s", info->source[0] ? info->source : "preload");
    f->pid = info->hdr.pid;
    f->ppid = info->hdr.ppid;
    snprintf(f->run, sizeof f->run, "%s", info->run);
    f->hdr_rank = info->hdr.rank;
    f->world_size = info->hdr.world_size;
    f->flags = info->hdr.flags;
    f->start_mono = (int64_t)info->hdr.start_mono;
    f->start_real = (int64_t)info->hdr.start_real;
    ask_pass1_fields(r);
    /* With summaries, the types pass 1 only counts are never decoded. */
    s->summaries = sp_reader_set_summary(r, on_summary, s) == 0;
    if (!s->summaries)
        sp_reader_set_types(r, SP_TYPES_ALL);
    return 0;
}

static inline __attribute__((always_inline)) int pass1_event(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    on_event(ctx, r, ev);
    return 0;
}

/* Once the kernel sequence is gone for good, kernels' names and thread
 * counts are no longer needed: the reader leaves them unread from the
 * next chunk on, and (with summaries) hands out the NCCL kernels alone
 * from its next block of GPU events on.  On the collective-heavy mix the
 * kernels are nine GPU events in ten, and half of what pass 1 was given. */
static void pass1_every(void *ctx, struct sp_reader *r)
{
    struct file_scan *s = ctx;
    if (!s->names_dropped && s->kseq_full != 0) {
        sp_reader_set_fields(r, SP_EV_GPU, PASS1_GPU_FIELDS & ~(SP_FIELD_BIT(gpu, name) | SP_FIELD_BIT(gpu, grid)));
        if (s->summaries)
            select_kernels(r, UINT64_C(1) << SP_GPU_NCCL_KERNEL);
        s->names_dropped = 1;
    }
}

static void pass1_close(void *ctx, struct sp_reader *r)
{
    struct file_scan *s = ctx;
    struct sp_file_rec *f = s->f;
    const struct sp_file_info *info = sp_reader_info(r);
    if (info->hdr.events_dropped > f->dropped)
        f->dropped = info->hdr.events_dropped;
    const char *diag = sp_reader_diag(r);
    if (diag && diag[0] && asprintf(&f->diag, "%s: %s", f->path, diag) < 0)
        f->diag = NULL;
    size_t len = f->diag ? strlen(f->diag) : 0;
    if (len && f->diag[len - 1] == '\n')
        f->diag[len - 1] = 0; /* the reader ends each line: the warning is one */
}

/* The types pass 1 reads event by event; the others it only counts, from
 * the chunks' summaries. */
#define PASS1_TYPES                                                               \
    (SP_TYPE_BIT(SP_EV_NCCL) | SP_TYPE_BIT(SP_EV_COMM) | SP_TYPE_BIT(SP_EV_GPU) | \
     SP_TYPE_BIT(SP_EV_IO) | SP_TYPE_BIT(SP_EV_MARKER) | SP_TYPE_BIT(SP_EV_CPU) | \
     SP_TYPE_BIT(SP_EV_DROPPED) | SP_TYPE_BIT(SP_EV_PROC))

/* Pass 1's `every` only drops what the reader no longer needs to decode
 * (pass1_every), which it can do soon after the first collective. */
#define PASS1_EVERY 256
static const struct sp_pass pass1 = {
    .types = PASS1_TYPES,
    .tool = {.any = pass1_event},
    .open = pass1_open,
    .every = pass1_every,
    .every_events = PASS1_EVERY,
    .close = pass1_close,
};

static void scan_file(struct sp_file_rec *f, const regex_t *re)
{
    struct file_scan s = {.f = f, .re = re, .pause_open = -1};
    int err = 0;
    if (sp_trace_feed(f->path, &pass1, &s, &err) < 0 && err) {
        if (asprintf(&f->diag, "%s: not readable as a trace (%s)", f->path, sp_strerror(err)) < 0)
            f->diag = NULL;
    }
    find_devranks(&s);
    match_kernels(&s);
    /* without room for its pass the file keeps none of it, as if empty */
    struct sp_file_pass lost = {0}, *fp = calloc(1, sizeof *fp);
    f->pass = fp;
    if (!fp)
        fp = &lost;
    const struct scan_call *sc = s.calls.p;
    fp->calls = malloc((s.calls.n + 1) * sizeof *fp->calls);
    for (size_t i = 0; fp->calls && i < s.calls.n; i++)
        fp->calls[i] = sc[i].c;
    fp->ncalls = fp->calls ? s.calls.n : 0;
    free(s.calls.p);
    fp->marks = s.marks.p;
    fp->nmarks = s.marks.n;
    fp->tids = s.tids.p;
    fp->ntids = s.tids.n;
    fp->kseq = s.kseq.p;
    fp->nkseq = s.kseq.n;
    fp->kseq_full = s.kseq_full;
    if (fp == &lost) {
        free(lost.calls);
        free(lost.marks);
        free(lost.tids);
        free(lost.kseq);
    }
    if (s.pause_open >= 0 && s.pause_status <= 0) { /* paused to the end (not a window's close) */
        struct sp_span *p = vec_push(&s.pauses, sizeof *p);
        if (p)
            *p = (struct sp_span){s.pause_open, f->last_t + 1};
    }
    f->pauses = s.pauses.p;
    f->npauses = s.pauses.n;
    free(s.kernels.p);
    free(s.stacks.p);
}

/* ---- the pool job with progress ---- */

struct scan_job {
    struct sp_model *m;
    regex_t re;
    int done;
    pthread_mutex_t lock;
};

static void scan_one(int i, void *arg)
{
    struct scan_job *j = arg;
    scan_file(&j->m->frecs[i], &j->re);
    pthread_mutex_lock(&j->lock);
    j->done++;
    sp_model_progress(j->m, "read", j->done, j->m->nfrecs);
    pthread_mutex_unlock(&j->lock);
}

/* ---- grouping ---- */

/* Lookups while grouping, each of which was a pass over every file, rank
 * or host (quadratic at thousands of files): the readable files by (host,
 * pid, index), where a parent - the first file in order on the host with
 * the ppid's pid - is found by a search; per rank number below nrank_at,
 * its index in m->ranks + 1 (0: none yet); the host last looked up.
 * Without the index (no memory), the passes. */
struct sp_pid_ref {
    const char *host;
    int32_t pid;
    int idx;
};
struct sp_group_index {
    struct sp_pid_ref *by_pid;
    int nby_pid;
    int *rank_at;
    int nrank_at;
    int last_host; /* -1 none */
    int ranks_cap; /* room in m->ranks (grown by doubling while grouping) */
};

static int cmp_pid_ref(const void *a, const void *b)
{
    const struct sp_pid_ref *x = a, *y = b;
    int c = strcmp(x->host, y->host);
    if (c)
        return c;
    if (x->pid != y->pid)
        return x->pid < y->pid ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Rank numbers past this (a damaged header) are looked up by the pass. */
#define RANK_AT_MAX (1 << 22)

static void index_open(struct sp_model *m)
{
    struct sp_group_index *x = calloc(1, sizeof *x);
    if (!x)
        return;
    x->last_host = -1;
    x->by_pid = malloc(((size_t)m->nfrecs + 1) * sizeof *x->by_pid);
    int top = m->nfrecs;
    for (int i = 0; i < m->nfrecs; i++) {
        const struct sp_file_rec *f = &m->frecs[i];
        if (f->ok && f->hdr_rank > top && f->hdr_rank < RANK_AT_MAX)
            top = f->hdr_rank;
        if (f->ok && f->comm_rank > top && f->comm_rank < RANK_AT_MAX)
            top = f->comm_rank;
        for (int d = 0; f->ok && d < f->ndevranks; d++)
            if (f->devranks[d].rank > top && f->devranks[d].rank < RANK_AT_MAX)
                top = f->devranks[d].rank;
    }
    x->nrank_at = top + 1;
    x->rank_at = calloc((size_t)x->nrank_at, sizeof *x->rank_at);
    if (!x->by_pid || !x->rank_at) {
        free(x->by_pid);
        free(x->rank_at);
        free(x);
        return;
    }
    for (int i = 0; i < m->nfrecs; i++)
        if (m->frecs[i].ok)
            x->by_pid[x->nby_pid++] = (struct sp_pid_ref){m->frecs[i].host, m->frecs[i].pid, i};
    qsort(x->by_pid, (size_t)x->nby_pid, sizeof *x->by_pid, cmp_pid_ref);
    for (int i = 0; i < m->nranks; i++) /* the ranks there are already: the first of a number */
        if (m->ranks[i].rank >= 0 && m->ranks[i].rank < x->nrank_at && !x->rank_at[m->ranks[i].rank])
            x->rank_at[m->ranks[i].rank] = i + 1;
    x->ranks_cap = m->nranks;
    m->grouping = x;
}

static void index_close(struct sp_model *m)
{
    if (!m->grouping)
        return;
    free(m->grouping->by_pid);
    free(m->grouping->rank_at);
    free(m->grouping);
    m->grouping = NULL;
}

/* The first of the files by pid with this host and pid (nby_pid when none). */
static int first_with_pid(const struct sp_group_index *x, const char *host, int32_t pid)
{
    int a = 0, b = x->nby_pid;
    while (a < b) {
        int mid = a + (b - a) / 2;
        const struct sp_pid_ref *g = &x->by_pid[mid];
        int c = strcmp(g->host, host);
        if (c < 0 || (c == 0 && g->pid < pid))
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

static int same_pid(const struct sp_group_index *x, int at, const char *host, int32_t pid)
{
    return at < x->nby_pid && x->by_pid[at].pid == pid && !strcmp(x->by_pid[at].host, host);
}

static struct sp_file_rec *parent_of(struct sp_model *m, const struct sp_file_rec *f)
{
    const struct sp_group_index *x = m->grouping;
    if (x) {
        for (int at = first_with_pid(x, f->host, f->ppid); same_pid(x, at, f->host, f->ppid); at++)
            if (&m->frecs[x->by_pid[at].idx] != f)
                return &m->frecs[x->by_pid[at].idx];
        return NULL;
    }
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *p = &m->frecs[i];
        if (p->ok && p != f && p->pid == f->ppid && !strcmp(p->host, f->host))
            return p;
    }
    return NULL;
}

static int own_rank(const struct sp_file_rec *f)
{
    return f->hdr_rank >= 0 ? f->hdr_rank : f->comm_rank;
}

/* A file's rank, and whether it is a helper of that rank.  A process whose
 * parent (on the same host) belongs to a rank is that rank's helper - a
 * DataLoader worker forked after NCCL init inherits RANK in its header but
 * opened no communicator - unless it has a communicator of its own or its
 * header names another rank (a launcher process that is itself a rank). */
static int resolve_rank(struct sp_model *m, struct sp_file_rec *f, int *helper)
{
    *helper = 0;
    const struct sp_file_rec *p = f;
    int parent_rank = -1;
    for (int hops = 0; parent_rank < 0 && hops < MAX_PARENT_HOPS; hops++) {
        p = parent_of(m, p);
        if (!p)
            break;
        parent_rank = own_rank(p);
    }
    int own = own_rank(f);
    if (parent_rank >= 0 && f->comm_rank < 0 && (own < 0 || own == parent_rank)) {
        *helper = 1;
        return parent_rank;
    }
    return own;
}

/* The first host of that name, else a new one.  Files come host by host
 * (sorted by path): the last one found is tried first, and kept when it
 * holds the name as given (a name with a control byte is stored changed,
 * and is found by no lookup). */
static int host_index(struct sp_model *m, const char *host)
{
    struct sp_group_index *x = m->grouping;
    if (x && x->last_host >= 0 && x->last_host < m->nhosts && !strcmp(m->hosts[x->last_host], host))
        return x->last_host;
    for (int i = 0; i < m->nhosts; i++)
        if (!strcmp(m->hosts[i], host)) {
            if (x)
                x->last_host = i;
            return i;
        }
    void *p = realloc(m->hosts, (size_t)(m->nhosts + 1) * sizeof *m->hosts);
    if (!p)
        return 0;
    m->hosts = p;
    snprintf(m->hosts[m->nhosts], sizeof m->hosts[0], "%s", host);
    /* a host name is printed in every verb's output: no control byte of it
     * reaches a terminal (it stays the key the files are grouped by, above) */
    for (char *c = m->hosts[m->nhosts]; *c; c++)
        if ((unsigned char)*c < 32 || *c == 127)
            *c = '?';
    if (x && !strcmp(m->hosts[m->nhosts], host))
        x->last_host = m->nhosts;
    return m->nhosts++;
}

#define RANKS_FIRST 64
static struct sp_rank *rank_slot(struct sp_model *m, int rank)
{
    struct sp_group_index *x = m->grouping;
    int mapped = x && rank >= 0 && rank < x->nrank_at;
    if (mapped && x->rank_at[rank])
        return &m->ranks[x->rank_at[rank] - 1];
    for (int i = 0; !mapped && i < m->nranks; i++)
        if (m->ranks[i].rank == rank)
            return &m->ranks[i];
    /* Room by doubling: a rank at a time, the ranks (over a KiB each) were
     * copied over and over, quadratic in the ranks of the job. */
    int cap = m->nranks + 1;
    if (x && m->nranks < x->ranks_cap)
        cap = x->ranks_cap;
    else if (x)
        cap = m->nranks < RANKS_FIRST ? RANKS_FIRST : 2 * m->nranks;
    if (!x || cap != x->ranks_cap) {
        void *p = realloc(m->ranks, (size_t)cap * sizeof *m->ranks);
        if (!p)
            return NULL;
        m->ranks = p;
        if (x)
            x->ranks_cap = cap;
    }
    if (mapped)
        x->rank_at[rank] = m->nranks + 1;
    struct sp_rank *r = &m->ranks[m->nranks++];
    memset(r, 0, sizeof *r);
    r->rank = rank;
    r->host = -1;
    r->machine_busy = -1;
    r->device = -1;
    r->shared = 1;
    return r;
}

static int cmp_rank(const void *a, const void *b)
{
    return ((const struct sp_rank *)a)->rank - ((const struct sp_rank *)b)->rank;
}

static int cmp_mark(const void *a, const void *b)
{
    const struct sp_mark *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int cmp_call_start(const void *a, const void *b)
{
    const struct sp_coll_call *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Appends f's calls to r: all of them (device -1), or those that ran on
 * the device when f's process holds several ranks. */
static int append_file(struct sp_rank *r, struct sp_file_rec *f, int device)
{
    const struct sp_file_pass *fp = sp_file_pass_of(f);
    if (device < 0 && !r->ncalls && f->pass && f->pass->calls) {
        /* The rank's first calls: the file's list becomes the rank's (the
         * file's own goes once grouping is done), not a copy into fresh
         * pages, a few hundred KiB a rank of a long job. */
        free(r->calls);
        r->calls = f->pass->calls;
        r->ncalls = f->pass->ncalls;
        f->pass->calls = NULL;
        f->pass->ncalls = 0;
    }
    void *p = realloc(r->files, (size_t)(r->nfiles + 1) * sizeof *r->files);
    void *c = realloc(r->calls, (r->ncalls + fp->ncalls + 1) * sizeof *r->calls);
    void *k = realloc(r->marks, (r->nmarks + fp->nmarks + 1) * sizeof *r->marks);
    if (p)
        r->files = p;
    if (c)
        r->calls = c;
    if (k)
        r->marks = k;
    if (!p || !c || !k)
        return -1;
    r->files[r->nfiles++] = f;
    if (device >= 0) {
        for (size_t i = 0; i < fp->ncalls; i++)
            if (fp->calls[i].device == device)
                r->calls[r->ncalls++] = fp->calls[i];
    } else {
        if (fp->ncalls)
            memcpy(r->calls + r->ncalls, fp->calls, fp->ncalls * sizeof *fp->calls);
        r->ncalls += fp->ncalls;
    }
    if (fp->nmarks)
        memcpy(r->marks + r->nmarks, fp->marks, fp->nmarks * sizeof *fp->marks);
    r->nmarks += fp->nmarks;
    if (f->events && (!r->events || f->first_t < r->first_t))
        r->first_t = f->first_t;
    if (f->last_t > r->last_t)
        r->last_t = f->last_t;
    r->events += f->events;
    return 0;
}

/* Reads and CPU samples: the evidence input_pipeline quotes. */
static void add_input_evidence(struct sp_rank *r, const struct sp_file_rec *f)
{
    r->read_bytes += f->read_bytes;
    r->read_ns += f->read_ns;
    const struct sp_cpu_span *c = &f->cpu;
    if (c->nsamples < 2 || c->t1 <= c->t0)
        return;
    if (f->helper) {
        r->helper_cpu += (double)(c->ns1 - c->ns0) / (double)(c->t1 - c->t0);
        r->helper_sampled++;
    }
    if (r->machine_busy < 0 || !f->helper) {
        r->machine_busy = (double)c->busy_sum / (double)(c->nsamples - 1) / 1000.0;
        r->ncores = (int)c->ncores;
    }
}

static int cmp_file_pid(const void *a, const void *b)
{
    const struct sp_file_rec *x = *(struct sp_file_rec *const *)a;
    const struct sp_file_rec *y = *(struct sp_file_rec *const *)b;
    return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Whether a process that used a GPU descends from another that did (on the
 * same host): a worker that touched the GPU is still its parent's helper. */
static int has_gpu_ancestor(struct sp_model *m, const struct sp_file_rec *f)
{
    const struct sp_file_rec *p = f;
    for (int hops = 0; hops < MAX_PARENT_HOPS; hops++) {
        p = parent_of(m, p);
        if (!p)
            return 0;
        if (p->gpu_events)
            return 1;
    }
    return 0;
}

/* A job that used no GPU and names no rank - a training loop on CPUs,
 * started by hand - still has a process that is the job: the first one
 * recorded whose parent was not (its DataLoader workers are its children
 * and attach to it as helpers).  It becomes rank 0, so that the host-side
 * report (analyses/host.c) has a loop to look at; said in a warning.  A
 * job of several unrelated top processes (a shell that started two) is
 * left unranked: which of them is the loop is a guess too far. */
static void rank_unranked_cpu_processes(struct sp_model *m)
{
    struct sp_file_rec *root = NULL;
    int roots = 0;
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok)
            continue;
        if (f->gpu_events)
            return;
        if (parent_of(m, f))
            continue;
        if (!root || f->pid != root->pid || strcmp(f->host, root->host))
            roots++;
        if (!root || f->start_mono < root->start_mono)
            root = f;
    }
    if (roots != 1)
        return;
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *f = &m->frecs[i];
        if (f->ok && f->pid == root->pid && !strcmp(f->host, root->host)) {
            f->hdr_rank = 0;
            f->world_size = 1;
        }
    }
    sp_model_warn(m, "no rank named in any trace and no GPU used: process %d, the one the others "
                     "descend from, is taken as the job's only rank (a CPU-only job)",
                  (int)root->pid);
}

/* A job started without torchrun, MPI or Slurm - the usual single-GPU run,
 * the baseline of every `compare` - names no rank anywhere, and without
 * NCCL no communicator names one either.  Its processes that used a GPU
 * (kernels or copies recorded), and whose ancestors did not, are then its
 * ranks, in pid order; their children attach to them as helpers like any
 * DataLoader worker.  Said in a warning, since it is a guess. */
static void rank_unranked_gpu_processes(struct sp_model *m)
{
    struct sp_file_rec **gpu = calloc((size_t)m->nfrecs + 1, sizeof *gpu);
    int n = 0;
    if (!gpu)
        return;
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok)
            continue;
        if (own_rank(f) >= 0) {
            free(gpu);
            return;
        }
        if (f->gpu_events && !has_gpu_ancestor(m, f))
            gpu[n++] = f;
    }
    qsort(gpu, (size_t)n, sizeof *gpu, cmp_file_pid);
    for (int i = 0; i < n; i++) {
        gpu[i]->hdr_rank = i;
        gpu[i]->world_size = n;
    }
    if (n == 0) {
        free(gpu);
        rank_unranked_cpu_processes(m);
        return;
    }
    if (n == 1)
        sp_model_warn(m, "no rank named in any trace: the one process that used a GPU "
                         "(pid %d) is taken as a single-GPU job's rank 0",
                      (int)gpu[0]->pid);
    else if (n > 1)
        sp_model_warn(m, "no rank named in any trace: the %d processes that used a GPU are "
                         "taken as ranks 0..%d in pid order",
                      n, n - 1);
    free(gpu);
}

/* A process that holds several ranks becomes each of them: a rank gets
 * the GPU events of its device and the NCCL calls of its communicator
 * rank (pass 1 split them by device), and shares the process's host-side
 * events (CUDA calls, waits, input) with the others. */
static void attach_shared(struct sp_model *m, struct sp_file_rec *f)
{
    char list[256];
    size_t used = 0;
    list[0] = 0;
    for (int i = 0; i < f->ndevranks; i++) {
        struct sp_rank *r = rank_slot(m, f->devranks[i].rank);
        if (!r)
            continue;
        r->device = f->devranks[i].device;
        r->shared = f->ndevranks;
        add_input_evidence(r, f);
        if (r->host < 0)
            r->host = host_index(m, f->host);
        append_file(r, f, r->device);
        if (used + 32 < sizeof list)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%d on GPU %d", i ? ", " : "",
                                     f->devranks[i].rank, f->devranks[i].device);
    }
    m->flags_any |= f->flags;
    if (!m->source[0] || strcmp(f->source, "preload"))
        snprintf(m->source, sizeof m->source, "%s", f->source);
    m->multi_rank_procs++;
    sp_model_warn(m, "process %d on %s holds %d ranks (%s): each GPU event goes to the rank of its "
                     "device, each NCCL call to the rank of its communicator rank; its host-side "
                     "events (CUDA calls, waits, input) are shared by those ranks",
                  (int)f->pid, f->host, f->ndevranks, list);
}

/* Processes that hold a rank, each counted once (a rank's process may
 * have left more than one file: exec). */
static int count_rank_procs(const struct sp_model *m)
{
    int n = 0;
    for (int i = 0; i < m->nfrecs; i++) {
        const struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok || f->helper || f->rank < 0)
            continue;
        int dup = 0;
        const struct sp_group_index *x = m->grouping;
        if (x) { /* the files before it with its host and pid */
            for (int at = first_with_pid(x, f->host, f->pid);
                 !dup && same_pid(x, at, f->host, f->pid) && x->by_pid[at].idx < i; at++) {
                const struct sp_file_rec *g = &m->frecs[x->by_pid[at].idx];
                dup = !g->helper && g->rank >= 0;
            }
        }
        for (int j = 0; !x && j < i && !dup; j++) {
            const struct sp_file_rec *g = &m->frecs[j];
            dup = g->ok && !g->helper && g->rank >= 0 && g->pid == f->pid && !strcmp(g->host, f->host);
        }
        n += !dup;
    }
    return n;
}

static void group_files(struct sp_model *m)
{
    int unowned = 0;
    rank_unranked_gpu_processes(m);
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok)
            continue;
        int helper;
        f->rank = resolve_rank(m, f, &helper);
        m->events += f->events;
        m->dropped += f->dropped;
        if (f->world_size > m->world_size)
            m->world_size = f->world_size;
        if (f->rank < 0)
            continue;
        if (f->ndevranks > 1 && !helper) {
            f->rank = f->devranks[0].rank;
            m->gpu_events += f->gpu_events;
            m->api_events += f->api_events;
            attach_shared(m, f);
            continue;
        }
        struct sp_rank *r = rank_slot(m, f->rank);
        if (!r)
            continue;
        if (helper) {
            f->helper = 1;
            r->nhelpers++;
            add_input_evidence(r, f);
            continue;
        }
        add_input_evidence(r, f);
        m->gpu_events += f->gpu_events;
        m->api_events += f->api_events;
        if (r->host < 0)
            r->host = host_index(m, f->host);
        m->flags_any |= f->flags;
        if (!m->source[0] || strcmp(f->source, "preload"))
            snprintf(m->source, sizeof m->source, "%s", f->source);
        append_file(r, f, -1);
    }
    /* a process that is an ancestor of a rank's (torchrun, scaleprof run,
     * mpirun) is the launcher, not a lost file */
    char *launcher = calloc((size_t)m->nfrecs + 1, 1);
    for (int i = 0; launcher && i < m->nfrecs; i++) {
        const struct sp_file_rec *p = &m->frecs[i];
        if (!p->ok || p->rank < 0 || p->helper)
            continue;
        for (int hops = 0; hops < MAX_PARENT_HOPS && (p = parent_of(m, p)); hops++)
            launcher[p - m->frecs] = 1;
    }
    for (int i = 0; i < m->nfrecs; i++)
        unowned += m->frecs[i].ok && m->frecs[i].rank < 0 && !(launcher && launcher[i]);
    free(launcher);
    if (unowned)
        sp_model_warn(m, "%d process file(s) belong to no rank (no rank in header, no "
                         "communicator, no ranked parent): not analyzed",
                      unowned);
    /* The ranks hold their files' calls and markers now: the files' own
     * copies, as long as the trace, go. */
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_pass *fp = m->frecs[i].pass;
        if (!fp)
            continue;
        free(fp->calls);
        free(fp->marks);
        fp->calls = NULL;
        fp->marks = NULL;
        fp->ncalls = fp->nmarks = 0;
    }
    m->rank_procs = count_rank_procs(m);
    m->gpus = m->nranks;
    if (m->nranks)
        qsort(m->ranks, (size_t)m->nranks, sizeof *m->ranks, cmp_rank);
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        if (r->host < 0)
            r->host = host_index(m, "unknown");
        sp_sort(r->calls, r->ncalls, sizeof *r->calls, cmp_call_start);
        sp_sort(r->marks, r->nmarks, sizeof *r->marks, cmp_mark);
    }
}

/* Whether a is b or one of b's ancestors (same host, ppid chain). */
static int is_ancestor(struct sp_model *m, const struct sp_file_rec *a, const struct sp_file_rec *b)
{
    const struct sp_file_rec *p = b;
    for (int hops = 0; p && hops <= MAX_PARENT_HOPS; hops++, p = parent_of(m, p))
        if (p->pid == a->pid && !strcmp(p->host, a->host))
            return 1;
    return 0;
}

/* A process that works as the rank: it opened a communicator or its GPU ran work. */
static int drives_gpu(const struct sp_file_rec *f)
{
    return f->comm_rank >= 0 || f->gpu_events > 0;
}

/* The wall-clock span of a file's events, ns. */
static void real_span(const struct sp_file_rec *f, int64_t *lo, int64_t *hi)
{
    *lo = f->start_real + (f->first_t - f->start_mono);
    *hi = f->start_real + (f->last_t - f->start_mono);
}

/* Two processes that drive a GPU as the same rank, at the same
 * time, neither the other's ancestor nor the same process (an exec keeps
 * the pid): two jobs' traces in one directory, or a launcher that gave two
 * processes one RANK.  Their calls are analyzed as one rank's: said once
 * per rank, with both processes. */
static void warn_duplicate_ranks(struct sp_model *m)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (int a = 0; a < r->nfiles; a++) {
            const struct sp_file_rec *x = r->files[a];
            int found = 0;
            for (int b = a + 1; !found && b < r->nfiles; b++) {
                const struct sp_file_rec *y = r->files[b];
                if (!drives_gpu(x) || !drives_gpu(y) || (x->pid == y->pid && !strcmp(x->host, y->host)) ||
                    is_ancestor(m, x, y) || is_ancestor(m, y, x))
                    continue;
                int64_t xl, xh, yl, yh;
                real_span(x, &xl, &xh);
                real_span(y, &yl, &yh);
                if (xl >= yh || yl >= xh)
                    continue; /* one after the other: a restarted job */
                sp_model_warn(m, "rank %d is claimed by two processes that ran at the same time, pid %d on %s and "
                                 "pid %d on %s (two jobs' traces in one directory, or two processes given one "
                                 "RANK): their calls are analyzed as one rank's",
                              r->rank, (int)x->pid, x->host, (int)y->pid, y->host);
                found = 1;
            }
            if (found)
                break;
        }
    }
}

int sp_model_file_open(const struct sp_file_rec *f)
{
    char host[256] = "", path[PATH_MAX], maps[64], line[PATH_MAX + 256];
    if (gethostname(host, sizeof host - 1) != 0 || strcmp(host, f->host) || f->pid <= 0 ||
        !realpath(f->path, path))
        return 0;
    snprintf(maps, sizeof maps, "/proc/%d/maps", (int)f->pid);
    FILE *in = fopen(maps, "r");
    if (!in)
        return 0;
    int found = 0;
    size_t pl = strlen(path);
    while (!found && fgets(line, sizeof line, in)) {
        size_t l = strlen(line);
        while (l && (line[l - 1] == '\n' || line[l - 1] == ' '))
            line[--l] = 0;
        found = l >= pl && !strcmp(line + l - pl, path);
    }
    fclose(in);
    return found;
}

static void warn_losses(struct sp_model *m)
{
    int helpers_killed = 0;
    for (int i = 0; i < m->nfrecs; i++) {
        struct sp_file_rec *f = &m->frecs[i];
        if (f->diag) {
            sp_model_warn(m, "damaged or unreadable file: %s", f->diag);
            m->files_bad++;
        }
        if (f->ok && f->dropped)
            sp_model_warn(m, "%s: %llu events were dropped while recording", f->path,
                          (unsigned long long)f->dropped);
        if (f->ok && !(f->flags & SP_FLAG_CLOSED) && !(f->flags & SP_FLAG_IMPORTED)) {
            if (sp_model_file_open(f))
                sp_model_warn(m, "%s: its process (pid %d) is still running: the events recorded so far "
                                 "are used",
                              f->path, (int)f->pid);
            else if (f->helper)
                helpers_killed++; /* loader workers are ended by their parent by design */
            else
                sp_model_warn(m, "%s: not closed cleanly (process killed?): events up to the "
                                 "kill are used",
                              f->path);
        }
    }
    if (helpers_killed)
        sp_model_warn(m, "%d helper process(es) (loader workers) ended without closing their traces, as "
                         "workers their parent terminates do: their events up to then are used",
                      helpers_killed);
    /* ranks the world size promises but no trace holds; the world size is
     * believed only as far as the traces go (a header claiming 2^31 ranks
     * costs nothing) */
    int top = m->nranks ? m->ranks[m->nranks - 1].rank : -1;
    int bound = m->world_size < top + 1 + MAX_MISSING ? m->world_size : top + 1 + MAX_MISSING;
    if (bound > 0 && (m->missing_ranks = malloc(sizeof *m->missing_ranks * (size_t)bound))) {
        for (int r = 0, i = 0; r < bound; r++) {
            while (i < m->nranks && m->ranks[i].rank < r)
                i++;
            if (i >= m->nranks || m->ranks[i].rank != r)
                m->missing_ranks[m->nmissing++] = r;
        }
    }
    if (m->nmissing) {
        char list[512];
        size_t used = 0;
        list[0] = 0;
        for (int i = 0; i < m->nmissing && used + 32 < sizeof list; i++) {
            int j = i;
            while (j + 1 < m->nmissing && m->missing_ranks[j + 1] == m->missing_ranks[j] + 1)
                j++;
            used += (size_t)(j > i ? snprintf(list + used, sizeof list - used, "%s%d-%d", i ? "," : "",
                                              m->missing_ranks[i], m->missing_ranks[j])
                                   : snprintf(list + used, sizeof list - used, "%s%d", i ? "," : "",
                                              m->missing_ranks[i]));
            if (j + 1 < m->nmissing && used + 32 >= sizeof list)
                snprintf(list + used, sizeof list - used, ",...");
            i = j;
        }
        sp_model_warn(m, "%d rank%s missing: world size is %d but no trace of rank%s %s was found", m->nmissing,
                      m->nmissing == 1 ? " is" : "s are", m->world_size, m->nmissing == 1 ? "" : "s", list);
    }
    if (m->flags_any & SP_FLAG_NO_FILE_IO)
        sp_model_warn(m, "source %s records no file I/O: idle_input counts only the data-loader "
                         "waits it saw; file reads are unknown",
                      m->source);
    if (m->flags_any & SP_FLAG_NO_CPU)
        sp_model_warn(m, "source %s records no CPU samples: loader CPU saturation is unknown", m->source);
}

/* A send or recv whose peer the trace does not name (a Kineto trace from a
 * PyTorch that wrote no Src/Dst Rank, a SendRecv kernel without args)
 * pairs with nothing: its wait for the peer counts as transfer and the
 * replay cannot carry a late rank to its peers. */
static void warn_unpaired_p2p(struct sp_model *m)
{
    uint64_t n = 0, all = 0;
    for (int i = 0; i < m->nranks; i++)
        for (size_t c = 0; c < m->ranks[i].ncalls; c++) {
            const struct sp_coll_call *x = &m->ranks[i].calls[c];
            if (sp_op_is_p2p(x->op)) {
                all++;
                n += x->peer < 0;
            }
        }
    if (n)
        sp_model_warn(m, "%llu of %llu send/recv calls name no peer (in a Kineto trace: no Src/Dst Rank on "
                         "the kernel or its record_param_comms): they are paired with nothing, their waits count as transfer and "
                         "a late rank is not carried to its peers, so communication is an upper bound and "
                         "stragglers and pipeline stages a lower one",
                      (unsigned long long)n, (unsigned long long)all);
}

/* One run at a time: the traces name their run (SP_TLV_RUN); a directory
 * holding several is refused unless --run says which, and files of other
 * runs are then left out.  Files that name none (older traces, imports)
 * go with any run. */
static int choose_run(struct sp_model *m)
{
    char runs[8][64];
    int counts[8] = {0}, n = 0, more = 0;
    for (int i = 0; i < m->nfrecs; i++) {
        const struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok || !f->run[0])
            continue;
        int k = 0;
        while (k < n && strcmp(runs[k], f->run))
            k++;
        if (k == n) {
            if (n == 8) {
                more++;
                continue;
            }
            snprintf(runs[n++], sizeof runs[0], "%s", f->run);
        }
        counts[k]++;
    }
    m->runs_found = n + more;
    if (m->opts.run) {
        int kept = 0;
        for (int i = 0; i < m->nfrecs; i++) {
            struct sp_file_rec *f = &m->frecs[i];
            if (f->ok && f->run[0] && strcmp(f->run, m->opts.run)) {
                f->ok = 0; /* another run's: left out, not damaged */
                m->files_other_runs++;
            } else if (f->ok) {
                kept++;
            }
        }
        snprintf(m->run, sizeof m->run, "%s", m->opts.run);
        if (m->files_other_runs)
            sp_model_warn(m, "--run %s: %d file(s) of other runs left out", m->opts.run, m->files_other_runs);
        if (!kept) {
            sp_model_warn(m, "--run %s: no trace of that run under %s", m->opts.run, m->dir);
            return -1;
        }
        return 0;
    }
    if (n + more > 1) {
        char list[512];
        size_t used = 0;
        for (int k = 0; k < n && used < sizeof list - 80; k++)
            used += (size_t)snprintf(list + used, sizeof list - used, "%s%s (%d files)", k ? ", " : "", runs[k],
                                     counts[k]);
        sp_model_warn(m, "%s holds traces of %d runs: %s%s; a report of them together would mix the runs: "
                         "choose one with --run ID",
                      m->dir, n + more, list, more ? ", ..." : "");
        return -1;
    }
    if (n == 1)
        snprintf(m->run, sizeof m->run, "%s", runs[0]);
    return 0;
}

int sp_model_scan(struct sp_model *m, char **pv, int n)
{
    struct scan_job job = {.m = m};
    const char *re = m->opts.step_marker ? m->opts.step_marker : SP_MODEL_DEFAULT_STEP_RE;
    int rc = regcomp(&job.re, re, REG_EXTENDED | REG_ICASE | REG_NOSUB);
    if (rc == REG_ESPACE) {
        sp_alloc_lost(); /* a pattern that needs more memory than there is: not a bad pattern */
        sp_trace_paths_free(pv, n);
        return -1;
    }
    if (rc != 0) {
        char msg[128];
        regerror(rc, &job.re, msg, sizeof msg);
        sp_model_warn(m, "step marker pattern \"%s\" is not a valid extended regular expression: %s", re, msg);
        sp_trace_paths_free(pv, n);
        return -1;
    }
    m->frecs = calloc((size_t)n, sizeof *m->frecs);
    if (!m->frecs) {
        sp_trace_paths_free(pv, n);
        regfree(&job.re);
        return -1;
    }
    m->nfrecs = n;
    for (int i = 0; i < n; i++) {
        m->frecs[i].path = pv[i];
        m->frecs[i].hdr_rank = m->frecs[i].comm_rank = m->frecs[i].rank = -1;
        m->frecs[i].window_step = -1;
    }
    free(pv);
    pthread_mutex_init(&job.lock, NULL);
    sp_model_parallel(m, m->nfrecs, scan_one, &job);
    pthread_mutex_destroy(&job.lock);
    regfree(&job.re);
    return 0;
}

int sp_model_load(struct sp_model *m)
{
    char **pv;
    const char *why = "";
    int n = sp_trace_find(m->dir, &pv, &why);
    if (n < 0) {
        sp_model_warn(m, "%s: %s", m->dir, why);
        return -1;
    }
    if (n == 0) {
        sp_model_warn(m, "no *.sprof trace files under %s", m->dir);
        free(pv);
        return -1;
    }
    return sp_model_scan(m, pv, n);
}

int sp_model_group(struct sp_model *m)
{
    if (choose_run(m) < 0)
        return -1;
    index_open(m);
    group_files(m);
    warn_duplicate_ranks(m);
    index_close(m);
    warn_losses(m);
    warn_unpaired_p2p(m);
    if (!m->nranks) {
        uint64_t gpu = 0;
        int readable = 0;
        for (int i = 0; i < m->nfrecs; i++) {
            gpu += m->frecs[i].ok ? m->frecs[i].gpu_events : 0;
            readable += m->frecs[i].ok;
        }
        if (readable && !gpu)
            sp_model_warn(m, "no GPU activity was recorded and no process names a rank under %s (%d readable "
                             "file(s)): a job that ran on CPUs only, or whose CUDA work the recorder did not see",
                          m->dir, readable);
        else
            sp_model_warn(m, "no readable trace of any rank under %s", m->dir);
        return -1;
    }
    return 0;
}
