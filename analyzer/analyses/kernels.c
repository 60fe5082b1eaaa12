/*
 * kernels.c - the kernel view: GPU kernels per name over the analyzed
 * steps, per rank, as nsys stats' kernel summary or HTA's kernel
 * breakdown give them.
 *
 * A kernel belongs to the analyzed steps when it starts on the GPU at or
 * after the first analyzed step's start and before the last one's end, on
 * its rank's own clock (the steps' clock); a rank's own files only (loader
 * workers launch no kernels), and of a process that drives several GPUs
 * only the rank's device.  Compute and NCCL kernels both count: the view
 * answers "where does the GPU time go", and NCCL's share is part of that.
 *
 * The model does not keep kernels (its memory follows ranks and steps), so
 * this is a pass of its own over the files, run only when asked for.  It
 * keeps one duration per call for the percentiles: 8 bytes per kernel of
 * the analyzed steps, besides a table of the distinct names.
 */
#include <stdlib.h>
#include <string.h>

#include "grow.h"
#include "kernels.h"
#include "model_util.h"
#include "traceset.h"

#define TABLE_MIN 1024 /* slots; a power of two, doubled at half full */
#define P50 0.50
#define P99 0.99
#define FNV_OFFSET 0xcbf29ce484222325ull
#define FNV_PRIME 0x100000001b3ull

struct entry {
    struct sp_kernel_stat s;
    uint64_t hash;
    int64_t *durs;
    size_t ndurs, cap;
};

struct collect {
    const struct sp_model *m;
    struct entry *e;
    size_t n, cap;
    size_t *slot; /* open addressing: entry index + 1, 0 empty */
    size_t nslots;
    int ri; /* the rank being read */
    int64_t lo, hi;
    int oom;
};

static uint64_t hash_name(const char *s)
{
    uint64_t h = FNV_OFFSET;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * FNV_PRIME;
    return h ? h : 1;
}

static int grow_table(struct collect *c)
{
    size_t n = c->nslots ? 2 * c->nslots : TABLE_MIN;
    size_t *slot = calloc(n, sizeof *slot);
    if (!slot)
        return -1;
    for (size_t i = 0; i < c->n; i++) {
        size_t j = c->e[i].hash & (n - 1);
        while (slot[j])
            j = (j + 1) & (n - 1);
        slot[j] = i + 1;
    }
    free(c->slot);
    c->slot = slot;
    c->nslots = n;
    return 0;
}

/* The entry of name, made when new; NULL when memory ran out. */
static struct entry *entry_of(struct collect *c, const char *name, int nccl)
{
    if (2 * (c->n + 1) > c->nslots && grow_table(c) < 0)
        return NULL;
    uint64_t h = hash_name(name);
    size_t j = h & (c->nslots - 1);
    for (; c->slot[j]; j = (j + 1) & (c->nslots - 1)) {
        struct entry *e = &c->e[c->slot[j] - 1];
        if (e->hash == h && !strcmp(e->s.name, name))
            return e;
    }
    struct entry *grown = sp_grow(c->e, c->n, &c->cap, sizeof *c->e, 64);
    if (!grown)
        return NULL;
    c->e = grown;
    struct entry *e = &c->e[c->n];
    memset(e, 0, sizeof *e);
    e->hash = h;
    e->s.nccl = nccl;
    e->s.name = strdup(name);
    e->s.ranks = calloc((size_t)c->m->nranks, sizeof *e->s.ranks);
    if (!e->s.name || !e->s.ranks) {
        free(e->s.name);
        free(e->s.ranks);
        return NULL;
    }
    c->slot[j] = ++c->n;
    return e;
}

static int on_gpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct collect *c = ctx;
    const struct sp_ev_gpu *g = &ev->gpu;
    const struct sp_rank *rk = &c->m->ranks[c->ri];
    int64_t t = (int64_t)ev->t;
    if ((g->kind != SP_GPU_KERNEL && g->kind != SP_GPU_NCCL_KERNEL) || t < c->lo || t >= c->hi)
        return 0;
    if (rk->shared > 1 && g->device != rk->device)
        return 0;
    const char *name = sp_reader_string(r, g->name);
    struct entry *e = entry_of(c, name[0] ? name : "(no name)", g->kind == SP_GPU_NCCL_KERNEL);
    if (!e) {
        c->oom = 1;
        return 1;
    }
    int64_t *d = sp_grow(e->durs, e->ndurs, &e->cap, sizeof *e->durs, 16);
    if (!d) {
        c->oom = 1;
        return 1;
    }
    e->durs = d;
    e->durs[e->ndurs++] = (int64_t)g->dur;
    e->s.calls++;
    e->s.ns += (double)g->dur;
    e->s.ranks[c->ri].calls++;
    e->s.ranks[c->ri].ns += (double)g->dur;
    return 0;
}

