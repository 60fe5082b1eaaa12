/*
 * host.c - the host-side view of a job that used no GPU.
 *
 * The GPU breakdown is a share of GPU time; a loop on CPUs has none, but
 * its traces still hold what an input problem is made of: the training
 * process blocking on its DataLoader's result pipe (poll, then the read
 * of the pickled batch), its workers' CPU, the files they read.  This
 * view is built from those alone and says nothing of GPUs.
 *
 * Iterations.  Step markers, when the loop has them, are its iterations.
 * Otherwise the loop's repeating pattern: the training process fetches
 * its batches from the loader's pipe, each a burst of events (the poll
 * that waits, the reads of the length and the batch, the hand-over of
 * its tensors) a few microseconds apart, and computes between them.  The
 * events are grouped into fetches (fetches()), one batch each; the
 * iterations are the batches after the first `skip` (warm-up: the
 * workers start), over the time to the loop's end.
 *
 * A loop without workers reads its input itself, inside next(), between
 * no pipe events.  Its dataset's file reads repeat with the loop: a
 * burst of one read per sample (or a few), then the model's step, a
 * longer gap (iterations_from_reads()).  The period is the count of reads
 * whose one gap is clearly the longest in the most windows; each burst
 * after it is an iteration's input.  The time from a burst's first read
 * to its last is inside next(), so it is input; what __getitem__ does
 * before its first read and after its last (decoding, a sleep) is in
 * no call the trace holds: that wait is a lower bound, said so.
 *
 * Input wait is the time inside the fetches: what the loop would not
 * spend if the batch were ready.  The loop's own time inside next()
 * beyond it (the host too busy to run it) is not in it, so it reads a
 * little below what a loop timing next(iterator) itself measures.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "host.h"
#include "model_util.h"
#include "traceset.h"
#include "units.h"

#define FETCH_JOIN_NS 1000000  /* a batch's reads and hand-over follow each other closer than 1 ms */
#define INPUT_SHARE_SHOWN 0.05 /* below this the wait is no finding */
#define PERIOD_MAX 64          /* reads per iteration tried */
#define PERIOD_WINDOWS 4       /* at least this many iterations to call it a period */
#define PERIOD_HITS 0.85       /* share of windows whose boundary gap is the longest */
#define PERIOD_MARGIN 1.2      /* ... by this factor over the window's other gaps */

/* pipe: PIPE_READ or PIPE_WAIT on the loader's pipe, 0 a socket */
enum { PIPE_READ = 1,
       PIPE_WAIT = 2 };
struct pipe_ev {
    int64_t t, end;
    int pipe;
    uint32_t tid;
};
struct burst {
    int64_t start, end;
    int batches;
    uint32_t tid;
};

/* a file read that returned data, on thread tid, of a file in the
 * directory whose name hashes to dir */
struct file_rd {
    int64_t t, end;
    uint64_t dir;
    uint32_t tid;
};

struct collect {
    struct pipe_ev *ev;
    size_t n, cap;
    struct file_rd *rd;
    size_t nrd, caprd;
    int oom;
};

/* The directory of path, hashed (FNV-1a); 0 for the interpreter's own
 * files (modules, extensions), which are no dataset. */
