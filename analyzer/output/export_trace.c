/*
 * export_trace.c - `scaleprof export`'s timeline: Chrome Trace Event JSON
 * (the "JSON Object Format" both ui.perfetto.dev and chrome://tracing
 * read; docs/export.md lists the facts of the format relied on).
 *
 * Layout: one process group per rank ("rank R (host, pid)"), ordered by
 * rank, and with --whatif a second group beside each ("rank R what-if:
 * CAUSE").  Inside a rank's group the tracks (threads of the JSON format,
 * numbered here from 1) are, top to bottom: the steps, one per NCCL
 * communicator, one per GPU stream, the host threads, their file I/O and
 * waits, then the same for every helper process (loader workers)
 * attached to the rank.  Each NCCL op is two slices, `wait` (until the
 * last peer arrived) and `transfer`, from the model's matched calls; a
 * flow arrow goes from the last-arriving rank's transfer to every other
 * participant's, so the late rank is one click away.  Findings are
 * instant events on the steps track at the first step they concern.
 * A trace set with no GPU record (host_only) keeps its host events and
 * steps, without the breakdown or findings, which are shares of GPU time.
 *
 * Streaming: the model holds what it always holds (calls, steps, nodes);
 * the timeline is written while each file of a rank is fed through
 * sp_trace_feed, never gathered.  Events are written in the order the
 * reader gives them; the format does not ask for sorted events (both
 * viewers sort on load).  Times are the analyzer's common axis
 * (sp_model_global), relative to the earliest event of the set, in
 * microseconds with three decimals (exact ns).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "export_trace.h"
#include "json.h"
#include "text.h"
#include "model_int.h"
#include "traceset.h"
#include "units.h"

#define WHATIF_PID_BASE 1000000 /* what-if groups: pids apart from the ranks' */
#define TID_STEPS 1
#define BYTES_PER_EVENT 170.0 /* a written trace event, measured on the sim's traces */
#define BYTES_PER_STEP 400.0

const int sp_export_kind_sort[TRK_KINDS] = {0, 100, 1000, 10000, 20000, 30000};

struct track {
    uint8_t kind;
    int32_t file;
    uint64_t id;
    int tid;
};

struct writer {
    FILE *out;
    struct sp_model *m;
    const struct sp_export_opts *o;
    struct sp_export_stats st;
    int64_t origin; /* global ns of ts 0 */
    int nev;        /* events written (for commas) */
    /* the rank being written */
    int ri, pid;
    int64_t w0, w1; /* window, the rank's local ns */
    struct track *tracks;
    int ntracks, cap;
    struct sp_export_file f;  /* the file being fed */
    struct sp_export_colls c; /* collectives: participants of each instance */
    /* what-if: replayed arrival and end of every rank's nodes */
    int64_t **wa, **we;
};

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

/* Opens an event: {"ph":PH,"pid":P,"tid":T,"ts":T (global ns) */
static void ev_open(struct writer *w, const char *ph, int pid, int tid, int64_t global)
{
    fputs(w->nev++ ? ",\n" : "\n", w->out);
    fprintf(w->out, "{\"ph\":\"%s\",\"pid\":%d,\"tid\":%d,\"ts\":", ph, pid, tid);
    put_us(w->out, global - w->origin);
    w->st.slices++;
}

static void kv_str(FILE *out, const char *key, const char *v)
{
    fprintf(out, ",\"%s\":", key);
    put_str(out, v);
}

static void kv_dur(FILE *out, int64_t ns)
{
    fputs(",\"dur\":", out);
    put_us(out, ns > 0 ? ns : 0);
}

static void meta(struct writer *w, int pid, int tid, const char *what, const char *name, int sort)
{
    fputs(w->nev++ ? ",\n" : "\n", w->out);
    fprintf(w->out,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_name\",\"args\":{\"name\":", pid,
            tid, what);
    put_str(w->out, name);
    fprintf(w->out,
            "}},\n{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"%s_sort_index\",\"args\":{\"sort_"
            "index\":%d}}",
            pid, tid, what, sort);
}

const char *sp_export_enum(int type, const char *field, uint64_t v, const char *dflt)
{
    const char *n = sp_enum_name(type, field, v);
    return n ? n : dflt;
}


/* ---- tracks ---- */

static int track(struct writer *w, int kind, int32_t file, uint64_t id, const char *name, int sort)
{
    for (int i = w->ntracks - 1; i >= 0; i--) {
        const struct track *t = &w->tracks[i];
        if (t->kind == kind && t->file == file && t->id == id) return t->tid;
    }
    if (w->ntracks == w->cap) {
        int cap = w->cap ? 2 * w->cap : 32;
        void *p = realloc(w->tracks, (size_t)cap * sizeof *w->tracks);
        if (!p) return TID_STEPS; /* out of memory: the event joins the steps track */
        w->tracks = p;
        w->cap = cap;
    }
    int tid = w->ntracks + 2; /* 1 is the steps track */
    w->tracks[w->ntracks++] = (struct track){(uint8_t)kind, file, id, tid};
    meta(w, w->pid, tid, "thread", name, sort);
    return tid;
}

/* The prefix of a file's track names: "" for the rank's own process,
 * "loader pid P: " for a helper. */
