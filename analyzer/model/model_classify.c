/*
 * model_classify.c - pass 2: each step's time on each GPU, exclusively.
 *
 * Within a step, time goes to the highest-priority category active at that
 * instant: compute > memcpy > collective_transfer > collective_wait (the
 * NCCL kernel split at start + wait, from model_coll.c) > idle_input (GPU
 * idle while a host thread of the rank waits for input: poll/select/epoll
 * on a pipe or socket, a read of a pipe, socket or regular file, a
 * data-loader wait) > idle_host (GPU idle while the host blocks in a CUDA
 * sync or launches work) > idle_other.  The seven add up to the step.
 * Overlap is the NCCL kernel time that ran under compute.  Copies in the
 * steps in view are also counted by direction and the memory kind of their
 * host side (pageable, pinned), with their bytes and GPU time, and the time
 * copies ran at all beside the time they ran outside compute: the memcpy
 * finding's evidence.  Helper
 * processes (loader workers) are not read here: their reads do not stall
 * the GPU; the rank's wait for their output does.
 *
 * Streaming without losing events.  A file's chunks come in the order
 * they were written, not in time order: a CUPTI buffer thread delivers GPU
 * records up to seconds after the launching thread wrote its calls, and
 * within its own stream groups them by GPU stream, so its times go back
 * and forth.  Pass 1 measured, per recording thread, how many events pass
 * 2 will see from it and its disorder `lag` (the most an event's time fell
 * below the latest time seen on that thread before it).  So once pass 2
 * has seen a thread's latest time `wm`, no later event of that thread can
 * start before wm - lag, and once it has seen all of a thread's events the
 * thread can add nothing.  A step is reduced when its end is at or before
 * min over unfinished threads of (wm - lag).  This bound comes from the
 * file itself, so the result does not depend on the machine's timing or
 * on how chunks happened to interleave: no event is ever late.
 *
 * Memory: the intervals of the open steps, which span at most the largest
 * thread lag plus one step (plus FLUSH_EVERY events read between checks):
 * with CUPTI's delivery of about a second, a second of steps.
 * `open_peak` records the most steps held open at once per rank.  What
 * stays is per analyzed step: its categories and its replay nodes.
 *
 * Speed: an interval usually falls in the step of the one before, and
 * goes there without a search (the hint's step is cached with its
 * bounds); one outside the steps in view is dropped at once.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "model_int.h"
#include "model_summary.h"
#include "sprof.h"
#include "traceset.h"


/* I_HOST: inside CUDA calls other than launches (syncs, copies);
 * I_LAUNCH: inside launch calls; I_ISSUE: the moment the host enqueued an
 * NCCL call (a list of its own: it is added when the step closes, and
 * kept apart it stays sorted).  All end in idle_host; a GPU idle gap in which the host issued a
 * call is host time from the gap's start (the host was late).  I_SYNC
 * (the syncs among I_HOST) and I_WRITE (file writes and flushes) say which
 * part of the host's time it is (enum sp_loc): blocked writing, idle
 * because a sync inside the step kept the host from issuing work ahead, or
 * (I_LAUNCH) idle while the host was inside a launch call. */
enum icat { I_COMPUTE,
            I_MEMCPY,
            I_TRANSFER,
            I_WAIT,
            I_INPUT,
            I_HOST,
            I_LAUNCH,
            I_ISSUE,
            I_SYNC,
            I_WRITE,
            I_FILE,
            I_N };
/* I_FILE: opens and closes of regular files; those next to a write or a
 * flush (ADJACENT_NS) are the writing's: opening a checkpoint with O_TRUNC
 * truncates the last one, which can take longer than writing it. */
#define ADJACENT_NS 1000000

/* Call sites of syncs, for the evidence: a rank's distinct recorded stacks
 * (the first SYNC_SITES), and each sync call in order with its site. */
#define SYNC_SITES 16
struct sync_call {
    int64_t start, end;
    int site;
};
struct sync_site {
    char *stack;
    uint64_t calls;
    double idle_ns;
};

/* A step's intervals, one list per category: each list is nearly sorted
 * as it arrives (a thread's events come in time order), so reducing a step
 * is one pass per category while it is in order (a sort only from where it
 * is not), then each priority level measured by what it adds outside
 * compute (reduce) - no sort of the whole step, and no union of the long
 * lists but one. */
struct ivec {
    struct sp_span *v;
    size_t n, cap;
};
struct step_buf {
    struct ivec c[I_N];
    unsigned unsorted; /* bit c: list c got an interval before its last */
    int done;
};

/* Emptied lists kept per category for the next steps: as many as steps
 * are open at once at a rank's start (26 on the 1024-rank row of
 * bench/RESULTS.md), so that the steps closed together give theirs back
 * instead of freeing all but 8 and allocating again for the next steps
 * (73 new lists a rank of 100 steps there; 26 now). */
#define SPARE_MAX 64
#define HEAD_TINY_DIV 100 /* compute shorter than 1% of the step does not start it */

struct thread_seen {
    int64_t wm;
    uint64_t seen;
};
#define NO_TID UINT64_MAX /* no event's: a tid is 32 bits */

/* The unions of the priority levels, each a superset of the one before:
 * compute+memcpy (U_CM), +transfer, +wait (U_CMTW), +input (U_I), +the
 * host's time (U_H).  A category's time is what its level adds.  Compute
 * is the long list; the levels below the host's are kept as what each
 * adds to compute outside it (memcpy, +transfer, +wait, +input: d[]). */
enum { D_M,
       D_MT,
       D_MTW,
       D_MTWI,
       D_N };

/* Prefixes of a sorted, disjoint list: |v n (-inf, q)| for q in order
 * (a q below the last one starts over).  The node windows tile the step,
 * each starting where the one before ended: the prefix at the last q is
 * kept, so each bound is measured once. */
struct cursor {
    const struct sp_span *x;
    size_t n, j;
    int64_t acc, last, at_last;
};

struct rank_pass {
    struct sp_model *m;
    struct sp_rank *r;
    struct step_buf *buf;
    int lo, hi;       /* steps reduced here */
    int next_open;    /* oldest step not yet reduced */
    int last_touched; /* newest step that received an interval */
    int hint;         /* step of the previous interval */
    /* The hint's step when it is one of [lo, hi): its bounds, the next
     * step's start (INT64_MAX past the last) and its buffer.  An interval
     * that starts in it and ends by the next one's start goes there and
     * nowhere else, with no search (add_interval). */
    int64_t cur_start, cur_end, cur_next;
    struct step_buf *cur;
    int cur_k;
    /* Steps [lo, hi) in order, none overlapping the next: then an interval
     * that ends by the first one's start or starts at the last one's end
     * meets none of them. */
    int ordered;
    int64_t view_start, view_end;
    int64_t max_call; /* longest NCCL call, for the call search */
    struct sp_file_rec *f;
    int device;             /* GPU events of this device only (a process of
                               several ranks), -1 all */
    struct thread_seen *th; /* per tid of f, same index as its pass's tids */
    size_t last_tid;
    uint64_t cur_tid;           /* the tid of the previous event, NO_TID before any */
    struct thread_seen *cur_th; /* and its th: th[ntids], counted for nothing, when
                                   it is not a thread of f */
    /* Emptied lists by category: a step's list of launches or kernels
     * takes one as long as the last step's (a list of any category grew
     * from the waits' few to the kernels' hundreds, copied each time). */
    struct ivec spare[I_N][SPARE_MAX];
    int nspare[I_N];
    /* The longest list of each category so far: a list made new (no
     * spare left: the first steps) starts that long, not doubling to it. */
    size_t room[I_N];
    struct ivec ext, tmp; /* late-host spans; transfer u wait */
    /* The step's levels as compute plus what each adds (reduce): out[]
     * each busy category's part outside compute, d[L] (their unions) the
     * part of level L outside compute, e what the host adds to U_I */
    struct ivec out[D_N], d[D_N], ui, e1, e2, e3, e12, e, twc;
    const struct ivec *dl[D_N], *uil, *el;
    /* the host level's parts: writes (ew), writes and syncs (ews), those
     * and launch calls (ewsk), all (el) */
    struct ivec sy, esy, ew, ews, ewsk, eall;
    const struct ivec *ewl, *ewsl, *ewskl;
    struct cursor cur_c, cur_d[D_N], cur_e, cur_ew, cur_ews, cur_ewsk; /* prefixes at the node bounds */
    struct sync_call *syncs;
    size_t nsyncs, syncs_cap, sync_lo;
    struct sync_site sites[SYNC_SITES];
    int nsites;
    size_t nodes_cap, nodes_zero; /* the chain's room, and how much of it came zeroed */
};

