/*
 * model_util.c - what every pass of the model shares: warnings, medians,
 * progress lines, the thread pool, the time axis and per-rank views.
 *
 * The passes (model_*.c) call these and nothing here calls a pass, so
 * each pass can be read knowing only this file and model_int.h; model.c,
 * which runs the passes in order, is above them all.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "model_int.h"
#include "units.h"

#define DEFAULT_SKIP 3
#define MAX_THREADS 8
#define PROGRESS_TTY_NS 1000000000LL /* a terminal sees one update a second */
#define PROGRESS_LOG_NS 5000000000LL /* a log file one line every 5 s */

static const char *const cat_names[SP_CAT_N] = {
    "compute",
    "memcpy",
    "collective_transfer",
    "collective_wait",
    "idle_input",
    "idle_host",
    "idle_other",
    "overlap",
};

const char *sp_model_cat_name(int cat)
{
    return cat >= 0 && cat < SP_CAT_N ? cat_names[cat] : "?";
}

const char *sp_model_severity_name(int sev)
{
    static const char *const names[] = {"none", "low", "moderate", "high"};
    return sev >= 0 && sev <= SP_SEV_HIGH ? names[sev] : "?";
}
/* s with its control bytes (a terminal's escape sequences in a run ID, a
 * host name or a path from a trace) written as \xNN: a warning reaches
 * terminals, JSON and HTML alike, and none of them may act on it.  Frees s;
 * NULL when out of memory. */
static char *controls_escaped(char *s)
{
    size_t n = 0, len = 0;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++, len++)
        n += *p < 32 || *p == 127;
    if (!n)
        return s;
    char *out = malloc(len + 3 * n + 1), *o = out;
    for (const unsigned char *p = (const unsigned char *)s; out && *p; p++)
        o += *p < 32 || *p == 127 ? sprintf(o, "\\x%02x", *p) : (*o = (char)*p, 1);
    if (out)
        *o = 0;
    free(s);
    return out;
}

/* How the model counts its warnings (m->warn_count, made with the first
 * warning): per warning, the format it was made from, its text as first
 * made and how many alike came after it; the warnings left out past the
 * cap. */
struct sp_warn_count {
    const char *fmt[SP_MODEL_MAX_WARNINGS];
    char *base[SP_MODEL_MAX_WARNINGS];
    int more[SP_MODEL_MAX_WARNINGS];
    int dropped;
};

/* 1 when a warning made from fmt needs no text of its own: counted into
 * the first made from it, or past the cap into the last slot's count (or
 * lost: no memory to count it); else 0, and the caller adds its text
 * (warn_new). */
static int warn_counted(struct sp_model *m, const char *fmt)
{
    struct sp_warn_count *wc = m->warn_count;
    if (!wc && !(wc = m->warn_count = calloc(1, sizeof *wc)))
        return 1;
    for (int i = 0; i < m->nwarnings; i++) {
        if (wc->fmt[i] != fmt)
            continue;
        char *s = NULL;
        wc->more[i]++;
        if (asprintf(&s, "%s (and %d more like it)", wc->base[i], wc->more[i]) >= 0) {
            if (m->warnings[i] != wc->base[i])
                free(m->warnings[i]);
            m->warnings[i] = s;
        }
        return 1;
    }
    if (m->nwarnings >= SP_MODEL_MAX_WARNINGS - 1) {
        /* the last slot says how many were left out */
        char *s = NULL;
        wc->dropped++;
        if (asprintf(&s, "%d more warning%s not shown", wc->dropped, wc->dropped == 1 ? "" : "s") < 0)
            return 1;
        if (m->nwarnings == SP_MODEL_MAX_WARNINGS - 1) {
            wc->fmt[m->nwarnings] = NULL;
            wc->base[m->nwarnings] = NULL;
            m->nwarnings++;
        } else {
            free(m->warnings[m->nwarnings - 1]);
        }
        m->warnings[m->nwarnings - 1] = s;
        return 1;
    }
    return 0;
}

/* A new warning from fmt with its text s (taken; NULL: none, out of
 * memory), after warn_counted said it needs one. */
static void warn_new(struct sp_model *m, const char *fmt, char *s)
{
    struct sp_warn_count *wc = m->warn_count;
    if (s && (s = controls_escaped(s))) {
        wc->fmt[m->nwarnings] = fmt;
        wc->base[m->nwarnings] = s;
        wc->more[m->nwarnings] = 0;
        m->warnings[m->nwarnings++] = s;
    }
}