static void file_prefix(const struct sp_model *m, int fi, char *out, size_t len)
{
    const struct sp_file_rec *f = &m->frecs[fi];
    if (f->helper)
        snprintf(out, len, "loader pid %d: ", (int)f->pid);
    else
        out[0] = 0;
}

void sp_export_file_track(const struct sp_model *m, int fi, int fsort, int kind, int64_t device,
                          uint64_t id, struct sp_export_track *t)
{
    char pre[64];
    file_prefix(m, fi, pre, sizeof pre);
    t->kind = kind;
    t->file = fi;
    t->id = id;
    t->sort = fsort + sp_export_kind_sort[kind] + (int)(id % 1000);
    if (kind == TRK_STREAM) {
        snprintf(t->name, sizeof t->name, "%sGPU %" PRId64 " stream %" PRIu64, pre, device, id);
        t->id = ((uint64_t)(device & 0xffff) << 48) ^ id;
    } else if (kind == TRK_IO) {
        snprintf(t->name, sizeof t->name, "%sfile I/O and waits, thread %" PRIu64, pre, id);
    } else {
        snprintf(t->name, sizeof t->name, "%sthread %" PRIu64, pre, id);
    }
}

void sp_export_thread_name(const struct sp_model *m, int fi, const struct sp_reader *r,
                           const struct sp_event *ev, char *out, size_t len)
{
    char pre[64];
    file_prefix(m, fi, pre, sizeof pre);
    snprintf(out, len, "%s%s (thread %u)", pre, sp_reader_string(r, ev->thread.name), ev->tid);
}

/* The track of file w->f.fi that sp_export_file_track names. */
static int file_track(struct writer *w, int kind, int64_t device, uint64_t id)
{
    struct sp_export_track t;
    sp_export_file_track(w->m, w->f.fi, w->f.fsort, kind, device, id, &t);
    return track(w, t.kind, t.file, t.id, t.name, t.sort);
}

static int comm_track(struct writer *w, uint64_t comm, int pid)
{
    char name[64];
    snprintf(name, sizeof name, "NCCL comm %016" PRIx64, comm);
    int save = w->pid;
    w->pid = pid;
    /* the what-if group's tracks are its own (file -2), named in its pid */
    int t = track(w, TRK_COMM, pid == save ? -1 : -2, comm, name, sp_export_kind_sort[TRK_COMM] + w->ntracks);
    w->pid = save;
    return t;
}

/* ---- the window ---- */

static int64_t local_to_global(const struct writer *w, int64_t t)
{
    return sp_model_global(w->m, &w->m->ranks[w->ri], t);
}

static int in_window(const struct writer *w, int64_t t, int64_t dur)
{
    return sp_export_in_window(w->w0, w->w1, t, dur);
}

void sp_export_step_range(const struct sp_model *m, const struct sp_rank *r,
                          const struct sp_export_opts *o, int *k0, int *k1)
{
    *k0 = 0;
    *k1 = r->nsteps - 1;
    if (o->step_first >= 0) {
        int a = o->step_first - m->step_number0, b = o->step_last - m->step_number0;
        *k0 = a > 0 ? a : 0;
        *k1 = b < r->nsteps - 1 ? b : r->nsteps - 1;
    }
}

void sp_export_window(const struct sp_model *m, int ri, const struct sp_export_opts *o, int64_t *w0,
                      int64_t *w1)
{
    const struct sp_rank *r = &m->ranks[ri];
    int k0, k1;
    *w0 = INT64_MIN;
    *w1 = INT64_MAX;
    if (o->step_first < 0 || !r->nsteps) return;
    sp_export_step_range(m, r, o, &k0, &k1);
    if (k0 > k1) {
        *w0 = INT64_MAX; /* none of this rank's steps is in the window */
        *w1 = INT64_MIN;
        return;
    }
    *w0 = r->steps[k0].start;
    *w1 = r->steps[k1].end;
}

int sp_export_rank_wanted(const struct sp_model *m, const struct sp_export_opts *o, int ri)
{
    if (!o->ranks) return 1;
    for (size_t i = 0; i < o->nranks; i++)
        if (o->ranks[i] == m->ranks[ri].rank) return 1;
    return 0;
}

/* ---- events of the traces ---- */

void sp_export_gpu_name(const struct sp_reader *r, const struct sp_ev_gpu *g, char *out, size_t len)
{
    char b[32];
    if (g->kind == SP_GPU_MEMCPY || g->kind == SP_GPU_MEMSET) {
        sp_text_bytes(g->bytes, b, sizeof b);
        snprintf(
            out, len, "%s %s %s", g->kind == SP_GPU_MEMCPY ? "memcpy" : "memset",
            g->kind == SP_GPU_MEMCPY ? sp_export_enum(SP_EV_GPU, "copy_kind", g->copy_kind, "") : "", b);
        return;
    }
    const char *n = sp_reader_string(r, g->name);
    snprintf(out, len, "%s", n[0] ? n : "kernel");
}

