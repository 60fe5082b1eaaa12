/*
 * export_int.h - the timeline's one walk and its two encoders.
 *
 * export_walk.c walks a finished model (const: an output never re-runs
 * an analysis) the way both timelines draw it: per rank a process group,
 * its steps and their findings, its collectives with the late-rank
 * arrows, the events of its trace files (read again, one file at a time)
 * and, with --whatif, the group of its replayed nodes, which the model
 * kept (sp_model_keep_whatif).  It decides what is drawn, where and
 * when: the window, the tracks, the times on the common axis, the names
 * and the arguments.  An encoder (struct sp_export_enc) only writes what
 * it is handed in its format: export_trace.c Chrome JSON, export_perfetto.c
 * Perfetto's protobuf.
 */
#ifndef SP_EXPORT_INT_H
#define SP_EXPORT_INT_H

#include <stdint.h>

#include "export_trace.h"
#include "model.h"
#include "model_util.h"

/* The kinds of track of a rank's timeline and their sort order; a helper
 * process's tracks follow the rank's, HELPER_SORT apart. */
enum sp_export_track_kind { TRK_STEPS,
                            TRK_COMM,
                            TRK_STREAM,
                            TRK_THREAD,
                            TRK_IO,
                            TRK_CPU,
                            TRK_KINDS };
extern const int sp_export_kind_sort[TRK_KINDS];
#define HELPER_SORT 100000

/* Categories (the JSON's "cat"), interned by the protobuf as 1.. in this
 * order. */
#define SP_EXPORT_CATEGORIES(X)     \
    X(C_STEP, "step")               \
    X(C_BREAKDOWN, "breakdown")     \
    X(C_FINDING, "finding")         \
    X(C_WAIT, "nccl_wait")          \
    X(C_TRANSFER, "nccl_transfer")  \
    X(C_KERNEL, "kernel")           \
    X(C_NCCL_KERNEL, "nccl_kernel") \
    X(C_MEMCPY, "memcpy")           \
    X(C_MEMSET, "memset")           \
    X(C_GPU, "gpu")                 \
    X(C_CUDA, "cuda")               \
    X(C_NCCL_CALL, "nccl_call")     \
    X(C_IO, "io")                   \
    X(C_WAITS, "wait")              \
    X(C_MARKER, "marker")           \
    X(C_PROCESS, "process")

/* Argument names, interned by the protobuf as 1.. in this order. */
#define SP_EXPORT_ANNOTATIONS(X)      \
    X(A_STEP, "step")                 \
    X(A_STEP_MS, "step_ms")           \
    X(A_ANALYZED, "analyzed")         \
    X(A_FINDINGS, "findings")         \
    X(A_OVERLAP_MS, "overlap_ms")     \
    X(A_CAT_MS, "ms")                 \
    X(A_CAUSE, "cause")               \
    X(A_SEVERITY, "severity")         \
    X(A_GAIN, "gain")                 \
    X(A_IF_FIXED, "step_ms_if_fixed") \
    X(A_STEPS, "steps")               \
    X(A_EVIDENCE, "evidence")         \
    X(A_FIRST_TRY, "first_try")       \
    X(A_OP, "op")                     \
    X(A_BYTES, "bytes")               \
    X(A_COMM, "comm")                 \
    X(A_SEQ, "seq")                   \
    X(A_INSTANCE, "instance")         \
    X(A_LAST_RANK, "last_rank")       \
    X(A_WAIT_MS, "wait_ms")           \
    X(A_OP_MS, "op_ms")               \
    X(A_TIMING, "timing")             \
    X(A_CORRELATION, "correlation")   \
    X(A_STREAM, "stream")             \
    X(A_KERNEL, "kernel")             \
    X(A_STACK, "stack")               \
    X(A_FD, "fd")                     \
    X(A_RET, "ret")                   \
    X(A_FD_KIND, "fd_kind")           \
    X(A_PATH, "path")                 \
    X(A_NFDS, "nfds")

#define SP_EXPORT_AS_ENUM(e, s) e,
enum sp_export_cat { C_NONE,
                     SP_EXPORT_CATEGORIES(SP_EXPORT_AS_ENUM) C_N };
enum sp_export_annotation { A_NONE,
                            SP_EXPORT_ANNOTATIONS(SP_EXPORT_AS_ENUM) A_N };
extern const char *const sp_export_cat_names[C_N];
extern const char *const sp_export_annotation_names[A_N];

/* One argument of an event. */
enum sp_export_arg_type { ARG_INT,
                          ARG_UINT,
                          ARG_DOUBLE,
                          ARG_BOOL,
                          ARG_STR };
#define ARG_OPTIONAL 1  /* a compact encoder leaves it out when 0 or "" */
#define ARG_BREAKDOWN 2 /* a step's category in ms: left out where the
                           categories are drawn as slices */
struct sp_export_arg {
    const char *key; /* its name in text */
    uint8_t name;    /* enum sp_export_annotation (A_NONE: ARG_BREAKDOWN's) */
    uint8_t type, flags;
    uint8_t prec; /* a double's decimals in text */
    union {
        int64_t i;
        uint64_t u;
        double d;
        const char *s;
    } v;
};
#define SP_EXPORT_ARGS_MAX 16
struct sp_export_args {
    struct sp_export_arg a[SP_EXPORT_ARGS_MAX];
    int n;
};
/* Appends an argument to l (flags: ARG_*); its value is the caller's to
 * set.  The others set it: a double with prec decimals in text. */
struct sp_export_arg *sp_export_arg(struct sp_export_args *l, int name, int type, int flags);
void sp_export_arg_int(struct sp_export_args *l, int name, int64_t v);
void sp_export_arg_uint(struct sp_export_args *l, int name, uint64_t v, int flags);
void sp_export_arg_double(struct sp_export_args *l, int name, double v, int prec);
void sp_export_arg_str(struct sp_export_args *l, int name, const char *v, int flags);

