/*
 * export_walk.c - the one walk over a finished model that both timelines
 * (export_int.h) are written from: what is drawn, on which track, when,
 * under which name and with which arguments is decided here once; the
 * encoder it is given writes each piece in its format.
 *
 * Per rank (in rank order, those --ranks keeps): its process group, its
 * steps track (each step, with its categories as arguments or as child
 * slices, then an instant per finding at the first step it concerns),
 * then, when the rank is in full detail, one track per NCCL communicator
 * (each op as wait and transfer, the arrows from the last rank to arrive)
 * and its trace files read again one after another (sp_trace_feed; a
 * helper process's tracks sort after the rank's own), tracks made as
 * their first event comes; last, with --whatif, a group of the rank's
 * replayed nodes (steps and ops), from the times the model kept
 * (m->whatif).  Only the window (--steps) is drawn: an event is in it
 * when it overlaps it.
 *
 * Nothing of the timeline is gathered: memory holds the model, the
 * participants of each collective instance (linear in calls) and the
 * tracks of the rank being written.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "export_int.h"
#include "text.h"
#include "traceset.h"
#include "units.h"

#define WHATIF_PID_BASE 1000000 /* what-if groups: pids apart from the ranks' */
#define P2P_K_MASK ((1ULL << 21) - 1)

#define SP_EXPORT_AS_NAME(e, s) s,
const char *const sp_export_cat_names[C_N] = {"", SP_EXPORT_CATEGORIES(SP_EXPORT_AS_NAME)};
const char *const sp_export_annotation_names[A_N] = {"", SP_EXPORT_ANNOTATIONS(SP_EXPORT_AS_NAME)};
const int sp_export_kind_sort[TRK_KINDS] = {0, 100, 1000, 10000, 20000, 30000};

/* A track of the rank: the key it is found again by (kind, file, id) and
 * the marker ranges open on it. */
struct sp_export_walk_track {
    uint8_t kind;
    int32_t file;
    uint32_t pushed;
    uint64_t id;
};

/* ---- names ---- */

const char *sp_export_enum(int type, const char *field, uint64_t v, const char *dflt)
{
    const char *n = sp_enum_name(type, field, v);
    return n ? n : dflt;
}

const char *sp_export_timing(const struct sp_coll_call *c)
{
    return c->timing == SP_TIMING_GPU        ? "gpu"
           : c->timing == SP_TIMING_FALLBACK ? "cuda_events"
                                             : "host";
}

uint64_t sp_export_op_seq(const struct sp_coll_call *c)
{
    return sp_op_is_p2p(c->op) ? (uint64_t)(c->key & P2P_K_MASK) : c->seq;
}

void sp_export_op_name(const struct sp_coll_call *c, char *out, size_t len)
{
    char b[32];
    sp_text_bytes(c->bytes, b, sizeof b);
    snprintf(out, len, "%s %s comm %016" PRIx64 " #%" PRIu64,
             sp_export_enum(SP_EV_NCCL, "op", c->op, "op"), b, c->comm, sp_export_op_seq(c));
}

static void gpu_name(const struct sp_reader *r, const struct sp_ev_gpu *g, char *out, size_t len)
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

static void io_name(const struct sp_ev_io *io, char *out, size_t len)
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