static int grow(struct ivec *v, size_t need)
{
    if (need <= v->cap)
        return 0;
    size_t cap = v->cap ? v->cap : 64;
    while (cap < need)
        cap *= 2;
    struct sp_span *p = realloc(v->v, cap * sizeof *p);
    if (!p)
        return -1;
    v->v = p;
    v->cap = cap;
    return 0;
}

/* Room for one more interval in v, the list of category cat: an emptied
 * list of that category kept from an earlier step when v has none, else
 * a larger one.  -1 when out of memory. */
static __attribute__((noinline)) int make_room(struct rank_pass *rp, struct ivec *v, int cat)
{
    if (!v->v && rp->nspare[cat])
        *v = rp->spare[cat][--rp->nspare[cat]];
    if (v->n == v->cap && grow(v, v->n + 1 > rp->room[cat] ? v->n + 1 : rp->room[cat]) < 0)
        return -1;
    if (v->cap > rp->room[cat])
        rp->room[cat] = v->cap;
    return 0;
}

/* Whether an interval of the category joins the last one is as good as a
 * coin toss: work queued on a GPU stream starts when the work before it
 * ends, or later when the queue ran dry.  Host calls are apart. */
#define GPU_CATS ((1u << I_COMPUTE) | (1u << I_MEMCPY))

static inline void push_ival(struct rank_pass *rp, struct step_buf *b, int64_t s, int64_t e, int cat)
{
    struct ivec *v = &b->c[cat];
    size_t n = v->n;
    if (((GPU_CATS >> cat) & 1) && n - 1 < v->cap - 1) {
        /* a last interval and room after it: the interval is written
         * after the last one either way, and counted only when it does
         * not join it - no branch to guess wrong */
        struct sp_span *last = &v->v[n - 1];
        int64_t ls = last->start, le = last->end;
        int join = (s >= ls) & (s <= le);
        int64_t joined = e > le ? e : le;
        last->end = join ? joined : le;
        last[1] = (struct sp_span){s, e};
        v->n = n + (size_t)!join;
        b->unsorted |= (unsigned)(s < ls) << cat; /* never when it joins */
        return;
    }
    if (n) {
        /* Back-to-back work (kernels queued on a stream, launches in a
         * row) joins the last interval: the union is the same, the list
         * and every later merge shorter. */
        struct sp_span *last = &v->v[n - 1];
        if (s >= last->start && s <= last->end) {
            if (e > last->end)
                last->end = e;
            return;
        }
        if (s < last->start)
            b->unsorted |= 1u << cat;
    }
    if (n == v->cap && make_room(rp, v, cat) < 0)
        return;
    v->v[v->n++] = (struct sp_span){s, e};
}

static int cmp_span_start(const void *a, const void *b)
{
    const struct sp_span *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The categories add_collectives fills (it pushes only what meets the
 * step), and those add_interval does: with the steps in order, each
 * interval add_interval gives a step meets it. */
#define COLLECTIVE_CATS ((1u << I_ISSUE) | (1u << I_WAIT) | (1u << I_TRANSFER))
#define ADDED_ONLY (~COLLECTIVE_CATS)

/* normalize for a list that came in order: push_ival kept it sorted and
 * disjoint, and each of its intervals meets the step, so only the first
 * can start before the step and only the last end after it. */
static void clip_ends(struct ivec *v, struct sp_span st)
{
    if (!v->n)
        return;
    if (v->v[0].start < st.start)
        v->v[0].start = st.start;
    if (v->v[v->n - 1].end > st.end)
        v->v[v->n - 1].end = st.end;
}

/* Clip to the step and merge overlaps in place, in one pass while the
 * list comes in order; from the first interval that starts before the
 * last merged one, the rest is clipped, sorted and merged with what was
 * merged so far (the union, and so the result, is the same). */
static void normalize(struct ivec *v, struct sp_span st)
{
    struct sp_span *x = v->v;
    size_t m = 0, i = 0;
    for (; i < v->n; i++) {
        int64_t s = x[i].start > st.start ? x[i].start : st.start;
        int64_t e = x[i].end < st.end ? x[i].end : st.end;
        if (e <= s)
            continue;
        if (m && s < x[m - 1].start)
            break;
        if (m && s <= x[m - 1].end) {
            if (e > x[m - 1].end)
                x[m - 1].end = e;
        } else {
            x[m++] = (struct sp_span){s, e};
        }
    }
    if (i == v->n) {
        v->n = m;
        return;
    }
    size_t n = m;
    for (; i < v->n; i++) {
        int64_t s = x[i].start > st.start ? x[i].start : st.start;
        int64_t e = x[i].end < st.end ? x[i].end : st.end;
        if (e > s)
            x[n++] = (struct sp_span){s, e};
    }
    qsort(x, n, sizeof *x, cmp_span_start);
    m = 0;
    for (i = 0; i < n; i++) {
        if (m && x[i].start <= x[m - 1].end) {
            if (x[i].end > x[m - 1].end)
                x[m - 1].end = x[i].end;
        } else {
            x[m++] = x[i];
        }
    }
    v->n = m;
}

static int64_t measure(const struct ivec *v)
{
    int64_t t = 0;
    for (size_t i = 0; i < v->n; i++)
        t += v->v[i].end - v->v[i].start;
    return t;
}

/* out = a u b, both sorted and disjoint; out sorted and disjoint. */
static int unite(const struct ivec *a, const struct ivec *b, struct ivec *out)
{
    if (grow(out, a->n + b->n + 1) < 0)
        return -1;
    size_t i = 0, j = 0, n = 0;
    while (i < a->n || j < b->n) {
        struct sp_span x = j >= b->n || (i < a->n && a->v[i].start <= b->v[j].start) ? a->v[i++] : b->v[j++];
        if (n && x.start <= out->v[n - 1].end) {
            if (x.end > out->v[n - 1].end)
                out->v[n - 1].end = x.end;
        } else {
            out->v[n++] = x;
        }
    }
    out->n = n;
    return 0;
}

/* out = a u b, both sorted and disjoint and each disjoint from the other
 * (they may touch): unite's result, the runs of a between b's intervals
 * copied whole.  a is the long list (compute, hundreds a step), b what a
 * level adds outside it (a few dozen): a merge step per element of a cost
 * more than the rest of a level.  -1 when out of memory. */
static int unite_outside(const struct ivec *a, const struct ivec *b, struct ivec *out)
{
    if (grow(out, a->n + b->n + 1) < 0)
        return -1;
    const struct sp_span *x = a->v;
    struct sp_span *o = out->v;
    size_t i = 0, n = 0;
    for (size_t j = 0; j <= b->n; j++) {
        /* a's intervals before b's j-th (all of the rest after the last) */
        size_t k = i;
        if (j < b->n)
            while (k < a->n && x[k].start < b->v[j].start)
                k++;
        else
            k = a->n;
        if (k > i && n && x[i].start <= o[n - 1].end) { /* touches a b interval */
            if (x[i].end > o[n - 1].end)
                o[n - 1].end = x[i].end;
            i++;
        }
        if (k > i) {
            memcpy(o + n, x + i, (k - i) * sizeof *o); /* a's own are apart */
            n += k - i;
        }
        i = k;
        if (j == b->n)
            break;
        struct sp_span y = b->v[j];
        if (n && y.start <= o[n - 1].end) {
            if (y.end > o[n - 1].end)
                o[n - 1].end = y.end;
        } else {
            o[n++] = y;
        }
    }
    out->n = n;
    return 0;
}

/* The first interval of v[lo, n) that ends after t (n when none). */
static size_t first_end_after(const struct sp_span *v, size_t lo, size_t n, int64_t t)
{
    while (lo < n) {
        size_t mid = lo + (n - lo) / 2;
        if (v[mid].end <= t)
            lo = mid + 1;
        else
            n = mid;
    }
    return lo;
}

/* The parts of [cur, e) that no interval of y from y[*j] on covers,
 * appended at out[n]: the new count.  *j is left at the first interval
 * that may reach into the next span of the caller's list. */
static inline size_t subtract_one(const struct sp_span *y, size_t *jp, size_t nb, int64_t cur, int64_t e,
                                  struct sp_span *out, size_t n)
{
    size_t j = *jp;
    for (; j < nb && y[j].start < e; j++) {
        if (y[j].start > cur)
            out[n++] = (struct sp_span){cur, y[j].start};
        if (y[j].end > cur)
            cur = y[j].end;
        if (y[j].end > e)
            break; /* it reaches into the caller's next interval */
    }
    if (cur < e)
        out[n++] = (struct sp_span){cur, e};
    *jp = j;
    return n;
}

/* out = a \ b, both sorted and disjoint: the parts of a that no interval
 * of b covers, in order.  b is searched, not walked, between a's
 * intervals: a small a against a long b costs little.  -1 when out of
 * memory. */
static int subtract(const struct ivec *a, const struct ivec *b, struct ivec *out)
{
    out->n = 0;
    if (!a->n)
        return 0;
    if (grow(out, a->n + b->n + 1) < 0)
        return -1;
    const struct sp_span *x = a->v, *y = b->v;
    size_t nb = b->n, j = 0, n = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t cur = x[i].start, e = x[i].end;
        if (j < nb && y[j].end <= cur && ++j < nb && y[j].end <= cur)
            j = first_end_after(y, j, nb, cur); /* more than one to step over */
        n = subtract_one(y, &j, nb, cur, e, out->v, n);
    }
    out->n = n;
    return 0;
}