void sp_model_warnings_free(struct sp_model *m)
{
    struct sp_warn_count *wc = m->warn_count;
    for (int i = 0; i < m->nwarnings; i++) {
        if (!wc || m->warnings[i] != wc->base[i])
            free(m->warnings[i]);
        if (wc)
            free(wc->base[i]);
    }
    free(wc);
    m->warn_count = NULL;
    m->nwarnings = 0;
}

void sp_model_warn(struct sp_model *m, const char *fmt, ...)
{
    if (warn_counted(m, fmt))
        return;
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    warn_new(m, fmt, s);
}

void sp_warn_list_add(struct sp_warn_list *w, const char *fmt, ...)
{
    if (w->n == w->cap) {
        int cap = w->cap ? 2 * w->cap : 4;
        const char **f = realloc(w->fmt, (size_t)cap * sizeof *f);
        if (f)
            w->fmt = f;
        char **t = f ? realloc(w->text, (size_t)cap * sizeof *t) : NULL;
        if (!t)
            return;
        w->text = t;
        w->cap = cap;
    }
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) >= 0) {
        w->fmt[w->n] = fmt;
        w->text[w->n++] = s;
    }
    va_end(ap);
}

void sp_model_warn_all(struct sp_model *m, struct sp_warn_list *w)
{
    for (int i = 0; i < w->n; i++)
        if (!warn_counted(m, w->fmt[i])) {
            warn_new(m, w->fmt[i], w->text[i]);
            w->text[i] = NULL;
        }
    sp_warn_list_free(w);
}

void sp_warn_list_free(struct sp_warn_list *w)
{
    for (int i = 0; i < w->n; i++)
        free(w->text[i]);
    free(w->fmt);
    free(w->text);
    memset(w, 0, sizeof *w);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double sp_file_cores(const struct sp_file_rec *f)
{
    const struct sp_cpu_span *c = &f->cpu;
    if (c->nsamples < 2 || c->t1 <= c->t0)
        return -1;
    return (double)(c->ns1 - c->ns0) / (double)(c->t1 - c->t0);
}

double sp_median(double *v, size_t n)
{
    if (!n)
        return 0;
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

SP_KTH_DEFINE(kth, double)

/* The distinct pairs of sp_pair_places, by open addressing on the pair. */
struct pair_set {
    struct sp_pair_key *key; /* per slot */
    uint32_t *id;            /* per slot: the pair's number, UINT32_MAX when free */
    size_t cap, n;           /* cap a power of 2 */
    /* per number (at most cap / 2 of them): the pair, and the number of
     * the pair that came after it when last looked up (UINT32_MAX: none).
     * A job's ranks issue their calls in the same order, so the item after
     * pair p is most often pair next[p] again: one compare, not a look-up;
     * and how many items have the pair, counted as they are numbered */
    struct sp_pair_key *by_id;
    uint32_t *next, *count;
};

static size_t pair_hash(const struct sp_pair_key *k)
{
    uint64_t h = (k->a ^ (k->b * 0x9e3779b97f4a7c15ULL)) * 0xff51afd7ed558ccdULL;
    return (size_t)(h ^ (h >> 29));
}

static int pair_set_grow(struct pair_set *s)
{
    size_t cap = s->cap ? 2 * s->cap : 1024;
    struct sp_pair_key *key = malloc(cap * sizeof *key);
    uint32_t *id = malloc(cap * sizeof *id);
    struct sp_pair_key *by_id = key && id ? realloc(s->by_id, (cap / 2 + 1) * sizeof *by_id) : NULL;
    if (by_id)
        s->by_id = by_id;
    uint32_t *next = by_id ? realloc(s->next, (cap / 2 + 1) * sizeof *next) : NULL;
    if (next)
        s->next = next;
    uint32_t *count = next ? realloc(s->count, (cap / 2 + 1) * sizeof *count) : NULL;
    if (count)
        s->count = count;
    if (!key || !id || !by_id || !next || !count) {
        free(key);
        free(id);
        return -1;
    }
    for (size_t j = 0; j < cap; j++)
        id[j] = UINT32_MAX;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->id[i] == UINT32_MAX)
            continue;
        size_t j = pair_hash(&s->key[i]) & (cap - 1);
        while (id[j] != UINT32_MAX)
            j = (j + 1) & (cap - 1);
        key[j] = s->key[i];
        id[j] = s->id[i];
    }
    free(s->key);
    free(s->id);
    s->key = key;
    s->id = id;
    s->cap = cap;
    return 0;
}