static void proc_name(const struct sp_reader *r, const struct sp_event *ev, char *out, size_t len)
{
    const char *path = sp_reader_string(r, ev->proc.path);
    snprintf(out, len, "%s %" PRId64 "%s%s",
             sp_export_enum(SP_EV_PROC, "kind", ev->proc.kind, "proc"),
             ev->proc.kind == SP_PROC_EXIT || ev->proc.kind == SP_PROC_SIGNAL
                 ? (int64_t)ev->proc.status
                 : (int64_t)ev->proc.pid,
             path[0] ? " " : "", path);
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

/* ---- arguments ---- */

struct sp_export_arg *sp_export_arg(struct sp_export_args *l, int name, int type, int flags)
{
    struct sp_export_arg *a = &l->a[l->n++];
    a->key = sp_export_annotation_names[name];
    a->name = (uint8_t)name;
    a->type = (uint8_t)type;
    a->flags = (uint8_t)flags;
    a->prec = 0;
    return a;
}

void sp_export_arg_int(struct sp_export_args *l, int name, int64_t v)
{
    sp_export_arg(l, name, ARG_INT, 0)->v.i = v;
}

void sp_export_arg_uint(struct sp_export_args *l, int name, uint64_t v, int flags)
{
    sp_export_arg(l, name, ARG_UINT, flags)->v.u = v;
}

void sp_export_arg_double(struct sp_export_args *l, int name, double v, int prec)
{
    struct sp_export_arg *a = sp_export_arg(l, name, ARG_DOUBLE, 0);
    a->v.d = v;
    a->prec = (uint8_t)prec;
}

void sp_export_arg_str(struct sp_export_args *l, int name, const char *v, int flags)
{
    sp_export_arg(l, name, ARG_STR, flags)->v.s = v;
}

/* ---- tracks ---- */

/* The group's track (kind, file, id), -2 when it has none yet. */
static int track_find(const struct sp_export_walk *w, int kind, int32_t file, uint64_t id)
{
    for (int i = w->ntracks - 1; i >= w->group_first; i--) {
        const struct sp_export_walk_track *t = &w->tracks[i];
        if (t->kind == kind && t->file == file && t->id == id) return i;
    }
    return -2;
}

int sp_export_walk_track(struct sp_export_walk *w, int kind, int32_t file, uint64_t id,
                         const char *name, int sort)
{
    int found = track_find(w, kind, file, id);
    if (found >= 0) return found;
    if (w->ntracks - w->group_first >= w->enc->max_tracks) return -1; /* the rest join steps */
    if (w->ntracks == w->cap) {
        int cap = w->cap ? 2 * w->cap : 32;
        void *p = realloc(w->tracks, (size_t)cap * sizeof *w->tracks);
        if (!p) return -1; /* out of memory: the event joins the steps track */
        w->tracks = p;
        w->cap = cap;
    }
    w->tracks[w->ntracks++] = (struct sp_export_walk_track){(uint8_t)kind, file, 0, id};
    int tr = w->ntracks - 1;
    w->enc->track(w, tr, name, sort, kind);
    return tr;
}

/* The track of kind of the file being read: a GPU stream (id the stream
 * of device), a thread's calls or its I/O and waits (id the thread). */
static int file_track(struct sp_export_walk *w, int kind, int64_t device, uint64_t id)
{
    uint64_t key = kind == TRK_STREAM ? ((uint64_t)(device & 0xffff) << 48) ^ id : id;
    int found = track_find(w, kind, w->f.fi, key); /* the name only for a new one */
    if (found >= 0) return found;
    char pre[64], name[300];
    file_prefix(w->m, w->f.fi, pre, sizeof pre);
    int sort = w->f.fsort + sp_export_kind_sort[kind] + (int)(id % 1000);
    if (kind == TRK_STREAM) {
        snprintf(name, sizeof name, "%sGPU %" PRId64 " stream %" PRIu64, pre, device, id);
    } else if (kind == TRK_IO) {
        snprintf(name, sizeof name, "%sfile I/O and waits, thread %" PRIu64, pre, id);
    } else {
        snprintf(name, sizeof name, "%sthread %" PRIu64, pre, id);
    }
    return sp_export_walk_track(w, kind, w->f.fi, key, name, sort);
}

static int comm_track(struct sp_export_walk *w, uint64_t comm)
{
    char name[64];
    snprintf(name, sizeof name, "NCCL comm %016" PRIx64, comm);
    return sp_export_walk_track(w, TRK_COMM, -1, comm, name,
                                sp_export_kind_sort[TRK_COMM] + w->ntracks);
}

static struct sp_export_walk_track *track_of(struct sp_export_walk *w, int tr)
{
    return tr >= 0 ? &w->tracks[tr] : NULL;
}

/* A process group begins: its pid, its steps track; its tracks are new
 * (numbered from 0 where the encoder numbers them by group). */
static void group(struct sp_export_walk *w, int pid, const char *name, int sort, const char *steps)
{
    w->pid = pid;
    if (w->enc->group_tracks) w->ntracks = 0;
    w->group_first = w->ntracks;
    w->enc->group(w, name, sort);
    w->enc->track(w, -1, steps, sp_export_kind_sort[TRK_STEPS], TRK_STEPS);
}

/* ---- the window ---- */

static int64_t global_of(const struct sp_export_walk *w, int64_t t)
{
    return sp_model_global(w->m, &w->m->ranks[w->ri], t);
}

/* An event is in the window when it overlaps it; one that ends where the
 * window starts belongs to the step before. */
static int in_window(const struct sp_export_walk *w, int64_t t, int64_t dur)
{
    return t < w->w1 && (t >= w->w0 || t + (dur > 0 ? dur : 0) > w->w0);
}

/* Step indices [*k0, *k1] of r in the window (all when unset). */
static void step_range(const struct sp_model *m, const struct sp_rank *r,
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

/* Rank ri's window, its local ns [*w0, *w1): all of it when no steps
 * were asked for, empty (*w0 > *w1) when none of its steps is in it. */
static void rank_window(const struct sp_model *m, int ri, const struct sp_export_opts *o,
                        int64_t *w0, int64_t *w1)
{
    const struct sp_rank *r = &m->ranks[ri];
    int k0, k1;
    *w0 = INT64_MIN;
    *w1 = INT64_MAX;
    if (o->step_first < 0 || !r->nsteps) return;
    step_range(m, r, o, &k0, &k1);
    if (k0 > k1) {
        *w0 = INT64_MAX; /* none of this rank's steps is in the window */
        *w1 = INT64_MIN;
        return;
    }
    *w0 = r->steps[k0].start;
    *w1 = r->steps[k1].end;
}

static int rank_wanted(const struct sp_model *m, const struct sp_export_opts *o, int ri)
{
    if (!o->ranks) return 1;
    for (size_t i = 0; i < o->nranks; i++)
        if (o->ranks[i] == m->ranks[ri].rank) return 1;
    return 0;
}

/* The share of rank r's events in the window, for the size estimates. */
static double window_share(const struct sp_model *m, const struct sp_export_opts *o,
                           const struct sp_rank *r)
{
    if (o->step_first < 0 || !r->nsteps || r->last_t <= r->first_t) return 1;
    int k0, k1;
    step_range(m, r, o, &k0, &k1);
    double share = k0 > k1 ? 0
                           : (double)(r->steps[k1].end - r->steps[k0].start) /
                                 (double)(r->last_t - r->first_t);
    return share > 1 ? 1 : share;
}

double sp_export_bytes(const struct sp_model *m, const struct sp_export_opts *o, double per_event,
                       double per_step, int windowed)
{
    double bytes = 0;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!rank_wanted(m, o, i)) continue;
        uint64_t ev = 0;
        for (int fi = 0; fi < m->nfrecs; fi++)
            if (m->frecs[fi].ok && m->frecs[fi].rank == r->rank) ev += m->frecs[fi].events;
        double share = windowed ? window_share(m, o, r) : 1;
        bytes += share * ((double)ev * per_event + (double)r->nsteps * per_step);
    }
    return bytes;
}