static void cursor_init(struct cursor *c, const struct ivec *v)
{
    *c = (struct cursor){v->v, v->n, 0, 0, INT64_MIN, 0};
}

/* |v n (-inf, q)|: the cursor moves on from the last q. */
static inline __attribute__((always_inline)) int64_t prefix(struct cursor *c, int64_t q)
{
    if (q == c->last)
        return c->at_last;
    const struct sp_span *x = c->x;
    size_t n = c->n;
    if (q < c->last) {
        c->j = 0;
        c->acc = 0;
    }
    c->last = q;
    while (c->j < n && x[c->j].end <= q) {
        c->acc += x[c->j].end - x[c->j].start;
        c->j++;
    }
    c->at_last = c->j < n && x[c->j].start < q ? c->acc + (q - x[c->j].start) : c->acc;
    return c->at_last;
}

/* |v n [lo, hi)|, lo <= hi, the cursor moving on from the last window.
 * Most of the host's lists are empty in most steps: one test then. */
static inline __attribute__((always_inline)) int64_t window(struct cursor *c, int64_t lo, int64_t hi)
{
    if (!c->n)
        return 0;
    int64_t a = prefix(c, lo);
    return prefix(c, hi) - a;
}

/* |v n (-inf, q)| with no cursor. */
static int64_t prefix_at(const struct ivec *v, int64_t q)
{
    struct cursor c;
    cursor_init(&c, v);
    return prefix(&c, q);
}

static int first_call_from(const struct sp_rank *r, int64_t t);

/* Host calls made while the GPU was idle, stretched back to the start of
 * that idle gap: the GPU waited for the host from then on.  `busy` is the
 * union of everything that is not idle (and input waits); the calls come
 * from the n sorted lists, each walked along busy on its own, and are
 * appended to out, which has room for them (in order then only list by
 * list: normalize makes it one union). */
static void late_host(const struct ivec *const *calls, int n, const struct ivec *busy, struct sp_span st,
                      struct ivec *out)
{
    const struct sp_span *b = busy->v;
    size_t nb = busy->n;
    for (int k = 0; k < n; k++) {
        const struct sp_span *c = calls[k]->v;
        size_t j = 0;
        for (size_t x = 0; x < calls[k]->n; x++) {
            int64_t h = c[x].start;
            while (j < nb && b[j].end <= h)
                j++;
            if (j < nb && b[j].start <= h)
                continue; /* issued while the GPU was busy: not late */
            int64_t gap_start = j > 0 ? b[j - 1].end : st.start;
            if (gap_start < h)
                out->v[out->n++] = (struct sp_span){gap_start, h};
        }
    }
}

/* subtract(a, busy, out) and late_host of a's calls (appended to late,
 * which has room for them; NULL: none kept) in one walk along busy: the
 * launches, hundreds a step, nearly all inside a kernel (busy from their
 * start to their end), which is one test. */
static int subtract_noting_late(const struct ivec *a, const struct ivec *busy, struct sp_span st,
                                struct ivec *out, struct ivec *late)
{
    out->n = 0;
    if (!a->n)
        return 0;
    if (grow(out, a->n + busy->n + 1) < 0)
        return -1;
    const struct sp_span *x = a->v, *y = busy->v;
    size_t nb = busy->n, j = 0, n = 0;
    for (size_t i = 0; i < a->n; i++) {
        int64_t cur = x[i].start, e = x[i].end;
        if (j < nb && y[j].end <= cur && ++j < nb && y[j].end <= cur)
            j = first_end_after(y, j, nb, cur); /* more than one to step over */
        /* y[j]: the first busy interval that ends after the call starts */
        if (j < nb && y[j].start <= cur) {
            if (e <= y[j].end)
                continue; /* inside it: nothing outside busy, and not late */
        } else if (late) {
            int64_t gap_start = j > 0 ? y[j - 1].end : st.start;
            if (gap_start < cur)
                late->v[late->n++] = (struct sp_span){gap_start, cur};
        }
        n = subtract_one(y, &j, nb, cur, e, out->v, n);
    }
    out->n = n;
    return 0;
}

/* Local time of the rank in [lo, hi) by sp_loc: everything but the NCCL
 * kernels' exclusive time.  Each level's measure in the window is a
 * difference of prefixes: compute's, plus what the level adds to it; the
 * windows come in order, so each list is walked once per step. */
