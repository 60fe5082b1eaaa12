/*
 * model_steps.c - where the training steps are, on every rank.
 *
 * Markers first: NVTX ranges (or imported ranges) whose names match the
 * step pattern.  Step k spans from the k-th marker's start to the next
 * one's, so time between ranges (often the input wait) belongs to a step;
 * the last marker gives a step only when its end is known.  Nested matches
 * (a "step" range inside "ProfilerStep#3") are ignored.
 *
 * Without markers, the collectives repeat: data-parallel training issues
 * the same (communicator, op, bytes) sequence every step.  The smallest
 * period p with >= 90% of calls equal to the call p later is the pattern;
 * the pattern's last call is the one followed by the longest pause (the
 * optimizer, the next input and forward pass).  A step ends when that call
 * ends, so step k = (end of occurrence k-1, end of occurrence k], and a
 * trace cut mid-step leaves an incomplete occurrence that is not a step.
 * When every collective of a step is alike (equal gradient buckets), the
 * key period is one bucket, not a step; then time decides: a step's
 * collectives come in a burst and the step's pause follows the last, so
 * the period is the smallest multiple of the key period whose idle gaps
 * show one phase clearly and consistently longer (step_pause_phase).
 * Counting runs back from the last occurrence while the key still matches,
 * so an irregular start (parameter broadcast) falls into the first step,
 * which is warm-up anyway.
 *
 * The period is the smallest whose mismatches are at most twice the best
 * period's (give or take PERIOD_SLACK), not the first past PERIOD_MATCH:
 * a pipeline stage's recv, send, recv, send ... matches itself two calls
 * later almost everywhere.  A
 * step is a job-wide event: when the period holds collectives over every
 * rank (a pipeline's gradient norm), the step ends after one of them on
 * every rank, never inside a stage's own p2p traffic; with none, but p2p
 * and collectives mixed (copies of a pipeline), after a collective.  Passes between
 * steps (evaluation) that bring collectives of their own and none of a
 * step's are set apart (rare_calls) before the period is looked for
 * again, and a step opened by one starts where it ends (set aside,
 * counted).  Ranks that disagree on the count by more than one step make
 * the report say it is unsure.
 *
 * Neither markers nor collectives (one GPU): the compute kernels on the
 * main stream (the one with most kernels) repeat every step, a kernel
 * known by its name and thread count (one GEMM kernel serves layers of
 * different widths).
 * Layers repeat inside a step too (50 identical GEMMs), so the smallest
 * period reaching 90% is not enough: the period is the smallest whose
 * match ratio is within half a point of the best ratio of any period up
 * to KERNEL_PERIOD_MAX.  The step ends at the end of the kernel followed
 * by the longest median idle gap, as with collectives.  Pass 1 keeps the
 * kernel sequence only for files without markers or collectives.
 *
 * Step k is the k-th step on every rank; the count is the minimum over
 * ranks that have steps.
 */
#include <stdlib.h>
#include <string.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "model_int.h"

#define NUMBER_CHECKED 8 /* markers whose numbers must count up for steps to keep them */
#define PERIOD_MAX 1024
#define PERIOD_WINDOW 2048 /* calls compared per candidate period */
#define PERIOD_MATCH 0.9
#define PERIOD_SLACK 0.001 /* a period mismatching this much more than twice the best is as good */
#define KERNEL_PERIOD_MAX 8192
#define KERNEL_PERIOD_SLACK 0.005 /* a period this close to the best ratio is as good */
#define MAX_STREAMS 256
#define ASIDE_MIN 0.1       /* a pass between steps this share of the median step is set aside */
#define KEY_MIX 0x9E3779B1u /* spreads names before the grid is folded in */
#define WORLD_PERIODS 8     /* periods looked at for the job-wide collectives */
#define GAP_RATIO 2.0       /* a step's pause against its collectives' other gaps */
#define GAP_CONSISTENT 0.8  /* share of periods that must show that pause */
#define GAP_FLOOR 0.05      /* ... and against the whole period (noise between back-to-back calls) */
#define GAP_MIN_PERIODS 3   /* periods needed to call a gap pattern */
#define GAP_RANK_PERIODS 6  /* ... by being each period's longest gap */
#define GAP_MARGIN 1.3      /* ... and this much longer than the runner-up, in median */
#define GAP_WINDOW 4096     /* gaps looked at per candidate period */

static int set_steps(struct sp_rank *r, const int64_t *bounds, int n)
{
    free(r->steps);
    r->steps = n > 0 ? malloc((size_t)n * sizeof *r->steps) : NULL;
    r->nsteps = r->steps ? n : 0;
    for (int k = 0; k < r->nsteps; k++)
        r->steps[k] = (struct sp_span){bounds[k], bounds[k + 1]};
    return r->nsteps;
}

/* Steps from markers; *num0 gets the number step 0's marker carries when
 * the first steps' markers count up from it one by one, else -1. */
static void steps_from_markers(struct sp_rank *r, int64_t *num0)
{
    int64_t *b = malloc((r->nmarks + 2) * sizeof *b);
    *num0 = -1;
    if (!b)
        return;
    int n = 0, counting = 1;
    int64_t last_end = INT64_MIN, last_known_end = -1;
    for (size_t i = 0; i < r->nmarks; i++) {
        const struct sp_mark *s = &r->marks[i];
        if (s->start < last_end)
            continue; /* nested inside the previous step range */
        if (n == 0)
            *num0 = s->num;
        else if (counting && n < NUMBER_CHECKED && s->num != *num0 + n)
            counting = 0;
        b[n++] = s->start;
        last_end = s->end >= 0 ? s->end : s->start;
        last_known_end = s->end;
    }
    if (n && last_known_end > b[n - 1])
        b[n++] = last_known_end; /* the last range closes its own step */
    set_steps(r, b, n - 1);
    if (!counting || *num0 < 0)
        *num0 = -1;
    free(b);
}