/* ---- events of the traces ---- */

static int on_gpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct sp_export_walk *w = ctx;
    const struct sp_ev_gpu *g = &ev->gpu;
    if (!in_window(w, (int64_t)ev->t, (int64_t)g->dur)) return 0;
    char buf[GPU_NAME_MAX + 1];
    const char *name = buf, *k = sp_reader_string(r, g->name);
    if (w->enc->full_names && g->kind != SP_GPU_MEMCPY && g->kind != SP_GPU_MEMSET && k[0])
        name = k; /* a kernel: its name as recorded, no copy */
    else
        gpu_name(r, g, buf, sizeof buf);
    /* the category is the kind's name; "gpu" for one unknown */
    const char *kind = sp_export_enum(SP_EV_GPU, "kind", g->kind, "gpu");
    int cat = C_GPU;
    for (int i = C_KERNEL; i <= C_GPU; i++)
        if (!strcmp(kind, sp_export_cat_names[i])) cat = i;
    struct sp_export_args a = {.n = 0};
    sp_export_arg_uint(&a, A_CORRELATION, g->correlation, 0);
    sp_export_arg_uint(&a, A_BYTES, g->bytes, ARG_OPTIONAL);
    struct sp_export_ev e = {file_track(w, TRK_STREAM, (int64_t)g->device, g->stream),
                             global_of(w, (int64_t)ev->t), (int64_t)g->dur, name, cat, a.a, a.n};
    w->enc->begin(w, &e);
    w->enc->end(w, &e);
    w->st.events++;
    return 0;
}

/* The name, category and arguments of host call ev (strings in name
 * and comm). */
static int host_args(const struct sp_reader *r, const struct sp_event *ev, char *name, size_t len,
                     char *comm, struct sp_export_args *a)
{
    switch (ev->type) {
    case SP_EV_CUDA: {
        const struct sp_ev_cuda *c = &ev->cuda;
        snprintf(name, len, "cuda %s", sp_export_enum(SP_EV_CUDA, "api", c->api, "call"));
        sp_export_arg_uint(a, A_STREAM, c->stream, 0);
        sp_export_arg_uint(a, A_CORRELATION, c->correlation, 0);
        const char *k = sp_reader_string(r, c->name), *stack = sp_reader_string(r, c->stack);
        if (k[0]) sp_export_arg_str(a, A_KERNEL, k, 0);
        if (stack[0]) sp_export_arg_str(a, A_STACK, stack, 0);
        return C_CUDA;
    }
    case SP_EV_NCCL:
        snprintf(name, len, "nccl %s", sp_export_enum(SP_EV_NCCL, "op", ev->nccl.op, "call"));
        snprintf(comm, SP_EXPORT_COMM_LEN, "%016" PRIx64, ev->nccl.comm);
        sp_export_arg_str(a, A_COMM, comm, 0);
        sp_export_arg_uint(a, A_SEQ, ev->nccl.seq, 0);
        sp_export_arg_uint(a, A_BYTES, ev->nccl.bytes, 0);
        return C_NCCL_CALL;
    case SP_EV_IO: {
        const struct sp_ev_io *io = &ev->io;
        io_name(io, name, len);
        sp_export_arg_str(a, A_OP, sp_export_enum(SP_EV_IO, "op", io->op, "io"), 0);
        sp_export_arg_int(a, A_FD, (int64_t)io->fd);
        sp_export_arg_int(a, A_RET, (int64_t)io->ret);
        sp_export_arg_uint(a, A_BYTES, io->bytes, 0);
        sp_export_arg_str(a, A_FD_KIND, sp_export_enum(SP_EV_IO, "fd_kind", io->fd_kind, "unknown"), 0);
        sp_export_arg_str(a, A_PATH, sp_reader_string(r, io->path), ARG_OPTIONAL);
        return C_IO;
    }
    default: /* SP_EV_WAIT */
        snprintf(name, len, "wait %s", sp_export_enum(SP_EV_WAIT, "op", ev->wait.op, "wait"));
        sp_export_arg_uint(a, A_NFDS, ev->wait.nfds, 0);
        sp_export_arg_int(a, A_RET, (int64_t)ev->wait.ret);
        sp_export_arg_str(a, A_FD_KIND, sp_export_enum(SP_EV_WAIT, "fd_kind", ev->wait.fd_kind, "unknown"), 0);
        return C_WAITS;
    }
}