static int on_gpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_gpu *g = &ev->gpu;
    if (!in_window(w, (int64_t)ev->t, (int64_t)g->dur)) return 0;
    char name[1024];
    sp_export_gpu_name(r, g, name, sizeof name);
    int tid = file_track(w, TRK_STREAM, (int64_t)g->device, g->stream);
    ev_open(w, "X", w->pid, tid, local_to_global(w, (int64_t)ev->t));
    kv_dur(w->out, (int64_t)g->dur);
    kv_str(w->out, "name", name);
    kv_str(w->out, "cat", sp_export_enum(SP_EV_GPU, "kind", g->kind, "gpu"));
    fprintf(w->out, ",\"args\":{\"correlation\":%" PRIu64 ",\"bytes\":%" PRIu64 "}}",
            g->correlation, g->bytes);
    w->st.events++;
    return 0;
}

/* Opens the "X" event of a host call, its duration and name written;
 * 0 (nothing written) when it is outside the window. */
static int slice_open(struct writer *w, const struct sp_event *ev)
{
    struct sp_export_slice s;
    if (!sp_export_host_slice(ev, w->w0, w->w1, &s)) return 0;
    ev_open(w, "X", w->pid, file_track(w, s.kind, 0, ev->tid), local_to_global(w, s.t));
    kv_dur(w->out, s.dur);
    kv_str(w->out, "name", s.name);
    return 1;
}

static int on_cuda(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_cuda *c = &ev->cuda;
    if (!slice_open(w, ev)) return 0;
    fprintf(w->out, ",\"cat\":\"cuda\",\"args\":{\"stream\":%" PRIu64 ",\"correlation\":%" PRIu64,
            c->stream, c->correlation);
    const char *k = sp_reader_string(r, c->name), *stack = sp_reader_string(r, c->stack);
    if (k[0]) kv_str(w->out, "kernel", k);
    if (stack[0]) kv_str(w->out, "stack", stack);
    fputs("}}", w->out);
    w->st.events++;
    return 0;
}

static int on_nccl(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    const struct sp_ev_nccl *n = &ev->nccl;
    if (!slice_open(w, ev)) return 0;
    fprintf(w->out,
            ",\"cat\":\"nccl_call\",\"args\":{\"comm\":\"%016" PRIx64 "\",\"seq\":%" PRIu64
            ",\"bytes\":%" PRIu64 "}}",
            n->comm, n->seq, n->bytes);
    w->st.events++;
    return 0;
}

void sp_export_io_name(const struct sp_ev_io *io, char *out, size_t len)
{
    const char *op = sp_export_enum(SP_EV_IO, "op", io->op, "io");
    if (io->ret > 0 && (sp_io_op_is_read(io->op) || sp_io_op_is_write(io->op))) { /* the bytes it moved */
        char b[32];
        sp_text_bytes((uint64_t)io->ret, b, sizeof b);
        snprintf(out, len, "%s %s", op, b);
    } else {
        snprintf(out, len, "%s", op);
    }
}

static int on_io(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_io *io = &ev->io;
    if (!slice_open(w, ev)) return 0;
    const char *op = sp_export_enum(SP_EV_IO, "op", io->op, "io");
    fputs(",\"cat\":\"io\",\"args\":{", w->out);
    fprintf(w->out, "\"op\":\"%s\",\"fd\":%" PRId64 ",\"ret\":%" PRId64 ",\"bytes\":%" PRIu64, op,
            (int64_t)io->fd, (int64_t)io->ret, io->bytes);
    kv_str(w->out, "fd_kind", sp_export_enum(SP_EV_IO, "fd_kind", io->fd_kind, "unknown"));
    kv_str(w->out, "path", sp_reader_string(r, io->path));
    fputs("}}", w->out);
    w->st.events++;
    return 0;
}

static int on_wait(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    const struct sp_ev_wait *x = &ev->wait;
    if (!slice_open(w, ev)) return 0;
    fprintf(w->out, ",\"cat\":\"wait\",\"args\":{\"nfds\":%" PRIu64 ",\"ret\":%" PRId64, x->nfds,
            (int64_t)x->ret);
    kv_str(w->out, "fd_kind", sp_export_enum(SP_EV_WAIT, "fd_kind", x->fd_kind, "unknown"));
    fputs("}}", w->out);
    w->st.events++;
    return 0;
}

static int on_marker(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    const struct sp_ev_marker *k = &ev->marker;
    int64_t dur = k->kind == SP_MARK_RANGE ? (int64_t)k->dur : 0;
    if (!in_window(w, (int64_t)ev->t, dur)) return 0;
    static const char *const ph[] = {
        [SP_MARK_PUSH] = "B", [SP_MARK_POP] = "E", [SP_MARK_INSTANT] = "i", [SP_MARK_RANGE] = "X"};
    const char *p = k->kind >= SP_MARK_PUSH && k->kind <= SP_MARK_RANGE ? ph[k->kind] : "i";
    ev_open(w, p, w->pid, file_track(w, TRK_THREAD, 0, ev->tid), local_to_global(w, (int64_t)ev->t));
    if (p[0] == 'X') kv_dur(w->out, dur);
    if (p[0] == 'i') fputs(",\"s\":\"t\"", w->out);
    kv_str(w->out, "name", sp_reader_string(r, k->name));
    fputs(",\"cat\":\"marker\"}", w->out);
    w->st.events++;
    return 0;
}