/* The number of pair k (numbered in order of first sight). */
static uint32_t pair_id(struct pair_set *s, const struct sp_pair_key *k)
{
    size_t j = pair_hash(k) & (s->cap - 1);
    for (; s->id[j] != UINT32_MAX; j = (j + 1) & (s->cap - 1))
        if (s->key[j].a == k->a && s->key[j].b == k->b)
            return s->id[j];
    s->key[j] = *k;
    s->id[j] = (uint32_t)s->n;
    s->by_id[s->n] = *k;
    s->next[s->n] = UINT32_MAX;
    s->count[s->n] = 0;
    return (uint32_t)s->n++;
}

struct pair_rank {
    struct sp_pair_key k;
    uint32_t id;
};

static int cmp_pair_rank(const void *x, const void *y)
{
    const struct pair_rank *p = x, *q = y;
    if (p->k.a != q->k.a)
        return p->k.a < q->k.a ? -1 : 1;
    return (p->k.b > q->k.b) - (p->k.b < q->k.b);
}

static int pair_before(const struct pair_rank *p, const struct pair_rank *q)
{
    return p->k.a != q->k.a ? p->k.a < q->k.a : p->k.b < q->k.b;
}

#define PAIR_RUN 16 /* sort_pair_ranks: runs this long put in order by insertion, then merged */

/* p[0..n) by pair, through tmp (as many): runs ordered by insertion, then
 * merged bottom-up.  The pairs are distinct, so any sort gives this one
 * order; qsort took a call through its comparison per compare, and the
 * pairs of a job's calls are thousands (an instance each). */
static void sort_pair_ranks(struct pair_rank *p, struct pair_rank *tmp, size_t n)
{
    size_t i = 1;
    while (i < n && pair_before(&p[i - 1], &p[i]))
        i++;
    if (i >= n)
        return;
    for (size_t lo = 0; lo < n; lo += PAIR_RUN) {
        size_t hi = n - lo > PAIR_RUN ? lo + PAIR_RUN : n;
        for (size_t x = lo + 1; x < hi; x++) {
            struct pair_rank v = p[x];
            size_t y = x;
            for (; y > lo && pair_before(&v, &p[y - 1]); y--)
                p[y] = p[y - 1];
            p[y] = v;
        }
    }
    struct pair_rank *src = p, *dst = tmp;
    for (size_t w = PAIR_RUN; w < n; w *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * w) {
            size_t mid = n - lo > w ? lo + w : n, hi = n - mid > w ? mid + w : n, a = lo, b = mid, o = lo;
            while (a < mid && b < hi)
                dst[o++] = pair_before(&src[b], &src[a]) ? src[b++] : src[a++];
            while (a < mid)
                dst[o++] = src[a++];
            while (b < hi)
                dst[o++] = src[b++];
        }
        struct pair_rank *t = src;
        src = dst;
        dst = t;
    }
    if (src != p)
        memcpy(p, src, n * sizeof *p);
}

int sp_pair_places(const struct sp_pair_key *k, size_t n, uint32_t *place)
{
    return sp_pair_runs(k, n, place, NULL, NULL);
}

