/*
 * hang.c - where a hung or crashed job stopped (see hang.h).
 *
 * Per communicator, from the calls pass 1 kept: each member's last
 * sequence number entered (a recorded NCCL host call) and last completed
 * (its kernel's end recorded; with a deep read also a sync of the call's
 * stream, or the device, that returned after the call on the same
 * thread).  A collective completes everywhere or nowhere, so an instance
 * is complete once any member recorded its completion; everything before
 * it is complete too.  After the last complete instance, the first one
 * some member never entered is where the job stopped: who entered it,
 * who did not, who left no trace.  When every member entered it, the job
 * is stuck inside the collective (or the trace lost the completions: the
 * instances entered everywhere but not recorded complete are listed as
 * unconfirmed).
 *
 * A pending instance is not yet a hang: a job killed while running has
 * one too, entered microseconds before the kill.  It is a hang when no
 * call entered the communicator for longer than max(SP_HANG_MIN_S,
 * SP_HANG_GAP_FACTOR x the median gap between its instances) before the
 * traces end.  The traces' end is the latest event of any file: with CPU
 * samples (10 Hz by default) a live process's trace runs until the kill,
 * without them it ends at its last recorded call and the time spent hung
 * is not recorded.
 *
 * Desync: the calls of one (comm, seq) differ in operation, size or data
 * type.  The first such sequence number of each communicator is named
 * with both calls; later ones are counted (a rank that skipped one call
 * is off by one ever after).
 *
 * The deep pass (sp_trace_feed over the files of the ranks concerned)
 * keeps per thread a ring of its last events, copied whole and described
 * only when the file is done (the reader's strings are still open then),
 * so that its cost per event is one copy.
 */
#include "hang.h"
#include "text.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grow.h"
#include "model_util.h"
#include "model_summary.h"
#include "sprof.h"
#include "traceset.h"
#include "units.h"

#define MAX_HOST_VIEW 64    /* (thread, comm, stream) pairs followed per file for completions */
#define MAX_HELPERS_READ 16 /* helper processes of a missing rank read, at most */
#define CPU_BUSY 0.5        /* cores: a process this busy is computing or spinning */
#define CPU_IDLE 0.1        /* below: asleep or blocked (the recorder's threads cost a few percent) */

void sp_hang_opts_default(struct sp_hang_opts *o)
{
    memset(o, 0, sizeof *o);
    o->events = SP_HANG_EVENTS_DEFAULT;
}

const char *sp_hang_op_name(uint32_t op)
{
    const char *n = sp_enum_name(SP_EV_NCCL, "op", op);
    return n ? n : "op";
}

static int is_coll(uint32_t op)
{
    return op >= SP_NCCL_ALLREDUCE && op < SP_NCCL_GROUP_START && !sp_op_is_p2p(op);
}

static int host_of(const struct sp_model *m, const char *host)
{
    for (int i = 0; i < m->nhosts; i++)
        if (!strcmp(m->hosts[i], host)) return i;
    return -1;
}

static int64_t file_global(const struct sp_model *m, const struct sp_file_rec *f, int64_t t)
{
    int h = host_of(m, f->host);
    return t + (h >= 0 && m->host_offset ? m->host_offset[h] : 0);
}

/* The file's last moment: its last event of any kind (CPU samples run
 * until a live process is killed). */
static int64_t file_end(const struct sp_file_rec *f)
{
    return f->last_t;
}

/* ---- completions seen from the host (deep pass) ---- */

struct host_done {
    int r;
    uint64_t comm, seq;
    int64_t t;
};

/* ---- per communicator ---- */

/* A call, with a copy of what the passes over a communicator's calls
 * read of it: they go instance after instance, and the calls themselves
 * lie rank after rank (at thousands of ranks a cache miss per call and
 * pass); the copies are made in the calls' order. */
struct cref {
    uint64_t comm, seq, bytes;
    int64_t host_t, end;
    int r;
    uint32_t c;
    uint32_t op, dtype, nranks;
    uint8_t timing;
};

/* *k by (comm, seq) (pk[i] is k[i]'s pair), each instance's calls by
 * rank: *k comes rank after rank, and the sort keeps that order within a
 * pair.  *k is replaced by the sorted copy (a call each, 72 bytes: not
 * copied back; each moved as a struct, not through a call to memcpy); on
 * failure it is left as it was. */