static uint64_t data_dir(const char *path)
{
    const char *slash = path ? strrchr(path, '/') : NULL, *dot = slash ? strrchr(slash, '.') : NULL;
    if (!slash || strstr(path, "__pycache__"))
        return 0;
    if (dot && (!strcmp(dot, ".py") || !strcmp(dot, ".pyc") || !strcmp(dot, ".pth") || !strncmp(dot, ".so", 3)))
        return 0;
    uint64_t h = 1469598103934665603ull;
    for (const char *c = path; c < slash; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    return h | 1;
}

static int add_rd(struct collect *c, const struct sp_reader *r, const struct sp_event *ev)
{
    uint64_t dir = data_dir(sp_reader_string(r, ev->io.path));
    if (!dir)
        return 0;
    struct file_rd *p = sp_grow(c->rd, c->nrd, &c->caprd, sizeof *c->rd, 256);
    if (!p) {
        c->oom = 1;
        return 1;
    }
    c->rd = p;
    c->rd[c->nrd++] = (struct file_rd){(int64_t)ev->t, (int64_t)ev->t + (int64_t)ev->io.dur, dir, ev->tid};
    return 0;
}

static int add_ev(struct collect *c, uint32_t tid, int64_t t, int64_t dur, int pipe)
{
    struct pipe_ev *p = sp_grow(c->ev, c->n, &c->cap, sizeof *c->ev, 256);
    if (!p) {
        c->oom = 1;
        return 1;
    }
    c->ev = p;
    c->ev[c->n++] = (struct pipe_ev){t, t + dur, pipe, tid};
    return 0;
}

static int on_io(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    const struct sp_ev_io *io = &ev->io;
    struct collect *c = ctx;
    if (!sp_io_op_is_read(io->op))
        return 0;
    if (io->fd_kind == SP_FD_FILE && io->ret > 0)
        return add_rd(c, r, ev);
    if (io->fd_kind != SP_FD_PIPE && io->fd_kind != SP_FD_SOCKET)
        return 0;
    return add_ev(c, ev->tid, (int64_t)ev->t, (int64_t)io->dur, io->fd_kind == SP_FD_PIPE ? PIPE_READ : 0);
}

static int on_wait(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct collect *c = ctx;
    /* an imported trace's data-loader wait is an input wait on any thread */
    if (ev->wait.op == SP_WAIT_DATALOADER)
        return add_ev(c, ev->tid, (int64_t)ev->t, (int64_t)ev->wait.dur, PIPE_WAIT);
    if (ev->wait.fd_kind != SP_FD_PIPE && ev->wait.fd_kind != SP_FD_SOCKET)
        return 0;
    return add_ev(c, ev->tid, (int64_t)ev->t, (int64_t)ev->wait.dur, ev->wait.fd_kind == SP_FD_PIPE ? PIPE_WAIT : 0);
}

static const struct sp_pass pipe_pass = {
    .types = SP_TYPE_BIT(SP_EV_IO) | SP_TYPE_BIT(SP_EV_WAIT),
    .tool = {.io = on_io, .wait = on_wait},
};

static int cmp_ev(const void *a, const void *b)
{
    const struct pipe_ev *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}


/* Iterations from the marked ranges' starts, skipping warm-up (and with
 * drop_last the last); the wait inside each from the fetches. */
static void measure(struct sp_host_rank *hr, const int64_t *start, size_t nstart, const struct pipe_ev *ev,
                    size_t nev, int skip, int drop_last)
{
    /* iteration k runs [start[k], start[k+1]); with drop_last the last
     * one, which ends in shutdown, is left out */
    if (nstart < (size_t)skip + 2 + (size_t)drop_last)
        return;
    size_t lo = (size_t)skip, hi = nstart - 2 - (size_t)drop_last;
    double *len = malloc((hi - lo + 1) * sizeof *len);
    if (!len)
        return;
    double sum = 0, wait = 0;
    size_t e = 0, k;
    for (k = lo; k <= hi; k++) {
        int64_t a = start[k], b = start[k + 1];
        len[k - lo] = (double)(b - a);
        sum += (double)(b - a);
        while (e < nev && ev[e].end <= a)
            e++;
        for (size_t j = e; j < nev && ev[j].t < b; j++) {
            int64_t s = ev[j].t > a ? ev[j].t : a, t = ev[j].end < b ? ev[j].end : b;
            if (t > s)
                wait += (double)(t - s);
        }
    }
    size_t n = hi - lo + 1;
    hr->iterations = (int)n;
    hr->iter_ms = sum / (double)n / NS_PER_MS;
    hr->iter_median_ms = sp_median(len, n) / NS_PER_MS;
    hr->wait_ms = wait / (double)n / NS_PER_MS;
    free(len);
}

/* The loader fetches among c's events, in time order, into *out (free
 * it); returns how many, -1 when memory ran out.
 *
 * A fetch: one wait on the pipe (one queue get), the reads of the batch
 * that follow it and the exchanges on the same thread right after (the
 * batch's tensors handed over through sockets), each within
 * FETCH_JOIN_NS of the one before; start to end, the time the loop spent
 * getting that batch.  It holds a batch when a read of the pipe follows
 * the wait (a wait that no read follows is for a worker to exit).  A
 * trace with reads of the pipe but no waits starts a fetch at a read not
 * joined to the one before.  Socket events join a fetch only: on their
 * own they are the job's communication (gloo), not its input. */
static long fetches(struct collect *c, struct burst **out)
{
    qsort(c->ev, c->n, sizeof *c->ev, cmp_ev);
    int waits = 0;
    for (size_t i = 0; i < c->n; i++)
        waits += c->ev[i].pipe == PIPE_WAIT;
    struct burst *bu = malloc((c->n + 1) * sizeof *bu);
    *out = bu;
    if (!bu)
        return -1;
    size_t nb = 0;
    for (size_t i = 0; i < c->n; i++) {
        const struct pipe_ev *e = &c->ev[i];
        int joins = nb > 0 && e->t - bu[nb - 1].end <= FETCH_JOIN_NS && (e->pipe || e->tid == bu[nb - 1].tid);
        int starts = waits ? e->pipe == PIPE_WAIT : e->pipe == PIPE_READ && !joins;
        if (starts) {
            bu[nb++] = (struct burst){e->t, e->end, 0, e->tid};
        } else if (joins) {
            struct burst *cur = &bu[nb - 1];
            if (e->end > cur->end)
                cur->end = e->end;
        } else {
            continue;
        }
        if (e->pipe == PIPE_READ)
            bu[nb - 1].batches = 1;
    }
    return (long)nb;
}

/* Without markers: one iteration per batch fetched.  Two workers
 * finishing together deliver two batches in one next(), and the next
 * iteration takes the second without a call the trace sees: so the
 * iterations are counted as batches, and their time is a mean. */
static void iterations_from_pipe(struct sp_host_rank *hr, struct collect *c, int skip)
{
    struct burst *bu;
    long got = fetches(c, &bu);
    size_t nb = got > 0 ? (size_t)got : 0, keep = 0;
    /* the loop's end: the first wait for a worker to exit after the last
     * batch (the loader shutting down), when the trace holds one */
    int64_t end = -1;
    for (size_t k = nb; k-- > 0 && bu[k].batches == 0;)
        end = bu[k].start;
    for (size_t k = 0; k < nb; k++)
        if (bu[k].batches)
            bu[keep++] = bu[k];
    nb = keep;
    /* warm-up: the first `skip` batches.  Without the loop's end, the
     * last batch's iteration is left out: it ends in shutdown, which then
     * no event marks.  A next() may fetch several batches ahead (out of
     * order from several workers), so the span runs to the loop's end
     * when known rather than to the last fetch. */
    size_t lo = (size_t)skip, hi = nb;
    if (end < 0 && nb)
        end = bu[--hi].start;
    double wait = 0;
    for (size_t k = lo; k < hi; k++)
        wait += (double)(bu[k].end - bu[k].start);
    if (lo < hi && end > bu[lo].start) {
        size_t n = hi - lo;
        hr->iterations = (int)n;
        hr->iter_ms = (double)(end - bu[lo].start) / (double)n / NS_PER_MS;
        hr->wait_ms = wait / (double)n / NS_PER_MS;
        hr->iter_from = "loader pipe";
    }
    free(bu);
}

/* With markers: each marked range an iteration, the fetches inside it
 * its wait. */
static void iterations_from_marks(struct sp_host_rank *hr, const struct sp_rank *r, struct collect *c, int skip)
{
    int64_t *start = malloc((r->nmarks + 1) * sizeof *start);
    struct burst *bu;
    long got = fetches(c, &bu);
    if (!start || got < 0) {
        free(start);
        free(bu);
        return;
    }
    struct pipe_ev *ev = malloc(((size_t)got + 1) * sizeof *ev);
    if (!ev) {
        free(start);
        free(bu);
        return;
    }
    for (long k = 0; k < got; k++)
        ev[k] = (struct pipe_ev){bu[k].start, bu[k].end, 1, bu[k].tid};
    size_t ns = 0;
    for (size_t i = 0; i < r->nmarks; i++)
        start[ns++] = r->marks[i].start;
    /* the end of the last marked iteration closes it */
    if (ns && r->marks[r->nmarks - 1].end > start[ns - 1])
        start[ns++] = r->marks[r->nmarks - 1].end;
    /* markers bound every iteration: none is shutdown, so keep the last */
    measure(hr, start, ns, ev, (size_t)got, skip, 0);
    if (hr->iterations)
        hr->iter_from = "step markers";
    free(ev);
    free(bu);
    free(start);
}

static int cmp_rd(const void *a, const void *b)
{
    const struct file_rd *x = a, *y = b;
    if (x->dir != y->dir)
        return x->dir > y->dir ? 1 : -1;
    if (x->tid != y->tid)
        return x->tid > y->tid ? 1 : -1;
    return (x->t > y->t) - (x->t < y->t);
}

/* The period of n reads' starts t: for each p (2..PERIOD_MAX) and phase
 * f, the share of the windows of p gaps starting at a gap i = f (mod p)
 * whose gap i is over PERIOD_MARGIN times each other gap of the window;
 * the p with the highest share, the smallest of equals, when that is
 * PERIOD_HITS or more over PERIOD_WINDOWS windows at least (a half or a
 * double of the period hits about half its windows); 0 when none.
 * *phase: f. */
static int read_period(const struct file_rd *rd, size_t n, int *phase)
{
    if (n < 2 * PERIOD_WINDOWS + 1)
        return 0;
    size_t ng = n - 1;
    int best = 0;
    double best_share = 0;
    for (int p = 2; p <= PERIOD_MAX && (size_t)p * PERIOD_WINDOWS <= ng; p++) {
        for (int f = 0; f < p; f++) {
            int windows = 0, hits = 0;
            for (size_t i = (size_t)f; i + (size_t)p <= ng; i += (size_t)p) {
                int64_t g = rd[i + 1].t - rd[i].t, other = 0;
                for (size_t k = i + 1; k < i + (size_t)p; k++)
                    if (rd[k + 1].t - rd[k].t > other)
                        other = rd[k + 1].t - rd[k].t;
                windows++;
                hits += (double)g > PERIOD_MARGIN * (double)other;
            }
            double share = windows ? (double)hits / windows : 0;
            if (windows >= PERIOD_WINDOWS && share >= PERIOD_HITS && share > best_share) {
                best = p;
                best_share = share;
                *phase = f;
            }
        }
    }
    return best;
}

/* Without workers or markers: the iterations from the bursts of reads of
 * one data directory on one thread (the one with the most reads whose
 * period is found).  Iteration k starts at its burst's first read and
 * runs to the next burst's; the first `skip` batches are warm-up and the
 * last burst's iteration, whose end no read marks, is left out.  The
 * wait is each burst's span, first read's start to last read's end. */
static void iterations_from_reads(struct sp_host_rank *hr, struct collect *c, int skip)
{
    if (c->nrd < 2)
        return;
    qsort(c->rd, c->nrd, sizeof *c->rd, cmp_rd);
    size_t best = 0, best_n = 0;
    int best_p = 0, best_f = 0;
    for (size_t a = 0, b; a < c->nrd; a = b) {
        for (b = a + 1; b < c->nrd && c->rd[b].dir == c->rd[a].dir && c->rd[b].tid == c->rd[a].tid; b++)
            ;
        int f = 0, p = b - a > best_n ? read_period(c->rd + a, b - a, &f) : 0;
        if (p) {
            best = a;
            best_n = b - a;
            best_p = p;
            best_f = f;
        }
    }
    if (!best_p)
        return;
    const struct file_rd *rd = c->rd + best;
    size_t p = (size_t)best_p, first = (size_t)best_f + 1;
    /* bursts start at first + k p; the reads before the first are batch
     * 0 when they are a whole burst */
    size_t bursts = (best_n - first) / p;
    long lo = skip - (long)(first / p);
    if (lo < 0)
        lo = 0;
    if (bursts < (size_t)lo + 2)
        return;
    size_t n = bursts - 1 - (size_t)lo;
    double *len = malloc(n * sizeof *len);
    if (!len)
        return;
    double wait = 0;
    for (size_t k = (size_t)lo; k + 1 < bursts; k++) {
        const struct file_rd *s = &rd[first + k * p], *e = &rd[first + k * p + p - 1];
        len[k - (size_t)lo] = (double)(rd[first + (k + 1) * p].t - s->t);
        wait += (double)(e->end - s->t);
    }
    hr->iterations = (int)n;
    hr->iter_ms = (double)(rd[first + (bursts - 1) * p].t - rd[first + (size_t)lo * p].t) / (double)n / NS_PER_MS;
    hr->iter_median_ms = sp_median(len, n) / NS_PER_MS;
    hr->wait_ms = wait / (double)n / NS_PER_MS;
    hr->reads_per_iter = best_p;
    hr->wait_lower_bound = 1;
    hr->iter_from = "file reads";
    free(len);
}

static void host_cpu(const struct sp_model *m, struct sp_host *h)
{
    h->cpu = calloc((size_t)m->nhosts + 1, sizeof *h->cpu);
    if (!h->cpu)
        return;
    for (int i = 0; i < m->nhosts; i++) {
        struct sp_host_cpu *c = &h->cpu[h->ncpu];
        c->host = i;
        c->job_cores = sp_model_job_cores(m, i, &c->ncores);
        c->host_busy = -1;
        for (int k = 0; k < m->nranks; k++)
            if (m->ranks[k].host == i && m->ranks[k].machine_busy >= 0)
                c->host_busy = m->ranks[k].machine_busy;
        if (c->job_cores >= 0)
            h->ncpu++;
    }
}

static void rank_view(const struct sp_model *m, int i, struct sp_host_rank *hr, struct sp_warn_list *warn)
{
    const struct sp_rank *r = &m->ranks[i];
    hr->rank = r->rank;
    hr->workers = r->nhelpers;
    hr->main_cpu = -1;
    hr->worker_cpu = r->helper_sampled ? r->helper_cpu / r->helper_sampled : -1;
    hr->read_bytes = r->read_bytes;
    hr->read_s = (double)r->read_ns / 1e9;
    hr->span_s = (double)(r->last_t - r->first_t) / 1e9;
    if (r->nfiles)
        hr->main_cpu = sp_file_cores(r->files[0]);
    struct collect c = {0};
    for (int f = 0; f < r->nfiles && !c.oom; f++) {
        int err = 0;
        if (sp_trace_feed(r->files[f]->path, &pipe_pass, &c, &err) < 0 && err)
            sp_warn_list_add(warn, "%s: could not be read again for the host-side view (%s)", r->files[f]->path,
                             sp_strerror(err));
    }
    int pipes = 0;
    for (size_t k = 0; k < c.n; k++)
        pipes += c.ev[k].pipe;
    for (size_t k = 0; k < c.n; k++)
        hr->wait_total_ms += (double)(c.ev[k].end - c.ev[k].t) / NS_PER_MS;
    if (r->nmarks >= 2)
        iterations_from_marks(hr, r, &c, sp_model_skip(m));
    if (!hr->iterations && pipes)
        iterations_from_pipe(hr, &c, sp_model_skip(m));
    if (!hr->iterations && !hr->workers && !c.oom)
        iterations_from_reads(hr, &c, sp_model_skip(m));
    free(c.ev);
    free(c.rd);
}

/* input_pipeline without a GPU: the share of each iteration the loop
 * waits for its batch, with what tells a slow loader from slow storage. */
static void input_finding(const struct sp_model *m, struct sp_host *h)
{
    double share = 0, wait = 0, iter = 0;
    int n = 0, workers_lo = -1, workers_hi = 0, wsampled = 0;
    double wcpu = 0;
    int lower = 0;
    for (int i = 0; i < h->nranks; i++) {
        const struct sp_host_rank *hr = &h->r[i];
        if (!hr->iterations || hr->iter_ms <= 0)
            continue;
        lower |= hr->wait_lower_bound;
        share += hr->wait_ms / hr->iter_ms;
        wait += hr->wait_ms;
        iter += hr->iter_ms;
        n++;
        workers_lo = workers_lo < 0 || hr->workers < workers_lo ? hr->workers : workers_lo;
        workers_hi = hr->workers > workers_hi ? hr->workers : workers_hi;
        if (hr->worker_cpu >= 0) {
            wcpu += hr->worker_cpu;
            wsampled++;
        }
    }
    if (!n)
        return;
    h->input_share = share / n;
    if (h->input_share < INPUT_SHARE_SHOWN)
        return;
    h->input_finding = 1;
    size_t len = sizeof h->evidence;
    h->input_lower_bound = lower;
    int used = lower ? snprintf(h->evidence, len,
                                "the training loop waits for input at least %.0f%% of each iteration (%.1f ms of "
                                "%.1f ms%s: the span of each batch's file reads, which the trace holds; work in "
                                "__getitem__ before a batch's first read and after its last is not recorded); ",
                                100 * h->input_share, wait / n, iter / n, n > 1 ? ", mean over ranks" : "")
                     : snprintf(h->evidence, len,
                                "the training loop waits for input %.0f%% of each iteration (%.1f ms of %.1f ms, "
                                "blocked on its DataLoader's result pipe%s); ",
                                100 * h->input_share, wait / n, iter / n, n > 1 ? ", mean over ranks" : "");
    if (workers_lo == workers_hi)
        used += snprintf(h->evidence + used, len - (size_t)used, "%d loader worker process%s per rank", workers_lo,
                         workers_lo == 1 ? "" : "es");
    else
        used += snprintf(h->evidence + used, len - (size_t)used, "%d to %d loader worker processes per rank",
                         workers_lo, workers_hi);
    if (wsampled && used < (int)len)
        used += snprintf(h->evidence + used, len - (size_t)used, ", each keeping %.0f%% of a CPU core busy",
                         100 * wcpu / wsampled);
    for (int i = 0; i < h->ncpu && used < (int)len; i++) {
        const struct sp_host_cpu *c = &h->cpu[i];
        if (c->ncores > 0)
            used += snprintf(h->evidence + used, len - (size_t)used,
                             "; on %s the job's processes keep %.1f of its %d CPU cores busy (%.0f%%)",
                             m->hosts[c->host], c->job_cores, c->ncores, 100 * c->job_cores / c->ncores);
    }
}

int sp_host_analyze(const struct sp_model *m, struct sp_host *h)
{
    memset(h, 0, sizeof *h);
    h->r = calloc((size_t)m->nranks + 1, sizeof *h->r);
    if (!h->r)
        return -1;
    h->nranks = m->nranks;
    for (int i = 0; i < m->nranks; i++)
        rank_view(m, i, &h->r[i], &h->warnings);
    host_cpu(m, h);
    input_finding(m, h);
    return 0;
}

void sp_host_free(struct sp_host *h)
{
    free(h->r);
    free(h->cpu);
    sp_warn_list_free(&h->warnings);
    memset(h, 0, sizeof *h);
}