/* A host call (CUDA or NCCL call, file I/O, a wait): a slice of its
 * thread's track, or of the thread's I/O and waits track. */
static int on_host(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct sp_export_walk *w = ctx;
    int64_t t = (int64_t)ev->t;
    int64_t dur = (int64_t)(ev->type == SP_EV_CUDA   ? ev->cuda.dur
                            : ev->type == SP_EV_NCCL ? ev->nccl.dur
                            : ev->type == SP_EV_IO   ? ev->io.dur
                                                     : ev->wait.dur);
    if (!in_window(w, t, dur)) return 0;
    char name[128], comm[SP_EXPORT_COMM_LEN];
    struct sp_export_args a = {.n = 0};
    int cat = host_args(r, ev, name, sizeof name, comm, &a);
    int kind = ev->type == SP_EV_IO || ev->type == SP_EV_WAIT ? TRK_IO : TRK_THREAD;
    struct sp_export_ev e = {file_track(w, kind, 0, ev->tid), global_of(w, t), dur, name, cat, a.a, a.n};
    w->enc->begin(w, &e);
    w->enc->end(w, &e);
    w->st.events++;
    return 0;
}

/* A marker: a pushed range opens (a pop closes it), a range, an instant. */
static int on_marker(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct sp_export_walk *w = ctx;
    const struct sp_ev_marker *k = &ev->marker;
    int64_t dur = k->kind == SP_MARK_RANGE ? (int64_t)k->dur : 0;
    if (!in_window(w, (int64_t)ev->t, dur)) return 0;
    int tr = file_track(w, TRK_THREAD, 0, ev->tid);
    struct sp_export_ev e = {tr, global_of(w, (int64_t)ev->t), dur, sp_reader_string(r, k->name),
                             C_MARKER, NULL, 0};
    struct sp_export_walk_track *t = track_of(w, tr);
    w->st.events++;
    switch (k->kind) {
    case SP_MARK_PUSH:
        e.dur = SP_EXPORT_OPEN;
        /* with no track of its own left, a range would nest in the steps' */
        if (w->enc->matched_pops && !t) break;
        if (t) t->pushed++;
        w->enc->begin(w, &e);
        break;
    case SP_MARK_POP:
        e.dur = SP_EXPORT_OPEN;
        /* A pop whose push is not in the timeline (before the window, or
         * in a chunk the trace lost) ends nothing where an end closes
         * whatever slice is open on the track, or none. */
        if (w->enc->matched_pops && (!t || !t->pushed)) break;
        if (t && t->pushed) t->pushed--;
        w->enc->end(w, &e);
        break;
    case SP_MARK_RANGE:
        w->enc->begin(w, &e);
        w->enc->end(w, &e);
        break;
    default:
        w->enc->instant(w, &e);
    }
    return 0;
}

/* A process's CPU use between two samples, in cores. */
static int on_cpu(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    (void)r;
    struct sp_export_walk *w = ctx;
    struct sp_export_file *f = &w->f;
    uint64_t ns = ev->cpu.user_ns + ev->cpu.sys_ns;
    int64_t t = (int64_t)ev->t;
    int ok = f->cpu_t && t > f->cpu_t && ns >= f->cpu_ns && in_window(w, t, 0);
    if (ok) {
        const struct sp_file_rec *rec = &w->m->frecs[f->fi];
        char name[64];
        snprintf(name, sizeof name, rec->helper ? "loader pid %d CPU (cores)" : "pid %d CPU (cores)",
                 (int)rec->pid);
        w->enc->counter(w, global_of(w, t), name, (double)(ns - f->cpu_ns) / (double)(t - f->cpu_t));
        w->st.events++;
    }
    f->cpu_t = t;
    f->cpu_ns = ns;
    return 0;
}

static int on_proc(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct sp_export_walk *w = ctx;
    if (!in_window(w, (int64_t)ev->t, 0)) return 0;
    char name[1200];
    proc_name(r, ev, name, sizeof name);
    struct sp_export_ev e = {file_track(w, TRK_THREAD, 0, ev->tid), global_of(w, (int64_t)ev->t), 0,
                             name, C_PROCESS, NULL, 0};
    w->enc->instant(w, &e);
    w->st.events++;
    return 0;
}

/* A thread's name: its track named again (the last name given wins in
 * both viewers). */