static int sort_crefs(struct cref **k, const struct sp_pair_key *pk, size_t n)
{
    uint32_t *place = malloc((n + 1) * sizeof *place);
    struct cref *sorted = malloc((n + 1) * sizeof *sorted);
    if (!place || !sorted || sp_pair_places(pk, n, place) < 0) {
        free(place);
        free(sorted);
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        sorted[place[i]] = (*k)[i];
    free(place);
    free(*k);
    *k = sorted;
    return 0;
}

struct member {
    int r;
    uint64_t entered, done;
    int64_t done_t;
    int64_t entry_t; /* its latest entry (analyze_comm: on its own clock) */
};

static int64_t gl(const struct sp_model *m, int r, int64_t t)
{
    return sp_model_global(m, &m->ranks[r], t);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int push_int(int **v, int *n, int x)
{
    int *p = realloc(*v, (size_t)(*n + 1) * sizeof *p);
    if (!p) return -1;
    p[(*n)++] = x;
    *v = p;
    return 0;
}

/* The median gap between the first entries of consecutive instances. */
static double median_gap_s(const struct sp_model *m, const struct cref *k, size_t n)
{
    int64_t *first = malloc((n + 1) * sizeof *first);
    size_t nf = 0;
    if (!first) return 0;
    for (size_t a = 0; a < n;) {
        size_t b = a;
        int64_t t = INT64_MAX;
        while (b < n && k[b].seq == k[a].seq) {
            int64_t h = gl(m, k[b].r, k[b].host_t);
            t = h < t ? h : t;
            b++;
        }
        first[nf++] = t;
        a = b;
    }
    size_t ng = 0;
    for (size_t i = 1; i < nf; i++)
        if (first[i] > first[i - 1]) first[ng++] = first[i] - first[i - 1];
    double med = 0;
    if (ng) {
        qsort(first, ng, sizeof *first, cmp_i64);
        med = (double)first[ng / 2] / NS_PER_S;
    }
    free(first);
    return med;
}

struct call_sig {
    uint32_t op, dtype;
    uint64_t bytes;
};

static int same_sig(const struct cref *c, const struct call_sig *s)
{
    return c->op == s->op && c->dtype == s->dtype && c->bytes == s->bytes;
}

/* The calls of one (comm, seq): a desync when they differ. */
static int check_desync(const struct sp_model *m, struct sp_hang *h, const struct cref *k, size_t n,
                        int *seen_comm)
{
    struct call_sig sig[8];
    int count[8], ns = 0;
    for (size_t i = 0; i < n; i++) {
        const struct cref *c = &k[i];
        int j = 0;
        while (j < ns && !same_sig(c, &sig[j]))
            j++;
        if (j == ns && ns < 8) {
            sig[ns] = (struct call_sig){c->op, c->dtype, c->bytes};
            count[ns++] = 0;
        }
        if (j < ns) count[j]++;
    }
    if (ns < 2) return 0;
    if (*seen_comm) {
        h->desyncs[h->ndesyncs - 1].later++;
        return 0;
    }
    struct sp_hang_desync *p = realloc(h->desyncs, (size_t)(h->ndesyncs + 1) * sizeof *p);
    if (!p) return -1;
    h->desyncs = p;
    struct sp_hang_desync *d = &p[h->ndesyncs++];
    memset(d, 0, sizeof *d);
    *seen_comm = 1;
    d->comm = k[0].comm;
    d->seq = k[0].seq;
    d->kinds = ns;
    int big = 0;
    for (int j = 1; j < ns; j++)
        if (count[j] > count[big]) big = j;
    int other = big == 0 ? 1 : 0;
    d->a = (struct sp_hang_call){sig[big].op, sig[big].dtype, sig[big].bytes, NULL, 0};
    d->b = (struct sp_hang_call){sig[other].op, sig[other].dtype, sig[other].bytes, NULL, 0};
    for (size_t i = 0; i < n; i++) {
        const struct cref *c = &k[i];
        int rank = m->ranks[k[i].r].rank;
        if (same_sig(c, &sig[big]))
            push_int(&d->a.ranks, &d->a.nranks, rank);
        else if (same_sig(c, &sig[other]))
            push_int(&d->b.ranks, &d->b.nranks, rank);
    }
    return 0;
}

static const struct sp_coll_call *find_call(const struct sp_model *m, int r, uint64_t comm, uint64_t seq)
{
    const struct sp_rank *rk = &m->ranks[r];
    for (size_t c = rk->ncalls; c-- > 0;)
        if (rk->calls[c].comm == comm && rk->calls[c].seq == seq && is_coll(rk->calls[c].op))
            return &rk->calls[c];
    return NULL;
}

static int is_done(const struct cref *c)
{
    return c->timing != SP_TIMING_HOST;
}

/* What a member's call adds to it (calls in rank order, a member's in
 * its call order: the last completed call of the latest seq counts). */
static void member_add(struct member *x, int first, uint64_t seq, int64_t host_t, int64_t end, int done)
{
    if (first || host_t > x->entry_t) x->entry_t = host_t;
    if (seq > x->entered) x->entered = seq;
    if (done && seq >= x->done) {
        x->done = seq;
        x->done_t = end;
    }
}

static int comm_members(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h,
                        uint64_t comm, uint32_t nranks, struct member *all, const char *has,
                        const struct cref *k, size_t n, const struct host_done *hv, size_t nhv);

/* One communicator's calls k[0..n) (sorted by seq): its pending instance. */
static int analyze_comm(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h,
                        const struct cref *k, size_t n, const struct host_done *hv, size_t nhv)
{
    uint32_t nranks = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t x = k[i].nranks;
        nranks = x > nranks ? x : nranks;
    }
    /* one pass over the calls, by rank index; then the members in rank order */
    struct member *all = calloc((size_t)m->nranks + 1, sizeof *all);
    char *has = calloc((size_t)m->nranks + 1, 1);
    if (!all || !has) {
        free(all);
        free(has);
        return -1;
    }
    for (size_t i = 0; i < n; i++) {
        const struct cref *c = &k[i];
        member_add(&all[c->r], !has[c->r], c->seq, c->host_t, c->end, is_done(c));
        has[c->r] = 1;
    }
    int rc = comm_members(m, o, h, k[0].comm, nranks, all, has, k, n, hv, nhv);
    free(all);
    free(has);
    return rc;
}

/* The rest of analyze_comm, from each rank's member all[r] (has[r]: it
 * made a call on comm; times on its own clock): the communicator's entry
 * and its pending instance.  k[0..n) (its calls, sorted by seq) is read
 * only for a pending instance. */
static int comm_members(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h,
                        uint64_t comm, uint32_t nranks, struct member *all, const char *has,
                        const struct cref *k, size_t n, const struct host_done *hv, size_t nhv)
{
    int world = m->world_size > 0 && nranks == (uint32_t)m->world_size;
    struct member *mem = calloc((size_t)m->nranks + 1, sizeof *mem);
    if (!mem) return -1;
    /* a rank's times stay on its clock until its last call: the common
     * axis is the clock plus its host's offset, so the latest entry and
     * the last completion are the ones they were (a conversion a member,
     * not two a call) */
    int64_t last_entry_t = INT64_MIN;
    for (int r = 0; r < m->nranks; r++) {
        if (!has[r]) continue;
        if (all[r].done) all[r].done_t = gl(m, r, all[r].done_t); /* a call's seq is > 0: done set, done_t too */
        int64_t e = gl(m, r, all[r].entry_t);
        last_entry_t = e > last_entry_t ? e : last_entry_t;
    }
    for (size_t i = 0; i < nhv; i++) {
        struct member *x = hv[i].r >= 0 && hv[i].r < m->nranks ? &all[hv[i].r] : NULL;
        if (x && has[hv[i].r] && hv[i].comm == comm && hv[i].seq > x->done) {
            x->done = hv[i].seq;
            x->done_t = hv[i].t;
        }
    }
    int nm = 0;
    for (int r = 0; r < m->nranks; r++)
        if (has[r] || world) {
            mem[nm] = all[r];
            mem[nm++].r = r;
        }
    uint64_t last_done = 0, max_e = 0, min_e = UINT64_MAX;
    int64_t last_done_t = 0;
    for (int i = 0; i < nm; i++) {
        if (mem[i].done > last_done || (mem[i].done == last_done && mem[i].done_t > last_done_t)) {
            last_done = mem[i].done;
            last_done_t = mem[i].done_t;
        }
        max_e = mem[i].entered > max_e ? mem[i].entered : max_e;
        min_e = mem[i].entered < min_e ? mem[i].entered : min_e;
    }
    if (last_done) h->completion_known = 1;
    struct sp_hang_comm *hc = realloc(h->comms, (size_t)(h->ncomms + 1) * sizeof *hc);
    if (hc) {
        h->comms = hc;
        hc = &hc[h->ncomms++];
        *hc = (struct sp_hang_comm){comm, nranks, last_done,
                                    calloc((size_t)nm + 1, sizeof *hc->members), 0};
        for (int i = 0; hc->members && i < nm; i++)
            hc->members[hc->nmembers++] =
                (struct sp_hang_member){m->ranks[mem[i].r].rank, mem[i].entered, mem[i].done};
    }
    if (max_e <= last_done || !nm) {
        free(mem);
        return 0;
    }
    uint64_t s =
        min_e >= max_e ? last_done + 1 : (min_e + 1 > last_done + 1 ? min_e + 1 : last_done + 1);
    struct sp_hang_inst *p = realloc(h->insts, (size_t)(h->ninsts + 1) * sizeof *p);
    if (!p) {
        free(mem);
        return -1;
    }
    h->insts = p;
    struct sp_hang_inst *x = &p[h->ninsts++];
    memset(x, 0, sizeof *x);
    x->comm = comm;
    x->seq = s;
    x->nranks = nranks;
    x->last_done = last_done;
    x->last_done_t = last_done_t;
    x->last_entry_t = last_entry_t;
    x->first_entry_t = INT64_MAX;
    if (s > last_done + 1) {
        x->unconfirmed_lo = last_done + 1;
        x->unconfirmed_hi = s - 1;
    }
    int found = 0;
    for (int i = 0; i < nm; i++) {
        int rank = m->ranks[mem[i].r].rank;
        if (mem[i].entered >= s) {
            push_int(&x->entered, &x->nentered, rank);
            const struct sp_coll_call *c = find_call(m, mem[i].r, comm, s);
            if (c) {
                int64_t e = gl(m, mem[i].r, c->host_t);
                x->first_entry_t = e < x->first_entry_t ? e : x->first_entry_t;
                if (!found) {
                    x->op = c->op;
                    x->bytes = c->bytes;
                    x->dtype = c->dtype;
                    found = 1;
                }
            }
        } else {
            push_int(&x->missing, &x->nmissing, rank);
        }
    }
    if (x->first_entry_t == INT64_MAX) x->first_entry_t = last_entry_t;
    if (world)
        for (int i = 0; i < m->nmissing; i++)
            push_int(&x->absent, &x->nabsent, m->missing_ranks[i]);
    else if (nranks > (uint32_t)nm)
        x->absent_unnamed = (int)nranks - nm;
    x->inside = !x->nmissing && !x->nabsent && !x->absent_unnamed;
    x->pending_s = (double)(h->end_t - last_entry_t) / NS_PER_S;
    x->bar_s = o->min_hang_s > 0 ? o->min_hang_s : SP_HANG_GAP_FACTOR * median_gap_s(m, k, n);
    if (o->min_hang_s <= 0 && x->bar_s < SP_HANG_MIN_S) x->bar_s = SP_HANG_MIN_S;
    x->hung = x->pending_s >= x->bar_s;
    x->hung_s = (double)(h->end_t - (last_done_t ? last_done_t : x->first_entry_t)) / NS_PER_S;
    h->nhung += x->hung;
    free(mem);
    return 0;
}

static void free_insts(struct sp_hang *h)
{
    for (int i = 0; i < h->ninsts; i++) {
        free(h->insts[i].entered);
        free(h->insts[i].missing);
        free(h->insts[i].absent);
    }
    free(h->insts);
    h->insts = NULL;
    h->ninsts = h->nhung = 0;
}

static void free_comms(struct sp_hang *h)
{
    for (int i = 0; i < h->ncomms; i++)
        free(h->comms[i].members);
    free(h->comms);
    h->comms = NULL;
    h->ncomms = 0;
}

static void free_desyncs(struct sp_hang *h)
{
    for (int i = 0; i < h->ndesyncs; i++) {
        free(h->desyncs[i].a.ranks);
        free(h->desyncs[i].b.ranks);
    }
    free(h->desyncs);
    h->desyncs = NULL;
    h->ndesyncs = 0;
}

/* ---- the usual case, without the sort ----
 *
 * When every instance is complete and its calls agree, the sort by
 * (comm, seq) finds nothing: what remains is each communicator's members,
 * which one pass over the calls in place gathers (a rank's calls, its
 * member of each communicator), with a table per communicator of the
 * first call of each seq to compare the others with.  At the first
 * disagreement, or a communicator with an instance pending, the pass
 * gives up and the sort does it all (a hung or damaged job: the few it
 * finds are worth the sort). */

#define QUICK_COMMS 1024 /* communicators followed, at most (more: the sort) */
#define QUICK_SLOTS (2 * QUICK_COMMS)
#define QUICK_MINE 8           /* a rank's communicators found without the hash (quick_mine) */
#define QUICK_MEMBERS_FIRST 64 /* members of a communicator room is made for at first */
#define QUICK_SIG_FIRST 1024   /* seqs of a communicator room is made for at first */
/* table entries (all communicators) allowed per call, and beyond: a
 * healthy job's seqs count its instances, so a seq past them is damage */
#define QUICK_SIG_PER_CALL 2
#define QUICK_SIG_SLACK 4096

/* The first call of a (comm, seq): op + 1 (0: none yet), dtype, bytes. */
struct quick_sig {
    uint32_t op1, dtype;
    uint64_t bytes;
};

struct quick_comm {
    uint64_t comm;
    uint32_t nranks;
    int last_r;         /* the rank of the last member added */
    struct member *mem; /* in rank order */
    int nmem;
    size_t capmem;
    struct quick_sig *sig; /* by seq - 1 */
    size_t nsig;
};

struct quick {
    struct quick_comm c[QUICK_COMMS];
    int nc;
    int16_t slot[QUICK_SLOTS]; /* open addressing on comm: index into c, -1 free */
    size_t sig_left;           /* table entries still allowed: a seq far beyond the calls is damage */
};

static void quick_free(struct quick *q)
{
    for (int i = 0; i < q->nc; i++) {
        free(q->c[i].mem);
        free(q->c[i].sig);
    }
}

/* Communicator comm's entry (added when new); NULL: too many, or no memory. */
static struct quick_comm *quick_comm_of(struct quick *q, uint64_t comm)
{
    /* Fibonacci hashing: the multiplier spreads nearby handles apart */
    size_t j = (size_t)((comm * 0x9e3779b97f4a7c15ULL) >> 40) & (QUICK_SLOTS - 1);
    for (; q->slot[j] >= 0; j = (j + 1) & (QUICK_SLOTS - 1))
        if (q->c[q->slot[j]].comm == comm) return &q->c[q->slot[j]];
    if (q->nc == QUICK_COMMS) return NULL;
    q->slot[j] = (int16_t)q->nc;
    q->c[q->nc] = (struct quick_comm){.comm = comm, .last_r = -1};
    return &q->c[q->nc++];
}

/* Rank r's member of communicator comm (added when new); NULL: too
 * many communicators, or no memory.  *qcp: the communicator. */
static struct member *quick_member(struct quick *q, int r, uint64_t comm, struct quick_comm **qcp)
{
    struct quick_comm *qc = quick_comm_of(q, comm);
    if (!qc) return NULL;
    if (qc->last_r != r) {
        struct member *mem = sp_grow(qc->mem, (size_t)qc->nmem, &qc->capmem, sizeof *mem, QUICK_MEMBERS_FIRST);
        if (!mem) return NULL;
        qc->mem = mem;
        qc->mem[qc->nmem++] = (struct member){.r = r};
        qc->last_r = r;
    }
    *qcp = qc;
    return &qc->mem[qc->nmem - 1];
}

/* One rank's communicators as its calls meet them: its member of each
 * (a member moves only when another rank joins the communicator), so
 * that a call costs a compare or two, not a hash. */
struct quick_mine {
    uint64_t comm[QUICK_MINE];
    struct quick_comm *qc[QUICK_MINE];
    struct member *mb[QUICK_MINE];
    int n;
};

/* Call x of rank r into q; 0: it agrees with its instance so far, -1:
 * the sort must decide (it disagrees, its seq is out of reach, no memory). */
static int quick_add(struct quick *q, struct quick_mine *mine, int r, const struct sp_coll_call *x)
{
    struct quick_comm *qc = NULL;
    struct member *mb = NULL;
    for (int i = 0; i < mine->n; i++)
        if (mine->comm[i] == x->comm) {
            qc = mine->qc[i];
            mb = mine->mb[i];
            break;
        }
    if (!mb) {
        mb = quick_member(q, r, x->comm, &qc);
        if (!mb) return -1;
        if (mine->n < QUICK_MINE) {
            mine->comm[mine->n] = x->comm;
            mine->qc[mine->n] = qc;
            mine->mb[mine->n++] = mb;
        }
    }
    member_add(mb, mb->entered == 0, x->seq, x->host_t, x->end, x->timing != SP_TIMING_HOST);
    qc->nranks = x->nranks > qc->nranks ? x->nranks : qc->nranks;
    size_t s = (size_t)(x->seq - 1);
    if (s >= qc->nsig) {
        if (s - qc->nsig >= q->sig_left) return -1; /* (and the doubling below cannot overflow) */
        size_t want = qc->nsig ? 2 * qc->nsig : QUICK_SIG_FIRST;
        while (want <= s)
            want *= 2;
        if (want - qc->nsig > q->sig_left) return -1;
        struct quick_sig *sig = realloc(qc->sig, want * sizeof *sig);
        if (!sig) return -1;
        memset(sig + qc->nsig, 0, (want - qc->nsig) * sizeof *sig);
        q->sig_left -= want - qc->nsig;
        qc->sig = sig;
        qc->nsig = want;
    }
    struct quick_sig *g = &qc->sig[s];
    if (!g->op1) {
        *g = (struct quick_sig){(uint32_t)x->op + 1, x->dtype, x->bytes};
        return 0;
    }
    return g->op1 == (uint32_t)x->op + 1 && g->dtype == x->dtype && g->bytes == x->bytes ? 0 : -1;
}

static int cmp_quick_comm(const void *a, const void *b)
{
    const struct quick_comm *x = *(const struct quick_comm *const *)a, *y = *(const struct quick_comm *const *)b;
    return (x->comm > y->comm) - (x->comm < y->comm);
}

/* find_instances for a job whose instances are all complete and agree:
 * 1 when so (h->comms filled as the sort would), 0 when the sort must
 * decide (nothing in h changed), -1 no memory. */
static int quick_instances(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h,
                           size_t total)
{
    struct quick *q = malloc(sizeof *q);
    if (!q) return 0;
    q->nc = 0;
    memset(q->slot, 0xff, sizeof q->slot);
    q->sig_left = QUICK_SIG_PER_CALL * total + QUICK_SIG_SLACK;
    int ok = 1;
    for (int r = 0; r < m->nranks && ok; r++) {
        struct quick_mine mine = {.n = 0};
        const struct sp_coll_call *calls = m->ranks[r].calls;
        for (size_t c = 0; c < m->ranks[r].ncalls && ok; c++) {
            const struct sp_coll_call *x = &calls[c];
            if (is_coll(x->op) && x->seq > 0 && c <= UINT32_MAX) ok = quick_add(q, &mine, r, x) == 0;
        }
    }
    /* an instance is pending when some member entered past the last one
     * completed anywhere (analyze_comm) */
    for (int i = 0; i < q->nc && ok; i++) {
        uint64_t max_e = 0, max_done = 0;
        for (int j = 0; j < q->c[i].nmem; j++) {
            const struct member *x = &q->c[i].mem[j];
            max_e = x->entered > max_e ? x->entered : max_e;
            max_done = x->done > max_done ? x->done : max_done;
        }
        ok = max_e <= max_done;
    }
    struct quick_comm **by = ok ? malloc(((size_t)q->nc + 1) * sizeof *by) : NULL;
    struct member *all = by ? calloc((size_t)m->nranks + 1, sizeof *all) : NULL;
    char *has = all ? calloc((size_t)m->nranks + 1, 1) : NULL;
    if (!has) {
        free(all);
        free(by);
        quick_free(q);
        free(q);
        return 0;
    }
    for (int i = 0; i < q->nc; i++)
        by[i] = &q->c[i];
    qsort(by, (size_t)q->nc, sizeof *by, cmp_quick_comm);
    int rc = 0;
    free_comms(h);
    h->hung_s = -1;
    for (int i = 0; i < q->nc && rc == 0; i++) {
        const struct quick_comm *qc = by[i];
        for (int j = 0; j < qc->nmem; j++) {
            all[qc->mem[j].r] = qc->mem[j];
            has[qc->mem[j].r] = 1;
        }
        rc = comm_members(m, o, h, qc->comm, qc->nranks, all, has, NULL, 0, NULL, 0);
        for (int j = 0; j < qc->nmem; j++) {
            all[qc->mem[j].r] = (struct member){0};
            has[qc->mem[j].r] = 0;
        }
    }
    free(has);
    free(all);
    free(by);
    quick_free(q);
    free(q);
    return rc < 0 ? -1 : 1;
}

/* Every communicator: pending instances (and desyncs when asked). */
static int find_instances(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h,
                          const struct host_done *hv, size_t nhv, int desync)
{
    size_t total = 0;
    for (int r = 0; r < m->nranks; r++)
        total += m->ranks[r].ncalls;
    if (desync && !nhv) {
        int q = quick_instances(m, o, h, total);
        if (q != 0) return q < 0 ? -1 : 0;
    }
    struct cref *k = malloc((total + 1) * sizeof *k);
    struct sp_pair_key *pk = malloc((total + 1) * sizeof *pk);
    if (!k || !pk) {
        free(k);
        free(pk);
        return -1;
    }
    size_t n = 0;
    for (int r = 0; r < m->nranks; r++)
        for (size_t c = 0; c < m->ranks[r].ncalls; c++) {
            const struct sp_coll_call *x = &m->ranks[r].calls[c];
            if (is_coll(x->op) && x->seq > 0 && c <= UINT32_MAX) {
                pk[n] = (struct sp_pair_key){x->comm, x->seq};
                k[n++] = (struct cref){x->comm, x->seq, x->bytes, x->host_t, x->end, r, (uint32_t)c,
                                       x->op, x->dtype, x->nranks, x->timing};
            }
        }
    int sorted = sort_crefs(&k, pk, n);
    free(pk);
    if (sorted < 0) {
        free(k);
        return -1;
    }
    int rc = 0;
    free_comms(h);
    h->hung_s = -1;
    for (size_t a = 0; a < n && rc == 0;) {
        size_t b = a;
        while (b < n && k[b].comm == k[a].comm)
            b++;
        if (desync) {
            int seen = 0;
            for (size_t i = a; i < b && rc == 0;) {
                size_t j = i;
                while (j < b && k[j].seq == k[i].seq)
                    j++;
                rc = check_desync(m, h, k + i, j - i, &seen);
                i = j;
            }
        }
        if (rc == 0) rc = analyze_comm(m, o, h, k + a, b - a, hv, nhv);
        a = b;
    }
    for (int i = 0; i < h->ninsts; i++)
        if (h->insts[i].hung && (h->hung_s < 0 || h->insts[i].hung_s < h->hung_s))
            h->hung_s = h->insts[i].hung_s;
    free(k);
    return rc;
}

/* ---- the deep pass: the last events of each thread ---- */

struct ring {
    uint32_t tid;
    int n, head;
    struct sp_event *ev;
    uint64_t nccl;
    int64_t last_t;
};

struct hv_entry {
    uint32_t tid;
    uint64_t comm, stream, seq, done;
    int64_t t, done_t;
};

struct file_read {
    const struct sp_model *m;
    const struct sp_hang_opts *o;
    const struct sp_file_rec *f;
    int rank_index, helper;
    struct ring *rings;
    int nrings, dropped, last_ring;
    struct {
        int64_t t;
        uint64_t ns;
    } cpu[SP_HANG_CPU_RING];
    int ncpu, cpu_head;
    struct hv_entry hv[MAX_HOST_VIEW];
    int nhv;
    struct sp_hang_proc out;
};

static struct ring *ring_of(struct file_read *s, uint32_t tid)
{
    if (s->last_ring < s->nrings && s->rings[s->last_ring].tid == tid)
        return &s->rings[s->last_ring];
    for (int i = 0; i < s->nrings; i++)
        if (s->rings[i].tid == tid) {
            s->last_ring = i;
            return &s->rings[i];
        }
    if (s->nrings == SP_HANG_MAX_THREADS) {
        s->dropped++;
        return NULL;
    }
    struct sp_event *ev = calloc((size_t)s->o->events, sizeof *ev);
    if (!ev) return NULL;
    struct ring *p = realloc(s->rings, (size_t)(s->nrings + 1) * sizeof *p);
    if (!p) {
        free(ev);
        return NULL;
    }
    s->rings = p;
    s->rings[s->nrings] = (struct ring){.tid = tid, .ev = ev, .last_t = INT64_MIN};
    s->last_ring = s->nrings;
    return &s->rings[s->nrings++];
}

static void keep(struct file_read *s, const struct sp_event *ev)
{
    struct ring *r = ring_of(s, ev->tid);
    if (!r) return;
    int cap = s->o->events;
    r->ev[r->head] = *ev;
    r->head = (r->head + 1) % cap;
    if (r->n < cap) r->n++;
    if ((int64_t)ev->t > r->last_t) r->last_t = (int64_t)ev->t;
    if (ev->type == SP_EV_NCCL) r->nccl++;
}

static void note_call(struct file_read *s, const struct sp_event *ev)
{
    const struct sp_ev_nccl *n = &ev->nccl;
    if (!is_coll((uint32_t)n->op) || !n->seq) return;
    for (int i = 0; i < s->nhv; i++) {
        struct hv_entry *e = &s->hv[i];
        if (e->tid == ev->tid && e->comm == n->comm && e->stream == n->stream) {
            if (n->seq > e->seq) {
                e->seq = n->seq;
                e->t = (int64_t)ev->t;
            }
            return;
        }
    }
    if (s->nhv < MAX_HOST_VIEW)
        s->hv[s->nhv++] =
            (struct hv_entry){ev->tid, n->comm, n->stream, n->seq, 0, (int64_t)ev->t, 0};
}

/* A sync that returned on the thread that entered a collective, started
 * after it, on its stream or the whole device: the collective completed. */
static void note_sync(struct file_read *s, const struct sp_event *ev)
{
    const struct sp_ev_cuda *c = &ev->cuda;
    int device = c->api == SP_CUDA_DEVICE_SYNC;
    if ((!device && c->api != SP_CUDA_STREAM_SYNC) || c->result != 0) return;
    for (int i = 0; i < s->nhv; i++) {
        struct hv_entry *e = &s->hv[i];
        if (e->tid == ev->tid && (device || e->stream == c->stream) && (int64_t)ev->t >= e->t &&
            e->seq > e->done) {
            e->done = e->seq;
            e->done_t = (int64_t)(ev->t + c->dur);
        }
    }
}

static int deep_event(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct file_read *s = ctx;
    struct sp_hang_proc *p = &s->out;
    int64_t t = (int64_t)ev->t;
    switch (ev->type) {
    case SP_EV_GPU:
        if (ev->gpu.kind == SP_GPU_KERNEL) p->kernels++;
        if (t + (int64_t)ev->gpu.dur > p->gpu_end) p->gpu_end = t + (int64_t)ev->gpu.dur;
        return 0;
    case SP_EV_CPU:
        s->cpu[s->cpu_head].t = t;
        s->cpu[s->cpu_head].ns = ev->cpu.user_ns + ev->cpu.sys_ns;
        s->cpu_head = (s->cpu_head + 1) % SP_HANG_CPU_RING;
        if (s->ncpu < SP_HANG_CPU_RING) s->ncpu++;
        return 0;
    case SP_EV_NCCL:
        if (ev->nccl.op == SP_NCCL_GROUP_START || ev->nccl.op == SP_NCCL_GROUP_END) return 0;
        note_call(s, ev);
        break;
    case SP_EV_CUDA:
        if (ev->cuda.api == SP_CUDA_LAUNCH) p->launches++;
        note_sync(s, ev);
        break;
    case SP_EV_PROC:
        if (ev->proc.kind == SP_PROC_EXIT) p->exit_status = (int)ev->proc.status;
        break;
    default:
        break;
    }
    if (t > p->last_t) p->last_t = t;
    keep(s, ev);
    return 0;
}

static int deep_open(void *ctx, struct sp_reader *r)
{
    (void)ctx;
    sp_reader_set_fields(r, SP_EV_GPU, SP_FIELD_BIT(gpu, kind));
    sp_reader_set_fields(r, SP_EV_CPU, SP_FIELD_BIT(cpu, user_ns) | SP_FIELD_BIT(cpu, sys_ns));
    return 0;
}

static void dur_text(int64_t ns, char *out, size_t len)
{
    if (ns < 1000000)
        snprintf(out, len, "%.0f us", (double)ns / 1e3);
    else if (ns < 1000000000)
        snprintf(out, len, "%.1f ms", (double)ns / 1e6);
    else
        snprintf(out, len, "%.2f s", (double)ns / 1e9);
}

static const char *name_or(const char *s, const char *fallback)
{
    return s && *s ? s : fallback;
}

/* One event in words (the reader still open: its strings resolve). */
static void describe(const struct sp_reader *r, const struct sp_event *ev, char *out, size_t len)
{
    char d[32], b[32];
    switch (ev->type) {
    case SP_EV_NCCL: {
        const struct sp_ev_nccl *n = &ev->nccl;
        sp_text_bytes(n->bytes, b, sizeof b);
        if (sp_op_is_p2p((uint32_t)n->op))
            snprintf(out, len, "%s %s with peer %lld on %016llx", sp_hang_op_name((uint32_t)n->op),
                     b, (long long)n->peer, (unsigned long long)n->comm);
        else
            snprintf(out, len, "entered %s #%llu on %016llx (%s %s)",
                     sp_hang_op_name((uint32_t)n->op), (unsigned long long)n->seq,
                     (unsigned long long)n->comm, b, sp_nccl_dtype_name(n->datatype));
        return;
    }
    case SP_EV_CUDA: {
        const struct sp_ev_cuda *c = &ev->cuda;
        const char *api = sp_enum_name(SP_EV_CUDA, "api", c->api);
        dur_text((int64_t)c->dur, d, sizeof d);
        if (c->api == SP_CUDA_LAUNCH)
            snprintf(out, len, "launched %s (%s)",
                     name_or(sp_reader_string(r, c->name), "a kernel"), d);
        else if (c->api == SP_CUDA_STREAM_SYNC || c->api == SP_CUDA_DEVICE_SYNC ||
                 c->api == SP_CUDA_EVENT_SYNC)
            snprintf(out, len, "CUDA %s returned after %s", api ? api : "sync", d);
        else
            snprintf(out, len, "CUDA %s (%s)", api ? api : "call", d);
        return;
    }
    case SP_EV_IO: {
        const struct sp_ev_io *io = &ev->io;
        const char *op = sp_enum_name(SP_EV_IO, "op", io->op),
                   *kind = sp_enum_name(SP_EV_IO, "fd_kind", io->fd_kind);
        dur_text((int64_t)io->dur, d, sizeof d);
        const char *path = sp_reader_string(r, io->path);
        snprintf(out, len, "%s fd %lld (%s%s%s) -> %lld (%s)", op ? op : "io", (long long)io->fd,
                 kind ? kind : "?", path[0] ? " " : "", path, (long long)io->ret, d);
        return;
    }
    case SP_EV_WAIT: {
        const struct sp_ev_wait *w = &ev->wait;
        const char *op = sp_enum_name(SP_EV_WAIT, "op", w->op),
                   *kind = sp_enum_name(SP_EV_WAIT, "fd_kind", w->fd_kind);
        dur_text((int64_t)w->dur, d, sizeof d);
        if (w->op == SP_WAIT_DATALOADER)
            snprintf(out, len, "waited for the data loader (%s)", d);
        else
            snprintf(out, len, "%s on %llu fd(s) (%s), timeout %lld ms, returned %lld after %s",
                     op ? op : "wait", (unsigned long long)w->nfds, kind ? kind : "?",
                     (long long)w->timeout_ms, (long long)w->ret, d);
        return;
    }
    case SP_EV_MARKER: {
        const char *kind = sp_enum_name(SP_EV_MARKER, "kind", ev->marker.kind);
        snprintf(out, len, "marker %s '%s'", kind ? kind : "?",
                 sp_reader_string(r, ev->marker.name));
        return;
    }
    case SP_EV_PROC: {
        const char *kind = sp_enum_name(SP_EV_PROC, "kind", ev->proc.kind);
        if (ev->proc.kind == SP_PROC_EXIT)
            snprintf(out, len, "exit, status %lld", (long long)ev->proc.status);
        else
            snprintf(out, len, "process %s %lld", kind ? kind : "event", (long long)ev->proc.pid);
        return;
    }
    default:
        snprintf(out, len, "%s", name_or(sp_event_name(ev->type), "event"));
    }
}

static int cmp_ev_t(const void *a, const void *b)
{
    const struct sp_hang_ev *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

static void deep_close(void *ctx, struct sp_reader *r)
{
    struct file_read *s = ctx;
    struct sp_hang_proc *p = &s->out;
    p->threads = calloc((size_t)s->nrings + 1, sizeof *p->threads);
    if (!p->threads) return;
    uint64_t most = 0;
    int main = -1;
    for (int i = 0; i < s->nrings; i++)
        if (s->rings[i].nccl > most) {
            most = s->rings[i].nccl;
            main = i;
        }
    for (int i = 0; i < s->nrings; i++) {
        struct ring *g = &s->rings[i];
        struct sp_hang_thread *t = &p->threads[p->nthreads];
        t->ev = calloc((size_t)g->n + 1, sizeof *t->ev);
        if (!t->ev) continue;
        t->tid = g->tid;
        t->main = main >= 0 ? i == main : g->tid == (uint32_t)p->pid;
        t->last_t = file_global(s->m, s->f, g->last_t);
        int cap = s->o->events;
        for (int j = 0; j < g->n; j++) {
            const struct sp_event *ev = &g->ev[(g->head - g->n + j + cap) % cap];
            struct sp_hang_ev *x = &t->ev[t->n++];
            x->t = file_global(s->m, s->f, (int64_t)ev->t);
            describe(r, ev, x->what, sizeof x->what);
        }
        qsort(t->ev, (size_t)t->n, sizeof *t->ev, cmp_ev_t);
        p->nthreads++;
    }
    p->threads_dropped = s->dropped;
}

/* CPU use over the last samples kept, in cores. */
/* CPU use over the samples since the process's last recorded call (over
 * all samples kept when fewer than two came after it), in cores.  Called
 * while p->last_t is still the file's own time. */
static void cpu_share(struct file_read *s)
{
    struct sp_hang_proc *p = &s->out;
    p->cpu_share = -1;
    if (s->ncpu < 2) return;
    int first = (s->cpu_head - s->ncpu + SP_HANG_CPU_RING) % SP_HANG_CPU_RING;
    int last = (s->cpu_head - 1 + SP_HANG_CPU_RING) % SP_HANG_CPU_RING;
    for (int i = 0, k = first; i < s->ncpu - 1; i++, k = (k + 1) % SP_HANG_CPU_RING)
        if (s->cpu[k].t >= p->last_t) {
            if (k != last) {
                first = k;
                p->cpu_since_last = 1;
            }
            break;
        }
    int64_t dt = s->cpu[last].t - s->cpu[first].t;
    if (dt <= 0 || s->cpu[last].ns < s->cpu[first].ns) return;
    p->cpu_share = (double)(s->cpu[last].ns - s->cpu[first].ns) / (double)dt;
    p->cpu_span_s = (double)dt / NS_PER_S;
}

static const struct sp_pass deep_pass = {
    .types = SP_TYPE_BIT(SP_EV_NCCL) | SP_TYPE_BIT(SP_EV_CUDA) | SP_TYPE_BIT(SP_EV_GPU) |
             SP_TYPE_BIT(SP_EV_IO) | SP_TYPE_BIT(SP_EV_WAIT) | SP_TYPE_BIT(SP_EV_MARKER) |
             SP_TYPE_BIT(SP_EV_PROC) | SP_TYPE_BIT(SP_EV_CPU),
    .tool = {.any = deep_event},
    .open = deep_open,
    .close = deep_close,
};

struct deep_job {
    struct file_read *reads;
};

static void read_one(int i, void *arg)
{
    struct deep_job *j = arg;
    struct file_read *s = &j->reads[i];
    struct sp_hang_proc *p = &s->out;
    p->pid = s->f->pid;
    p->helper = s->helper;
    p->path = s->f->path;
    p->exit_status = -1;
    p->last_t = INT64_MIN;
    sp_trace_feed(s->f->path, &deep_pass, s, NULL);
    cpu_share(s);
    p->last_t = p->last_t == INT64_MIN ? 0 : file_global(s->m, s->f, p->last_t);
    p->end_t = file_global(s->m, s->f, file_end(s->f));
    if (p->gpu_end) p->gpu_end = file_global(s->m, s->f, p->gpu_end);
    p->state = (s->f->flags & SP_FLAG_CLOSED) ? SP_HANG_CLOSED
               : sp_model_file_open(s->f)     ? SP_HANG_OPEN
                                              : SP_HANG_KILLED;
    for (int k = 0; k < s->nrings; k++)
        free(s->rings[k].ev);
    free(s->rings);
    s->rings = NULL;
}

/* ---- what each rank was doing ---- */

static int rank_index(const struct sp_model *m, int rank)
{
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].rank == rank) return i;
    return -1;
}