int sp_pair_runs(const struct sp_pair_key *k, size_t n, uint32_t *place, uint32_t **runs, size_t *nruns)
{
    struct pair_set s = {0};
    if (runs) {
        *runs = NULL;
        *nruns = 0;
    }
    uint32_t *pid = malloc((n + 1) * sizeof *pid);
    int rc = pid && n < UINT32_MAX && pair_set_grow(&s) == 0 ? 0 : -1;
    uint32_t prev = UINT32_MAX;
    for (size_t i = 0; rc == 0 && i < n;) {
        /* the run of items that each have the pair after the previous one's,
         * with the set's arrays in locals: the stores to pid and count
         * cannot then make the compiler load them again per item */
        const struct sp_pair_key *by_id = s.by_id;
        const uint32_t *next = s.next;
        uint32_t *count = s.count, guess;
        if (prev != UINT32_MAX)
            while (i < n && (guess = next[prev]) != UINT32_MAX && by_id[guess].a == k[i].a &&
                   by_id[guess].b == k[i].b) {
                pid[i++] = prev = guess;
                count[guess]++;
            }
        if (i == n)
            break;
        if (2 * (s.n + 1) > s.cap && pair_set_grow(&s) < 0) {
            rc = -1;
            break;
        }
        pid[i] = pair_id(&s, &k[i]);
        if (prev != UINT32_MAX)
            s.next[prev] = pid[i];
        prev = pid[i++];
        s.count[prev]++;
    }
    struct pair_rank *pr = rc == 0 ? malloc((s.n + 1) * sizeof *pr) : NULL;
    struct pair_rank *tmp = rc == 0 ? malloc((s.n + 1) * sizeof *tmp) : NULL;
    uint32_t *at = s.count; /* how many of pair id, then where its run goes next */
    if (!pr)
        rc = -1;
    if (rc == 0) {
        for (size_t j = 0; j < s.n; j++)
            pr[j] = (struct pair_rank){s.by_id[j], (uint32_t)j};
        if (tmp) /* distinct pairs: no ties */
            sort_pair_ranks(pr, tmp, s.n);
        else
            qsort(pr, s.n, sizeof *pr, cmp_pair_rank);
        uint32_t off = 0, *run = runs ? malloc((s.n + 1) * sizeof *run) : NULL;
        for (size_t r = 0; r < s.n; r++) { /* then where pair id's run starts */
            uint32_t c = at[pr[r].id];
            at[pr[r].id] = off;
            off += c;
            if (run)
                run[r] = c;
        }
        for (size_t i = 0; i < n; i++)
            place[i] = at[pid[i]]++;
        if (runs && run) {
            *runs = run;
            *nruns = s.n;
        } else if (runs) {
            rc = -1;
        }
    }
    free(pr);
    free(tmp);
    free(pid);
    free(s.key);
    free(s.id);
    free(s.by_id);
    free(s.next);
    free(s.count);
    return rc;
}

void sp_sort(void *base, size_t n, size_t size, int (*cmp)(const void *, const void *))
{
    const unsigned char *b = base;
    size_t i = 1;
    while (i < n && cmp(b + (i - 1) * size, b + i * size) <= 0)
        i++;
    if (i < n)
        qsort(base, n, size, cmp);
}

void *sp_sorted_by_pairs(const void *base, size_t size, size_t n, const struct sp_pair_key *k)
{
    uint32_t *place = malloc((n + 1) * sizeof *place);
    const unsigned char *b = base;
    unsigned char *copy = malloc(n * size + 1);
    int rc = place && copy ? sp_pair_places(k, n, place) : -1;
    if (rc == 0)
        for (size_t i = 0; i < n; i++)
            memcpy(copy + (size_t)place[i] * size, b + i * size, size);
    free(place);
    if (rc < 0) {
        free(copy);
        return NULL;
    }
    return copy;
}

int sp_sort_by_pairs(void *base, size_t size, size_t n, const struct sp_pair_key *k)
{
    void *sorted = sp_sorted_by_pairs(base, size, n, k);
    if (!sorted)
        return -1;
    memcpy(base, sorted, n * size);
    free(sorted);
    return 0;
}

double sp_median_select(double *v, size_t n)
{
    if (!n)
        return 0;
    double hi = kth(v, n, n / 2);
    if (n % 2)
        return hi;
    /* the largest of the lower half, which selection left below n / 2 */
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2;
}

/* ---- progress ---- */

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* One progress state per process: the verbs analyze one model at a time.
 * Nothing is printed in the first interval, so quick runs stay silent;
 * once a line was printed, the stage's end is printed too, ending the
 * line on a terminal. */
static struct {
    pthread_mutex_t lock;
    int64_t start, last;
    int shown; /* a line of the current stage is on screen */
} progress = {PTHREAD_MUTEX_INITIALIZER, 0, 0, 0};

void sp_model_progress(const struct sp_model *m, const char *what, int done, int total)
{
    if (!m->opts.progress)
        return;
    pthread_mutex_lock(&progress.lock);
    int64_t now = now_ns();
    int tty = isatty(STDERR_FILENO);
    int64_t every = tty ? PROGRESS_TTY_NS : PROGRESS_LOG_NS;
    if (!progress.start)
        progress.start = progress.last = now;
    int finished = done >= total;
    if (now - progress.last >= every || (finished && progress.shown && tty)) {
        if (tty)
            fprintf(stderr, "\rscaleprof: %s %d/%d%s", what, done, total, finished ? "\n" : "");
        else
            fprintf(stderr, "scaleprof: %s %d/%d\n", what, done, total);
        progress.last = now;
        progress.shown = !finished;
    }
    if (finished)
        progress.shown = 0;
    pthread_mutex_unlock(&progress.lock);
}

/* ---- thread pool: a shared counter hands out indices ---- */

struct pool {
    int n, next;
    void (*fn)(int, void *);
    void *arg;
    pthread_mutex_t lock;
};