static void local_in(struct rank_pass *rp, int64_t lo, int64_t hi, float out[SP_LOC_N])
{
    if (hi <= lo) {
        memset(out, 0, sizeof(float) * SP_LOC_N);
        return;
    }
    int64_t c = window(&rp->cur_c, lo, hi), dm = window(&rp->cur_d[D_M], lo, hi);
    int64_t dmtw = window(&rp->cur_d[D_MTW], lo, hi), dmtwi = window(&rp->cur_d[D_MTWI], lo, hi);
    int64_t e = 0, ew = 0, ews = 0, ewsk = 0;
    if (rp->cur_e.n) { /* the host's parts lie inside its level: none without it */
        e = window(&rp->cur_e, lo, hi);
        ew = window(&rp->cur_ew, lo, hi);
        ews = window(&rp->cur_ews, lo, hi);
        ewsk = window(&rp->cur_ewsk, lo, hi);
    }
    int64_t cm = c + dm, cmtw = c + dmtw, i = c + dmtwi, h = i + e;
    out[SP_LOC_BUSY] = (float)c;
    out[SP_LOC_COPY] = (float)(cm - c);
    out[SP_LOC_INPUT] = (float)(i - cmtw);
    out[SP_LOC_WRITE] = (float)ew;
    out[SP_LOC_SYNC] = (float)(ews - ew);
    out[SP_LOC_LAUNCH] = (float)(ewsk - ews);
    out[SP_LOC_HOST] = (float)(e - ewsk);
    out[SP_LOC_OTHER] = (float)((hi - lo) - h);
}


static struct sp_rnode *new_node(struct rank_pass *rp)
{
    struct sp_rank *r = rp->r;
    struct sp_rnode *p = sp_grow(r->nodes, r->nnodes, &rp->nodes_cap, sizeof *r->nodes, 256);
    if (!p)
        return NULL;
    r->nodes = p;
    struct sp_rnode *n = &r->nodes[r->nnodes++];
    if (r->nnodes > rp->nodes_zero) /* beyond the room that came zeroed */
        memset(n, 0, sizeof *n);
    return n;
}

/* The replay chain of step k: one node per NCCL kernel that started in the
 * step (a group's calls share one), then the step's end.  Each node's gap
 * runs from the previous node's end - or its next arrival, when ops ran
 * concurrently - to its arrival, so that under + gap of consecutive nodes
 * tile the step. */
static void build_nodes(struct rank_pass *rp, int k, struct sp_span st)
{
    struct sp_rank *r = rp->r;
    int64_t from = st.start; /* where the next gap starts */
    struct sp_rnode *prev = NULL;
    int64_t prev_a = st.start, prev_e = st.start;
    size_t i = (size_t)first_call_from(r, st.start);
    while (1) {
        const struct sp_coll_call *c = i < r->ncalls ? &r->calls[i] : NULL;
        if (c && c->start >= st.end)
            c = NULL;
        if (c && c->timing == SP_TIMING_HOST) {
            i++;
            continue;
        }
        int64_t a = c ? c->start : st.end;
        int64_t cut = prev_e < a ? prev_e : a; /* the previous op's window ends here */
        if (cut < prev_a)
            cut = prev_a;
        if (prev)
            local_in(rp, prev_a, cut, prev->under);
        from = cut;
        struct sp_rnode *n = new_node(rp);
        if (!n)
            return;
        local_in(rp, from, a, n->gap);
        n->step = (uint16_t)(k - rp->lo);
        if (!c) {
            n->a = n->e = sp_model_global(rp->m, r, st.end);
            return;
        }
        size_t j = i;
        int64_t e = c->end < st.end ? c->end : st.end;
        while (j < r->ncalls && r->calls[j].start == c->start && r->calls[j].end == c->end &&
               r->calls[j].timing != SP_TIMING_HOST && j - i < UINT16_MAX) {
            r->calls[j].node = (int32_t)(r->nnodes - 1);
            j++;
        }
        n->call = (uint32_t)i;
        n->ncalls = (uint16_t)(j - i);
        n->a = sp_model_global(rp->m, r, c->start);
        n->e = sp_model_global(rp->m, r, c->end);
        prev = n;
        prev_a = c->start;
        prev_e = e;
        i = j;
    }
}

/* The time syncs inside the step cost, into rp->sy: each sync the host
 * made with more work still to issue in the step (a launch or NCCL call
 * after it: not the sync that ends the step), and every late-host span
 * (rp->ext) that began while the host was blocked in it - the GPU drained
 * under the sync, and waited for the host from then to its next call.
 * Each such span is also added to its sync's call site. */
static void sync_caused(struct rank_pass *rp, const struct step_buf *b, struct sp_span st)
{
    rp->sy.n = 0;
    const struct ivec *S = &b->c[I_SYNC];
    if (!S->n || grow(&rp->sy, S->n + rp->ext.n + 1) < 0)
        return;
    int64_t last_issue = INT64_MIN; /* the step's last launch or NCCL call */
    for (int c = I_LAUNCH; c <= I_ISSUE; c++)
        if (b->c[c].n && b->c[c].v[b->c[c].n - 1].start > last_issue)
            last_issue = b->c[c].v[b->c[c].n - 1].start;
    /* the step's sync calls with their sites, for the tally */
    while (rp->sync_lo < rp->nsyncs && rp->syncs[rp->sync_lo].end <= st.start)
        rp->sync_lo++;
    size_t j = 0;
    for (size_t x = 0; x < S->n; x++) {
        struct sp_span s = S->v[x];
        if (s.end > last_issue)
            continue; /* nothing issued after it: the sync that ends the step */
        rp->sy.v[rp->sy.n++] = s;
        while (j < rp->ext.n && rp->ext.v[j].start < s.start)
            j++;
        for (; j < rp->ext.n && rp->ext.v[j].start <= s.end; j++) {
            /* without the sync the host would have started this work when
             * it entered the sync, while the GPU still had the sync's
             * length of work queued: that much of the wait is the sync's,
             * the rest the host's own lateness */
            struct sp_span w = rp->ext.v[j];
            if (w.end - w.start > s.end - s.start)
                w.end = w.start + (s.end - s.start);
            rp->sy.v[rp->sy.n++] = w;
            for (size_t q = rp->sync_lo; q < rp->nsyncs && rp->syncs[q].start < st.end; q++)
                if (rp->syncs[q].start <= rp->ext.v[j].start && rp->ext.v[j].start <= rp->syncs[q].end &&
                    rp->syncs[q].site >= 0) {
                    rp->sites[rp->syncs[q].site].idle_ns += (double)(w.end - w.start);
                    break;
                }
        }
    }
    normalize(&rp->sy, st);
}

/* The file opens and closes next to a write or flush join I_WRITE (both
 * normalized). */
static void writes_with_opens(struct step_buf *b, struct sp_span st)
{
    struct ivec *W = &b->c[I_WRITE];
    const struct ivec *F = &b->c[I_FILE];
    size_t nw = W->n, j = 0;
    if (!nw || !F->n)
        return;
    for (size_t x = 0; x < F->n; x++) {
        struct sp_span o = F->v[x];
        while (j < nw && W->v[j].end < o.start - ADJACENT_NS)
            j++;
        if (j < nw && W->v[j].start <= o.end + ADJACENT_NS && grow(W, W->n + 1) == 0)
            W->v[W->n++] = o;
    }
    if (W->n > nw)
        normalize(W, st);
}