/* Markers without numbers in a trace recorded with a step window
 * (SCALEPROF_STEPS): the first recorded one is the step the window opened
 * at, which the recorder wrote as its START event's status; else -1. */
static int64_t window_first_step(const struct sp_rank *r)
{
    for (int f = 0; f < r->nfiles; f++) {
        const struct sp_file_rec *fr = r->files[f];
        if (fr->window_step > 0 && r->nmarks && fr->window_t <= r->marks[0].start)
            return fr->window_step;
    }
    return -1;
}

struct key {
    uint64_t comm, bytes;
    uint32_t op;
};

static int same_key(const struct key *a, const struct key *b)
{
    return a->comm == b->comm && a->bytes == b->bytes && a->op == b->op;
}

/* Whether the keys at positions a and b are equal: collectives' keys, or
 * kernels' (a name and grid mixed into a number). */
typedef int (*same_at_fn)(const void *keys, size_t a, size_t b);
static int same_call_key(const void *k, size_t a, size_t b) { return same_key((const struct key *)k + a, (const struct key *)k + b); }
static int same_kernel_key(const void *k, size_t a, size_t b) { return ((const uint32_t *)k)[a] == ((const uint32_t *)k)[b]; }

/* How many steps end at phase j of period p: in *last the position of
 * the last occurrence of the phase, and the count of occurrences back
 * from it, p apart, whose key is its own (the steps are those, and the
 * first that differs is before them). */
static size_t steps_ending_at(size_t j, size_t n, size_t p, const void *keys, same_at_fn same, size_t *last)
{
    size_t l = j;
    while (l + p < n)
        l += p;
    size_t count = 0;
    for (size_t i = l;; i -= p) {
        if (!same(keys, i, l))
            break;
        count++;
        if (i < p)
            break;
    }
    *last = l;
    return count;
}

static int cmp_host_t(const void *a, const void *b)
{
    const struct sp_coll_call *x = a, *y = b;
    return (x->host_t > y->host_t) - (x->host_t < y->host_t);
}

/* find_period compares at most the last PERIOD_WINDOW + PERIOD_MAX keys:
 * a key's number (a place among them) fits 16 bits */
_Static_assert(PERIOD_WINDOW + PERIOD_MAX <= UINT16_MAX, "a key id is 16 bits");

static size_t key_hash(const struct key *k)
{
    uint64_t h = (k->comm * 0x9E3779B97F4A7C15ull ^ k->bytes) * 0xBF58476D1CE4E5B9ull ^ k->op;
    return (size_t)(h ^ (h >> 29));
}

#define KEY_SLOTS_MIN 64 /* key_ids' first table: a step has a few dozen distinct calls */

/* Each key as a number, equal where the keys are (the place of the key's
 * first occurrence), so that find_period's thousands of comparisons per
 * candidate period compare one half-word; NULL without memory or when n
 * is past 16 bits.  The table of distinct keys (their first place + 1, 0:
 * empty) starts small and doubles when half full: a rank's calls repeat a
 * few dozen keys, and a table sized for every call was cleared for
 * nothing. */
static uint16_t *key_ids(const struct key *k, size_t n)
{
    size_t nslot = KEY_SLOTS_MIN, distinct = 0;
    uint16_t *id = n < UINT16_MAX ? malloc((n + 1) * sizeof *id) : NULL;
    uint16_t *slot = id ? calloc(nslot, sizeof *slot) : NULL;
    for (size_t i = 0; slot && i < n; i++) {
        if (2 * (distinct + 1) > nslot) {
            uint16_t *wider = calloc(2 * nslot, sizeof *wider);
            for (size_t o = 0; wider && o < nslot; o++) {
                if (!slot[o])
                    continue;
                size_t at = key_hash(&k[slot[o] - 1]) & (2 * nslot - 1);
                while (wider[at])
                    at = (at + 1) & (2 * nslot - 1);
                wider[at] = slot[o];
            }
            free(slot);
            slot = wider;
            nslot *= 2;
            if (!slot)
                break;
        }
        size_t at = key_hash(&k[i]) & (nslot - 1);
        while (slot[at] && !same_key(&k[slot[at] - 1], &k[i]))
            at = (at + 1) & (nslot - 1);
        if (!slot[at]) {
            slot[at] = (uint16_t)(i + 1);
            distinct++;
        }
        id[i] = (uint16_t)(slot[at] - 1);
    }
    if (!slot) {
        free(id);
        return NULL;
    }
    free(slot);
    return id;
}

/* How many of a[0..n) equal b[0..n).  find_period counts thousands of
 * these per candidate period on every rank: sixteen a round where SSE2 is
 * there.  A lane counts one in eight of the compares and must stay under
 * 2^16, so the lanes are summed at least every COUNT_LANE_ROUNDS rounds. */
