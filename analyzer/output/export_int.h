/*
 * export_int.h - what the two timeline writers share: export_trace.c
 * (Chrome JSON) and export_perfetto.c (Perfetto's protobuf) draw the
 * same model, so the window, the collective instances, the what-if
 * replay and the names of things are computed here once, in
 * export_trace.c, and each writer only encodes.
 */
#ifndef SP_EXPORT_INT_H
#define SP_EXPORT_INT_H

#include <stdint.h>

#include "export_trace.h"
#include "model_int.h"

/* The kinds of track of a rank's timeline (the JSON one draws no CPU
 * track) and their sort order; a helper process's tracks follow the
 * rank's, HELPER_SORT apart. */
enum sp_export_track_kind { TRK_STEPS,
                            TRK_COMM,
                            TRK_STREAM,
                            TRK_THREAD,
                            TRK_IO,
                            TRK_CPU,
                            TRK_KINDS };
extern const int sp_export_kind_sort[TRK_KINDS];
#define HELPER_SORT 100000

/* A track of file fi (TRK_THREAD, TRK_IO: id is the thread; TRK_STREAM:
 * the stream of device): the key a writer finds it again by (kind, file,
 * id), its name and its sort index (the file's tracks sort from fsort). */
struct sp_export_track {
    int kind;
    int32_t file;
    uint64_t id;
    int sort;
    char name[300];
};
void sp_export_file_track(const struct sp_model *m, int fi, int fsort, int kind, int64_t device,
                          uint64_t id, struct sp_export_track *t);
/* The name a thread event ev of file fi gives its thread's track. */
void sp_export_thread_name(const struct sp_model *m, int fi, const struct sp_reader *r,
                           const struct sp_event *ev, char *out, size_t len);

/* The pass of a writer over the trace files: the events both timelines
 * draw, each fed to the writer's own on_gpu ... on_thread. */
#define SP_EXPORT_PASS                                                                         \
    {                                                                                          \
        .types = SP_TYPE_BIT(SP_EV_GPU) | SP_TYPE_BIT(SP_EV_CUDA) | SP_TYPE_BIT(SP_EV_NCCL) |  \
                 SP_TYPE_BIT(SP_EV_IO) | SP_TYPE_BIT(SP_EV_WAIT) | SP_TYPE_BIT(SP_EV_MARKER) | \
                 SP_TYPE_BIT(SP_EV_CPU) | SP_TYPE_BIT(SP_EV_PROC) | SP_TYPE_BIT(SP_EV_THREAD), \
        .tool = {.gpu = on_gpu,                                                                \
                 .cuda = on_cuda,                                                              \
                 .nccl = on_nccl,                                                              \
                 .io = on_io,                                                                  \
                 .wait = on_wait,                                                              \
                 .marker = on_marker,                                                          \
                 .cpu = on_cpu,                                                                \
                 .proc = on_proc,                                                              \
                 .thread = on_thread},                                                         \
    }

struct sp_pass;

/* The trace file a writer is being fed: its index in m->frecs, the sort
 * base of its tracks, its previous CPU sample. */
struct sp_export_file {
    int fi, fsort;
    int64_t cpu_t;
    uint64_t cpu_ns;
};
/* Feeds each readable file of rank r to pass (ctx its writer), *cur set
 * to the file before each; a file that cannot be read is a warning. */
void sp_export_feed(struct sp_model *m, const struct sp_rank *r, const struct sp_pass *pass,
                    void *ctx, struct sp_export_file *cur);

/* What both timelines draw of a host call (a CUDA or NCCL call, file
 * I/O, a wait): its start and duration on its rank's clock, the kind of
 * its track and its name. */
struct sp_export_slice {
    int64_t t, dur;
    int kind;
    char name[128];
};
/* Fills *s from ev; 0 when ev is outside the window [w0, w1). */
int sp_export_host_slice(const struct sp_event *ev, int64_t w0, int64_t w1,
                         struct sp_export_slice *s);

/* Whether finding f names rank. */
int sp_export_finding_has_rank(const struct sp_finding *f, int rank);
/* The causes of the findings that concern step number num of rank r,
 * comma-separated into buf (empty when none), as both timelines label the
 * step; returns the length written. */