/* a = b u c without a copy when either is empty: the union then is the
 * other list itself.  -1 when out of memory. */
static int level(const struct ivec *x, const struct ivec *y, struct ivec *store, const struct ivec **out)
{
    if (!y->n) {
        *out = x;
    } else if (!x->n) {
        *out = y;
    } else {
        if (unite(x, y, store) < 0)
            return -1;
        *out = store;
    }
    return 0;
}

/* Exclusive time by priority.  Each level is compute plus what the level
 * adds outside compute: memcpy, then transfer, wait and input (the
 * busy-side lists are short beside compute, and only their parts outside
 * compute are kept: d[]); the host's level is U_I (compute plus d[D_MTWI])
 * plus what the host's calls and its late time add outside U_I (e).  A
 * category's time is what its level adds, idle_other what no level
 * covers.  *head receives the idle_input time before the step's first
 * compute.  Then the step's replay nodes, whose windows are measured by
 * prefixes of the same lists. */
static void reduce(struct rank_pass *rp, struct step_buf *b, int k, double out[SP_CAT_N], double *head)
{
    struct sp_span st = rp->r->steps[k];
    memset(out, 0, sizeof(double) * SP_CAT_N);
    *head = 0;
    unsigned in_order = ((rp->ordered ? ADDED_ONLY : 0) | COLLECTIVE_CATS) & ~b->unsorted;
    for (int c = 0; c < I_N; c++) {
        if ((in_order >> c) & 1)
            clip_ends(&b->c[c], st);
        else
            normalize(&b->c[c], st);
    }
    const struct ivec *C = &b->c[I_COMPUTE], *tw;
    /* The busy side beyond compute, level by level, outside compute: each
     * category's part outside compute (out[]: memcpy, transfer, wait,
     * input) and their unions, since (a u b) \ C = (a \ C) u (b \ C) and
     * both sides are the same sorted, disjoint list.  Each short list is
     * searched in compute once, not once per level it is in. */
    static const int busy_cat[D_N] = {I_MEMCPY, I_TRANSFER, I_WAIT, I_INPUT};
    for (int d = 0; d < D_N; d++)
        if (subtract(&b->c[busy_cat[d]], C, &rp->out[d]) < 0)
            return;
    rp->dl[D_M] = &rp->out[0];
    if (level(rp->dl[D_M], &rp->out[1], &rp->d[D_MT], &rp->dl[D_MT]) < 0 ||
        level(rp->dl[D_MT], &rp->out[2], &rp->d[D_MTW], &rp->dl[D_MTW]) < 0 ||
        level(rp->dl[D_MTW], &rp->out[3], &rp->d[D_MTWI], &rp->dl[D_MTWI]) < 0)
        return;
    /* U_I as one list, for the host's side */
    rp->uil = C;
    if (rp->dl[D_MTWI]->n) {
        if (unite_outside(C, rp->dl[D_MTWI], &rp->ui) < 0)
            return;
        rp->uil = &rp->ui;
    }
    /* the late host's spans (ext) of every call list; the launches' with
     * what they add outside U_I (e2) */
    const struct ivec *calls[] = {&b->c[I_HOST], &b->c[I_ISSUE]};
    size_t ncalls = b->c[I_HOST].n + b->c[I_LAUNCH].n + b->c[I_ISSUE].n;
    rp->ext.n = 0;
    int late_kept = ncalls && grow(&rp->ext, ncalls + 1) == 0;
    if (late_kept)
        late_host(calls, 2, rp->uil, st, &rp->ext);
    if (subtract_noting_late(&b->c[I_LAUNCH], rp->uil, st, &rp->e2, late_kept ? &rp->ext : NULL) < 0)
        return;
    normalize(&rp->ext, st);
    const struct ivec *e12, *eh;
    if (subtract(&b->c[I_HOST], rp->uil, &rp->e1) < 0 || subtract(&rp->ext, rp->uil, &rp->e3) < 0 ||
        level(&rp->e1, &rp->e2, &rp->e12, &e12) < 0 || level(e12, &rp->e3, &rp->e, &eh) < 0)
        return;
    /* the host's parts, by priority: writes, then what syncs inside the
     * step caused, then the launch calls (e2: inside them with the GPU
     * idle), then the rest; their union is the host's level */
    sync_caused(rp, b, st);
    writes_with_opens(b, st);
    if (subtract(&b->c[I_WRITE], rp->uil, &rp->ew) < 0 || subtract(&rp->sy, rp->uil, &rp->esy) < 0 ||
        level(&rp->ew, &rp->esy, &rp->ews, &rp->ewsl) < 0 || level(rp->ewsl, &rp->e2, &rp->ewsk, &rp->ewskl) < 0 ||
        level(eh, &rp->ew, &rp->eall, &rp->el) < 0)
        return;
    rp->ewl = &rp->ew;
    if (rp->r->write_idle)
        rp->r->write_idle[k] = (double)measure(rp->ewl);
    if (rp->r->sync_idle)
        rp->r->sync_idle[k] = (double)(measure(rp->ewsl) - measure(rp->ewl));
    if (rp->r->launch_idle)
        rp->r->launch_idle[k] = (double)(measure(rp->ewskl) - measure(rp->ewsl));
    int64_t c = measure(C), cm = c + measure(rp->dl[D_M]), cmt = c + measure(rp->dl[D_MT]);
    int64_t cmtw = c + measure(rp->dl[D_MTW]), i = c + measure(rp->dl[D_MTWI]);
    int64_t h = i + measure(rp->el);
    out[SP_CAT_COMPUTE] = (double)c;
    out[SP_CAT_MEMCPY] = (double)(cm - c);
    rp->r->copy_ns += (double)measure(&b->c[I_MEMCPY]);
    out[SP_CAT_COLL_TRANSFER] = (double)(cmt - cm);
    out[SP_CAT_COLL_WAIT] = (double)(cmtw - cmt);
    out[SP_CAT_IDLE_INPUT] = (double)(i - cmtw);
    out[SP_CAT_IDLE_HOST] = (double)(h - i);
    out[SP_CAT_IDLE_OTHER] = (double)(st.end - st.start - h);
    /* the step's work starts with its first compute of some length: a
     * tiny kernel before the wait for input does not make the wait late */
    int64_t first_compute = st.end, tiny = (st.end - st.start) / HEAD_TINY_DIV;
    for (size_t ci = 0; ci < C->n; ci++)
        if (C->v[ci].end - C->v[ci].start > tiny) {
            first_compute = C->v[ci].start;
            break;
        }
    /* input (U_I) less U_CMTW before it: compute's share cancels */
    *head = (double)(prefix_at(rp->dl[D_MTWI], first_compute) - prefix_at(rp->dl[D_MTW], first_compute));
    /* overlap: NCCL kernel time under compute */
    if (level(&b->c[I_TRANSFER], &b->c[I_WAIT], &rp->tmp, &tw) < 0)
        return;
    if (C->n && tw->n) {
        /* tw \ C: the transfers' and waits' parts outside compute, which
         * d[MTW] is already when no copy is */
        const struct ivec *twc = rp->dl[D_MTW];
        if (rp->out[0].n && level(&rp->out[1], &rp->out[2], &rp->twc, &twc) < 0)
            return;
        out[SP_CAT_OVERLAP] = (double)(measure(tw) - measure(twc));
    }
    cursor_init(&rp->cur_c, C);
    for (int d = 0; d < D_N; d++)
        cursor_init(&rp->cur_d[d], rp->dl[d]);
    cursor_init(&rp->cur_e, rp->el);
    cursor_init(&rp->cur_ew, rp->ewl);
    cursor_init(&rp->cur_ews, rp->ewsl);
    cursor_init(&rp->cur_ewsk, rp->ewskl);
    build_nodes(rp, k, st);
}