static int on_thread(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    struct sp_export_walk *w = ctx;
    char pre[64], name[300];
    int tr = file_track(w, TRK_THREAD, 0, ev->tid);
    file_prefix(w->m, w->f.fi, pre, sizeof pre);
    snprintf(name, sizeof name, "%s%s (thread %u)", pre, sp_reader_string(r, ev->thread.name), ev->tid);
    w->enc->rename(w, tr, name, w->f.fsort + sp_export_kind_sort[TRK_THREAD] + (int)(ev->tid % 1000));
    return 0;
}

static const struct sp_pass export_pass = {
    .types = SP_TYPE_BIT(SP_EV_GPU) | SP_TYPE_BIT(SP_EV_CUDA) | SP_TYPE_BIT(SP_EV_NCCL) |
             SP_TYPE_BIT(SP_EV_IO) | SP_TYPE_BIT(SP_EV_WAIT) | SP_TYPE_BIT(SP_EV_MARKER) |
             SP_TYPE_BIT(SP_EV_CPU) | SP_TYPE_BIT(SP_EV_PROC) | SP_TYPE_BIT(SP_EV_THREAD),
    /* a host call of any kind is one slice, whatever its arguments */
    // clang-format off
    .tool = {.gpu = on_gpu, .cuda = on_host, .nccl = on_host, .io = on_host, .wait = on_host,
             .marker = on_marker, .cpu = on_cpu, .proc = on_proc, .thread = on_thread},
    // clang-format on
};

/* Reads each file of the rank again; one that cannot be read is a
 * warning. */
static void feed_files(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    int helpers = 0;
    for (int fi = 0; fi < m->nfrecs; fi++) {
        const struct sp_file_rec *f = &m->frecs[fi];
        if (!f->ok || f->rank != m->ranks[w->ri].rank) continue;
        w->f = (struct sp_export_file){fi, f->helper ? HELPER_SORT * (++helpers) : 0, 0, 0};
        int err = 0;
        if (sp_trace_feed(f->path, &export_pass, w, &err) < 0 && err)
            sp_warn_list_add(&w->st.warnings, "%s: could not be read again for the timeline (%s)", f->path,
                             sp_strerror(err));
    }
}

/* ---- what the model knows: steps, findings ---- */

static int finding_has_rank(const struct sp_finding *f, int rank)
{
    for (int i = 0; i < f->nranks; i++)
        if (f->ranks[i] == rank) return 1;
    return 0;
}

/* The causes of the findings that concern step number num of r,
 * comma-separated into buf (empty when none); returns the length. */
static size_t step_findings(const struct sp_model *m, const struct sp_rank *r, int num, char *buf,
                            size_t len)
{
    size_t used = 0;
    if (len) buf[0] = 0;
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        if (num < f->step_first || num > f->step_last || !finding_has_rank(f, r->rank)) continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? "," : "", sp_cause_info(f->cause)->name);
        if (n < 0 || (size_t)n >= len - used) break;
        used += (size_t)n;
    }
    return used;
}

/* The categories of step k as child slices of its bar, end to end
 * (shares of the step, not their places in it). */
static void write_breakdown(struct sp_export_walk *w, int k)
{
    const struct sp_rank *r = &w->m->ranks[w->ri];
    int64_t t = global_of(w, r->steps[k].start), span = r->steps[k].end - r->steps[k].start;
    double sum = 0;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        sum += r->cat[k][c];
    double scale = sum > (double)span && sum > 0 ? (double)span / sum : 1;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++) {
        int64_t d = (int64_t)(r->cat[k][c] * scale);
        if (d <= 0) continue;
        struct sp_export_args a = {.n = 0};
        if (scale < 1) sp_export_arg_double(&a, A_CAT_MS, r->cat[k][c] / NS_PER_MS, 3); /* else the duration */
        struct sp_export_ev e = {-1, t, d, sp_model_cat_name(c), C_BREAKDOWN, a.a, a.n};
        w->enc->begin(w, &e);
        w->enc->end(w, &e);
        t += d;
    }
}

static void write_steps(struct sp_export_walk *w, int k0, int k1)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    int host_only = w->o->host_only;
    for (int k = k0; k <= k1; k++) {
        int num = k + m->step_number0;
        int analyzed = k >= m->step_lo && k < m->step_hi && r->cat;
        char name[64], findings[512];
        snprintf(name, sizeof name, "step %d", num);
        int64_t dur = r->steps[k].end - r->steps[k].start;
        struct sp_export_args a = {.n = 0};
        sp_export_arg_int(&a, A_STEP, num);
        sp_export_arg_double(&a, A_STEP_MS, (double)dur / NS_PER_MS, 3);
        sp_export_arg(&a, A_ANALYZED, ARG_BOOL, 0)->v.i = analyzed;
        for (int c = 0; analyzed && !host_only && c < SP_CAT_N; c++) {
            /* overlap is no category of the breakdown: an argument everywhere */
            int over = c == SP_CAT_OVERLAP;
            struct sp_export_arg *x = sp_export_arg(&a, over ? A_OVERLAP_MS : A_NONE, ARG_DOUBLE, over ? 0 : ARG_BREAKDOWN);
            x->key = w->cat_keys[c];
            x->v.d = r->cat[k][c] / NS_PER_MS;
            x->prec = 3;
        }
        if (!host_only && step_findings(m, r, num, findings, sizeof findings))
            sp_export_arg_str(&a, A_FINDINGS, findings, 0);
        struct sp_export_ev e = {-1, global_of(w, r->steps[k].start), dur, name, C_STEP, a.a, a.n};
        w->enc->begin(w, &e);
        if (analyzed && !host_only && w->enc->breakdown_slices) write_breakdown(w, k);
        w->enc->end(w, &e);
    }
}

