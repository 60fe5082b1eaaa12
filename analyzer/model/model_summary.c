/*
 * model_summary.c - writing and reading per-host summaries (model_summary.h).
 *
 * The records are stored as the structs the model holds, pointers
 * cleared, each followed by the arrays it points to (a file's: those of
 * its pass too, and the pass's kseq_full): a summary is an
 * intermediate file between `scaleprof reduce` and the verbs of the same
 * scaleprof build, not an archive format, and the header's record sizes
 * and version make another build refuse it clearly.  Pass 2's results are
 * per rank: the categories of every step (SP_CAT_N doubles), the four
 * per-step idle parts, the replay's nodes, each call's node, and the
 * evidence counters.  What grows is calls and nodes per rank-step (tens
 * of bytes each) and steps: never events.
 */
#include "model_summary.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <zstd.h>

#include "grow.h"
#include "model_int.h"

static const char summary_magic[8] = {'S', 'P', 'S', 'U', 'M', '0', '1', '\n'};
/* The same, compressed: this magic, the length of the whole, a zstd frame. */
static const char packed_magic[8] = {'S', 'P', 'S', 'U', 'M', 'Z', '1', '\n'};
#define PACK_LEVEL 3
#define UNPACK_MAX ((size_t)1 << 40) /* a length beyond this is damage */
/* 2: a file's pass (its calls, markers, threads, kernels) follows its record */
#define SUMMARY_VERSION 2
/* Sections after the header. */
enum { SEC_FRECS = 1,
       SEC_RANKS = 2 };

/* One rank's pass-2 results, as read, until the classify pass takes them. */
struct rank_res {
    int32_t rank, nsteps;
    int has_cat;
    double (*cat)[SP_CAT_N];
    double *input_head, *write_idle, *sync_idle, *launch_idle;
    struct sp_rnode *nodes;
    uint64_t nnodes, ncalls;
    int32_t *call_node;
    uint64_t launches, write_bytes, writes, flushes, sync_site_calls, late_events;
    int64_t launch_ns, write_ns, flush_ns;
    double sync_site_ns, copy_ns;
    int32_t open_peak;
    char sync_site[256];
    struct sp_copy_stat copies[SP_COPY_DIRS][SP_MEM_KINDS];
    const char *from; /* the summary's name, for warnings */
};
struct reduced {
    struct rank_res *res;
    size_t n, cap;
    char **names; /* summary names, kept for rank_res.from */
    size_t nnames;
    /* the steps pass 2 ran over: the view the classify pass must ask for */
    int have_view;
    int32_t skip, first, last;
};

/* ---- writing ---- */

