/*
 * model_clock.c - one time axis for all hosts.
 *
 * Each file's header pairs CLOCK_MONOTONIC with CLOCK_REALTIME at start, so
 * a host's offset is (realtime - monotonic), the median over its files.
 * Realtime clocks of different hosts disagree by NTP's error (often tens of
 * microseconds to milliseconds), which is as large as the collective waits
 * being measured.  So the offsets are refined with the one event that
 * happens at nearly the same instant everywhere: the end of a blocking
 * collective, which no rank leaves before the last one's data arrived.
 * For each host, the median of (its end - the reference host's end) over
 * the collectives both took part in is subtracted.  What scatter remains
 * around that median is reported as the residual skew.
 */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "units.h"


struct end_diffs {
    int ref;    /* reference host */
    double **d; /* per host: end differences to the reference host */
    size_t *n, *cap;
};

static int64_t call_end(const struct sp_model *m, const struct sp_coll_ref *x)
{
    const struct sp_rank *r = &m->ranks[x->r];
    return sp_model_global(m, r, r->calls[x->c].end);
}

static void push_diff(struct end_diffs *e, int h, double v)
{
    if (e->n[h] == e->cap[h]) {
        size_t cap = e->cap[h] ? e->cap[h] * 2 : 256;
        double *p = realloc(e->d[h], cap * sizeof *p);
        if (!p)
            return;
        e->d[h] = p;
        e->cap[h] = cap;
    }
    e->d[h][e->n[h]++] = v;
}

/* One difference per host and instance: its first rank against the
 * reference host's first rank.  Host-timed calls end when the host returns,
 * which says little about the GPU: they are left out. */
static void collect_ends(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg)
{
    struct end_diffs *e = arg;
    const struct sp_coll_ref *ref = NULL;
    for (size_t i = 0; i < n && !ref; i++)
        if (m->ranks[refs[i].r].host == e->ref && m->ranks[refs[i].r].calls[refs[i].c].timing != SP_TIMING_HOST)
            ref = &refs[i];
    if (!ref)
        return;
    unsigned char *seen = calloc((size_t)m->nhosts, 1);
    if (!seen)
        return;
    for (size_t i = 0; i < n; i++) {
        int h = m->ranks[refs[i].r].host;
        if (h == e->ref || seen[h] || m->ranks[refs[i].r].calls[refs[i].c].timing == SP_TIMING_HOST)
            continue;
        seen[h] = 1;
        push_diff(e, h, (double)(call_end(m, &refs[i]) - call_end(m, ref)));
    }
    free(seen);
}

/* Each host's offset: the median over its ranks' files of realtime less
 * monotonic at their start.  The values are grouped by host in one pass
 * over the ranks (a pass per host costs hosts x ranks). */
static void realtime_offsets(struct sp_model *m)
{
    size_t *at = calloc((size_t)m->nhosts + 1, sizeof *at);
    double *v = NULL;
    for (int i = 0; at && i < m->nranks; i++) {
        int h = m->ranks[i].host;
        for (int f = 0; h >= 0 && h < m->nhosts && f < m->ranks[i].nfiles; f++)
            at[h + 1] += m->ranks[i].files[f]->start_real != 0;
    }
    for (int h = 0; at && h < m->nhosts; h++)
        at[h + 1] += at[h];
    if (at)
        v = malloc((at[m->nhosts] + 1) * sizeof *v);
    for (int i = 0; at && v && i < m->nranks; i++) {
        int h = m->ranks[i].host;
        for (int f = 0; h >= 0 && h < m->nhosts && f < m->ranks[i].nfiles; f++) {
            const struct sp_file_rec *x = m->ranks[i].files[f];
            if (x->start_real)
                v[at[h]++] = (double)(x->start_real - x->start_mono);
        }
    }
    /* at[h] is now where host h's values end */
    for (int h = 0; h < m->nhosts; h++) {
        size_t from = at && v && h ? at[h - 1] : 0, n = at && v ? at[h] - from : 0;
        m->host_offset[h] = n ? (int64_t)sp_median(v + from, n) : 0;
    }
    free(at);
    free(v);
    /* Keep numbers near the first host's monotonic clock. */
    int64_t base = m->host_offset[0];
    for (int h = 0; h < m->nhosts; h++)
        m->host_offset[h] -= base;
}

void sp_model_align_clocks(struct sp_model *m)
{
    m->host_offset = calloc((size_t)m->nhosts + 1, sizeof *m->host_offset);
    if (!m->host_offset || m->nhosts < 2)
        return;
    realtime_offsets(m);
    struct end_diffs e = {.ref = m->ranks[0].host};
    e.d = calloc((size_t)m->nhosts, sizeof *e.d);
    e.n = calloc((size_t)m->nhosts, sizeof *e.n);
    e.cap = calloc((size_t)m->nhosts, sizeof *e.cap);
    if (!e.d || !e.n || !e.cap)
        goto out;
    sp_model_each_instance(m, collect_ends, &e);
    double worst = 0;
    int refined = 0;
    for (int h = 0; h < m->nhosts; h++) {
        if (h == e.ref || !e.n[h])
            continue;
        double *copy = malloc(e.n[h] * sizeof *copy);
        if (!copy)
            continue;
        memcpy(copy, e.d[h], e.n[h] * sizeof *copy);
        double med = sp_median(copy, e.n[h]);
        for (size_t i = 0; i < e.n[h]; i++)
            copy[i] = e.d[h][i] > med ? e.d[h][i] - med : med - e.d[h][i];
        double mad = sp_median(copy, e.n[h]);
        free(copy);
        m->host_offset[h] -= (int64_t)med;
        if (mad > worst)
            worst = mad;
        refined++;
    }
    m->skew_us = worst / NS_PER_US;
    if (refined < m->nhosts - 1)
        sp_model_warn(m, "%d host(s) share no timed collective with %s: their clocks rest on "
                         "realtime alone",
                      m->nhosts - 1 - refined, m->hosts[e.ref]);
out:
    for (int h = 0; e.d && h < m->nhosts; h++)
        free(e.d[h]);
    free(e.d);
    free(e.n);
    free(e.cap);
}