static const struct sp_hang_inst *inst_of_comm(const struct sp_hang *h, uint64_t comm)
{
    for (int i = 0; i < h->ninsts; i++)
        if (h->insts[i].comm == comm) return &h->insts[i];
    return NULL;
}

/* The rank's latest collective that is not known complete, NULL when its
 * last collective completed. */
static const struct sp_coll_call *pending_call(const struct sp_model *m, const struct sp_hang *h,
                                               int r)
{
    const struct sp_rank *rk = &m->ranks[r];
    const struct sp_coll_call *best = NULL;
    for (size_t c = 0; c < rk->ncalls; c++) {
        const struct sp_coll_call *x = &rk->calls[c];
        if (!is_coll(x->op)) continue;
        const struct sp_hang_inst *in = inst_of_comm(h, x->comm);
        if (!in || x->seq <= in->last_done) continue;
        if (!best || x->host_t > best->host_t) best = x;
    }
    return best;
}

static const struct sp_hang_thread *main_thread(const struct sp_hang_proc *p)
{
    for (int i = 0; i < p->nthreads; i++)
        if (p->threads[i].main) return &p->threads[i];
    return p->nthreads ? &p->threads[0] : NULL;
}

static int starts(const char *s, const char *p)
{
    return !strncmp(s, p, strlen(p));
}