/* A process's CPU use between two samples, in cores: a counter track. */
static int on_cpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct writer *w = ctx;
    char name[64];
    double cores;
    if (!sp_export_cpu_cores(w->m, &w->f, w->w0, w->w1, ev, &cores, name, sizeof name))
        return 0;
    ev_open(w, "C", w->pid, 0, local_to_global(w, (int64_t)ev->t));
    kv_str(w->out, "name", name);
    fprintf(w->out, ",\"args\":{\"cores\":%.3f}}", cores);
    w->st.events++;
    return 0;
}

void sp_export_feed(struct sp_model *m, const struct sp_rank *r, const struct sp_pass *pass,
                    void *ctx, struct sp_export_file *cur)
{
    int helpers = 0;
    for (int fi = 0; fi < m->nfrecs; fi++) {
        const struct sp_file_rec *f = &m->frecs[fi];
        if (!f->ok || f->rank != r->rank) continue;
        cur->fi = fi;
        cur->fsort = f->helper ? HELPER_SORT * (++helpers) : 0;
        cur->cpu_t = 0;
        cur->cpu_ns = 0;
        int err = 0;
        if (sp_trace_feed(f->path, pass, ctx, &err) < 0 && err)
            sp_model_warn(m, "%s: could not be read again for the timeline (%s)", f->path,
                          sp_strerror(err));
    }
}

int sp_export_host_slice(const struct sp_event *ev, int64_t w0, int64_t w1,
                         struct sp_export_slice *s)
{
    s->t = (int64_t)ev->t;
    s->kind = TRK_THREAD;
    switch (ev->type) {
    case SP_EV_CUDA:
        s->dur = (int64_t)ev->cuda.dur;
        snprintf(s->name, sizeof s->name, "cuda %s",
                 sp_export_enum(SP_EV_CUDA, "api", ev->cuda.api, "call"));
        break;
    case SP_EV_NCCL:
        s->dur = (int64_t)ev->nccl.dur;
        snprintf(s->name, sizeof s->name, "nccl %s",
                 sp_export_enum(SP_EV_NCCL, "op", ev->nccl.op, "call"));
        break;
    case SP_EV_IO:
        s->dur = (int64_t)ev->io.dur;
        s->kind = TRK_IO;
        sp_export_io_name(&ev->io, s->name, sizeof s->name);
        break;
    default: /* SP_EV_WAIT */
        s->dur = (int64_t)ev->wait.dur;
        s->kind = TRK_IO;
        snprintf(s->name, sizeof s->name, "wait %s",
                 sp_export_enum(SP_EV_WAIT, "op", ev->wait.op, "wait"));
    }
    return sp_export_in_window(w0, w1, s->t, s->dur);
}

int sp_export_cpu_cores(const struct sp_model *m, struct sp_export_file *f, int64_t w0, int64_t w1,
                        const struct sp_event *ev, double *cores, char *name, size_t len)
{
    uint64_t ns = ev->cpu.user_ns + ev->cpu.sys_ns;
    int64_t t = (int64_t)ev->t;
    int ok = f->cpu_t && t > f->cpu_t && ns >= f->cpu_ns && sp_export_in_window(w0, w1, t, 0);
    if (ok) {
        const struct sp_file_rec *rec = &m->frecs[f->fi];
        snprintf(name, len, rec->helper ? "loader pid %d CPU (cores)" : "pid %d CPU (cores)",
                 (int)rec->pid);
        *cores = (double)(ns - f->cpu_ns) / (double)(t - f->cpu_t);
    }
    f->cpu_t = t;
    f->cpu_ns = ns;
    return ok;
}

void sp_export_proc_name(const struct sp_reader *r, const struct sp_event *ev, char *out,
                         size_t len)
{
    const char *path = sp_reader_string(r, ev->proc.path);
    snprintf(out, len, "%s %" PRId64 "%s%s",
             sp_export_enum(SP_EV_PROC, "kind", ev->proc.kind, "proc"),
             ev->proc.kind == SP_PROC_EXIT || ev->proc.kind == SP_PROC_SIGNAL
                 ? (int64_t)ev->proc.status
                 : (int64_t)ev->proc.pid,
             path[0] ? " " : "", path);
}

static int on_proc(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    if (!in_window(w, (int64_t)ev->t, 0)) return 0;
    char name[1200];
    sp_export_proc_name(r, ev, name, sizeof name);
    ev_open(w, "i", w->pid, file_track(w, TRK_THREAD, 0, ev->tid), local_to_global(w, (int64_t)ev->t));
    fputs(",\"s\":\"t\"", w->out);
    kv_str(w->out, "name", name);
    fputs(",\"cat\":\"process\"}", w->out);
    w->st.events++;
    return 0;
}

/* A thread's name: the host thread track is named again (the last name
 * given wins in both viewers). */
static int on_thread(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct writer *w = ctx;
    char name[300];
    int tid = file_track(w, TRK_THREAD, 0, ev->tid);
    sp_export_thread_name(w->m, w->f.fi, r, ev, name, sizeof name);
    fputs(",\n", w->out);
    fprintf(w->out,
            "{\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"name\":\"thread_name\",\"args\":{\"name\":",
            w->pid, tid);
    put_str(w->out, name);
    fputs("}}", w->out);
    return 0;
}