size_t sp_export_step_findings(const struct sp_model *m, const struct sp_rank *r, int num, char *buf,
                               size_t len);
/* A finding's instant as both timelines name it: "finding: CAUSE (saves N%)". */
void sp_export_finding_name(const struct sp_finding *f, char *buf, size_t len);
/* The step index of r in [k0, k1] where finding f's instant stands (its
 * first step), -1 when it names r at none of them. */
int sp_export_finding_step(const struct sp_model *m, const struct sp_rank *r,
                           const struct sp_finding *f, int k0, int k1);
/* The CPU use of file f's process since its previous sample (f's, then
 * ev): 1 with its cores in *cores and the name of its counter track,
 * when there is an interval and ev stands in the window [w0, w1); else 0. */
int sp_export_cpu_cores(const struct sp_model *m, struct sp_export_file *f, int64_t w0, int64_t w1,
                        const struct sp_event *ev, double *cores, char *name, size_t len);

/* Participants of one collective instance: parts[first..first+n), and
 * which of them arrived last. */
struct sp_export_inst {
    int32_t first, n, last;
};

struct sp_export_colls {
    struct sp_export_inst *insts; /* by instance number */
    struct sp_coll_ref *parts;
    size_t ninsts, nparts;
};

/* Gathers every instance of m.  Returns 0, or -1 out of memory. */
int sp_export_colls_gather(struct sp_model *m, struct sp_export_colls *c);
void sp_export_colls_free(struct sp_export_colls *c);

/* The rank index of the last arrival of call's instance, -1 when unmatched. */
int sp_export_last_ri(const struct sp_export_colls *c, const struct sp_coll_call *call);

/* Replays m with cause removed, as its finding priced it (the replay's
 * choices the model kept after the findings, m->replay); (*wa)[ri][node],
 * (*we)[ri][node] are each node's replayed arrival and end (INT64_MIN
 * where the replay stopped).  Returns 0, or -1 when it could not (both
 * freed and NULL then). */
int sp_export_replay(struct sp_model *m, int cause, int64_t ***wa, int64_t ***we);
void sp_export_replay_free(const struct sp_model *m, int64_t **wa, int64_t **we);

/* The replayed last arrival of the instance call belongs to (own when none
 * later). */
int64_t sp_export_replayed_last(const struct sp_model *m, const struct sp_export_colls *c,
                                int64_t **wa, const struct sp_coll_call *call, int64_t own);

/* Step indices [*k0, *k1] of r in the window (all when unset). */
void sp_export_step_range(const struct sp_model *m, const struct sp_rank *r,
                          const struct sp_export_opts *o, int *k0, int *k1);
/* Rank ri's window, its local ns [*w0, *w1): all of it when no steps
 * were asked for, empty (*w0 > *w1) when none of its steps is in it. */
void sp_export_window(const struct sp_model *m, int ri, const struct sp_export_opts *o, int64_t *w0,
                      int64_t *w1);
/* An event is in the window when it overlaps it; one that ends where the
 * window starts belongs to the step before. */
static inline int sp_export_in_window(int64_t w0, int64_t w1, int64_t t, int64_t dur)
{
    return t < w1 && (t >= w0 || t + (dur > 0 ? dur : 0) > w0);
}
int sp_export_rank_wanted(const struct sp_model *m, const struct sp_export_opts *o, int ri);
/* The global ns of time 0: the earliest event of the set. */
int64_t sp_export_origin(const struct sp_model *m);

/* Names as both timelines show them. */
void sp_export_op_name(const struct sp_coll_call *c, char *out, size_t len);
void sp_export_gpu_name(const struct sp_reader *r, const struct sp_ev_gpu *g, char *out, size_t len);
void sp_export_io_name(const struct sp_ev_io *io, char *out, size_t len);
void sp_export_proc_name(const struct sp_reader *r, const struct sp_event *ev, char *out,
                         size_t len);
const char *sp_export_enum(int type, const char *field, uint64_t v, const char *dflt);
const char *sp_export_timing(const struct sp_coll_call *c);

#endif
