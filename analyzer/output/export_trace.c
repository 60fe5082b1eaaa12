/*
 * export_trace.c - `scaleprof export`'s timeline as Chrome Trace Event
 * JSON (the "JSON Object Format" both ui.perfetto.dev and chrome://tracing
 * read; docs/export.md lists the facts of the format relied on): the
 * encoder of export_walk.c's walk (export_int.h).
 *
 * A rank's group is a process (pid rank + 1: pid 0 is "no process" to
 * some viewers), a what-if group pid WHATIF_PID_BASE beside it; a track
 * is a thread of it (tid 1 the steps, the others numbered from 2 through
 * the rank's groups), named and ordered by metadata events.  A slice is
 * one complete event ("X", its duration known when it starts); a marker's
 * push and pop are "B" and "E"; a late-rank arrow is a pair of flow events
 * ("s" on the last rank's transfer, "f" bound to the enclosing slice on
 * the other's).  The categories stay arguments of each step: there are
 * no breakdown slices, and no CPU track (a counter is the process's).
 *
 * Events are written in the order the walk gives them; the format does
 * not ask for sorted events (both viewers sort on load).  Times are
 * relative to the earliest event of the set, in microseconds with three
 * decimals (exact ns).
 */
#include <inttypes.h>
#include <limits.h>
#include <string.h>

#include "export_int.h"
#include "export_trace.h"
#include "json.h"
#include "units.h"

#define WHATIF_PID_BASE 1000000
#define BYTES_PER_EVENT 170.0 /* a written trace event, measured on the sim's traces */
#define BYTES_PER_STEP 400.0

struct writer {
    FILE *out;
    int nev; /* events written (for commas) */
};

static FILE *out_of(const struct sp_export_walk *w)
{
    return ((struct writer *)w->ctx)->out;
}

/* ---- JSON pieces ---- */

/* A string as JSON: escaped, and bytes that are not UTF-8 replaced, so
 * that any name from a trace (mangled kernels, paths) keeps the file valid. */
static void put_str(FILE *out, const char *s)
{
    sp_json_put_string(out, s);
}

/* ns as microseconds with three decimals: exact, whatever the magnitude. */
static void put_us(FILE *out, int64_t ns)
{
    if (ns < 0) {
        putc('-', out);
        ns = -ns;
    }
    fprintf(out, "%" PRId64 ".%03d", ns / 1000, (int)(ns % 1000));
}

static void kv_str(FILE *out, const char *key, const char *v)
{
    fprintf(out, ",\"%s\":", key);
    put_str(out, v);
}