static const struct sp_pass export_pass = SP_EXPORT_PASS;

/* ---- what the model knows: steps, findings, collectives ---- */

int sp_export_finding_has_rank(const struct sp_finding *f, int rank)
{
    for (int i = 0; i < f->nranks; i++)
        if (f->ranks[i] == rank) return 1;
    return 0;
}

size_t sp_export_step_findings(const struct sp_model *m, const struct sp_rank *r, int num, char *buf,
                               size_t len)
{
    size_t used = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        if (num < f->step_first || num > f->step_last || !sp_export_finding_has_rank(f, r->rank))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", sp_cause_info(f->cause)->name);
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
    }
    return used;
}

void sp_export_finding_name(const struct sp_finding *f, char *buf, size_t len)
{
    snprintf(buf, len, "finding: %s (saves %.0f%%)", sp_cause_info(f->cause)->name, 100 * f->gain);
}

int sp_export_finding_step(const struct sp_model *m, const struct sp_rank *r,
                           const struct sp_finding *f, int k0, int k1)
{
    int k = f->step_first - m->step_number0;
    if (!sp_export_finding_has_rank(f, r->rank) || k < k0 || k > k1 || k < 0 || k >= r->nsteps)
        return -1;
    return k;
}

static void write_steps(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    int k0, k1;
    sp_export_step_range(m, r, w->o, &k0, &k1);
    for (int k = k0; k <= k1; k++) {
        int num = k + m->step_number0;
        char name[64];
        snprintf(name, sizeof name, "step %d", num);
        ev_open(w, "X", w->pid, TID_STEPS, local_to_global(w, r->steps[k].start));
        kv_dur(w->out, r->steps[k].end - r->steps[k].start);
        kv_str(w->out, "name", name);
        fprintf(w->out, ",\"cat\":\"step\",\"args\":{\"step\":%d,\"step_ms\":%.3f,\"analyzed\":%s",
                num, (double)(r->steps[k].end - r->steps[k].start) / NS_PER_MS,
                k >= m->step_lo && k < m->step_hi && r->cat ? "true" : "false");
        if (k >= m->step_lo && k < m->step_hi && r->cat && !w->o->host_only)
            for (int c = 0; c < SP_CAT_N; c++)
                fprintf(w->out, ",\"%s_ms\":%.3f", sp_model_cat_name(c), r->cat[k][c] / NS_PER_MS);
        char causes[512];
        if (!w->o->host_only && sp_export_step_findings(m, r, num, causes, sizeof causes))
            fprintf(w->out, ",\"findings\":\"%s\"", causes);
        fputs("}}", w->out);
    }
    /* findings: an instant at the first step each concerns, on each rank it names */
    for (int i = 0; i < m->nfindings && !w->o->host_only; i++) {
        const struct sp_finding *f = &m->findings[i];
        int k = sp_export_finding_step(m, r, f, k0, k1);
        if (k < 0) continue;
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        char name[128];
        sp_export_finding_name(f, name, sizeof name);
        ev_open(w, "i", w->pid, TID_STEPS, local_to_global(w, r->steps[k].start));
        fputs(",\"s\":\"t\"", w->out);
        kv_str(w->out, "name", name);
        fputs(",\"cat\":\"finding\",\"args\":{", w->out);
        fprintf(w->out,
                "\"cause\":\"%s\",\"severity\":\"%s\",\"gain\":%.4f,\"step_ms_if_fixed\":%.3f,"
                "\"steps\":\"%d-%d\"",
                ci->name, sp_model_severity_name(f->severity), f->gain, f->step_ms_if_fixed,
                f->step_first, f->step_last);
        kv_str(w->out, "evidence", f->evidence);
        kv_str(w->out, "first_try", sp_finding_first_try(f));
        fputs("}}", w->out);
    }
}

static void gather_instance(struct sp_model *m, const struct sp_coll_ref *refs, size_t n, void *arg)
{
    struct sp_export_colls *w = arg;
    int32_t in = m->ranks[refs[0].r].calls[refs[0].c].inst;
    if (in < 0 || (size_t)in >= w->ninsts) return;
    struct sp_export_inst *ii = &w->insts[in];
    ii->first = (int32_t)w->nparts;
    ii->n = (int32_t)n;
    ii->last = 0;
    int64_t best = INT64_MIN;
    for (size_t i = 0; i < n; i++) {
        w->parts[w->nparts + i] = refs[i];
        const struct sp_rank *r = &m->ranks[refs[i].r];
        int64_t a = sp_model_global(m, r, r->calls[refs[i].c].start);
        if (a > best) {
            best = a;
            ii->last = (int32_t)i;
        }
    }
    w->nparts += n;
}

int sp_export_colls_gather(struct sp_model *m, struct sp_export_colls *w)
{
    size_t total = 0;
    for (int i = 0; i < m->nranks; i++)
        total += m->ranks[i].ncalls;
    w->ninsts = m->coll_instances;
    w->insts = calloc(w->ninsts + 1, sizeof *w->insts);
    w->parts = malloc((total + 1) * sizeof *w->parts);
    if (!w->insts || !w->parts) return -1;
    sp_model_each_instance(m, gather_instance, w);
    return 0;
}