#define COUNT_LANE_ROUNDS 4096
static size_t count_same(const uint16_t *a, const uint16_t *b, size_t n)
{
    size_t same = 0, i = 0;
#ifdef __SSE2__
    while (i + 16 <= n) {
        __m128i lo = _mm_setzero_si128(), hi = _mm_setzero_si128();
        for (size_t round = 0; round < COUNT_LANE_ROUNDS && i + 16 <= n; round++, i += 16) {
            /* an equal lane compares to -1: subtracted, counted */
            lo = _mm_sub_epi16(lo, _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(a + i)),
                                                   _mm_loadu_si128((const __m128i *)(b + i))));
            hi = _mm_sub_epi16(hi, _mm_cmpeq_epi16(_mm_loadu_si128((const __m128i *)(a + i + 8)),
                                                   _mm_loadu_si128((const __m128i *)(b + i + 8))));
        }
        /* each lane's count widened to 32 bits (pairs of lanes summed by
         * multiplying with ones), then the four added */
        __m128i sum = _mm_add_epi32(_mm_madd_epi16(lo, _mm_set1_epi16(1)), _mm_madd_epi16(hi, _mm_set1_epi16(1)));
        uint32_t lane[4];
        _mm_storeu_si128((__m128i *)lane, sum);
        same += (size_t)lane[0] + lane[1] + lane[2] + lane[3];
    }
#endif
    for (; i < n; i++)
        same += a[i] == b[i];
    return same;
}

/* The step's period in calls: the smallest p whose shifted mismatch ratio
 * is at most twice (plus PERIOD_SLACK) the best of any period up to
 * PERIOD_MAX, when that best matches PERIOD_MATCH.  The first p past PERIOD_MATCH is not
 * enough: a pipeline stage's recv, send, recv, send ... matches itself
 * two calls later almost everywhere. */
static size_t find_period(const struct key *k, size_t n)
{
    size_t pmax = n / 2 < PERIOD_MAX ? n / 2 : PERIOD_MAX;
    double *ratio = pmax ? malloc((pmax + 1) * sizeof *ratio) : NULL, best = 0;
    if (!ratio)
        return 0;
    /* the keys compared: the last PERIOD_WINDOW + pmax */
    size_t base = n - pmax > PERIOD_WINDOW ? n - pmax - PERIOD_WINDOW : 0;
    uint16_t *id = key_ids(k + base, n - base);
    for (size_t p = 1; p <= pmax; p++) {
        size_t from = n - p > PERIOD_WINDOW ? n - p - PERIOD_WINDOW : 0, same = 0;
        if (id)
            same = count_same(id + (from - base), id + (from - base) + p, n - p - from);
        else
            for (size_t i = from; i + p < n; i++)
                same += same_key(&k[i], &k[i + p]);
        ratio[p] = (double)same / (double)(n - p - from);
        if (ratio[p] > best)
            best = ratio[p];
        if (same == n - p - from) { /* no period matches better: the answer is p or one before */
            pmax = p;
            break;
        }
    }
    /* as good: mismatching at most twice as often as the best, give or
     * take PERIOD_SLACK (a multiple of the step matches as well as the
     * step; a send, recv, send ... of hundreds of calls per step misses
     * once per step at period 2, far more often than the step itself) */
    size_t got = 0;
    double bar = 1 - (2 * (1 - best) + PERIOD_SLACK);
    for (size_t p = 1; p <= pmax && !got && best >= PERIOD_MATCH; p++)
        if (ratio[p] >= bar)
            got = p;
    free(ratio);
    free(id);
    return got;
}

/* The phase j (0..p-1) whose element is followed by the longest median
 * gap over the periods; gap[i] is the pause after element i.  p - 1 when
 * memory runs out. */
static size_t longest_gap_phase(const double *gap, size_t ngap, size_t p, const uint8_t *only)
{
    size_t best = p - 1;
    double best_gap = -1;
    double *g = malloc((ngap / p + 1) * sizeof *g);
    if (!g)
        return best;
    for (size_t j = 0; j < p; j++) {
        size_t m = 0;
        if (only && !only[j])
            continue;
        for (size_t i = j; i < ngap; i += p)
            g[m++] = gap[i];
        double med = sp_median_select(g, m);
        if (med > best_gap) {
            best_gap = med;
            best = j;
        }
    }
    free(g);
    return best;
}

/* The time between item i and the next: collectives' calls (from call
 * to call) or kernels (idle between them, negative where they overlap). */
typedef double (*gap_after_fn)(const void *items, size_t i);
static double call_gap(const void *c, size_t i)
{
    const struct sp_coll_call *x = (const struct sp_coll_call *)c + i;
    return (double)(x[1].host_t - x[0].host_t);
}
static double kernel_gap(const void *k, size_t i)
{
    const struct sp_kernel_rec *x = (const struct sp_kernel_rec *)k + i;
    return (double)(x[1].start - x[0].end);
}

/* The residue whose item is followed by the longest median gap (of those
 * with only[j] set, when only is not NULL). */
static size_t pattern_end(const void *items, size_t n, size_t p, gap_after_fn gap_after, const uint8_t *only)
{
    double *gap = n >= 2 ? malloc(n * sizeof *gap) : NULL;
    if (!gap)
        return p - 1;
    for (size_t i = 0; i + 1 < n; i++)
        gap[i] = gap_after(items, i);
    size_t j = longest_gap_phase(gap, n - 1, p, only);
    free(gap);
    return j;
}

/* Scratch for step_pause_phase, sized once for every multiple tried
 * (period_by_pause): a value per period or phase, a median per phase, and
 * two counts per phase. */
struct pause_scratch {
    double *v, *med;
    uint32_t *over; /* per phase, two counts (over and top_of), each under a period count */
};

/* One period's pass of step_pause_phase over its gaps g[0..k): each
 * phase's count of gaps over the floor raised, *most raised by one when
 * one of those passes it (no count is above *most before, and a count
 * grows by one a period), and the first phase of the longest gap
 * returned.  The gaps are never NaN (idle times, 0 when none), so the
 * first gap equal to the largest is the one a strict > scan keeps.  Four
 * gaps a round where SSE2 is there: this pass runs for every multiple of
 * the key period tried, on every rank. */