static void *pool_worker(void *p)
{
    struct pool *pl = p;
    for (;;) {
        pthread_mutex_lock(&pl->lock);
        int i = pl->next++;
        pthread_mutex_unlock(&pl->lock);
        if (i >= pl->n)
            return NULL;
        pl->fn(i, pl->arg);
    }
}

void sp_model_parallel(const struct sp_model *m, int n, void (*fn)(int i, void *arg), void *arg)
{
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int t = m->opts.threads > 0 ? m->opts.threads : (int)(cores < MAX_THREADS ? cores : MAX_THREADS);
    if (t < 1)
        t = 1;
    if (t > n)
        t = n;
    struct pool pl = {.n = n, .fn = fn, .arg = arg};
    pthread_mutex_init(&pl.lock, NULL);
    pthread_t th[MAX_THREADS * 4];
    int started = 0;
    for (int i = 1; i < t && started < (int)(sizeof th / sizeof th[0]); i++)
        if (pthread_create(&th[started], NULL, pool_worker, &pl) == 0)
            started++;
    pool_worker(&pl);
    for (int i = 0; i < started; i++)
        pthread_join(th[i], NULL);
    pthread_mutex_destroy(&pl.lock);
}

/* ---- shared arithmetic ---- */

/* Whether [s, e) on rank r's clock meets a pause of any rank's recording. */
int sp_model_in_pause(const struct sp_model *m, const struct sp_rank *r, int64_t s, int64_t e)
{
    int64_t gs = sp_model_global(m, r, s), ge = sp_model_global(m, r, e);
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *q = &m->ranks[i];
        for (int f = 0; f < q->nfiles; f++)
            for (size_t p = 0; p < q->files[f]->npauses; p++) {
                int64_t ps = sp_model_global(m, q, q->files[f]->pauses[p].start);
                int64_t pe = sp_model_global(m, q, q->files[f]->pauses[p].end);
                if (ps < ge && pe > gs)
                    return 1;
            }
    }
    return 0;
}

void sp_model_layout_text(const struct sp_model *m, char *out, size_t len)
{
    int n = m->nranks, p = m->rank_procs;
    if (p == n)
        snprintf(out, len, "%d rank%s in %d process%s (one GPU each)", n, n == 1 ? "" : "s", p,
                 p == 1 ? "" : "es");
    else
        snprintf(out, len, "%d rank%s in %d process%s (%d GPUs)", n, n == 1 ? "" : "s", p,
                 p == 1 ? "" : "es", m->gpus);
}

double sp_model_rank_step_ms(const struct sp_model *m, const struct sp_rank *r)
{
    double sum = 0;
    int n = 0;
    for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++, n++)
        sum += (double)(r->steps[k].end - r->steps[k].start);
    return n ? sum / n / NS_PER_MS : 0;
}

void sp_model_rank_breakdown(const struct sp_model *m, const struct sp_rank *r, double out[SP_CAT_N])
{
    double total = 0;
    memset(out, 0, sizeof(double) * SP_CAT_N);
    for (int k = m->step_lo; k < m->step_hi && k < r->nsteps && r->cat; k++) {
        total += (double)(r->steps[k].end - r->steps[k].start);
        for (int c = 0; c < SP_CAT_N; c++)
            out[c] += r->cat[k][c];
    }
    for (int c = 0; c < SP_CAT_N && total > 0; c++)
        out[c] /= total;
}

/* Whether some rank's trace was recorded with a step window that opened
 * after step 0 (SCALEPROF_STEPS=A:B). */
static int recorded_in_window(const struct sp_model *m)
{
    for (int i = 0; i < m->nranks; i++)
        for (int f = 0; f < m->ranks[i].nfiles; f++)
            if (m->ranks[i].files[f]->window_step > 0)
                return 1;
    return 0;
}

/* The warm-up steps skipped: --skip, or none in a trace recorded with a
 * step window (the window is the user's choice of steps), else
 * DEFAULT_SKIP. */
int sp_model_skip(const struct sp_model *m)
{
    if (m->opts.skip >= 0)
        return m->opts.skip;
    return recorded_in_window(m) ? 0 : DEFAULT_SKIP;
}

void sp_file_rec_free(struct sp_file_rec *f)
{
    free(f->path);
    free(f->diag);
    if (f->pass) {
        free(f->pass->calls);
        free(f->pass->marks);
        free(f->pass->tids);
        free(f->pass->kseq);
        free(f->pass);
    }
    free(f->pauses);
    free(f->devranks);
}