void sp_export_colls_free(struct sp_export_colls *c)
{
    free(c->insts);
    free(c->parts);
    c->insts = NULL;
    c->parts = NULL;
}

int sp_export_last_ri(const struct sp_export_colls *c, const struct sp_coll_call *call)
{
    if (call->inst < 0 || (size_t)call->inst >= c->ninsts || c->insts[call->inst].n <= 0)
        return -1;
    const struct sp_export_inst *ii = &c->insts[call->inst];
    return c->parts[ii->first + ii->last].r;
}

static int call_in_window(const struct writer *w, int ri, const struct sp_coll_call *c)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[ri];
    if (!sp_export_rank_wanted(m, w->o, ri)) return 0;
    if (w->o->step_first < 0 || !r->nsteps) return 1;
    int k0, k1;
    sp_export_step_range(m, r, w->o, &k0, &k1);
    return k0 <= k1 && c->start < r->steps[k1].end &&
           (c->start >= r->steps[k0].start || c->end > r->steps[k0].start);
}

void sp_export_op_name(const struct sp_coll_call *c, char *out, size_t len)
{
    char b[32];
    sp_text_bytes(c->bytes, b, sizeof b);
    snprintf(out, len, "%s %s comm %016" PRIx64 " #%" PRIu64,
             sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), b, c->comm,
             sp_op_is_p2p(c->op) ? (uint64_t)(c->key & ((1ULL << 21) - 1)) : c->seq);
}

/* A flow's end on participant p of instance in: at the middle of its
 * transfer slice, which the arrow binds to (bp "e": the enclosing slice). */
static int64_t flow_point(const struct sp_model *m, const struct sp_coll_ref *p)
{
    const struct sp_rank *r = &m->ranks[p->r];
    const struct sp_coll_call *c = &r->calls[p->c];
    int64_t t0 = c->start + c->wait;
    return sp_model_global(m, r, t0 + (c->end - t0) / 2);
}

static void write_flows(struct writer *w, const struct sp_coll_call *c, int tid, const char *name)
{
    const struct sp_model *m = w->m;
    if (c->inst < 0 || (size_t)c->inst >= w->c.ninsts) return;
    const struct sp_export_inst *ii = &w->c.insts[c->inst];
    if (ii->n < 2) return;
    const struct sp_coll_ref *last = &w->c.parts[ii->first + ii->last];
    for (int32_t p = 0; p < ii->n; p++) {
        const struct sp_coll_ref *x = &w->c.parts[ii->first + p];
        if (p == ii->last) continue;
        const struct sp_coll_call *xc = &m->ranks[x->r].calls[x->c];
        const struct sp_coll_call *lc = &m->ranks[last->r].calls[last->c];
        if (!call_in_window(w, x->r, xc) || !call_in_window(w, last->r, lc)) continue;
        int start = last->r == w->ri, finish = x->r == w->ri;
        if (!start && !finish) continue;
        uint64_t id = (uint64_t)c->inst * (uint64_t)m->nranks + (uint64_t)x->r + 1;
        ev_open(w, start ? "s" : "f", w->pid, tid, flow_point(m, start ? last : x));
        kv_str(w->out, "name", name);
        fprintf(w->out, ",\"cat\":\"late_rank\",\"id\":%" PRIu64 "%s}", id,
                start ? "" : ",\"bp\":\"e\"");
        w->st.flows += start;
    }
}

static void write_collectives(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    for (size_t i = 0; i < r->ncalls; i++) {
        const struct sp_coll_call *c = &r->calls[i];
        if (!in_window(w, c->start, c->end - c->start)) continue;
        char name[160], slice[192];
        sp_export_op_name(c, name, sizeof name);
        int tid = comm_track(w, c->comm, w->pid);
        int64_t wait = c->wait < c->end - c->start ? c->wait : c->end - c->start;
        wait = wait > 0 ? wait : 0;
        int last_ri = sp_export_last_ri(&w->c, c);
        int last_rank = last_ri >= 0 ? m->ranks[last_ri].rank : -1;
        for (int half = 0; half < 2; half++) {
            snprintf(slice, sizeof slice, "%s %s", half ? "transfer" : "wait", name);
            ev_open(w, "X", w->pid, tid, local_to_global(w, half ? c->start + wait : c->start));
            kv_dur(w->out, half ? c->end - c->start - wait : wait);
            kv_str(w->out, "name", slice);
            fprintf(w->out,
                    ",\"cat\":\"%s\",\"args\":{\"op\":\"%s\",\"bytes\":%" PRIu64
                    ",\"comm\":\"%016" PRIx64 "\",\"seq\":%" PRIu64
                    ",\"instance\":%d,\"last_rank\":%d,\"wait_ms\":%.4f,"
                    "\"op_ms\":%.4f,\"timing\":\"%s\"}}",
                    half ? "nccl_transfer" : "nccl_wait", sp_export_enum(SP_EV_NCCL, "op", c->op, "op"),
                    c->bytes, c->comm, c->seq, (int)c->inst, last_rank, (double)wait / NS_PER_MS,
                    (double)(c->end - c->start) / NS_PER_MS, sp_export_timing(c));
        }
        write_flows(w, c, tid, name);
    }
}