static size_t period_scan(const double *g, size_t k, double floor, uint32_t *over, uint32_t *most)
{
    size_t j = 0, top = 0;
    double longest = g[0];
    int passed = 0;
#ifdef __SSE2__
    if (k >= 4) {
        __m128d fl = _mm_set1_pd(floor), mx0 = _mm_set1_pd(g[0]), mx1 = mx0;
        __m128i bar = _mm_set1_epi32((int32_t)*most), up = _mm_setzero_si128();
        for (; j + 4 <= k; j += 4) {
            __m128d a = _mm_loadu_pd(g + j), b = _mm_loadu_pd(g + j + 2);
            mx0 = _mm_max_pd(mx0, a);
            mx1 = _mm_max_pd(mx1, b);
            /* the four compares' low halves: -1 where over the floor, subtracted */
            __m128 ab = _mm_shuffle_ps(_mm_castpd_ps(_mm_cmpgt_pd(a, fl)), _mm_castpd_ps(_mm_cmpgt_pd(b, fl)),
                                       _MM_SHUFFLE(2, 0, 2, 0));
            __m128i c = _mm_sub_epi32(_mm_loadu_si128((const __m128i *)(over + j)), _mm_castps_si128(ab));
            _mm_storeu_si128((__m128i *)(over + j), c);
            up = _mm_or_si128(up, _mm_cmpgt_epi32(c, bar));
        }
        double lane[2];
        _mm_storeu_pd(lane, _mm_max_pd(mx0, mx1));
        longest = lane[0] > lane[1] ? lane[0] : lane[1];
        passed = _mm_movemask_epi8(up) != 0;
    }
#endif
    for (; j < k; j++) {
        if (g[j] > floor && ++over[j] > *most)
            passed = 1;
        if (g[j] > longest)
            longest = g[j];
    }
    if (passed)
        ++*most;
#ifdef __SSE2__
    __m128d l = _mm_set1_pd(longest);
    while (top + 2 <= k && !_mm_movemask_pd(_mm_cmpeq_pd(_mm_loadu_pd(g + top), l)))
        top += 2;
#endif
    while (g[top] != longest)
        top++;
    return top;
}

/* The phase of period k whose following gap is the step's pause, or -1.
 * gap[i] is the idle time from call i's end to call i+1's start (0 when
 * they overlap); at[i] call i's start (at[0..ngap]), so a period's time
 * from its first call's start to the next period's is one difference (the
 * sum of its calls' start-to-start times, each an integer number of ns:
 * the same double, added up or not).  Over
 * the last periods, each phase's median gap is taken; the longest must be
 * more than GAP_RATIO times the median of the other phases' medians and
 * than GAP_FLOOR of the median period, and be so in GAP_CONSISTENT of the
 * periods, so that one slow step or a checkpoint now and then does not
 * make a phase, nor do microseconds of noise between back-to-back
 * collectives.  The phase is returned as the residue of the call index
 * modulo k. */
static long step_pause_phase(const double *gap, const int64_t *at, size_t ngap, size_t k, struct pause_scratch *s)
{
    size_t window = GAP_WINDOW > GAP_MIN_PERIODS * k ? GAP_WINDOW : GAP_MIN_PERIODS * k;
    size_t from = ngap > window ? ngap - window : 0, periods = (ngap - from) / k;
    if (k < 2 || periods < GAP_MIN_PERIODS)
        return -1;
    double *med = s->med, *v = s->v;
    uint32_t *over = s->over, *top_of = over + k;
    memset(over, 0, 2 * k * sizeof *over);
    double need = GAP_CONSISTENT * (double)periods;
    /* Either test below needs one phase over the floor, or the longest of
     * its period, in GAP_CONSISTENT of the periods: counted first, in one
     * pass, before the medians of every phase (most multiples of the key
     * period fail here, most of them before the pass ends: once no phase
     * can reach the share with every period left in its favour) */
    for (size_t q = 0; q < periods; q++)
        v[q] = (double)(at[from + (q + 1) * k] - at[from + q * k]);
    double floor = GAP_FLOOR * sp_median_select(v, periods);
    uint32_t most = 0; /* the largest count of either kind so far */
    for (size_t q = 0; q < periods; q++) {
        size_t top = period_scan(gap + from + q * k, k, floor, over, &most);
        if (++top_of[top] > most)
            most = top_of[top];
        if ((double)(most + periods - 1 - q) < need)
            return -1;
    }
    int may = 0;
    for (size_t j = 0; j < k && !may; j++)
        may = (double)over[j] >= need || (double)top_of[j] >= need;
    if (!may)
        return -1;
    size_t best = 0;
    for (size_t j = 0; j < k; j++) {
        for (size_t q = 0; q < periods; q++)
            v[q] = gap[from + q * k + j];
        med[j] = sp_median_select(v, periods);
        if (med[j] > med[best])
            best = j;
    }
    size_t nv = 0;
    for (size_t j = 0; j < k; j++)
        if (j != best)
            v[nv++] = med[j];
    double rest = sp_median_select(v, nv), bar = GAP_RATIO * rest;
    if (bar < floor)
        bar = floor;
    size_t clear = 0, longest = 0;
    double second = 0;
    for (size_t j = 0; j < k; j++)
        if (j != best && med[j] > second)
            second = med[j];
    for (size_t q = 0; q < periods; q++) {
        const double *g = gap + from + q * k;
        clear += g[best] > bar;
        size_t top = 0;
        double longest_gap = g[0];
        for (size_t j = 1; j < k; j++)
            if (g[j] > longest_gap) {
                longest_gap = g[j];
                top = j;
            }
        longest += top == best;
    }
    /* Clearly longer than the rest in most periods, or, when the step
     * time drifts (a growing batch) and no one bar fits the whole run,
     * the longest of its own period in most of them and well ahead of the
     * runner-up. */
    int by_bar = med[best] > bar && (double)clear >= need;
    int by_rank = periods >= GAP_RANK_PERIODS && med[best] > floor && med[best] > GAP_MARGIN * second &&
                  (double)longest >= need;
    return by_bar || by_rank ? (long)((from + best) % k) : -1;
}