static const struct sp_pass kernel_pass = {
    .types = SP_TYPE_BIT(SP_EV_GPU),
    .tool = {.gpu = on_gpu},
};

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static int cmp_stat(const void *a, const void *b)
{
    const struct sp_kernel_stat *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? 1 : -1;
    return strcmp(x->name, y->name);
}

/* The nearest-rank percentile q of n sorted values. */
static double nearest_rank(const int64_t *v, size_t n, double q)
{
    size_t k = (size_t)(q * (double)n + 1 - 1e-9);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return (double)v[k - 1];
}

/* The rank whose calls of this kernel last longest on average, against
 * the median of the ranks' means. */
static void slowest_rank(const struct sp_model *m, struct sp_kernel_stat *s)
{
    double *means = malloc(sizeof *means * (size_t)m->nranks + 1);
    size_t n = 0;
    s->slowest = -1;
    s->slowest_x = 0;
    if (!means)
        return;
    double best = -1;
    for (int i = 0; i < m->nranks; i++) {
        if (!s->ranks[i].calls)
            continue;
        double mean = s->ranks[i].ns / (double)s->ranks[i].calls;
        means[n++] = mean;
        if (mean > best) {
            best = mean;
            s->slowest = i;
        }
    }
    if (n < 2) {
        s->slowest = -1;
    } else {
        double med = sp_median(means, n);
        s->slowest_x = med > 0 ? best / med : 0;
    }
    free(means);
}

static int finish(struct collect *c, struct sp_kernels *k)
{
    k->k = calloc(c->n + 1, sizeof *k->k);
    k->rank_ns = calloc((size_t)c->m->nranks + 1, sizeof *k->rank_ns);
    if (!k->k || !k->rank_ns)
        return -1;
    for (size_t i = 0; i < c->n; i++) {
        struct entry *e = &c->e[i];
        struct sp_kernel_stat *s = &e->s;
        qsort(e->durs, e->ndurs, sizeof *e->durs, cmp_i64);
        s->mean_ns = s->calls ? s->ns / (double)s->calls : 0;
        s->p50_ns = e->ndurs ? nearest_rank(e->durs, e->ndurs, P50) : 0;
        s->p99_ns = e->ndurs ? nearest_rank(e->durs, e->ndurs, P99) : 0;
        slowest_rank(c->m, s);
        k->ns += s->ns;
        for (int r = 0; r < c->m->nranks; r++)
            k->rank_ns[r] += s->ranks[r].ns;
        k->k[k->n++] = *s;
        s->name = NULL; /* owned by k now */
        s->ranks = NULL;
    }
    qsort(k->k, k->n, sizeof *k->k, cmp_stat);
    return 0;
}

int sp_kernels_analyze(const struct sp_model *m, struct sp_kernels *k)
{
    memset(k, 0, sizeof *k);
    k->nranks = m->nranks;
    struct collect c = {.m = m};
    for (int i = 0; i < m->nranks && !c.oom; i++) {
        const struct sp_rank *r = &m->ranks[i];
        int hi = m->step_hi < r->nsteps ? m->step_hi : r->nsteps;
        if (hi <= m->step_lo)
            continue;
        c.ri = i;
        c.lo = r->steps[m->step_lo].start;
        c.hi = r->steps[hi - 1].end;
        for (int f = 0; f < r->nfiles && !c.oom; f++) {
            int err = 0;
            if (sp_trace_feed(r->files[f]->path, &kernel_pass, &c, &err) < 0 && err)
                sp_warn_list_add(&k->warnings, "%s: could not be read again for the kernel view (%s)",
                                 r->files[f]->path, sp_strerror(err));
        }
    }
    int rc = c.oom ? -1 : finish(&c, k);
    for (size_t i = 0; i < c.n; i++) {
        free(c.e[i].s.name);
        free(c.e[i].s.ranks);
        free(c.e[i].durs);
    }
    free(c.e);
    free(c.slot);
    return rc;
}

void sp_kernels_free(struct sp_kernels *k)
{
    for (size_t i = 0; k->k && i < k->n; i++) {
        free(k->k[i].name);
        free(k->k[i].ranks);
    }
    free(k->k);
    free(k->rank_ns);
    sp_warn_list_free(&k->warnings);
    memset(k, 0, sizeof *k);
}