/* ---- the what-if group ---- */

const char *sp_export_timing(const struct sp_coll_call *c)
{
    return c->timing == SP_TIMING_GPU        ? "gpu"
           : c->timing == SP_TIMING_FALLBACK ? "cuda_events"
                                             : "host";
}

struct replay_keep {
    int64_t **wa, **we;
};

static void keep_node(void *arg, int rank, size_t node, int64_t a, int64_t e)
{
    struct replay_keep *k = arg;
    if (k->wa[rank]) {
        k->wa[rank][node] = a;
        k->we[rank][node] = e;
    }
}

void sp_export_replay_free(const struct sp_model *m, int64_t **wa, int64_t **we)
{
    for (int i = 0; wa && we && i < m->nranks; i++) {
        free(wa[i]);
        free(we[i]);
    }
    free(wa);
    free(we);
}

int sp_export_replay(struct sp_model *m, int cause, int64_t ***wa_out, int64_t ***we_out)
{
    struct replay_keep k = {calloc((size_t)m->nranks + 1, sizeof *k.wa),
                            calloc((size_t)m->nranks + 1, sizeof *k.we)};
    int rc = k.wa && k.we ? 0 : -1;
    for (int i = 0; rc == 0 && i < m->nranks; i++) {
        size_t n = m->ranks[i].nnodes + 1;
        k.wa[i] = malloc(n * sizeof **k.wa);
        k.we[i] = malloc(n * sizeof **k.we);
        if (!k.wa[i] || !k.we[i]) {
            rc = -1;
            break;
        }
        for (size_t j = 0; j < n; j++)
            k.wa[i][j] = k.we[i][j] = INT64_MIN;
    }
    /* the counterfactual as the findings priced it: the model kept what
     * the replay chose (the straggler set, the stage), so it is not run again */
    if (rc == 0) rc = m->replay ? sp_model_replay_nodes(m, m->replay, cause, keep_node, &k) : -1;
    if (rc < 0) {
        sp_export_replay_free(m, k.wa, k.we);
        k.wa = k.we = NULL;
    }
    *wa_out = k.wa;
    *we_out = k.we;
    return rc;
}

int64_t sp_export_replayed_last(const struct sp_model *m, const struct sp_export_colls *c,
                                int64_t **wa, const struct sp_coll_call *call, int64_t own)
{
    if (call->inst < 0 || (size_t)call->inst >= c->ninsts) return own;
    const struct sp_export_inst *ii = &c->insts[call->inst];
    int64_t last = own;
    for (int32_t p = 0; p < ii->n; p++) {
        const struct sp_coll_ref *x = &c->parts[ii->first + p];
        const struct sp_coll_call *xc = &m->ranks[x->r].calls[x->c];
        if (xc->node >= 0 && wa[x->r][xc->node] > last) last = wa[x->r][xc->node];
    }
    return last;
}

static void write_whatif(struct writer *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    int pid = WHATIF_PID_BASE + w->pid;
    char name[300];
    const char *cause = w->o->whatif == SP_CAUSE_N ? "none (replayed as recorded)"
                                                   : sp_cause_info(w->o->whatif)->name;
    snprintf(name, sizeof name, "rank %d what-if: %s", r->rank, cause);
    meta(w, pid, 0, "process", name, 2 * w->ri + 1);
    meta(w, pid, TID_STEPS, "thread", "steps (replayed)", 0);
    int64_t prev = INT64_MIN;
    for (size_t j = 0; j < r->nnodes; j++) {
        const struct sp_rnode *nd = &r->nodes[j];
        int64_t a = w->wa[w->ri][j], e = w->we[w->ri][j];
        if (a == INT64_MIN) break; /* the replay stopped this rank here */
        if (!nd->ncalls) {
            int num = m->step_lo + nd->step + m->step_number0;
            /* a step starts where the one before ended, the first where it was recorded */
            int64_t s = prev;
            if (prev == INT64_MIN)
                s = r->nsteps > m->step_lo ? sp_model_global(m, r, r->steps[m->step_lo].start) : a;
            char sname[64];
            snprintf(sname, sizeof sname, "step %d", num);
            ev_open(w, "X", pid, TID_STEPS, s);
            kv_dur(w->out, a - s);
            kv_str(w->out, "name", sname);
            fprintf(w->out, ",\"cat\":\"step\",\"args\":{\"step\":%d,\"step_ms\":%.3f}}", num,
                    (double)(a - s) / NS_PER_MS);
            prev = a;
            continue;
        }
        for (uint32_t k = 0; k < nd->ncalls; k++) {
            const struct sp_coll_call *c = &r->calls[nd->call + k];
            char oname[160], slice[192];
            sp_export_op_name(c, oname, sizeof oname);
            int tid = comm_track(w, c->comm, pid);
            int64_t last = sp_export_replayed_last(m, &w->c, w->wa, c, a);
            last = last < e ? last : e;
            for (int half = 0; half < 2; half++) {
                snprintf(slice, sizeof slice, "%s %s", half ? "transfer" : "wait", oname);
                ev_open(w, "X", pid, tid, half ? last : a);
                kv_dur(w->out, half ? e - last : last - a);
                kv_str(w->out, "name", slice);
                fprintf(w->out, ",\"cat\":\"%s\"}", half ? "nccl_transfer" : "nccl_wait");
            }
        }
    }
}