/* The descriptions describe() writes, by what they say of the thread. */
static int is_launch(const char *w)
{
    return starts(w, "launched") || starts(w, "CUDA memcpy_async") || starts(w, "CUDA memset");
}

static int is_input_wait(const char *w)
{
    return starts(w, "poll") || starts(w, "ppoll") || starts(w, "select") || starts(w, "pselect") ||
           starts(w, "epoll") || starts(w, "waited for the data loader") ||
           ((starts(w, "read") || starts(w, "recv")) &&
            (strstr(w, "(pipe") || strstr(w, "(socket")));
}

static int is_file_read(const char *w)
{
    return starts(w, "read") || starts(w, "pread") || starts(w, "fread") || starts(w, "open") ||
           starts(w, "fopen");
}

static void say_cpu(const struct sp_hang_proc *p, char *out, size_t len)
{
    size_t l = strlen(out);
    if (p->cpu_share < 0 || l + 1 >= len) return;
    snprintf(out + l, len - l, "; its process used %.0f%% of a core %s %.1f s of samples (%s)",
             100 * p->cpu_share, p->cpu_since_last ? "since, over" : "over its last", p->cpu_span_s,
             p->cpu_share >= CPU_BUSY ? "busy: computing or spinning"
             : p->cpu_share < CPU_IDLE
                 ? "idle: asleep or blocked; the recorder's own threads use a little"
                 : "partly busy");
}