/* Opens an event: {"ph":PH,"pid":P,"tid":T,"ts":T (global ns) */
static void ev_open(struct sp_export_walk *w, const char *ph, int tr, int64_t global)
{
    struct writer *x = w->ctx;
    fputs(x->nev++ ? ",\n" : "\n", x->out);
    fprintf(x->out, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", ph, w->pid, tr + 2);
    put_us(x->out, global - w->origin);
    w->st.slices++;
}

/* An event's fields gathered in a line buffer and written with one call:
 * a call into stdio per field costs more than the field. */
struct line {
    FILE *out;
    size_t n;
    char b[512];
};

static void line_flush(struct line *l)
{
    fwrite(l->b, 1, l->n, l->out);
    l->n = 0;
}

static void line_put(struct line *l, const char *s, size_t n)
{
    if (l->n + n > sizeof l->b) line_flush(l);
    if (n > sizeof l->b) {
        fwrite(s, 1, n, l->out);
        return;
    }
    memcpy(l->b + l->n, s, n);
    l->n += n;
}

static void line_u64(struct line *l, uint64_t v)
{
    char t[20];
    size_t i = sizeof t;
    do {
        t[--i] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    line_put(l, t + i, sizeof t - i);
}

/* A string as JSON: as is when it is printable ASCII with nothing to
 * escape (most names), else through put_str. */
static void line_str(struct line *l, const char *s)
{
    size_t n = 0;
    while (s[n] >= 0x20 && s[n] < 0x7f && s[n] != '"' && s[n] != '\\')
        n++;
    if (s[n] || n > sizeof l->b) {
        line_flush(l);
        put_str(l->out, s);
        return;
    }
    line_put(l, "\"", 1);
    line_put(l, s, n);
    line_put(l, "\"", 1);
}

static void line_double(struct line *l, double v, int prec)
{
    char t[64];
    int k = snprintf(t, sizeof t, "%.*f", prec, v);
    if (k > 0 && (size_t)k < sizeof t) {
        line_put(l, t, (size_t)k);
    } else { /* too long for t: straight to the file */
        line_flush(l);
        fprintf(l->out, "%.*f", prec, v);
    }
}

/* The rest of an event: its name, category and arguments. */
static void ev_close(FILE *out, const struct sp_export_ev *e)
{
    struct line l = {.out = out};
    line_put(&l, ",\"name\":", 8);
    line_str(&l, e->name);
    line_put(&l, ",\"cat\":\"", 8);
    const char *cat = sp_export_cat_names[e->cat];
    line_put(&l, cat, strlen(cat));
    line_put(&l, "\"", 1);
    for (int i = 0; i < e->nargs; i++) {
        const struct sp_export_arg *a = &e->args[i];
        if (i)
            line_put(&l, ",\"", 2);
        else
            line_put(&l, ",\"args\":{\"", 10);
        line_put(&l, a->key, strlen(a->key));
        line_put(&l, "\":", 2);
        switch (a->type) {
        case ARG_INT:
            if (a->v.i < 0) line_put(&l, "-", 1);
            line_u64(&l, a->v.i < 0 ? -(uint64_t)a->v.i : (uint64_t)a->v.i);
            break;
        case ARG_UINT: line_u64(&l, a->v.u); break;
        case ARG_DOUBLE: line_double(&l, a->v.d, a->prec); break;
        case ARG_BOOL: line_put(&l, a->v.i ? "true" : "false", a->v.i ? 4 : 5); break;
        default: line_str(&l, a->v.s);
        }
    }
    line_put(&l, "}}", e->nargs ? 2 : 1);
    line_flush(&l);
}

static void meta(struct sp_export_walk *w, int tid, const char *what, const char *name, int sort)
{
    struct writer *x = w->ctx;
    fputs(x->nev++ ? ",\n" : "\n", x->out);
    fprintf(x->out,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_name\",\"args\":{\"name\":", w->pid,
            tid, what);
    put_str(x->out, name);
    fprintf(x->out,
            "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\",\"args\":{\"sort_"
            "index\":%d}}",
            w->pid, tid, what, sort);
}

/* ---- the encoder ---- */

static void json_group(struct sp_export_walk *w, const char *name, int sort)
{
    meta(w, 0, "process", name, sort);
}

static void json_track(struct sp_export_walk *w, int tr, const char *name, int sort, int kind)
{
    (void)kind;
    meta(w, tr + 2, "thread", name, sort);
}

/* The host thread track named again (the last name given wins). */
static void json_rename(struct sp_export_walk *w, int tr, const char *name, int sort)
{
    (void)sort;
    FILE *out = out_of(w);
    fprintf(out,
            ",\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":",
            w->pid, tr + 2);
    put_str(out, name);
    fputs("}}", out);
}

/* A slice is one event, written at its start: "X" with its duration, or
 * "B" for a range a later "E" closes. */
static void json_begin(struct sp_export_walk *w, const struct sp_export_ev *e)
{
    int open = e->dur == SP_EXPORT_OPEN;
    ev_open(w, open ? "B" : "X", e->track, e->t);
    if (!open) {
        fputs(",\"dur\":", out_of(w));
        put_us(out_of(w), e->dur > 0 ? e->dur : 0);
    }
    ev_close(out_of(w), e);
}

static void json_end(struct sp_export_walk *w, const struct sp_export_ev *e)
{
    if (e->dur != SP_EXPORT_OPEN) return; /* its "X" said where it ends */
    ev_open(w, "E", e->track, e->t);
    ev_close(out_of(w), e);
}

static void json_instant(struct sp_export_walk *w, const struct sp_export_ev *e)
{
    ev_open(w, "i", e->track, e->t);
    fputs(",\"s\":\"t\"", out_of(w));
    ev_close(out_of(w), e);
}

static void json_counter(struct sp_export_walk *w, int64_t t, const char *name, double cores)
{
    ev_open(w, "C", -2, t); /* tid 0: the process's */
    kv_str(out_of(w), "name", name);
    fprintf(out_of(w), ",\"args\":{\"cores\":%.3f}}", cores);
}

/* An op's two slices, named with its communicator and sequence number,
 * each with the recorded op's facts; then its arrows. */
static void json_op(struct sp_export_walk *w, const struct sp_export_op *x)
{
    const struct sp_coll_call *c = x->c;
    char name[160], slice[192], comm[SP_EXPORT_COMM_LEN];
    sp_export_op_name(c, name, sizeof name);
    snprintf(comm, sizeof comm, "%016" PRIx64, c->comm);
    struct sp_export_args a = {.n = 0};
    if (!x->whatif) {
        sp_export_arg_str(&a, A_OP, sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), 0);
        sp_export_arg_uint(&a, A_BYTES, c->bytes, 0);
        sp_export_arg_str(&a, A_COMM, comm, 0);
        sp_export_arg_uint(&a, A_SEQ, c->seq, 0);
        sp_export_arg_int(&a, A_INSTANCE, c->inst);
        sp_export_arg_int(&a, A_LAST_RANK, x->last_rank);
        sp_export_arg_double(&a, A_WAIT_MS, (double)x->wait / NS_PER_MS, 4);
        sp_export_arg_double(&a, A_OP_MS, (double)x->dur / NS_PER_MS, 4);
        sp_export_arg_str(&a, A_TIMING, sp_export_timing(c), 0);
    }
    for (int half = 0; half < 2; half++) {
        snprintf(slice, sizeof slice, "%s %s", half ? "transfer" : "wait", name);
        struct sp_export_ev e = {x->track, half ? x->t + x->wait : x->t, half ? x->dur - x->wait : x->wait,
                                 slice, half ? C_TRANSFER : C_WAIT, a.a, a.n};
        json_begin(w, &e);
    }
    FILE *out = out_of(w);
    for (int i = 0; i < x->nflows; i++) {
        const struct sp_export_flow *f = &x->flows[i];
        ev_open(w, f->start ? "s" : "f", x->track, f->at);
        kv_str(out, "name", name);
        fprintf(out, ",\"cat\":\"late_rank\",\"id\":%" PRIu64 "%s}", f->id, f->start ? "" : ",\"bp\":\"e\"");
    }
}

static void json_start(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    FILE *out = out_of(w);
    fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{", out);
    fputs("\"generator\":\"scaleprof export\",\"version\":", out);
    put_str(out, SCALEPROF_VERSION);
    kv_str(out, "dir", m->dir);
    fprintf(out,
            ",\"ranks\":%d,\"steps\":%d,\"step_number0\":%d,\"origin_ns\":%" PRId64
            ",\"host_only\":%s},\n\"traceEvents\":[",
            m->nranks, m->steps_total, m->step_number0, w->origin, w->o->host_only ? "true" : "false");
}

static void json_finish(struct sp_export_walk *w)
{
    fputs("\n]}\n", out_of(w));
}

/* (in struct sp_export_enc's order; the JSON numbers tracks through the
 * rank and draws everything in full) */
static const struct sp_export_enc json_enc = {json_start, json_finish, json_group, json_track,
                                              json_rename, json_begin, json_end, json_instant,
                                              json_counter, json_op, .max_tracks = INT_MAX};

int sp_export_trace(const struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                    struct sp_export_stats *st)
{
    struct writer x = {out, 0};
    struct sp_export_stats s;
    int rc = sp_export_walk(m, o, &json_enc, &x, &s);
    if (rc == 0 && ferror(out)) rc = -1;
    if (st)
        *st = s;
    else
        sp_warn_list_free(&s.warnings);
    return rc;
}

double sp_export_estimate(const struct sp_model *m, const struct sp_export_opts *o)
{
    return sp_export_bytes(m, o, BYTES_PER_EVENT, BYTES_PER_STEP, 1);
}