/* ---- the whole ---- */

int64_t sp_export_origin(const struct sp_model *m)
{
    int64_t o = INT64_MAX;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (r->events && sp_model_global(m, r, r->first_t) < o)
            o = sp_model_global(m, r, r->first_t);
    }
    return o == INT64_MAX ? 0 : o;
}

static void write_rank(struct writer *w)
{
    struct sp_model *m = w->m;
    struct sp_rank *r = &m->ranks[w->ri];
    w->pid = r->rank + 1; /* pid 0 is taken as "no process" by some viewers */
    w->ntracks = 0;
    sp_export_window(w->m, w->ri, w->o, &w->w0, &w->w1);
    char name[400];
    int pid0 = r->nfiles ? r->files[0]->pid : -1;
    snprintf(name, sizeof name, "rank %d (%s, pid %d)", r->rank, m->hosts[r->host], pid0);
    meta(w, w->pid, 0, "process", name, 2 * w->ri);
    meta(w, w->pid, TID_STEPS, "thread", "steps", sp_export_kind_sort[TRK_STEPS]);
    write_steps(w);
    write_collectives(w);
    sp_export_feed(m, r, &export_pass, w, &w->f);
    if (w->wa) write_whatif(w);
    w->st.ranks++;
}

int sp_export_trace(struct sp_model *m, const struct sp_export_opts *o, FILE *out,
                    struct sp_export_stats *st)
{
    struct writer w = {.out = out, .m = m, .o = o};
    w.origin = sp_export_origin(m);
    int rc = sp_export_colls_gather(m, &w.c) < 0 ? -1 : 0;
    if (rc == 0 && o->whatif >= 0) {
        if (sp_export_replay(m, o->whatif, &w.wa, &w.we) == 0) {
            w.st.whatif_ok = 1;
        } else {
            sp_model_warn(
                m,
                "what-if %s: the replay could not remove it in this run; the timeline has the "
                "recorded groups only",
                o->whatif == SP_CAUSE_N ? "none" : sp_cause_info(o->whatif)->name);
        }
    }
    if (rc == 0) {
        fputs("{\"displayTimeUnit\":\"ms\",\"otherData\":{", out);
        fputs("\"generator\":\"scaleprof export\",\"version\":", out);
        put_str(out, SCALEPROF_VERSION);
        kv_str(out, "dir", m->dir);
        fprintf(out,
                ",\"ranks\":%d,\"steps\":%d,\"step_number0\":%d,\"origin_ns\":%" PRId64
                ",\"host_only\":%s},\n\"traceEvents\":[",
                m->nranks, m->steps_total, m->step_number0, w.origin, o->host_only ? "true" : "false");
        for (int i = 0; i < m->nranks; i++) {
            if (!sp_export_rank_wanted(m, o, i)) continue;
            w.ri = i;
            write_rank(&w);
            sp_model_progress(m, "export", i + 1, m->nranks);
        }
        fputs("\n]}\n", out);
        if (ferror(out)) rc = -1;
    }
    sp_export_replay_free(m, w.wa, w.we);
    sp_export_colls_free(&w.c);
    free(w.tracks);
    if (st) *st = w.st;
    return rc;
}

double sp_export_estimate(const struct sp_model *m, const struct sp_export_opts *o)
{
    double bytes = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!sp_export_rank_wanted(m, o, i)) continue;
        double share = 1;
        if (o->step_first >= 0 && r->nsteps && r->last_t > r->first_t) {
            int k0, k1;
            sp_export_step_range(m, r, o, &k0, &k1);
            share = k0 > k1 ? 0
                            : (double)(r->steps[k1].end - r->steps[k0].start) /
                                  (double)(r->last_t - r->first_t);
            share = share > 1 ? 1 : share;
        }
        uint64_t ev = 0;
        for (int fi = 0; fi < m->nfrecs; fi++)
            if (m->frecs[fi].ok && m->frecs[fi].rank == r->rank) ev += m->frecs[fi].events;
        bytes += share * ((double)ev * BYTES_PER_EVENT + (double)r->nsteps * BYTES_PER_STEP);
    }
    return bytes;
}

int sp_export_whatif_cause(const char *name, char *names, size_t len)
{
    /* the replayable causes, in the cause table's whatif_order (causes.c) */
    size_t used = 0;
    int found = -1;
    if (names && len) names[0] = 0;
    for (int k = 1; k <= SP_CAUSE_N; k++) { /* a gap in the numbering skips, never ends the list */
        int c = sp_cause_by_whatif_order(k);
        if (c < 0) continue;
        const char *n = sp_cause_info(c)->name;
        if (name && !strcmp(name, n)) found = c;
        if (names && used < len) {
            int w = snprintf(names + used, len - used, "%s%s", used ? ", " : "", n);
            used += w > 0 ? (size_t)w : 0;
        }
    }
    if (name && !strcmp(name, "none")) found = SP_CAUSE_N;
    return found;
}