void sp_sbuf_free(struct sp_sbuf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

static void put(struct sp_sbuf *b, const void *p, size_t n)
{
    if (b->err || !n)
        return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n)
            cap *= 2;
        unsigned char *q = realloc(b->p, cap);
        if (!q) {
            b->err = 1;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put_u64(struct sp_sbuf *b, uint64_t v) { put(b, &v, sizeof v); }
static void put_i32(struct sp_sbuf *b, int32_t v) { put(b, &v, sizeof v); }
static void put_str(struct sp_sbuf *b, const char *s)
{
    if (!s) {
        put_u64(b, UINT64_MAX);
        return;
    }
    size_t n = strlen(s);
    put_u64(b, n);
    put(b, s, n);
}
static void put_arr(struct sp_sbuf *b, const void *p, size_t n, size_t elt)
{
    put_u64(b, p ? n : 0);
    if (p)
        put(b, p, n * elt);
}

/* The sizes of the records stored whole: a build whose structs differ
 * refuses the summary rather than misread it. */
static void record_sizes(uint32_t out[10])
{
    out[0] = sizeof(struct sp_file_rec);
    out[1] = sizeof(struct sp_coll_call);
    out[2] = sizeof(struct sp_mark);
    out[3] = sizeof(struct sp_tid_mark);
    out[4] = sizeof(struct sp_kernel_rec);
    out[5] = sizeof(struct sp_span);
    out[6] = sizeof(struct sp_dev_rank);
    out[7] = sizeof(struct sp_rnode);
    out[8] = sizeof(struct sp_copy_stat);
    out[9] = SP_CAT_N | SP_LOC_N << 8 | SP_COPY_DIRS << 16 | SP_MEM_KINDS << 24;
}

static const char *marker_of(const struct sp_model *m)
{
    return m->opts.step_marker ? m->opts.step_marker : SP_MODEL_DEFAULT_STEP_RE;
}

void sp_summary_put_header(struct sp_sbuf *b, const struct sp_model *m, const char *token)
{
    uint32_t sizes[10];
    record_sizes(sizes);
    put(b, summary_magic, sizeof summary_magic);
    put_i32(b, SUMMARY_VERSION);
    put(b, sizes, sizeof sizes);
    put_str(b, token ? token : "");
    put_i32(b, sp_model_skip(m)); /* what was skipped, default or not */
    put_i32(b, m->opts.step_first);
    put_i32(b, m->opts.step_last);
    put_str(b, marker_of(m));
    put_str(b, m->opts.run ? m->opts.run : "");
}

void sp_summary_put_frecs(struct sp_sbuf *b, const struct sp_model *m, const uint8_t *own)
{
    uint64_t n = 0;
    for (int i = 0; i < m->nfrecs; i++)
        n += !own || own[i];
    put_i32(b, SEC_FRECS);
    put_u64(b, n);
    for (int i = 0; i < m->nfrecs; i++) {
        if (own && !own[i])
            continue;
        const struct sp_file_rec *f = &m->frecs[i];
        const struct sp_file_pass *fp = sp_file_pass_of(f);
        struct sp_file_rec c = *f;
        c.path = c.diag = NULL;
        c.pass = NULL;
        c.pauses = NULL;
        c.devranks = NULL;
        put(b, &c, sizeof c);
        put_str(b, f->path);
        put_str(b, f->diag);
        put_arr(b, fp->calls, fp->ncalls, sizeof *fp->calls);
        put_arr(b, fp->marks, fp->nmarks, sizeof *fp->marks);
        put_arr(b, fp->tids, fp->ntids, sizeof *fp->tids);
        put_arr(b, fp->kseq, fp->nkseq, sizeof *fp->kseq);
        put_i32(b, fp->kseq_full);
        put_arr(b, f->pauses, f->npauses, sizeof *f->pauses);
        put_arr(b, f->devranks, (size_t)f->ndevranks, sizeof *f->devranks);
    }
}

void sp_summary_put_ranks(struct sp_sbuf *b, const struct sp_model *m, const uint8_t *which)
{
    uint64_t n = 0;
    for (int i = 0; i < m->nranks; i++)
        n += which[i] != 0;
    put_i32(b, SEC_RANKS);
    put_u64(b, n);
    for (int i = 0; i < m->nranks; i++) {
        if (!which[i])
            continue;
        const struct sp_rank *r = &m->ranks[i];
        int has = r->cat && r->input_head && r->write_idle && r->sync_idle && r->launch_idle;
        size_t ns = has ? (size_t)r->nsteps : 0;
        put_i32(b, r->rank);
        put_i32(b, r->nsteps);
        put_i32(b, has);
        put(b, r->cat, ns * sizeof *r->cat);
        put(b, r->input_head, ns * sizeof(double));
        put(b, r->write_idle, ns * sizeof(double));
        put(b, r->sync_idle, ns * sizeof(double));
        put(b, r->launch_idle, ns * sizeof(double));
        put_arr(b, r->nodes, r->nnodes, sizeof *r->nodes);
        put_u64(b, r->ncalls);
        for (size_t c = 0; c < r->ncalls; c++)
            put_i32(b, r->calls[c].node);
        uint64_t u[6] = {r->launches, r->write_bytes, r->writes, r->flushes, r->sync_site_calls, r->late_events};
        int64_t s[3] = {r->launch_ns, r->write_ns, r->flush_ns};
        double d[2] = {r->sync_site_ns, r->copy_ns};
        put(b, u, sizeof u);
        put(b, s, sizeof s);
        put(b, d, sizeof d);
        put_i32(b, r->open_peak);
        put_str(b, r->sync_site);
        put(b, r->copies, sizeof r->copies);
    }
}

int sp_summary_pack(const struct sp_sbuf *in, struct sp_sbuf *out)
{
    memset(out, 0, sizeof *out);
    if (in->err)
        return -1;
    size_t bound = ZSTD_compressBound(in->n), head = sizeof packed_magic + sizeof(uint64_t);
    out->p = malloc(head + bound);
    if (!out->p)
        return -1;
    memcpy(out->p, packed_magic, sizeof packed_magic);
    uint64_t n = in->n;
    memcpy(out->p + sizeof packed_magic, &n, sizeof n);
    /* with its checksum: damage is found before any record is believed */
    ZSTD_CCtx *cc = ZSTD_createCCtx();
    size_t z = cc ? ZSTD_CCtx_setParameter(cc, ZSTD_c_compressionLevel, PACK_LEVEL) : 1;
    if (cc && !ZSTD_isError(z))
        z = ZSTD_CCtx_setParameter(cc, ZSTD_c_checksumFlag, 1);
    if (cc && !ZSTD_isError(z))
        z = ZSTD_compress2(cc, out->p + head, bound, in->p, in->n);
    ZSTD_freeCCtx(cc);
    if (!cc || ZSTD_isError(z)) {
        sp_sbuf_free(out);
        return -1;
    }
    out->n = out->cap = head + z;
    return 0;
}

/* ---- reading ---- */

struct rd {
    const unsigned char *p;
    size_t n, at;
    int bad;
};

static int get(struct rd *r, void *out, size_t n)
{
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        if (out)
            memset(out, 0, n);
        return -1;
    }
    if (out)
        memcpy(out, r->p + r->at, n);
    r->at += n;
    return 0;
}
static uint64_t get_u64(struct rd *r)
{
    uint64_t v = 0;
    get(r, &v, sizeof v);
    return v;
}
static int32_t get_i32(struct rd *r)
{
    int32_t v = 0;
    get(r, &v, sizeof v);
    return v;
}
/* A string (malloc'd), NULL when stored as none; *ok 0 when damaged. */
static char *get_str(struct rd *r, int *ok)
{
    uint64_t n = get_u64(r);
    if (n == UINT64_MAX)
        return NULL;
    if (r->bad || n > r->n - r->at) {
        r->bad = 1;
        *ok = 0;
        return NULL;
    }
    char *s = malloc(n + 1);
    if (!s) {
        r->bad = 1;
        *ok = 0;
        return NULL;
    }
    memcpy(s, r->p + r->at, n);
    s[n] = 0;
    r->at += n;
    return s;
}
/* An array of count elements of elt bytes (malloc'd, one spare element so
 * that an empty one is not NULL where the model expects memory). */
static void *get_arr(struct rd *r, size_t *count, size_t elt)
{
    uint64_t n = get_u64(r);
    *count = 0;
    if (r->bad || n > (r->n - r->at) / elt) {
        r->bad = 1;
        return NULL;
    }
    void *p = malloc((n + 1) * elt);
    if (!p) {
        r->bad = 1;
        return NULL;
    }
    get(r, p, n * elt);
    *count = n;
    return p;
}
/* The same, NULL when empty, as pass 1 leaves every array but the calls. */
static void *get_arr_or_null(struct rd *r, size_t *count, size_t elt)
{
    void *p = get_arr(r, count, elt);
    if (*count)
        return p;
    free(p);
    return NULL;
}
static void *get_fixed(struct rd *r, size_t n, size_t elt)
{
    if (r->bad || (n && n > (r->n - r->at) / elt)) {
        r->bad = 1;
        return NULL;
    }
    void *p = malloc((n ? n : 1) * elt);
    if (!p) {
        r->bad = 1;
        return NULL;
    }
    get(r, p, n * elt);
    return p;
}

static struct reduced *reduced_of(struct sp_model *m)
{
    if (!m->reduced)
        m->reduced = calloc(1, sizeof(struct reduced));
    return m->reduced;
}

static void free_res(struct rank_res *x)
{
    free(x->cat);
    free(x->input_head);
    free(x->write_idle);
    free(x->sync_idle);
    free(x->launch_idle);
    free(x->nodes);
    free(x->call_node);
}

static int read_frec(struct rd *r, struct sp_file_rec *f)
{
    int ok = 1;
    size_t n;
    struct sp_file_pass fp = {0};
    /* the pointers read here are stale: each is replaced below (and a
     * record cut short is all zeros) */
    if (get(r, f, sizeof *f) < 0)
        return -1;
    f->path = get_str(r, &ok);
    f->diag = get_str(r, &ok);
    fp.calls = get_arr(r, &fp.ncalls, sizeof *fp.calls);
    fp.marks = get_arr_or_null(r, &fp.nmarks, sizeof *fp.marks);
    fp.tids = get_arr_or_null(r, &fp.ntids, sizeof *fp.tids);
    fp.kseq = get_arr_or_null(r, &fp.nkseq, sizeof *fp.kseq);
    fp.kseq_full = get_i32(r);
    f->pass = malloc(sizeof *f->pass);
    if (f->pass) {
        *f->pass = fp;
    } else {
        free(fp.calls);
        free(fp.marks);
        free(fp.tids);
        free(fp.kseq);
        ok = 0;
    }
    f->pauses = get_arr_or_null(r, &f->npauses, sizeof *f->pauses);
    f->devranks = get_arr_or_null(r, &n, sizeof *f->devranks);
    f->ndevranks = (int)n;
    f->host[sizeof f->host - 1] = 0;
    f->source[sizeof f->source - 1] = 0;
    f->run[sizeof f->run - 1] = 0;
    if (!ok || r->bad || !f->path)
        return -1;
    return 0;
}

static int read_rank(struct rd *r, struct rank_res *x)
{
    int ok = 1;
    memset(x, 0, sizeof *x);
    x->rank = get_i32(r);
    x->nsteps = get_i32(r);
    x->has_cat = get_i32(r);
    if (r->bad || x->nsteps < 0)
        return -1;
    if (x->has_cat) {
        size_t ns = (size_t)x->nsteps;
        x->cat = get_fixed(r, ns, sizeof *x->cat);
        x->input_head = get_fixed(r, ns, sizeof(double));
        x->write_idle = get_fixed(r, ns, sizeof(double));
        x->sync_idle = get_fixed(r, ns, sizeof(double));
        x->launch_idle = get_fixed(r, ns, sizeof(double));
    }
    size_t nn;
    x->nodes = get_arr(r, &nn, sizeof *x->nodes);
    x->nnodes = nn;
    x->ncalls = get_u64(r);
    x->call_node = r->bad ? NULL : get_fixed(r, x->ncalls, sizeof *x->call_node);
    uint64_t u[6];
    int64_t s[3];
    double d[2];
    get(r, u, sizeof u);
    get(r, s, sizeof s);
    get(r, d, sizeof d);
    x->launches = u[0];
    x->write_bytes = u[1];
    x->writes = u[2];
    x->flushes = u[3];
    x->sync_site_calls = u[4];
    x->late_events = u[5];
    x->launch_ns = s[0];
    x->write_ns = s[1];
    x->flush_ns = s[2];
    x->sync_site_ns = d[0];
    x->copy_ns = d[1];
    x->open_peak = get_i32(r);
    char *site = get_str(r, &ok);
    snprintf(x->sync_site, sizeof x->sync_site, "%s", site ? site : "");
    free(site);
    get(r, x->copies, sizeof x->copies);
    return ok && !r->bad ? 0 : -1;
}

static int push_frec(struct sp_model *m, uint8_t **own)
{
    struct sp_file_rec *p = realloc(m->frecs, ((size_t)m->nfrecs + 1) * sizeof *p);
    if (!p)
        return -1;
    m->frecs = p;
    if (own) {
        uint8_t *o = realloc(*own, (size_t)m->nfrecs + 1);
        if (!o)
            return -1;
        *own = o;
    }
    memset(&m->frecs[m->nfrecs], 0, sizeof *m->frecs);
    return 0;
}

static int read_plain(struct sp_model *m, const char *name, const unsigned char *p, size_t n, const char *token,
                      uint8_t **own);

int sp_summary_read(struct sp_model *m, const char *name, const unsigned char *p, size_t n, const char *token,
                    uint8_t **own)
{
    size_t head = sizeof packed_magic + sizeof(uint64_t);
    if (n < head || memcmp(p, packed_magic, sizeof packed_magic))
        return read_plain(m, name, p, n, token, own);
    uint64_t len;
    memcpy(&len, p + sizeof packed_magic, sizeof len);
    unsigned long long frame = ZSTD_getFrameContentSize(p + head, n - head);
    unsigned char *raw = len <= UNPACK_MAX && frame == len ? malloc(len ? len : 1) : NULL;
    size_t got = raw ? ZSTD_decompress(raw, len, p + head, n - head) : 0;
    if (!raw || ZSTD_isError(got) || got != len) {
        sp_model_warn(m, "%s: damaged or cut short (its compressed data does not decompress): not used", name);
        free(raw);
        return -1;
    }
    int rc = read_plain(m, name, raw, len, token, own);
    free(raw);
    return rc;
}

static int read_plain(struct sp_model *m, const char *name, const unsigned char *p, size_t n, const char *token,
                      uint8_t **own)
{
    struct rd r = {.p = p, .n = n};
    char magic[sizeof summary_magic];
    uint32_t sizes[10], want[10];
    int ok = 1;
    record_sizes(want);
    if (get(&r, magic, sizeof magic) < 0 || memcmp(magic, summary_magic, sizeof magic)) {
        sp_model_warn(m, "%s: not a scaleprof summary", name);
        return -1;
    }
    int version = get_i32(&r);
    get(&r, sizes, sizeof sizes);
    if (version != SUMMARY_VERSION || memcmp(sizes, want, sizeof sizes)) {
        sp_model_warn(m, "%s: written by another build of scaleprof (summary version %d, other record sizes): "
                         "run scaleprof reduce again with this one",
                      name, version);
        return -1;
    }
    char *tok = get_str(&r, &ok);
    int32_t skip = get_i32(&r), first = get_i32(&r), last = get_i32(&r);
    char *marker = get_str(&r, &ok);
    char *run = get_str(&r, &ok);
    int rc = 0;
    if (r.bad || !ok || !tok || !marker || !run) {
        sp_model_warn(m, "%s: damaged header", name);
        rc = -1;
    } else if (token && strcmp(token, tok)) {
        rc = -2; /* another job's part: not ours (yet) */
    } else if (strcmp(marker, marker_of(m)) || strcmp(run, m->opts.run ? m->opts.run : "")) {
        sp_model_warn(m, "%s was reduced with --step-marker '%s'%s%s: give the same, or reduce again", name,
                      marker, run[0] ? " --run " : "", run);
        rc = -1;
    } else if (token == NULL) { /* loading summaries to analyze: the steps they were reduced over */
        struct reduced *red = reduced_of(m);
        if (!red)
            rc = -1;
        else if (!red->have_view) {
            red->have_view = 1;
            red->skip = skip;
            if (m->opts.skip < 0) /* no --skip given: the summaries' own */
                m->opts.skip = skip;
            red->first = first;
            red->last = last;
        } else if (red->skip != skip || red->first != first || red->last != last) {
            sp_model_warn(m, "%s was reduced with other --skip or --steps than the summaries before it: "
                             "reduce them again together",
                          name);
            rc = -1;
        }
    }
    free(tok);
    free(marker);
    free(run);
    if (rc < 0)
        return rc;
    struct reduced *red = NULL;
    while (r.at < r.n && !r.bad) {
        int32_t sec = get_i32(&r);
        uint64_t count = get_u64(&r);
        if (r.bad)
            break;
        if (sec == SEC_FRECS) {
            for (uint64_t i = 0; i < count && !r.bad; i++) {
                if (push_frec(m, own) < 0)
                    return -1;
                struct sp_file_rec *f = &m->frecs[m->nfrecs];
                if (read_frec(&r, f) < 0) {
                    sp_file_rec_free(f);
                    r.bad = 1;
                    break;
                }
                if (own)
                    (*own)[m->nfrecs] = 1;
                m->nfrecs++;
            }
        } else if (sec == SEC_RANKS) {
            if (!red && !(red = reduced_of(m)))
                return -1;
            for (uint64_t i = 0; i < count && !r.bad; i++) {
                struct rank_res *q = sp_grow(red->res, red->n, &red->cap, sizeof *red->res, 64);
                if (!q)
                    return -1;
                red->res = q;
                struct rank_res *x = &red->res[red->n];
                if (read_rank(&r, x) < 0) {
                    free_res(x);
                    r.bad = 1;
                    break;
                }
                x->from = name;
                red->n++;
            }
        } else {
            r.bad = 1;
        }
    }
    if (r.bad) {
        sp_model_warn(m, "%s: damaged or cut short at byte %zu of %zu: not used", name, r.at, r.n);
        return -1;
    }
    return 0;
}

/* ---- loading a directory of summaries ---- */

int sp_summary_slurp(const char *path, unsigned char **p, size_t *n)
{
    *p = NULL;
    *n = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    struct stat st;
    if (fstat(fileno(f), &st) != 0 || st.st_size < 0) {
        fclose(f);
        return -1;
    }
    size_t sz = (size_t)st.st_size;
    unsigned char *b = malloc(sz ? sz : 1);
    if (!b || fread(b, 1, sz, f) != sz) {
        int e = errno ? errno : EIO;
        free(b);
        fclose(f);
        errno = e;
        return -1;
    }
    fclose(f);
    *p = b;
    *n = sz;
    return 0;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* The *.spsum directly in dir, sorted; the count, -1 when unreadable. */
static int list_summaries(const char *dir, char ***out)
{
    *out = NULL;
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    char **v = NULL;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.' || !has_suffix(e->d_name, SP_SUMMARY_SUFFIX))
            continue;
        char **q = realloc(v, ((size_t)n + 1) * sizeof *v);
        if (!q || asprintf(&q[n], "%s/%s", dir, e->d_name) < 0) {
            v = q ? q : v;
            break;
        }
        v = q;
        n++;
    }
    closedir(d);
    if (n)
        qsort(v, (size_t)n, sizeof *v, cmp_name);
    *out = v;
    return n;
}

int sp_summary_is_dir(const char *dir)
{
    char **v;
    int n = list_summaries(dir, &v);
    for (int i = 0; i < n; i++)
        free(v[i]);
    free(v);
    return n > 0;
}

static int cmp_frec_path(const void *a, const void *b)
{
    const struct sp_file_rec *x = *(const struct sp_file_rec *const *)a, *y = *(const struct sp_file_rec *const *)b;
    return strcmp(x->path, y->path);
}

void sp_summary_sort_frecs(struct sp_model *m, uint8_t *own)
{
    int n = m->nfrecs;
    if (n < 2)
        return;
    struct sp_file_rec **ix = malloc((size_t)n * sizeof *ix);
    struct sp_file_rec *out = malloc((size_t)n * sizeof *out);
    uint8_t *oo = own ? malloc((size_t)n) : NULL;
    if (!ix || !out || (own && !oo)) {
        free(ix);
        free(out);
        free(oo);
        return;
    }
    for (int i = 0; i < n; i++)
        ix[i] = &m->frecs[i];
    qsort(ix, (size_t)n, sizeof *ix, cmp_frec_path);
    int k = 0, dups = 0;
    for (int i = 0; i < n; i++) {
        if (k && !strcmp(out[k - 1].path, ix[i]->path)) {
            sp_file_rec_free(ix[i]);
            dups++;
            continue;
        }
        if (oo)
            oo[k] = own[ix[i] - m->frecs];
        out[k++] = *ix[i];
    }
    if (dups)
        sp_model_warn(m, "%d trace file(s) are in two summaries (the same host directory reduced twice): "
                         "each is used once",
                      dups);
    memcpy(m->frecs, out, (size_t)k * sizeof *out);
    if (oo)
        memcpy(own, oo, (size_t)k);
    m->nfrecs = k;
    free(ix);
    free(out);
    free(oo);
}

int sp_summary_load(struct sp_model *m)
{
    char **v;
    int n = list_summaries(m->dir, &v);
    struct reduced *red = reduced_of(m);
    if (n <= 0 || !red) {
        sp_model_warn(m, "%s: no readable summary", m->dir);
        free(v);
        return -1;
    }
    red->names = v;
    red->nnames = (size_t)n;
    int used = 0;
    for (int i = 0; i < n; i++) {
        unsigned char *p;
        size_t len;
        if (sp_summary_slurp(v[i], &p, &len) < 0) {
            sp_model_warn(m, "%s: %s", v[i], strerror(errno));
            continue;
        }
        used += sp_summary_read(m, v[i], p, len, NULL, NULL) == 0;
        free(p);
    }
    if (used < n) {
        sp_model_warn(m, "%d of %d summaries under %s could not be used: a report of the rest would leave "
                         "ranks out",
                      n - used, n, m->dir);
        return -1;
    }
    sp_summary_sort_frecs(m, NULL);
    if (!m->nfrecs) {
        sp_model_warn(m, "the summaries under %s name no trace file", m->dir);
        return -1;
    }
    return 0;
}

int sp_summary_classified(struct sp_model *m)
{
    struct reduced *red = m->reduced;
    if (red->have_view &&
        (red->skip != m->opts.skip || red->first != m->opts.step_first || red->last != m->opts.step_last)) {
        char steps[64] = "";
        if (red->first >= 0 || red->last >= 0)
            snprintf(steps, sizeof steps, " --steps %d:%d", (int)red->first, (int)red->last - 1);
        sp_model_warn(m, "%s was reduced with --skip %d%s: the step breakdown of summaries is that of the steps "
                         "reduced; give the same options, or reduce again",
                      m->dir, (int)red->skip, steps);
        return -1;
    }
    int missing = 0, first_missing = -1;
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        struct rank_res *x = NULL;
        for (size_t k = 0; red && k < red->n; k++)
            if (red->res[k].rank == r->rank) {
                x = &red->res[k];
                break;
            }
        int fits = x && x->nsteps == r->nsteps && x->ncalls == r->ncalls;
        for (uint64_t k = 0; fits && k < x->nnodes; k++)
            fits = x->nodes[k].call + (uint64_t)x->nodes[k].ncalls <= r->ncalls;
        for (uint64_t c = 0; fits && c < x->ncalls; c++)
            fits = x->call_node[c] >= -1 && x->call_node[c] < (int64_t)x->nnodes;
        if (!fits) {
            if (x)
                sp_model_warn(m, "%s: rank %d's steps or calls differ from what the summaries' file records "
                                 "give (%d steps, %llu calls against %d, %zu): rank left out",
                              x->from, r->rank, (int)x->nsteps, (unsigned long long)x->ncalls, r->nsteps, r->ncalls);
            else if (missing++ == 0)
                first_missing = r->rank;
            continue;
        }
        if (x->has_cat) {
            r->cat = x->cat;
            r->input_head = x->input_head;
            r->write_idle = x->write_idle;
            r->sync_idle = x->sync_idle;
            r->launch_idle = x->launch_idle;
            x->cat = NULL;
            x->input_head = x->write_idle = x->sync_idle = x->launch_idle = NULL;
        }
        if (x->nnodes) {
            r->nodes = x->nodes;
            r->nnodes = x->nnodes;
            x->nodes = NULL;
        }
        for (size_t c = 0; c < r->ncalls; c++)
            r->calls[c].node = x->call_node[c];
        r->launches = x->launches;
        r->launch_ns = x->launch_ns;
        r->write_bytes = x->write_bytes;
        r->writes = x->writes;
        r->flushes = x->flushes;
        r->write_ns = x->write_ns;
        r->flush_ns = x->flush_ns;
        snprintf(r->sync_site, sizeof r->sync_site, "%s", x->sync_site);
        r->sync_site_calls = x->sync_site_calls;
        r->sync_site_ns = x->sync_site_ns;
        r->late_events = x->late_events;
        r->open_peak = x->open_peak;
        memcpy(r->copies, x->copies, sizeof r->copies);
        r->copy_ns = x->copy_ns;
    }
    if (missing)
        sp_model_warn(m, "%d rank(s) (rank %d first) have file records but no step results in the summaries "
                         "(a reduce that did not finish?): left out of the breakdown",
                      missing, first_missing);
    return 0;
}

void sp_summary_free(struct sp_model *m)
{
    struct reduced *red = m->reduced;
    if (!red)
        return;
    for (size_t k = 0; k < red->n; k++)
        free_res(&red->res[k]);
    free(red->res);
    for (size_t k = 0; k < red->nnames; k++)
        free(red->names[k]);
    free(red->names);
    free(red);
    m->reduced = NULL;
}