/* The smallest multiple k of p whose gaps show one clear pause per period
 * (step_pause_phase), over gap[i] (idle after item i) and at[i] (item i's
 * start, at[0..ngap]); p when no multiple does.  *end receives the
 * pattern's last residue when a pause was found, else -1. */
static size_t period_by_pause(const double *gap, const int64_t *at, size_t ngap, size_t p, long *end)
{
    *end = -1;
    size_t kmax = ngap / GAP_MIN_PERIODS < PERIOD_MAX ? ngap / GAP_MIN_PERIODS : PERIOD_MAX;
    if (kmax < p)
        return p;
    /* a value per period (at most ngap / p) or per phase (at most kmax) */
    size_t nv = ngap / p > kmax ? ngap / p : kmax;
    struct pause_scratch s = {malloc((nv + 1) * sizeof *s.v), malloc((kmax + 1) * sizeof *s.med),
                              malloc((2 * kmax + 1) * sizeof *s.over)};
    size_t got = p;
    for (size_t k = p; s.v && s.med && s.over && k <= kmax; k += p) {
        long phase = step_pause_phase(gap, at, ngap, k, &s);
        if (phase >= 0) {
            *end = phase;
            got = k;
            break;
        }
    }
    free(s.v);
    free(s.med);
    free(s.over);
    return got;
}

/* When every collective of a step is the same (equal gradient buckets),
 * the key period p is shorter than the step: period_by_pause over the
 * collectives' gaps. */
static size_t period_from_gaps(const struct sp_coll_call *c, size_t n, size_t p, long *end)
{
    *end = -1;
    double *gap = n > 1 ? malloc((n - 1) * sizeof *gap) : NULL;
    int64_t *at = n > 1 ? malloc(n * sizeof *at) : NULL;
    size_t got = p;
    if (gap && at) {
        for (size_t i = 0; i + 1 < n; i++) {
            int64_t idle = c[i + 1].start - c[i].end;
            gap[i] = idle > 0 ? (double)idle : 0;
        }
        for (size_t i = 0; i < n; i++)
            at[i] = c[i].start;
        got = period_by_pause(gap, at, n - 1, p, end);
    }
    free(gap);
    free(at);
    return got;
}

/* Whether a call is a collective over every rank of the job: in a
 * pipeline, the one kind of call that every stage makes at the same point
 * of a step (the data-parallel gradients, the gradient norm). */
static int job_wide(const struct sp_coll_call *c, int ranks)
{
    return !sp_op_is_p2p(c->op) && ranks > 1 && (int)c->nranks >= ranks;
}

/* Marks in only[0..p) the phases whose calls are job-wide in most of the
 * last WORLD_PERIODS periods; when none are but the period mixes p2p and
 * collectives (pipeline copies, each stage's gradients all-reduced over
 * its copies), the collectives' phases: a data-parallel all-reduce ends
 * a stage's step, its p2p traffic does not.  Returns how many are
 * marked. */
static size_t job_wide_phases(const struct sp_coll_call *c, size_t n, size_t p, int ranks, uint8_t *only)
{
    size_t periods = n / p < WORLD_PERIODS ? n / p : WORLD_PERIODS, marked = 0;
    for (int pass = 0; pass < 2 && !marked; pass++) {
        size_t p2p = 0;
        for (size_t j = 0; j < p; j++) {
            size_t yes = 0, seen = 0;
            for (size_t q = 1; q <= periods; q++) {
                const struct sp_coll_call *x = &c[(n / p - q) * p + j];
                seen++;
                yes += pass ? !sp_op_is_p2p(x->op) : job_wide(x, ranks);
                p2p += sp_op_is_p2p(x->op);
            }
            only[j] = (uint8_t)(2 * yes > seen);
            marked += only[j];
        }
        if (pass && !p2p)
            marked = 0; /* no p2p: every phase a collective, nothing to prefer */
    }
    if (!marked)
        memset(only, 0, p);
    return marked;
}

/* Interleaved passes (evaluation): a pass between training steps issues
 * collectives of its own (a metric all-reduce) and none of the step's, so
 * the key period spans several steps and the pass.  Read over the last
 * period: when no call is p2p (a pipeline's stage traffic repeats within
 * the step and is left alone), the most frequent key comes r >= 2 times,
 * and some keys come at most r / 2 times on a communicator that a key of
 * r times also uses, those rare calls are set apart: out[i] = 1.  Returns
 * how many calls of c[0..n) are set apart (0: none). */