/* An instant at the first step each finding concerns (when in the
 * window), on each rank it names. */
static void write_findings(struct sp_export_walk *w, int k0, int k1)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    for (int i = 0; i < m->nfindings && !w->o->host_only; i++) {
        const struct sp_finding *f = &m->findings[i];
        int k = f->step_first - m->step_number0;
        if (!finding_has_rank(f, r->rank) || k < k0 || k > k1 || k < 0 || k >= r->nsteps) continue;
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        char name[128], steps[32];
        snprintf(name, sizeof name, "finding: %s (saves %.0f%%)", ci->name, 100 * f->gain);
        snprintf(steps, sizeof steps, "%d-%d", f->step_first, f->step_last);
        struct sp_export_args a = {.n = 0};
        sp_export_arg_str(&a, A_CAUSE, ci->name, 0);
        sp_export_arg_str(&a, A_SEVERITY, sp_model_severity_name(f->severity), 0);
        sp_export_arg_double(&a, A_GAIN, f->gain, 4);
        sp_export_arg_double(&a, A_IF_FIXED, f->step_ms_if_fixed, 3);
        sp_export_arg_str(&a, A_STEPS, steps, 0);
        sp_export_arg_str(&a, A_EVIDENCE, f->evidence, 0);
        sp_export_arg_str(&a, A_FIRST_TRY, sp_finding_first_try(f), 0);
        struct sp_export_ev e = {-1, global_of(w, r->steps[k].start), 0, name, C_FINDING, a.a, a.n};
        w->enc->instant(w, &e);
    }
}

/* ---- collectives ---- */

/* The participants of every instance, by instance number: the calls of
 * each in rank order (as the model matched them), the last to arrive
 * marked.  Returns 0, or -1 out of memory. */
static int colls_gather(const struct sp_model *m, struct sp_export_colls *c)
{
    size_t total = 0;
    for (int i = 0; i < m->nranks; i++)
        total += m->ranks[i].ncalls;
    c->ninsts = m->coll_instances;
    c->insts = calloc(c->ninsts + 1, sizeof *c->insts);
    c->parts = malloc((total + 1) * sizeof *c->parts);
    if (!c->insts || !c->parts) return -1;
    for (int i = 0; i < m->nranks; i++) /* count, then place: linear in calls */
        for (size_t k = 0; k < m->ranks[i].ncalls; k++) {
            int32_t in = m->ranks[i].calls[k].inst;
            if (in >= 0 && (size_t)in < c->ninsts) c->insts[in].n++;
        }
    int32_t first = 0;
    for (size_t t = 0; t < c->ninsts; t++) {
        c->insts[t].first = first;
        first += c->insts[t].n;
        c->insts[t].n = 0;
    }
    c->nparts = (size_t)first;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (size_t k = 0; k < r->ncalls; k++) {
            int32_t in = r->calls[k].inst;
            if (in < 0 || (size_t)in >= c->ninsts) continue;
            struct sp_export_inst *ii = &c->insts[in];
            const struct sp_coll_ref *lp = &c->parts[ii->first + ii->last];
            const struct sp_rank *lr = &m->ranks[lp->r];
            if (ii->n && sp_model_global(m, r, r->calls[k].start) > sp_model_global(m, lr, lr->calls[lp->c].start))
                ii->last = ii->n;
            c->parts[ii->first + ii->n++] = (struct sp_coll_ref){i, k};
        }
    }
    return 0;
}

static void colls_free(struct sp_export_colls *c)
{
    free(c->insts);
    free(c->parts);
}

/* The rank index of the last arrival of call's instance, -1 when unmatched. */
static int last_ri(const struct sp_export_colls *c, const struct sp_coll_call *call)
{
    if (call->inst < 0 || (size_t)call->inst >= c->ninsts || c->insts[call->inst].n <= 0) return -1;
    const struct sp_export_inst *ii = &c->insts[call->inst];
    return c->parts[ii->first + ii->last].r;
}

static int call_in_window(const struct sp_export_walk *w, int ri, const struct sp_coll_call *c)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[ri];
    if (!rank_wanted(m, w->o, ri) || !w->detail[ri]) return 0;
    if (w->o->step_first < 0 || !r->nsteps) return 1;
    int k0, k1;
    step_range(m, r, w->o, &k0, &k1);
    return k0 <= k1 && c->start < r->steps[k1].end &&
           (c->start >= r->steps[k0].start || c->end > r->steps[k0].start);
}

/* A flow's end on participant p: at the middle of its transfer slice,
 * which the arrow binds to. */