/* The state of rank index r and a sentence for it. */
static void describe_rank(const struct sp_model *m, const struct sp_hang *h, int r,
                          struct sp_hang_rank *out)
{
    const struct sp_coll_call *pc = pending_call(m, h, r);
    const struct sp_hang_proc *p = out->nprocs ? &out->procs[0] : NULL;
    char d[32];
    out->state = "unknown";
    if (p && p->state == SP_HANG_CLOSED) {
        out->state = "exited";
        if (p->exit_status >= 0)
            snprintf(out->doing, sizeof out->doing,
                     "its process exited (status %d) and closed its trace %.2f s before the end of "
                     "the job's traces",
                     p->exit_status, (double)(h->end_t - p->end_t) / NS_PER_S);
        else
            snprintf(out->doing, sizeof out->doing,
                     "its process closed its trace %.2f s before the end of the job's traces",
                     (double)(h->end_t - p->end_t) / NS_PER_S);
        return;
    }
    if (pc) {
        const struct sp_hang_inst *in = inst_of_comm(h, pc->comm);
        int here = in && in->seq == pc->seq;
        out->state = "in_collective";
        snprintf(out->doing, sizeof out->doing,
                 "waiting in %s #%llu on %016llx: entered %.2f s before the end of the traces, no "
                 "completion recorded%s",
                 sp_hang_op_name(pc->op), (unsigned long long)pc->seq, (unsigned long long)pc->comm,
                 (double)(h->end_t - sp_model_global(m, &m->ranks[r], pc->host_t)) / NS_PER_S,
                 here ? "" : " (a collective other than the one the job stopped in)");
        return;
    }
    const struct sp_hang_thread *t = p ? main_thread(p) : NULL;
    if (!t || !t->n) {
        out->state = "silent";
        snprintf(out->doing, sizeof out->doing, "nothing recorded on its threads%s",
                 p ? "" : " (its trace was not read)");
        return;
    }
    const struct sp_hang_ev *e = &t->ev[t->n - 1], *launch = NULL;
    double ago = (double)(h->end_t - e->t) / NS_PER_S;
    for (int i = t->n; i-- > 0 && !launch;)
        if (is_launch(t->ev[i].what)) launch = &t->ev[i];
    if (is_input_wait(e->what)) {
        out->state = "input_wait";
        snprintf(out->doing, sizeof out->doing,
                 "waiting for input (a DataLoader queue, pipe or socket): its last call, %.2f s "
                 "before the end, was '%s'; "
                 "a wait still in progress is not recorded",
                 ago, e->what);
    } else if (is_file_read(e->what)) {
        out->state = "reading";
        snprintf(out->doing, sizeof out->doing,
                 "reading input: its last call, %.2f s before the end, was '%s'", ago, e->what);
    } else if (launch && p->launches > p->kernels) {
        out->state = "gpu_wait";
        snprintf(out->doing, sizeof out->doing,
                 "waiting for the GPU, likely in a CUDA sync (a sync is recorded when it returns): "
                 "%llu of the kernels "
                 "it launched have no completion record (still running, or lost with a killed "
                 "process's CUPTI "
                 "buffers); its last call, %.2f s before the end: %s",
                 (unsigned long long)(p->launches - p->kernels), ago, e->what);
    } else if (launch) {
        double since = (double)(h->end_t - launch->t) / NS_PER_S;
        out->state = "own_code_after_launch";
        dur_text(p->gpu_end ? h->end_t - p->gpu_end : 0, d, sizeof d);
        snprintf(out->doing, sizeof out->doing,
                 "blocked in its own code after its last launch ('%s', %.2f s before the end): its "
                 "GPU had finished "
                 "all %llu kernels it launched (the last ended %s before the end), so no CUDA sync "
                 "was waiting for "
                 "it, and it entered no collective since%s%s",
                 launch->what, since, (unsigned long long)p->kernels, d,
                 e != launch ? "; its last call: " : "", e != launch ? e->what : "");
    } else {
        out->state = "own_code";
        snprintf(out->doing, sizeof out->doing,
                 "in its own code (or in a call recorded only when it returns) since '%s', %.2f s "
                 "before the end",
                 e->what, ago);
    }
    say_cpu(p, out->doing, sizeof out->doing);
}