/* First step whose end is after t, or hi. */
static int step_at(const struct rank_pass *rp, int64_t t)
{
    int a = rp->lo, b = rp->hi;
    while (a < b) {
        int mid = (a + b) / 2;
        if (rp->r->steps[mid].end <= t)
            a = mid + 1;
        else
            b = mid;
    }
    return a;
}

/* The search for the interval's steps from the hint, for the intervals
 * the hint's step does not hold alone; then the hint's step is cached. */
static __attribute__((noinline)) void add_interval_steps(struct rank_pass *rp, int64_t s, int64_t e, int cat)
{
    const struct sp_span *steps = rp->r->steps;
    int k = rp->hint;
    /* The hint may stand at hi (past the last step): never read steps[hi]. */
    if (k >= rp->hi || !(steps[k].start <= s && s < steps[k].end))
        k = rp->hint = step_at(rp, s);
    for (; k < rp->hi && steps[k].start < e; k++) {
        if (rp->buf[k - rp->lo].done) {
            rp->r->late_events++;
            continue;
        }
        push_ival(rp, &rp->buf[k - rp->lo], s, e, cat);
        if (k > rp->last_touched)
            rp->last_touched = k;
    }
    /* The hint's step is cached once it holds an interval (it may not yet:
     * s before its start, between two steps), so that an interval the
     * cache takes never makes it the newest step touched. */
    k = rp->hint;
    if (k < rp->hi && !rp->buf[k - rp->lo].done && k <= rp->last_touched) {
        rp->cur_k = k;
        rp->cur_start = steps[k].start;
        rp->cur_end = steps[k].end;
        rp->cur_next = k + 1 < rp->hi ? steps[k + 1].start : INT64_MAX;
        rp->cur = &rp->buf[k - rp->lo];
    }
}

/* An interval to the steps it meets: those from the hint's step (or, when
 * s is not in it, from the step s is in) on while they start before e. */
static inline void add_interval(struct rank_pass *rp, int64_t s, int64_t e, int cat)
{
    if (s >= rp->cur_start && s < rp->cur_end && e <= rp->cur_next && s < e) {
        /* in the hint's step, and the next starts at or after e (a step
         * reduced is never the cached one: close_step lets it go) */
        push_ival(rp, rp->cur, s, e, cat);
        return;
    }
    if (e <= s || (rp->ordered && (e <= rp->view_start || s >= rp->view_end)))
        return;
    add_interval_steps(rp, s, e, cat);
}

static int first_call_from(const struct sp_rank *r, int64_t t)
{
    size_t a = 0, b = r->ncalls;
    while (a < b) {
        size_t mid = (a + b) / 2;
        if (r->calls[mid].start < t)
            a = mid + 1;
        else
            b = mid;
    }
    return (int)a;
}

static void add_collectives(struct rank_pass *rp, int k)
{
    const struct sp_rank *r = rp->r;
    struct sp_span st = r->steps[k];
    struct step_buf *b = &rp->buf[k - rp->lo];
    for (size_t i = (size_t)first_call_from(r, st.start - rp->max_call); i < r->ncalls; i++) {
        const struct sp_coll_call *c = &r->calls[i];
        if (c->start >= st.end)
            break;
        if (c->host_t >= st.start && c->host_t < st.end)
            push_ival(rp, b, c->host_t, c->host_t + 1, I_ISSUE);
        if (c->timing == SP_TIMING_HOST || c->end <= st.start)
            continue;
        /* what meets the step (the rest normalize would drop): the lists
         * can then be clipped, not normalized, when they come in order */
        int64_t w = c->start + c->wait;
        if (c->start < w && w > st.start)
            push_ival(rp, b, c->start, w, I_WAIT);
        if (w < c->end && w < st.end)
            push_ival(rp, b, w, c->end, I_TRANSFER);
    }
}

static void close_step(struct rank_pass *rp, int k)
{
    struct step_buf *b = &rp->buf[k - rp->lo];
    if (b->done)
        return;
    add_collectives(rp, k);
    reduce(rp, b, k, rp->r->cat[k], &rp->r->input_head[k]);
    for (int c = 0; c < I_N; c++) {
        if (b->c[c].v && rp->nspare[c] < SPARE_MAX) {
            b->c[c].n = 0;
            rp->spare[c][rp->nspare[c]++] = b->c[c];
        } else {
            free(b->c[c].v);
        }
        b->c[c] = (struct ivec){0};
    }
    b->unsorted = 0;
    b->done = 1;
    if (b == rp->cur) { /* no interval goes there without the search now */
        rp->cur = NULL;
        rp->cur_start = INT64_MAX;
        rp->cur_end = INT64_MIN;
    }
}

/* The thread's index in f's tids; the last one is cached, since a chunk
 * is one thread's events in a row. */
static int tid_index(struct rank_pass *rp, uint32_t tid)
{
    const struct sp_file_pass *fp = sp_file_pass_of(rp->f);
    if (rp->last_tid < fp->ntids && fp->tids[rp->last_tid].tid == tid)
        return (int)rp->last_tid;
    for (size_t i = 0; i < fp->ntids; i++)
        if (fp->tids[i].tid == tid) {
            rp->last_tid = i;
            return (int)i;
        }
    return -1;
}

/* The earliest time any thread of the file can still deliver an event at:
 * INT64_MAX when every thread has delivered all its events. */
static int64_t earliest_to_come(const struct rank_pass *rp)
{
    const struct sp_file_pass *fp = sp_file_pass_of(rp->f);
    int64_t low = INT64_MAX;
    for (size_t i = 0; i < fp->ntids; i++) {
        if (rp->th[i].seen >= fp->tids[i].count)
            continue;
        int64_t b = rp->th[i].wm == INT64_MIN ? INT64_MIN : rp->th[i].wm - fp->tids[i].lag;
        if (b < low)
            low = b;
    }
    return low;
}

/* Reduce every step no thread of this file can still add to. */
static void close_finished(struct rank_pass *rp)
{
    int open = rp->last_touched - rp->next_open + 1;
    if (open > rp->r->open_peak)
        rp->r->open_peak = open;
    int64_t low = earliest_to_come(rp);
    while (rp->next_open < rp->hi) {
        struct sp_span st = rp->r->steps[rp->next_open];
        if (st.end > rp->f->last_t || st.end > low)
            break;
        close_step(rp, rp->next_open++);
    }
}

static int is_input_fd(uint64_t kind)
{
    return kind == SP_FD_PIPE || kind == SP_FD_SOCKET;
}

/* Calls that can block the host until the GPU drains: the syncs, and the
 * copies (a copy to or from pageable memory returns when it is done even
 * when asked to be asynchronous: what .item() does).  A call that did not
 * block costs nothing here (sync_caused takes at most its duration). */
static int is_sync_api(uint64_t api)
{
    return api == SP_CUDA_DEVICE_SYNC || api == SP_CUDA_STREAM_SYNC || api == SP_CUDA_EVENT_SYNC ||
           api == SP_CUDA_MEMCPY || api == SP_CUDA_MEMCPY_ASYNC;
}