static int64_t flow_point(const struct sp_model *m, const struct sp_coll_ref *p)
{
    const struct sp_rank *r = &m->ranks[p->r];
    const struct sp_coll_call *c = &r->calls[p->c];
    int64_t t0 = c->start + c->wait;
    return sp_model_global(m, r, t0 + (c->end - t0) / 2);
}

/* The arrows of call c's transfer on this rank: the last-arriving rank's
 * starts one to each other participant in the timeline; each other one
 * ends its own.  Returns how many, in w->flows. */
static int op_flows(struct sp_export_walk *w, const struct sp_coll_call *c)
{
    const struct sp_model *m = w->m;
    if (c->inst < 0 || (size_t)c->inst >= w->c.ninsts) return 0;
    const struct sp_export_inst *ii = &w->c.insts[c->inst];
    if (ii->n < 2) return 0;
    const struct sp_coll_ref *last = &w->c.parts[ii->first + ii->last];
    if (!call_in_window(w, last->r, &m->ranks[last->r].calls[last->c])) return 0;
    int n = 0;
    for (int32_t p = 0; p < ii->n; p++) {
        const struct sp_coll_ref *x = &w->c.parts[ii->first + p];
        int start = last->r == w->ri, finish = x->r == w->ri;
        if (p == ii->last || (!start && !finish)) continue;
        if (!call_in_window(w, x->r, &m->ranks[x->r].calls[x->c])) continue;
        uint64_t id = (uint64_t)c->inst * (uint64_t)m->nranks + (uint64_t)x->r + 1;
        w->flows[n++] = (struct sp_export_flow){id, start, flow_point(m, start ? last : x)};
        w->st.flows += start;
    }
    return n;
}

static void write_collectives(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    for (size_t i = 0; i < r->ncalls; i++) {
        const struct sp_coll_call *c = &r->calls[i];
        if (!in_window(w, c->start, c->end - c->start)) continue;
        int64_t wait = c->wait < c->end - c->start ? c->wait : c->end - c->start;
        int lr = last_ri(&w->c, c);
        struct sp_export_op x = {c, comm_track(w, c->comm), 0, global_of(w, c->start), wait > 0 ? wait : 0,
                                 c->end - c->start, lr >= 0 ? m->ranks[lr].rank : -1, w->flows, 0};
        x.nflows = op_flows(w, c);
        w->enc->op(w, &x);
    }
}

/* ---- the what-if group ---- */

/* The replayed last arrival of the instance call belongs to (own when
 * none later). */
static int64_t replayed_last(const struct sp_export_walk *w, const struct sp_coll_call *call, int64_t own)
{
    const struct sp_export_colls *c = &w->c;
    if (call->inst < 0 || (size_t)call->inst >= c->ninsts) return own;
    const struct sp_export_inst *ii = &c->insts[call->inst];
    int64_t last = own;
    for (int32_t p = 0; p < ii->n; p++) {
        const struct sp_coll_ref *x = &c->parts[ii->first + p];
        const struct sp_coll_call *xc = &w->m->ranks[x->r].calls[x->c];
        if (xc->node >= 0 && w->wi->arr[x->r][xc->node] > last) last = w->wi->arr[x->r][xc->node];
    }
    return last;
}

static void write_whatif(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    char name[300];
    const char *cause = w->o->whatif == SP_CAUSE_N ? "none (replayed as recorded)"
                                                   : sp_cause_info(w->o->whatif)->name;
    snprintf(name, sizeof name, "rank %d what-if: %s", r->rank, cause);
    group(w, WHATIF_PID_BASE + w->pid, name, 2 * w->ri + 1, "steps (replayed)");
    int64_t prev = INT64_MIN;
    for (size_t j = 0; j < r->nnodes; j++) {
        const struct sp_rnode *nd = &r->nodes[j];
        int64_t a = w->wi->arr[w->ri][j], e = w->wi->end[w->ri][j];
        if (a == INT64_MIN) break; /* the replay stopped this rank here */
        if (!nd->ncalls) {
            int num = m->step_lo + nd->step + m->step_number0;
            /* a step starts where the one before ended, the first where it was recorded */
            int64_t s = prev;
            if (prev == INT64_MIN)
                s = r->nsteps > m->step_lo ? sp_model_global(m, r, r->steps[m->step_lo].start) : a;
            char sname[64];
            snprintf(sname, sizeof sname, "step %d", num);
            struct sp_export_args x = {.n = 0};
            sp_export_arg_int(&x, A_STEP, num);
            sp_export_arg_double(&x, A_STEP_MS, (double)(a - s) / NS_PER_MS, 3);
            struct sp_export_ev ev = {-1, s, a - s, sname, C_STEP, x.a, x.n};
            w->enc->begin(w, &ev);
            w->enc->end(w, &ev);
            prev = a;
            continue;
        }
        for (uint32_t k = 0; w->detail[w->ri] && k < nd->ncalls; k++) {
            const struct sp_coll_call *c = &r->calls[nd->call + k];
            int64_t last = replayed_last(w, c, a);
            last = last < e ? last : e;
            struct sp_export_op x = {c, comm_track(w, c->comm), 1, a, last - a, e - a, -1, NULL, 0};
            w->enc->op(w, &x);
        }
    }
}