/* The files to read for rank index r: its own, then (for a missing rank)
 * its helpers. */
static int add_reads(const struct sp_model *m, const struct sp_hang_opts *o, int r, int helpers,
                     struct file_read **v, int *n)
{
    const struct sp_rank *rk = &m->ranks[r];
    int want = rk->nfiles;
    int nh = 0;
    if (helpers)
        for (int i = 0; i < m->nfrecs && nh < MAX_HELPERS_READ; i++)
            nh += m->frecs[i].ok && m->frecs[i].helper && m->frecs[i].rank == rk->rank;
    struct file_read *p = realloc(*v, (size_t)(*n + want + nh + 1) * sizeof *p);
    if (!p) return -1;
    *v = p;
    /* newest own file first: it is the process running at the end */
    for (int i = rk->nfiles; i-- > 0;)
        p[(*n)++] = (struct file_read){.m = m, .o = o, .f = rk->files[i], .rank_index = r};
    nh = 0;
    for (int i = 0; helpers && i < m->nfrecs && nh < MAX_HELPERS_READ; i++)
        if (m->frecs[i].ok && m->frecs[i].helper && m->frecs[i].rank == rk->rank) {
            p[(*n)++] =
                (struct file_read){.m = m, .o = o, .f = &m->frecs[i], .rank_index = r, .helper = 1};
            nh++;
        }
    return 0;
}