/* An event on a track.  Tracks are numbers: -1 the group's steps track,
 * else the track's place among the rank's, from 0 at each group's first
 * where the encoder numbers them by group (sp_export_walk_track). */
#define SP_EXPORT_OPEN INT64_MIN /* dur of a range a later end closes (a marker's push) */
struct sp_export_ev {
    int track;
    int64_t t, dur; /* global ns */
    const char *name;
    int cat; /* enum sp_export_cat */
    const struct sp_export_arg *args;
    int nargs;
};

/* A late-rank arrow's end on a transfer slice: it starts on the last
 * rank to arrive (start) or ends on one that waited for it; at: the
 * middle of that rank's transfer (global ns). */
struct sp_export_flow {
    uint64_t id;
    int start;
    int64_t at;
};
/* An NCCL op as its two slices, wait then transfer. */
struct sp_export_op {
    const struct sp_coll_call *c;
    int track;
    int whatif;                         /* replayed: the times, no arguments of the recording */
    int64_t t, wait, dur;               /* global start, the wait half, the whole op (ns) */
    int last_rank;                      /* the rank that arrived last, -1 unknown */
    const struct sp_export_flow *flows; /* on the transfer */
    int nflows;
};

struct sp_export_walk;

/* What a timeline format writes.  Each call gets the walk, whose pid (the
 * group being written), origin (the global ns of time 0), ctx (the
 * encoder's own) and st (slices and dropped are the encoder's to count)
 * it reads. */
struct sp_export_enc {
    void (*start)(struct sp_export_walk *w); /* before the first rank */
    void (*finish)(struct sp_export_walk *w);
    /* a process group begins (w->pid set): a rank's, or its what-if's */
    void (*group)(struct sp_export_walk *w, const char *name, int sort);
    /* a new track of the group (kind: enum sp_export_track_kind) */
    void (*track)(struct sp_export_walk *w, int track, const char *name, int sort, int kind);
    /* a track named again (a thread's name read from its trace) */
    void (*rename)(struct sp_export_walk *w, int track, const char *name, int sort);
    /* a slice: its start (with its arguments), later its end, given the
     * same event; slices end in the reverse order they start */
    void (*begin)(struct sp_export_walk *w, const struct sp_export_ev *e);
    void (*end)(struct sp_export_walk *w, const struct sp_export_ev *e);
    void (*instant)(struct sp_export_walk *w, const struct sp_export_ev *e);
    /* the current file's process's CPU use, in cores, since its previous sample */
    void (*counter)(struct sp_export_walk *w, int64_t t, const char *name, double cores);
    void (*op)(struct sp_export_walk *w, const struct sp_export_op *x);
    /* what differs in what the formats draw */
    int summary;          /* may draw the summary (struct sp_export_opts.detail) */
    int group_tracks;     /* a group's tracks are numbered from 0 (else the rank's go on) */
    int max_tracks;       /* per group; past it events join the steps track */
    int breakdown_slices; /* a step's categories as child slices (ARG_BREAKDOWN left out) */
    int matched_pops;     /* a pop is drawn only over a push drawn on its track */
    int full_names;       /* kernel names whole (else at most GPU_NAME_MAX bytes) */
};
#define GPU_NAME_MAX 1023
#define SP_EXPORT_COMM_LEN 20 /* a communicator as text: 16 hex digits */

/* The trace file the walk is reading: its index in m->frecs, the sort
 * base of its tracks, its previous CPU sample. */
struct sp_export_file {
    int fi, fsort;
    int64_t cpu_t;
    uint64_t cpu_ns;
};

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

struct sp_export_walk_track;

struct sp_export_walk {
    const struct sp_model *m;
    const struct sp_export_opts *o;
    const struct sp_export_enc *enc;
    void *ctx;
    struct sp_export_stats st;
    int64_t origin;
    int ri, pid;    /* the rank index, its group being written */
    int64_t w0, w1; /* the rank's window, its local ns */
    char *detail;   /* per rank index: written in full */
    struct sp_export_file f;
    struct sp_export_colls c;
    struct sp_export_flow *flows;
    const struct sp_whatif_nodes *wi; /* the replayed times, NULL none */
    struct sp_export_walk_track *tracks;
    int ntracks, cap, group_first;
    char cat_keys[SP_CAT_N][40]; /* "compute_ms", ... */
};

/* Walks m's timeline into enc (ctx its state).  Returns 0, or -1 out of
 * memory; *st receives what was written, with the walk's warnings. */
int sp_export_walk(const struct sp_model *m, const struct sp_export_opts *o,
                   const struct sp_export_enc *enc, void *ctx, struct sp_export_stats *st);
/* The track (kind, file, id) of the group, made (enc->track) when new. */
int sp_export_walk_track(struct sp_export_walk *w, int kind, int32_t file, uint64_t id,
                         const char *name, int sort);

/* The bytes of the timeline, per trace event and per step of the ranks
 * written (only the window's share of each rank's when windowed). */
double sp_export_bytes(const struct sp_model *m, const struct sp_export_opts *o, double per_event,
                       double per_step, int windowed);

/* Names as both timelines show them. */
void sp_export_op_name(const struct sp_coll_call *c, char *out, size_t len);
const char *sp_export_enum(int type, const char *field, uint64_t v, const char *dflt);
const char *sp_export_timing(const struct sp_coll_call *c);
/* The sequence number an op shows: a send's or recv's k-th message
 * between its two ranks, else the collective's. */
uint64_t sp_export_op_seq(const struct sp_coll_call *c);

#endif