/* ---- the whole ---- */

static void write_rank(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    const struct sp_rank *r = &m->ranks[w->ri];
    w->ntracks = 0;
    rank_window(m, w->ri, w->o, &w->w0, &w->w1);
    char name[400];
    int pid0 = r->nfiles ? r->files[0]->pid : -1;
    snprintf(name, sizeof name, "rank %d (%s, pid %d)%s", r->rank, m->hosts[r->host], pid0,
             w->detail[w->ri] ? "" : " summary");
    /* pid 0 is taken as "no process" by some viewers */
    group(w, r->rank + 1, name, 2 * w->ri, "steps");
    int k0, k1;
    step_range(m, r, w->o, &k0, &k1);
    write_steps(w, k0, k1);
    write_findings(w, k0, k1);
    if (w->detail[w->ri]) {
        write_collectives(w);
        feed_files(w);
        w->st.detailed++;
    }
    if (w->wi) write_whatif(w);
    w->st.ranks++;
}

/* Which ranks are written in full: all of them, or in a summary the
 * ranks the findings name (a finding that names every rank names none). */
#define SUMMARY_RANK_STEPS 6400 /* 64 ranks x 100 steps: what the UI holds in full */
#define DETAIL_MAX 16           /* ranks in full detail in a summary */
static int choose_detail(struct sp_export_walk *w)
{
    const struct sp_model *m = w->m;
    const struct sp_export_opts *o = w->o;
    int wanted = 0, k0, k1, steps = 0;
    for (int i = 0; i < m->nranks; i++) {
        if (!rank_wanted(m, o, i)) continue;
        wanted++;
        step_range(m, &m->ranks[i], o, &k0, &k1);
        steps = k1 - k0 + 1 > steps ? k1 - k0 + 1 : steps;
    }
    int summary = w->enc->summary && (o->detail == SP_EXPORT_SUMMARY ||
                                      (o->detail == SP_EXPORT_AUTO && (int64_t)wanted * steps > SUMMARY_RANK_STEPS));
    memset(w->detail, !summary, (size_t)m->nranks);
    if (!summary) return 0;
    int named = 0;
    for (int f = 0; f < m->nfindings && !o->host_only && named < DETAIL_MAX; f++) {
        const struct sp_finding *fd = &m->findings[f];
        if (fd->nranks >= m->nranks) continue;
        for (int k = 0; k < fd->nranks && named < DETAIL_MAX; k++)
            for (int i = 0; i < m->nranks; i++)
                if (m->ranks[i].rank == fd->ranks[k] && !w->detail[i] && rank_wanted(m, o, i)) {
                    w->detail[i] = 1;
                    named++;
                }
    }
    return 1;
}

/* The global ns of time 0: the earliest event of the set. */
static int64_t origin(const struct sp_model *m)
{
    int64_t o = INT64_MAX;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (r->events && sp_model_global(m, r, r->first_t) < o) o = sp_model_global(m, r, r->first_t);
    }
    return o == INT64_MAX ? 0 : o;
}

int sp_export_walk(const struct sp_model *m, const struct sp_export_opts *o,
                   const struct sp_export_enc *enc, void *ctx, struct sp_export_stats *st)
{
    struct sp_export_walk w = {.m = m, .o = o, .enc = enc, .ctx = ctx};
    w.origin = origin(m);
    for (int c = 0; c < SP_CAT_N; c++)
        snprintf(w.cat_keys[c], sizeof w.cat_keys[c], "%s_ms", sp_model_cat_name(c));
    w.detail = calloc((size_t)m->nranks + 1, 1);
    w.flows = malloc(((size_t)m->nranks + 1) * sizeof *w.flows);
    int rc = w.detail && w.flows && colls_gather(m, &w.c) == 0 ? 0 : -1;
    /* the counterfactual as its finding priced it, which the model kept */
    const struct sp_whatif_nodes *wi = &m->whatif;
    if (o->whatif >= 0 && wi->asked && wi->cause == o->whatif && wi->ok) {
        w.wi = wi;
        w.st.whatif_ok = 1;
    } else if (o->whatif >= 0) {
        sp_warn_list_add(&w.st.warnings,
                         "what-if %s: the replay could not remove it in this run; the timeline has the "
                         "recorded groups only",
                         o->whatif == SP_CAUSE_N ? "none" : sp_cause_info(o->whatif)->name);
    }
    if (rc == 0) {
        w.st.summary = choose_detail(&w);
        enc->start(&w);
        for (int i = 0; i < m->nranks; i++) {
            if (!rank_wanted(m, o, i)) continue;
            w.ri = i;
            write_rank(&w);
            sp_model_progress(m, "export", i + 1, m->nranks);
        }
        enc->finish(&w);
    }
    colls_free(&w.c);
    free(w.tracks);
    free(w.detail);
    free(w.flows);
    *st = w.st;
    return rc;
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