static int cmp_rank_entry(const void *a, const void *b)
{
    const struct sp_hang_rank *x = a, *y = b;
    return x->rank - y->rank;
}

/* Summaries hold no events: the deep pass reads the few traces of the
 * ranks concerned where the summaries recorded them; one this machine
 * cannot read is said, not guessed at. */
static void warn_unreachable(struct sp_warn_list *warn, const struct file_read *reads, int nreads)
{
    int n = 0;
    const char *first = NULL;
    for (int i = 0; i < nreads; i++)
        if (access(reads[i].f->path, R_OK) != 0 && n++ == 0) first = reads[i].f->path;
    if (n)
        sp_warn_list_add(warn, "%d trace file(s) of the ranks concerned (%s first) are not readable here: the summaries "
                               "hold no events, so what those processes did last is not shown; run scaleprof hang on "
                               "their host's traces for it",
                         n, first);
}

static int deep(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h)
{
    /* the ranks concerned: members of a pending instance */
    char *concerned = calloc((size_t)m->nranks + 1, 1);
    struct file_read *reads = NULL;
    int nreads = 0, rc = 0;
    if (!concerned) return -1;
    for (int i = 0; i < h->ninsts; i++) {
        for (int j = 0; j < h->insts[i].nentered; j++) {
            int r = rank_index(m, h->insts[i].entered[j]);
            if (r >= 0 && !concerned[r]) concerned[r] = 1;
        }
        for (int j = 0; j < h->insts[i].nmissing; j++) {
            int r = rank_index(m, h->insts[i].missing[j]);
            if (r >= 0) concerned[r] = 2;
        }
    }
    for (int r = 0; r < m->nranks && rc == 0; r++)
        if (concerned[r]) rc = add_reads(m, o, r, concerned[r] == 2, &reads, &nreads);
    if (sp_model_from_summaries(m)) warn_unreachable(&h->warnings, reads, nreads);
    if (rc == 0 && nreads) {
        struct deep_job job = {reads};
        sp_model_parallel(m, nreads, read_one, &job);
    }
    /* completions seen from the host, then the instances again */
    struct host_done *hv = NULL;
    size_t nhv = 0;
    for (int i = 0; i < nreads; i++)
        for (int j = 0; j < reads[i].nhv; j++)
            if (reads[i].hv[j].done) {
                struct host_done *p = realloc(hv, (nhv + 1) * sizeof *p);
                if (!p) break;
                hv = p;
                hv[nhv++] = (struct host_done){reads[i].rank_index, reads[i].hv[j].comm,
                                               reads[i].hv[j].done,
                                               file_global(m, reads[i].f, reads[i].hv[j].done_t)};
            }
    if (nhv) {
        free_insts(h);
        rc = find_instances(m, o, h, hv, nhv, 0);
    }
    free(hv);
    /* one entry per concerned rank, its processes newest first */
    h->ranks = calloc((size_t)m->nranks + 1, sizeof *h->ranks);
    for (int r = 0; h->ranks && r < m->nranks; r++) {
        if (!concerned[r]) continue;
        struct sp_hang_rank *x = &h->ranks[h->nranks++];
        x->rank = m->ranks[r].rank;
        int np = 0;
        for (int i = 0; i < nreads; i++)
            np += reads[i].rank_index == r;
        x->procs = calloc((size_t)np + 1, sizeof *x->procs);
        for (int i = 0; i < nreads; i++) {
            if (reads[i].rank_index != r) continue;
            if (x->procs) {
                x->procs[x->nprocs++] = reads[i].out;
                continue;
            }
            for (int t = 0; t < reads[i].out.nthreads; t++)
                free(reads[i].out.threads[t].ev);
            free(reads[i].out.threads);
        }
        x->last_t = x->nprocs ? x->procs[0].last_t : 0;
        x->end_t = x->nprocs ? x->procs[0].end_t : 0;
        describe_rank(m, h, r, x);
    }
    if (!h->ranks)
        for (int i = 0; i < nreads; i++) {
            for (int t = 0; t < reads[i].out.nthreads; t++)
                free(reads[i].out.threads[t].ev);
            free(reads[i].out.threads);
        }
    else
        qsort(h->ranks, (size_t)h->nranks, sizeof *h->ranks, cmp_rank_entry);
    free(reads);
    free(concerned);
    return rc;
}