/* A sync of the rank's host, with its call site (kept for the evidence). */
static __attribute__((noinline)) void note_sync(struct rank_pass *rp, const struct sp_reader *rd, const struct sp_event *ev)
{
    int64_t t = (int64_t)ev->t;
    add_interval(rp, t, t + (int64_t)ev->cuda.dur, I_SYNC);
    if (t < rp->view_start || t >= rp->view_end)
        return;
    const char *stack = ev->cuda.stack ? sp_reader_string(rd, ev->cuda.stack) : NULL;
    int site = -1;
    for (int i = 0; stack && *stack && i < rp->nsites; i++)
        if (strcmp(rp->sites[i].stack, stack) == 0)
            site = i;
    if (site < 0 && stack && *stack && rp->nsites < SYNC_SITES && (rp->sites[rp->nsites].stack = strdup(stack)))
        site = rp->nsites++;
    if (site >= 0)
        rp->sites[site].calls++;
    struct sync_call *p = sp_grow(rp->syncs, rp->nsyncs, &rp->syncs_cap, sizeof *rp->syncs, 64);
    if (!p)
        return;
    rp->syncs = p;
    rp->syncs[rp->nsyncs++] = (struct sync_call){t, t + (int64_t)ev->cuda.dur, site};
}

/* A file write or flush of the rank's host: host time while the GPU idles. */
static __attribute__((noinline)) void note_write(struct rank_pass *rp, const struct sp_event *ev)
{
    int64_t t = (int64_t)ev->t;
    add_interval(rp, t, t + (int64_t)ev->io.dur, I_WRITE);
    if (t < rp->view_start || t >= rp->view_end)
        return;
    struct sp_rank *r = rp->r;
    if (sp_io_op_is_flush(ev->io.op)) {
        r->flushes++;
        r->flush_ns += (int64_t)ev->io.dur;
    } else {
        r->writes++;
        r->write_ns += (int64_t)ev->io.dur;
        r->write_bytes += ev->io.ret > 0 ? (uint64_t)ev->io.ret : 0;
    }
}

/* A copy in the steps in view, to its direction and the memory kind of
 * its host side (the memcpy finding's evidence). */
static void count_copy(struct rank_pass *rp, const struct sp_ev_gpu *g, int64_t t)
{
    if (t < rp->view_start || t >= rp->view_end)
        return;
    uint64_t dir = g->copy_kind < SP_COPY_DIRS ? g->copy_kind : SP_COPY_UNKNOWN;
    uint64_t mem = dir == SP_COPY_H2D ? g->src_mem : dir == SP_COPY_D2H ? g->dst_mem
                                                                        : g->src_mem;
    if (mem >= SP_MEM_KINDS)
        mem = SP_MEM_OTHER;
    struct sp_copy_stat *c = &rp->r->copies[dir][mem];
    c->count++;
    c->bytes += g->bytes;
    c->ns += (int64_t)g->dur;
}

/* The IO events and waits: host time, for input or writing. */
static inline __attribute__((always_inline)) int on_host_event(struct rank_pass *rp, const struct sp_event *ev,
                                                               int64_t t)
{
    switch (ev->type) {
    case SP_EV_IO:
        if (sp_io_op_is_read(ev->io.op) && (is_input_fd(ev->io.fd_kind) || ev->io.fd_kind == SP_FD_FILE))
            add_interval(rp, t, t + (int64_t)ev->io.dur, I_INPUT);
        else if (ev->io.fd_kind == SP_FD_FILE && (sp_io_op_is_write(ev->io.op) || sp_io_op_is_flush(ev->io.op)))
            note_write(rp, ev);
        else if (ev->io.fd_kind == SP_FD_FILE &&
                 (ev->io.op == SP_IO_OPEN || ev->io.op == SP_IO_FOPEN || ev->io.op == SP_IO_CLOSE))
            add_interval(rp, t, t + (int64_t)ev->io.dur, I_FILE);
        return 1;
    case SP_EV_WAIT:
        if (ev->wait.op == SP_WAIT_DATALOADER || is_input_fd(ev->wait.fd_kind))
            add_interval(rp, t, t + (int64_t)ev->wait.dur, I_INPUT);
        return 1;
    default:
        return 0;
    }
}

static inline __attribute__((always_inline)) void on_event(struct rank_pass *rp, const struct sp_reader *rd,
                                                           const struct sp_event *ev)
{
    int64_t t = (int64_t)ev->t;
    /* GPU events and CUDA calls, nearly every event, by two compares (a
     * switch's jump cost more) */
    if (ev->type == SP_EV_GPU) {
        if (rp->device < 0 || ev->gpu.device == rp->device) { /* else another rank's GPU */
            if (ev->gpu.kind == SP_GPU_KERNEL)
                add_interval(rp, t, t + (int64_t)ev->gpu.dur, I_COMPUTE);
            else if (ev->gpu.kind == SP_GPU_MEMCPY || ev->gpu.kind == SP_GPU_MEMSET)
                add_interval(rp, t, t + (int64_t)ev->gpu.dur, I_MEMCPY);
            if (ev->gpu.kind == SP_GPU_MEMCPY)
                count_copy(rp, &ev->gpu, t);
        }
    } else if (ev->type == SP_EV_CUDA) {
        if (ev->cuda.api == SP_CUDA_LAUNCH || ev->cuda.api == SP_CUDA_GRAPH_LAUNCH) {
            add_interval(rp, t, t + (int64_t)ev->cuda.dur + 1, I_LAUNCH);
            if (t >= rp->view_start && t < rp->view_end) {
                rp->r->launches++;
                rp->r->launch_ns += (int64_t)ev->cuda.dur;
            }
        } else if (ev->cuda.api != SP_CUDA_SET_DEVICE && ev->cuda.api != SP_CUDA_MALLOC &&
                   ev->cuda.api != SP_CUDA_FREE) {
            add_interval(rp, t, t + (int64_t)ev->cuda.dur, I_HOST);
            if (is_sync_api(ev->cuda.api))
                note_sync(rp, rd, ev);
        }
    } else {
        on_host_event(rp, ev, t);
    }
}

/* The thread's count and latest time, a batch of its events at a time
 * (pass2_batch): every event the pass is given counts, its types being
 * the four on_event classifies.  A batch is one chunk's, so the last
 * thread's th is nearly always the one. */
static inline __attribute__((always_inline)) void pass2_batch(void *ctx, uint32_t tid, uint64_t n, int64_t max_t)
{
    struct rank_pass *rp = ctx;
    if (tid != rp->cur_tid) {
        int i = tid_index(rp, tid);
        rp->cur_th = &rp->th[i >= 0 ? (size_t)i : sp_file_pass_of(rp->f)->ntids];
        rp->cur_tid = tid;
    }
    struct thread_seen *th = rp->cur_th;
    th->seen += n;
    if (max_t > th->wm)
        th->wm = max_t;
}

/* The second pass needs only what it classifies, and of those only the
 * fields that choose a category: the reader steps over the rest without
 * decoding it. */