static size_t rare_calls(const struct sp_coll_call *c, const struct key *k, size_t n, size_t p, uint8_t *out,
                         size_t *most, size_t *in_period)
{
    size_t from = n - p, *cnt = malloc(p * sizeof *cnt), rare = 0, r = 0;
    *most = *in_period = 0;
    if (!cnt)
        return 0;
    for (size_t i = 0; i < p; i++) {
        cnt[i] = 0;
        for (size_t x = from; x < n; x++)
            cnt[i] += same_key(&k[from + i], &k[x]);
        if (cnt[i] > r)
            r = cnt[i];
        if (sp_op_is_p2p(c[from + i].op))
            r = SIZE_MAX / 4; /* a pipeline: no pass to set apart */
    }
    memset(out, 0, n);
    for (size_t i = 0; r >= 2 && r < SIZE_MAX / 4 && i < p; i++) {
        if (2 * cnt[i] > r)
            continue;
        int shared = 0;
        for (size_t x = 0; x < p && !shared; x++)
            shared = cnt[x] == r && k[from + x].comm == k[from + i].comm;
        if (!shared)
            continue;
        (*in_period)++;
        if (cnt[i] > *most)
            *most = cnt[i];
        if (out[from + i])
            continue; /* its key is set apart already */
        for (size_t x = 0; x < n; x++)
            if (!out[x] && same_key(&k[x], &k[from + i])) {
                out[x] = 1;
                rare++;
            }
    }
    free(cnt);
    return rare < n ? rare : 0;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The rare calls that open step s (1 <= s < nsteps: after its start,
 * before its first regular call first[s]) mark a pass between steps: the
 * step starts when the last of them ends, when the pass is at least
 * ASIDE_MIN of the median step; the pass is counted in *aside. */
static void set_aside_passes(struct sp_rank *r, const struct sp_coll_call *rare, size_t nrare,
                             const int64_t *first)
{
    if (r->nsteps < 2 || !nrare)
        return;
    int64_t *len = malloc((size_t)r->nsteps * sizeof *len);
    if (!len)
        return;
    for (int s = 0; s < r->nsteps; s++)
        len[s] = r->steps[s].end - r->steps[s].start;
    qsort(len, (size_t)r->nsteps, sizeof *len, cmp_i64);
    double bar = ASIDE_MIN * (double)len[r->nsteps / 2];
    free(len);
    size_t x = 0;
    for (int s = 1; s < r->nsteps; s++) {
        int64_t start = r->steps[s].start, end = INT64_MIN;
        while (x < nrare && rare[x].end <= start)
            x++;
        for (; x < nrare && rare[x].start < first[s]; x++)
            if (rare[x].end > end && rare[x].end <= first[s])
                end = rare[x].end;
        if (end > start && (double)(end - start) >= bar) {
            r->steps[s].start = end;
            r->passes_aside++;
        }
    }
}

/* Steps from the repeating collectives of one rank; 0 when none repeat.
 * ranks: the ranks of the job, for what a job-wide collective is. */
static int steps_from_collectives(struct sp_rank *r, int ranks)
{
    size_t n = r->ncalls;
    if (n < 2)
        return 0;
    struct sp_coll_call *c = malloc(n * sizeof *c);
    struct key *k = malloc(n * sizeof *k);
    int64_t *b = malloc((n + 2) * sizeof *b);
    uint8_t *only = NULL, *rare_mark = NULL;
    struct sp_coll_call *rare = NULL;
    size_t nrare = 0;
    int got = 0;
    int keep_rare = 0;
    size_t most_rare = 0, rare_in_period = 0, p0 = 0;
    if (!c || !k || !b)
        goto out;
again:
    n = r->ncalls;
    /* the calls by host time: the rank's own when they come so (mostly),
     * else a sorted copy in c; cv is what is read (c once calls are set
     * apart from it) */
    const struct sp_coll_call *cv = r->calls;
    size_t in_order = 1;
    while (in_order < n && cmp_host_t(&r->calls[in_order - 1], &r->calls[in_order]) <= 0)
        in_order++;
    if (in_order < n) {
        memcpy(c, r->calls, n * sizeof *c);
        qsort(c, n, sizeof *c, cmp_host_t);
        cv = c;
    }
    for (size_t i = 0; i < n; i++)
        k[i] = (struct key){cv[i].comm, cv[i].bytes, cv[i].op};
    size_t p = p0 = find_period(k, n);
    if (!p)
        goto out;
    /* passes between steps set apart, the steps found in what is left */
    if (!keep_rare && !rare_mark)
        rare_mark = malloc(n);
    nrare = rare_mark && !keep_rare ? rare_calls(cv, k, n, p, rare_mark, &most_rare, &rare_in_period) : 0;
    if (nrare) {
        rare = malloc(nrare * sizeof *rare);
        if (!rare)
            goto out;
        size_t kept = 0, got_rare = 0;
        for (size_t i = 0; i < n; i++) { /* c filled from cv, or in place */
            if (rare_mark[i]) {
                rare[got_rare++] = cv[i];
            } else {
                c[kept] = cv[i];
                k[kept++] = k[i];
            }
        }
        cv = c;
        n = kept;
        p = find_period(k, n);
        if (!p)
            goto out;
    }
    long pause = -1;
    /* Without the passes, steps whose collectives differ are the key
     * period itself (a pass every few steps would make a pause of its
     * own at a multiple); steps of equal collectives are told by their
     * pause as ever. */
    if (!nrare || p == 1)
        p = period_from_gaps(cv, n, p, &pause);
    if (nrare && most_rare * p >= p0 - rare_in_period) {
        /* a rare key as often as the steps are (a metric all-reduce in
         * every step): part of the step, no pass; look again with it */
        keep_rare = 1;
        free(rare);
        rare = NULL;
        goto again;
    }
    /* A step ends on every rank at once: where the period holds job-wide
     * collectives, the step ends after one of them, never inside a
     * pipeline stage's own traffic (the last stage's longest pause is
     * between its forward and backward passes). */
    only = calloc(p, 1);
    size_t wide = only ? job_wide_phases(cv, n, p, ranks, only) : 0;
    size_t j;
    if (pause >= 0 && (!wide || only[pause]))
        j = (size_t)pause;
    else if (wide == 1)
        for (j = 0; !only[j]; j++)
            ;
    else
        j = pattern_end(cv, n, p, call_gap, wide ? only : NULL);
    size_t last, count = steps_ending_at(j, n, p, k, same_call_key, &last);
    /* bounds: first event, then the end of each occurrence, oldest first */
    b[0] = r->first_t;
    for (size_t s = 0; s < count; s++)
        b[s + 1] = cv[last - (count - 1 - s) * p].end;
    got = set_steps(r, b, (int)count);
    r->passes_aside = 0;
    if (nrare && got > 1) {
        /* each step's first regular call, for the passes that open it */
        for (size_t s = 1; s < count; s++)
            b[s] = cv[last - (count - 1 - s) * p - p + 1].start;
        set_aside_passes(r, rare, nrare, b);
    }
out:
    free(c);
    free(k);
    free(b);
    free(only);
    free(rare_mark);
    free(rare);
    return got;
}

/* Match ratio of the sequence with itself shifted by p, over the last
 * max(PERIOD_WINDOW, 2p) positions. */
static double shift_match(const uint32_t *k, size_t n, size_t p)
{
    size_t window = PERIOD_WINDOW > 2 * p ? PERIOD_WINDOW : 2 * p;
    size_t from = n - p > window ? n - p - window : 0, same = 0;
    for (size_t i = from; i + p < n; i++)
        same += k[i] == k[i + p];
    return (double)same / (double)(n - p - from);
}

static size_t kernel_period(const uint32_t *k, size_t n)
{
    size_t pmax = n / 2 < KERNEL_PERIOD_MAX ? n / 2 : KERNEL_PERIOD_MAX;
    if (!pmax)
        return 0;
    double *ratio = malloc((pmax + 1) * sizeof *ratio), best = 0;
    if (!ratio)
        return 0;
    for (size_t p = 1; p <= pmax; p++) {
        ratio[p] = shift_match(k, n, p);
        if (ratio[p] > best)
            best = ratio[p];
    }
    size_t got = 0;
    for (size_t p = 1; p <= pmax && !got && best >= PERIOD_MATCH; p++)
        if (ratio[p] >= best - KERNEL_PERIOD_SLACK)
            got = p;
    free(ratio);
    return got;
}

static int cmp_kernel_start(const void *a, const void *b)
{
    const struct sp_kernel_rec *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

/* The rank's kernels on its busiest stream, in time order. */
static struct sp_kernel_rec *main_stream_kernels(struct sp_model *m, struct sp_rank *r, size_t *n)
{
    uint32_t stream[MAX_STREAMS];
    size_t count[MAX_STREAMS] = {0}, ns = 0, total = 0;
    for (int f = 0; f < r->nfiles; f++) {
        const struct sp_file_rec *fr = r->files[f];
        const struct sp_file_pass *fp = sp_file_pass_of(fr);
        if (fp->kseq_full > 0)
            sp_model_warn(m, "%s: more than %zu kernels before any step: steps are looked for in "
                             "the first ones only",
                          fr->path, fp->nkseq);
        for (size_t i = 0; i < fp->nkseq; i++) {
            size_t x = 0;
            while (x < ns && stream[x] != fp->kseq[i].stream)
                x++;
            if (x == ns && ns < MAX_STREAMS)
                stream[ns++] = fp->kseq[i].stream;
            if (x < ns)
                count[x]++;
            total++;
        }
    }
    size_t best = 0;
    for (size_t x = 1; x < ns; x++)
        if (count[x] > count[best])
            best = x;
    *n = 0;
    struct sp_kernel_rec *k = total ? malloc(total * sizeof *k) : NULL;
    if (!k)
        return NULL;
    for (int f = 0; f < r->nfiles; f++) {
        const struct sp_file_pass *fp = sp_file_pass_of(r->files[f]);
        for (size_t i = 0; i < fp->nkseq; i++)
            if (fp->kseq[i].stream == stream[best])
                k[(*n)++] = fp->kseq[i];
    }
    qsort(k, *n, sizeof *k, cmp_kernel_start);
    return k;
}

/* Steps from the repeating kernel names of one rank; 0 when none repeat. */
static int steps_from_kernels(struct sp_model *m, struct sp_rank *r)
{
    size_t n;
    struct sp_kernel_rec *k = main_stream_kernels(m, r, &n);
    uint32_t *key = n ? malloc(n * sizeof *key) : NULL;
    int64_t *b = n ? malloc((n + 2) * sizeof *b) : NULL;
    int got = 0;
    if (!k || !key || !b || n < 4)
        goto out;
    /* A kernel is its name and its thread count: layers of one kernel
     * (every GEMM alike by name) differ in their grids. */
    for (size_t i = 0; i < n; i++)
        key[i] = k[i].name * KEY_MIX ^ (uint32_t)(k[i].grid ^ k[i].grid >> 32);
    size_t p = kernel_period(key, n);
    if (!p)
        goto out;
    /* Names that repeat faster than the steps (every kernel alike, or a
     * layer's kernels): the pause between steps tells the step, as for
     * equal gradient buckets. */
    long pause = -1;
    double *gap = malloc(n * sizeof *gap);
    int64_t *at = malloc(n * sizeof *at);
    if (gap && at) {
        for (size_t i = 0; i + 1 < n; i++) {
            int64_t idle = k[i + 1].start - k[i].end;
            gap[i] = idle > 0 ? (double)idle : 0;
        }
        for (size_t i = 0; i < n; i++)
            at[i] = k[i].start;
        p = period_by_pause(gap, at, n - 1, p, &pause);
    }
    free(gap);
    free(at);
    size_t j = pause >= 0 ? (size_t)pause : pattern_end(k, n, p, kernel_gap, NULL);
    size_t last, count = steps_ending_at(j, n, p, key, same_kernel_key, &last);
    b[0] = r->first_t;
    for (size_t s = 0; s < count; s++)
        b[s + 1] = k[last - (count - 1 - s) * p].end;
    got = set_steps(r, b, (int)count);
out:
    free(k);
    free(key);
    free(b);
    return got;
}

/* Recording paused through the control file (stop, then start): a step
 * that meets a pause on any rank was recorded in part, so it is left out
 * of every rank (step k stays the k-th on all); the pause itself lies
 * between steps and counts for nothing. */
static void leave_out_paused(struct sp_model *m)
{
    int any = 0;
    for (int i = 0; i < m->nranks && !any; i++)
        for (int f = 0; f < m->ranks[i].nfiles; f++)
            any |= m->ranks[i].files[f]->npauses > 0;
    if (!any)
        return;
    int total = m->steps_total, kept = 0;
    char *drop = calloc((size_t)total + 1, 1);
    if (!drop)
        return;
    for (int k = 0; k < total; k++)
        for (int i = 0; i < m->nranks && !drop[k]; i++)
            if (k < m->ranks[i].nsteps)
                drop[k] = (char)sp_model_in_pause(m, &m->ranks[i], m->ranks[i].steps[k].start, m->ranks[i].steps[k].end);
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        int n = 0;
        for (int k = 0; k < r->nsteps; k++)
            if (k >= total || !drop[k])
                r->steps[n++] = r->steps[k];
        r->nsteps = n;
    }
    for (int k = 0; k < total; k++)
        kept += !drop[k];
    free(drop);
    m->steps_paused = total - kept;
    m->steps_total = kept;
    /* numbers no longer count up one by one across the gap */
    if (m->steps_paused)
        m->step_number0 = 0;
    sp_model_warn(m, "recording was paused (control file): %d step(s) that met a pause are left out; "
                     "the pauses themselves count for nothing",
                  m->steps_paused);
}

int sp_model_find_steps(struct sp_model *m)
{
    int with_marks = 0;
    for (int i = 0; i < m->nranks; i++)
        with_marks += m->ranks[i].nmarks > 1;
    const char *how = "none";
    if (with_marks) {
        how = "markers";
        int64_t first = -2;
        for (int i = 0; i < m->nranks; i++) {
            int64_t num0;
            steps_from_markers(&m->ranks[i], &num0);
            if (num0 < 0 && m->ranks[i].nsteps > 0)
                num0 = window_first_step(&m->ranks[i]);
            if (m->ranks[i].nsteps > 0)
                first = first == -2 || first == num0 ? num0 : -1;
        }
        /* every rank's markers count from the same number: the steps keep it */
        m->step_number0 = first > 0 && first < INT32_MAX / 2 ? (int)first : 0;
        if (with_marks < m->nranks)
            sp_model_warn(m, "%d rank(s) have no step markers: left out of the breakdown",
                          m->nranks - with_marks);
    } else {
        int found = 0;
        for (int i = 0; i < m->nranks; i++)
            found += steps_from_collectives(&m->ranks[i], m->nranks) > 0;
        if (found)
            how = "collectives";
    }
    if (!strcmp(how, "none")) {
        int found = 0;
        for (int i = 0; i < m->nranks; i++)
            found += steps_from_kernels(m, &m->ranks[i]) > 0;
        if (found)
            how = "kernels";
    }
    int total = -1, most = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (m->ranks[i].nsteps > 0 && (total < 0 || m->ranks[i].nsteps < total))
            total = m->ranks[i].nsteps;
        if (m->ranks[i].nsteps > most)
            most = m->ranks[i].nsteps;
    }
    /* Every rank runs the job's steps: found without markers, counts that
     * differ by more than the step a trace cut short mean the pattern was
     * read differently on some rank. */
    if (total > 0 && most > total + 1 && strcmp(how, "markers"))
        sp_model_warn(m, "step count unsure: the ranks' %s give %d to %d steps; the first %d are "
                         "analyzed on every rank (use --step-marker, or NVTX ranges per step)",
                      how, total, most, total);
    if (total < 0) {
        /* No steps: the whole trace as one window, said plainly. */
        how = "none";
        total = 1;
        for (int i = 0; i < m->nranks; i++) {
            int64_t b[2] = {m->ranks[i].first_t, m->ranks[i].last_t + 1};
            set_steps(&m->ranks[i], b, 1);
        }
        sp_model_warn(m, "no steps found (no step markers, no repeating collectives): the whole "
                         "trace is treated as one step; use --step-marker REGEX");
    }
    m->detected_by = how;
    m->steps_total = total;
    m->steps_set_aside = -1;
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].nsteps > 0 && (m->steps_set_aside < 0 || m->ranks[i].passes_aside < m->steps_set_aside))
            m->steps_set_aside = m->ranks[i].passes_aside;
    if (m->steps_set_aside < 0 || strcmp(how, "collectives"))
        m->steps_set_aside = 0;
    leave_out_paused(m);
    return m->steps_total;
}