const struct sp_hang_rank *sp_hang_rank_of(const struct sp_hang *h, int rank)
{
    for (int i = 0; i < h->nranks; i++)
        if (h->ranks[i].rank == rank) return &h->ranks[i];
    return NULL;
}

/* A pending collective that a member had left the job before entering
 * can never complete: a hang, however short the others waited. */
static void mark_stranded(struct sp_hang *h)
{
    for (int i = 0; i < h->ninsts; i++) {
        struct sp_hang_inst *x = &h->insts[i];
        for (int k = 0; k < x->nmissing && !x->hung; k++) {
            const struct sp_hang_rank *r = sp_hang_rank_of(h, x->missing[k]);
            if (r && !strcmp(r->state, "exited")) {
                x->hung = x->stranded = 1;
                h->nhung++;
            }
        }
    }
}

/* A rank's trace end (global), over its own files; *sampled when they
 * carry CPU samples (the trace then runs as long as its process did),
 * *closed when its last file was closed (it exited). */
static int64_t rank_trace_end(const struct sp_model *m, int r, int *sampled, int *closed)
{
    const struct sp_rank *q = &m->ranks[r];
    int64_t end = INT64_MIN;
    *sampled = *closed = 0;
    for (int f = 0; f < q->nfiles; f++) {
        int64_t e = file_global(m, q->files[f], file_end(q->files[f]));
        end = e > end ? e : end;
        *sampled |= q->files[f]->cpu.nsamples > 1;
    }
    if (q->nfiles)
        *closed = (q->files[q->nfiles - 1]->flags & SP_FLAG_CLOSED) != 0;
    return end;
}

/* Each hung instance's member whose trace ended first, far ahead of the
 * others': the rank that stopped making progress (see stalled_rank). */
static void find_stalled(const struct sp_model *m, struct sp_hang *h)
{
    for (int i = 0; i < h->ninsts; i++) {
        struct sp_hang_inst *x = &h->insts[i];
        x->stalled_rank = -1;
        int64_t first = INT64_MAX, second = INT64_MAX;
        int who = -1, who_ok = 0;
        for (int k = 0; k < x->nentered + x->nmissing; k++) {
            int rank = k < x->nentered ? x->entered[k] : x->missing[k - x->nentered];
            int r = rank_index(m, rank), sampled, closed;
            if (r < 0) continue;
            int64_t e = rank_trace_end(m, r, &sampled, &closed);
            if (e < first) {
                second = first;
                first = e;
                who = rank;
                who_ok = sampled && !closed;
            } else if (e < second) {
                second = e;
            }
        }
        if (who >= 0 && who_ok && second != INT64_MAX && (double)(second - first) / NS_PER_S >= SP_HANG_MIN_S) {
            x->stalled_rank = who;
            x->stalled_s = (double)(second - first) / NS_PER_S;
        }
    }
}

int sp_hang_analyze(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h)
{
    memset(h, 0, sizeof *h);
    h->hung_s = -1;
    for (int i = 0; i < m->nfrecs; i++) {
        const struct sp_file_rec *f = &m->frecs[i];
        if (!f->ok || f->rank < 0 || !f->events) continue;
        int64_t e = file_global(m, f, file_end(f));
        h->end_t = e > h->end_t ? e : h->end_t;
        h->cpu_sampled |= f->cpu.nsamples > 1;
    }
    int rc = find_instances(m, o, h, NULL, 0, 1);
    if (rc == 0 && o->deep && h->ninsts) rc = deep(m, o, h);
    if (rc == 0) mark_stranded(h);
    find_stalled(m, h);
    return rc;
}

void sp_hang_mark_failed(struct sp_hang *h, const int *ranks, int n)
{
    for (int i = 0; i < h->ninsts; i++) {
        struct sp_hang_inst *x = &h->insts[i];
        for (int k = 0; k < x->nmissing && !x->hung; k++)
            for (int f = 0; f < n && !x->hung; f++)
                if (ranks[f] == x->missing[k]) {
                    x->hung = x->stranded = 1;
                    h->nhung++;
                    if (h->hung_s < 0 || x->hung_s < h->hung_s) h->hung_s = x->hung_s;
                }
    }
}

void sp_hang_free(struct sp_hang *h)
{
    sp_warn_list_free(&h->warnings);
    free_insts(h);
    free_comms(h);
    free_desyncs(h);
    for (int i = 0; i < h->nranks; i++) {
        for (int p = 0; p < h->ranks[i].nprocs; p++) {
            for (int t = 0; t < h->ranks[i].procs[p].nthreads; t++)
                free(h->ranks[i].procs[p].threads[t].ev);
            free(h->ranks[i].procs[p].threads);
        }
        free(h->ranks[i].procs);
    }
    free(h->ranks);
    memset(h, 0, sizeof *h);
}