static int pass2_open(void *ctx, struct sp_reader *rd)
{
    const struct rank_pass *rp = ctx;
    sp_reader_set_fields(rd, SP_EV_GPU,
                         SP_FIELD_BIT(gpu, kind) | (rp->device >= 0 ? SP_FIELD_BIT(gpu, device) : 0) |
                             SP_FIELD_BIT(gpu, copy_kind) | SP_FIELD_BIT(gpu, bytes) | SP_FIELD_BIT(gpu, src_mem) |
                             SP_FIELD_BIT(gpu, dst_mem));
    sp_reader_set_fields(rd, SP_EV_CUDA, SP_FIELD_BIT(cuda, api) | SP_FIELD_BIT(cuda, stack));
    sp_reader_set_fields(rd, SP_EV_IO, SP_FIELD_BIT(io, op) | SP_FIELD_BIT(io, fd_kind) | SP_FIELD_BIT(io, ret));
    sp_reader_set_fields(rd, SP_EV_WAIT, SP_FIELD_BIT(wait, op) | SP_FIELD_BIT(wait, fd_kind));
    return 0;
}

static inline __attribute__((always_inline)) int pass2_event(void *ctx, const struct sp_reader *rd, const struct sp_event *ev)
{
    on_event(ctx, rd, ev);
    return 0;
}

static void pass2_every(void *ctx, struct sp_reader *rd)
{
    (void)rd;
    close_finished(ctx);
}

static const struct sp_pass pass2 = {
    .types = SP_MODEL_CLASSIFIED_TYPES,
    .tool = {.any = pass2_event}, /* the types read are the four on_event classifies */
    .open = pass2_open,
    .every = pass2_every,
    .batch = pass2_batch,
};

static void read_file(struct rank_pass *rp, struct sp_file_rec *f)
{
    rp->f = f;
    rp->last_tid = 0;
    rp->cur_tid = NO_TID;
    size_t nth = sp_file_pass_of(f)->ntids;
    rp->th = calloc(nth + 1, sizeof *rp->th);
    if (!rp->th)
        return;
    for (size_t i = 0; i < nth; i++)
        rp->th[i].wm = INT64_MIN;
    sp_trace_feed(f->path, &pass2, rp, NULL);
    free(rp->th);
    rp->th = NULL;
}

static void classify_rank(int i, void *arg)
{
    struct sp_model *m = arg;
    struct sp_rank *r = &m->ranks[i];
    struct rank_pass rp = {.m = m, .r = r, .lo = m->step_lo, .hi = m->step_hi < r->nsteps ? m->step_hi : r->nsteps, .device = r->shared > 1 ? r->device : -1};
    if (rp.hi <= rp.lo)
        return;
    rp.next_open = rp.lo;
    rp.last_touched = rp.lo - 1;
    rp.hint = rp.lo;
    rp.cur_start = INT64_MAX; /* no step cached: the first interval searches */
    rp.cur_end = INT64_MIN;
    rp.ordered = 1;
    for (int k = rp.lo; k < rp.hi; k++)
        if (r->steps[k].end < r->steps[k].start || (k + 1 < rp.hi && r->steps[k].end > r->steps[k + 1].start))
            rp.ordered = 0;
    rp.view_start = r->steps[rp.lo].start;
    rp.view_end = r->steps[rp.hi - 1].end;
    r->cat = calloc((size_t)r->nsteps, sizeof *r->cat);
    r->input_head = calloc((size_t)r->nsteps, sizeof *r->input_head);
    r->write_idle = calloc((size_t)r->nsteps, sizeof *r->write_idle);
    r->sync_idle = calloc((size_t)r->nsteps, sizeof *r->sync_idle);
    r->launch_idle = calloc((size_t)r->nsteps, sizeof *r->launch_idle);
    rp.buf = calloc((size_t)(rp.hi - rp.lo), sizeof *rp.buf);
    if (!r->cat || !r->input_head || !r->write_idle || !r->sync_idle || !r->launch_idle || !rp.buf) {
        free(rp.buf);
        return;
    }
    for (size_t c = 0; c < r->ncalls; c++)
        if (r->calls[c].end - r->calls[c].start > rp.max_call)
            rp.max_call = r->calls[c].end - r->calls[c].start;
    /* The chain's room at once: a node per call at most, and one per step
     * end (grown a doubling at a time, the nodes were copied about twice
     * over; the room left is given back at the end).  It comes zeroed:
     * clearing each node as it was made (a string instruction each time)
     * cost more than the rest of its making. */
    size_t most = r->ncalls + (size_t)(rp.hi - rp.lo);
    if (!r->nodes && (r->nodes = calloc(most, sizeof *r->nodes)))
        rp.nodes_cap = rp.nodes_zero = most;
    for (int f = 0; f < r->nfiles; f++)
        read_file(&rp, r->files[f]);
    for (int k = rp.lo; k < rp.hi; k++)
        close_step(&rp, k);
    if (r->nnodes < rp.nodes_cap) { /* the chain is kept to the end: no room to spare */
        struct sp_rnode *p = realloc(r->nodes, (r->nnodes ? r->nnodes : 1) * sizeof *p);
        if (p)
            r->nodes = p;
    }
    free(rp.buf);
    for (int c = 0; c < I_N; c++)
        for (int k = 0; k < rp.nspare[c]; k++)
            free(rp.spare[c][k].v);
    for (int d = 0; d < D_N; d++) {
        free(rp.out[d].v);
        free(rp.d[d].v);
    }
    struct ivec *const lists[] = {&rp.ext, &rp.tmp, &rp.ui, &rp.e1, &rp.e2, &rp.e3, &rp.e12, &rp.e,
                                  &rp.twc, &rp.sy, &rp.esy, &rp.ew, &rp.ews, &rp.ewsk, &rp.eall};
    for (size_t l = 0; l < sizeof lists / sizeof *lists; l++)
        free(lists[l]->v);
    free(rp.syncs);
    int best = -1; /* the site whose syncs cost most */
    for (int s = 0; s < rp.nsites; s++)
        if (rp.sites[s].idle_ns > 0 && (best < 0 || rp.sites[s].idle_ns > rp.sites[best].idle_ns))
            best = s;
    if (best >= 0) {
        snprintf(r->sync_site, sizeof r->sync_site, "%s", rp.sites[best].stack);
        r->sync_site_calls = rp.sites[best].calls;
        r->sync_site_ns = rp.sites[best].idle_ns;
    }
    for (int s = 0; s < rp.nsites; s++)
        free(rp.sites[s].stack);
}

struct classify_job {
    struct sp_model *m;
    int done;
    pthread_mutex_t lock;
};

static void classify_one(int i, void *arg)
{
    struct classify_job *j = arg;
    if (!j->m->classify_only || j->m->classify_only[i])
        classify_rank(i, j->m);
    pthread_mutex_lock(&j->lock);
    j->done++;
    sp_model_progress(j->m, "classified ranks", j->done, j->m->nranks);
    pthread_mutex_unlock(&j->lock);
}

int sp_model_classify(struct sp_model *m)
{
    if (m->reduced) /* summaries: pass 2 ran where the traces are */
        return sp_summary_classified(m) < 0 ? -1 : sp_model_classify_done(m);
    struct classify_job job = {.m = m};
    pthread_mutex_init(&job.lock, NULL);
    sp_model_parallel(m, m->nranks, classify_one, &job);
    pthread_mutex_destroy(&job.lock);
    return sp_model_classify_done(m);
}

int sp_model_classify_done(struct sp_model *m)
{
    uint64_t late = 0;
    int classified = 0;
    for (int i = 0; i < m->nranks; i++) {
        late += m->ranks[i].late_events;
        classified += m->ranks[i].cat != NULL;
    }
    if (late)
        sp_model_warn(m, "%llu events arrived after their step was reduced (a thread's events "
                         "far out of order): left out",
                      (unsigned long long)late);
    if (!classified) {
        sp_model_warn(m, "no rank has a step to classify");
        return -1;
    }
    return 0;
}
