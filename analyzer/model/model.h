/*
 * model.h - the analysis model every verb reads (report, compare, html,
 * export, hang, reduce).
 *
 * The model turns a directory of per-process traces into numbers: which
 * ranks and hosts took part, where the steps are, how each step's time on
 * each GPU divides into seven exclusive categories, how every collective
 * split into waiting for late peers and moving data, who the straggler is,
 * and which findings (the seed's triage table) apply.  It knows nothing of
 * output formats: the verbs print what it computes.
 *
 * Pipeline (docs/analysis.md gives the definitions and thresholds), run
 * in this order by model.c; what every pass shares is model_util.c's:
 *   model_load.c      find *.sprof, read them in parallel (pass 1: headers,
 *                     step markers, NCCL calls and NCCL kernels), group
 *                     processes under ranks, collect warnings
 *   model_clock.c     host offsets from realtime pairs, refined with
 *                     collective completions; residual skew
 *   model_steps.c     step boundaries: markers, else the repeating pattern
 *                     of collectives; alignment across ranks
 *   model_coll.c      collectives matched by (comm, seq): arrivals, wait,
 *                     transfer, bus bandwidth
 *   model_pipeline.c  pipeline stages and micro-batches from the p2p order
 *   model_classify.c  pass 2: per step, per GPU, exclusive categories,
 *                     streamed with a bounded window of open steps
 *   model_replay.c    the what-if replay of each step with a cause removed
 *   model_findings.c  stragglers; findings with severity, evidence and
 *                     first thing to try, priced by the replay
 *   model_summary.c   per-host summaries (scaleprof reduce), read in place
 *                     of pass 1 and pass 2
 *   model_graph.c     a model built in memory (model_graph.h): ranks,
 *                     steps, ops and their local time, in place of the
 *                     passes up to classify
 * The replay and the findings walk the cause table (causes.c; its row,
 * causes.h: each cause's rule, evidence writer and counterfactual), which
 * they read through m->causes.
 *
 * Memory: per rank the model keeps its collective calls, its step table
 * and, for the steps in view, their categories and replay nodes (all grow
 * with steps, not with events) and, during pass 2, the intervals of the
 * steps still open (see model_classify.c).
 *
 * Errors are values: functions return 0 or a negative SP_E* / -1.
 */
#ifndef SP_MODEL_H
#define SP_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "causes.h"
#include "sprof.h"

struct sp_replay;
struct sp_file_pass;

/* The seven exclusive categories, in priority order, then overlap. */
enum sp_cat {
    SP_CAT_COMPUTE,
    SP_CAT_MEMCPY,
    SP_CAT_COLL_TRANSFER,
    SP_CAT_COLL_WAIT,
    SP_CAT_IDLE_INPUT,
    SP_CAT_IDLE_HOST,
    SP_CAT_IDLE_OTHER,
    SP_CAT_EXCLUSIVE, /* number of exclusive categories */
    SP_CAT_OVERLAP = SP_CAT_EXCLUSIVE,
    SP_CAT_N
};
/* JSON key of a category ("compute", "collective_wait", ...). */
const char *sp_model_cat_name(int cat);

enum sp_severity { SP_SEV_NONE = 0,
                   SP_SEV_LOW,
                   SP_SEV_MODERATE,
                   SP_SEV_HIGH };

/* The passes, in the order they run.  Each needs the ones before it;
 * a verb runs only those it uses (hang stops after the collectives). */
enum sp_stage {
    SP_STAGE_NONE,
    SP_STAGE_LOAD,        /* trace set: files found, pass 1, ranks, clocks */
    SP_STAGE_STEPS,       /* step boundaries on every rank; the steps in view */
    SP_STAGE_COLLECTIVES, /* instances matched: waits, transfers, bandwidth */
    SP_STAGE_CLASSIFY,    /* pass 2: the seven categories per step per rank */
    SP_STAGE_FINDINGS,    /* stragglers table, what-if replay, findings */
};

const char *sp_model_severity_name(int sev);

#define SP_MODEL_MAX_WARNINGS 64
/* Step markers are ranges whose name matches this (any case) unless told. */
#define SP_MODEL_DEFAULT_STEP_RE "step|iteration|ProfilerStep"

struct sp_model_opts {
    int skip;                  /* warm-up steps dropped; -1: 3, or 0 in a step window */
    const char *step_marker;   /* extended regex for step markers, NULL: default */
    int step_first, step_last; /* --steps A:B (absolute, B exclusive); -1 unset */
    double samples_per_step;   /* per GPU, 0 unknown */
    int threads;               /* reader threads, 0 = min(cores, 8) */
    int progress;              /* progress lines on stderr after a second */
    const char *run;           /* --run ID: only this run's traces; NULL all */
};
void sp_model_opts_default(struct sp_model_opts *o);

/* One NCCL call of one rank, with the GPU timing matched to it.  Times are
 * the rank's own CLOCK_MONOTONIC ns. */
struct sp_coll_call {
    uint64_t comm, seq, bytes;
    uint64_t key; /* what matches it across ranks: seq for a
                               collective, sp_p2p_key() for a send or recv */
    uint32_t nranks;
    int32_t crank;      /* rank within the communicator */
    int32_t peer;       /* send/recv: the other rank in the communicator */
    uint32_t peer_seq;  /* send/recv: k-th message with that peer, from the
                               recorder; 0 in traces older than the field */
    int32_t inst;       /* instance index (model_coll.c), -1 unmatched */
    int32_t node;       /* replay node of the rank (model_classify.c), -1 none */
    int64_t host_t;     /* host enter */
    int64_t start, end; /* GPU execution (or host fallback) */
    int64_t wait;       /* ns of [start,end) spent waiting for peers */
    /* The narrow fields last, side by side: a call is 96 bytes, not 112
     * (a few million of them are held to the end of a report of a long
     * job).  op is an SP_NCCL_* collective or p2p op (pass 1 keeps no
     * other); dtype and device as sp_call_dtype() and sp_call_device()
     * narrow them. */
    uint16_t op;
    uint16_t dtype;  /* ncclDataType_t as recorded (hang.c's desync check) */
    int16_t device;  /* the GPU it ran on, -1 unknown */
    uint8_t timing;  /* enum sp_coll_timing */
    uint8_t matched; /* found on every participant */
};
_Static_assert(sizeof(struct sp_coll_call) == 96, "a call record is 96 bytes");
/* A recorded datatype as a call keeps it: one past 16 bits (no
 * ncclDataType_t is) reads as the largest, which names none either. */
static inline uint16_t sp_call_dtype(uint64_t dtype)
{
    return dtype < UINT16_MAX ? (uint16_t)dtype : UINT16_MAX;
}
/* A recorded device ordinal as a call keeps it: one outside 16 bits (no
 * CUDA device is) reads as unknown, -1. */
static inline int16_t sp_call_device(int64_t device)
{
    return device >= INT16_MIN && device <= INT16_MAX ? (int16_t)device : -1;
}
/* (The stream, correlation and group that match a call to its NCCL
 * kernel are pass 1's alone: model_load.c.) */
enum sp_coll_timing { SP_TIMING_HOST = 0,
                      SP_TIMING_FALLBACK,
                      SP_TIMING_GPU };

/* A send and its recv meet under one key: (sender, receiver, k-th message
 * between them on the communicator).  The top bit keeps it apart from the
 * collectives' sequence numbers; 21 bits each for the two ranks and k. */
#define SP_P2P_KEY_BIT (1ULL << 63)
#define SP_P2P_NO_PEER ((1u << 21) - 1) /* the receiver field when the peer is unknown */
static inline uint64_t sp_p2p_key(uint32_t sender, uint32_t receiver, uint64_t k)
{
    const uint64_t m = (1ULL << 21) - 1;
    return SP_P2P_KEY_BIT | ((uint64_t)(sender & m) << 42) | ((uint64_t)(receiver & m) << 21) | (k & m);
}
static inline int sp_op_is_p2p(uint32_t op) { return op == SP_NCCL_SEND || op == SP_NCCL_RECV; }

/* What a rank's local time (everything but waiting in and moving data of
 * NCCL kernels) was spent on, as the replay sees it: GPU busy computing
 * (kernels), waiting for input, the host (inside CUDA calls while the GPU
 * idled, or late in its own code before issuing work), unexplained, and
 * copies (and memsets) while no kernel ran.
 * The host's time comes in parts, each its own counterfactual: blocked in
 * file writes and their flushes (a checkpoint: SP_LOC_WRITE), the GPU idle
 * because a synchronization inside the step stopped the host from issuing
 * work ahead (SP_LOC_SYNC: from the moment the GPU drained under the sync
 * to the host's next call), the GPU idle while the host is inside launch
 * calls (SP_LOC_LAUNCH: the launch API's own cost), and the rest
 * (SP_LOC_HOST: the host's own work between CUDA calls, the sync that ends
 * the step). */
enum sp_loc {
    SP_LOC_BUSY,
    SP_LOC_INPUT,
    SP_LOC_HOST,
    SP_LOC_OTHER,
    SP_LOC_COPY,
    SP_LOC_SYNC,
    SP_LOC_WRITE,
    SP_LOC_LAUNCH,
    SP_LOC_N
};

/* One node of a rank's replay chain (model_replay.c): a communication op
 * (the calls of one kernel: a group's sends and recvs share it) or the end
 * of a step.  Times are global ns.  `gap` is the local time between the
 * previous node's end (or the step's start) and this arrival, `under` the
 * local time while the op ran (compute overlapping it), both by sp_loc. */
struct sp_rnode {
    int64_t a, e;
    float gap[SP_LOC_N], under[SP_LOC_N];
    uint32_t call;   /* first call of the node in the rank's calls; */
    uint16_t ncalls; /* 0: a step end */
    uint16_t step;   /* step index relative to the first analyzed */
    uint32_t key;    /* what the op is, for the peers' medians */
};
struct sp_span {
    int64_t start, end;
};
/* A step marker range and the number its name carries ("ProfilerStep#551",
 * "step 12"), -1 when none; end -1 for an instant marker. */
struct sp_mark {
    int64_t start, end, num;
};

/* What pass 1 learned about one file (model_load.c). */
/* CPU samples of one process: first and last, for its busy fraction. */
struct sp_cpu_span {
    int64_t t0, t1;
    uint64_t ns0, ns1;
    uint64_t busy_sum, nsamples;
    uint32_t ncores;
};
/* One rank a process holds: the device it drives and its rank, both from
 * the communicator (docs/analysis.md, "Ranks"). */
struct sp_dev_rank {
    int32_t device, rank;
};
struct sp_file_rec {
    char *path;
    int ok; /* opened as a trace */
    char host[256], source[64];
    int32_t pid, ppid, hdr_rank, comm_rank, world_size, rank; /* rank: resolved */
    char run[64];                                             /* the run's identity from the header, "" unknown */
    uint32_t flags;
    int64_t start_mono, start_real, first_t, last_t;
    uint64_t events, dropped, gpu_events;
    uint64_t api_events; /* CUDA runtime and NCCL calls */
    char *diag;          /* reader damage report, NULL when clean */
    /* what pass 1 keeps for the passes after it alone (model_int.h);
     * NULL when there is none */
    struct sp_file_pass *pass;
    uint64_t read_bytes; /* bytes read from regular files */
    int64_t read_ns;     /* time inside those reads */
    struct sp_cpu_span cpu;
    struct sp_span *pauses;
    size_t npauses;      /* recording paused (control file) */
    int64_t window_step; /* the step a step window (SCALEPROF_STEPS) opened at, else -1 */
    int64_t window_t;    /* ... and when, on this file's clock */
    int exited;          /* its process's own EXIT event was read ... */
    int32_t exit_status; /* ... with this status (-1: not known) */
    int helper;          /* attached to its rank through the ppid chain */
    /* A process that drives several GPUs (one thread and group calls, a
     * thread per GPU, JAX): the ranks it holds, one per device, ascending
     * by rank; NULL (0) when it holds at most one. */
    struct sp_dev_rank *devranks;
    int ndevranks;
};

/* A rank's copies in the steps in view, of one direction from one kind of
 * host memory (model_classify.c): how many, their bytes and GPU time. */
struct sp_copy_stat {
    uint64_t count, bytes;
    int64_t ns;
};
#define SP_COPY_DIRS (SP_COPY_H2H + 1)  /* enum sp_copy_kind */
#define SP_MEM_KINDS (SP_MEM_OTHER + 1) /* enum sp_mem_kind */

struct sp_rank {
    int rank;
    int host; /* index into model hosts */
    /* When its process holds several ranks: the device whose GPU events
     * are this rank's, and how many ranks share the process (and so its
     * host-side events); device -1 and shared 1 otherwise. */
    int device, shared;
    int nfiles, nhelpers;       /* own processes, helper processes attached */
    struct sp_file_rec **files; /* own files, in start order */
    int64_t first_t, last_t;
    struct sp_coll_call *calls; /* sorted by start */
    size_t ncalls;
    struct sp_mark *marks; /* step marker ranges, sorted */
    size_t nmarks;
    struct sp_span *steps; /* local time */
    int nsteps;
    int passes_aside;        /* passes between steps (evaluation) left out of them */
    double (*cat)[SP_CAT_N]; /* ns per step and category */
    struct sp_rnode *nodes;  /* replay chain over the analyzed steps, in order */
    size_t nnodes;
    int stage;           /* pipeline stage, -1 when not pipelined */
    double *input_head;  /* per step: idle_input ns before the step's first compute */
    double *write_idle;  /* per step: idle_host ns blocked in file writes and flushes */
    double *sync_idle;   /* per step: idle_host ns caused by syncs inside the step */
    double *launch_idle; /* per step: idle_host ns inside launch calls (not in the above) */
    /* launch calls of the rank over the steps in view, and the time inside them */
    uint64_t launches;
    int64_t launch_ns;
    /* file writes and flushes of the rank's own process, over the steps in view */
    uint64_t write_bytes, writes, flushes;
    int64_t write_ns, flush_ns;
    /* the call site (recorded stack) of the sync inside the step that cost
     * most, "" when none; its calls and the idle they caused */
    char sync_site[256];
    uint64_t sync_site_calls;
    double sync_site_ns;
    uint64_t late_events; /* events that arrived after their step closed */
    int open_peak;        /* most steps held open at once in pass 2 */
    /* input evidence: the rank's own process and its helpers */
    uint64_t read_bytes;
    int64_t read_ns;
    double helper_cpu;   /* helpers' summed CPU use, in cores */
    int helper_sampled;  /* helpers with CPU samples */
    double machine_busy; /* host CPU busy fraction over the run; <0 unknown */
    int ncores;
    uint64_t coll_present, coll_last; /* instances reached; arrived last */
    double coll_wait_ns;              /* summed wait over instances reached */
    uint64_t events;
    /* copies in the steps in view, by direction and the memory kind of
     * their host side (device for D2D, unknown when not recorded), and the
     * time copies and memsets ran in those steps, under compute or not */
    struct sp_copy_stat copies[SP_COPY_DIRS][SP_MEM_KINDS];
    double copy_ns;
};

struct sp_coll_summary {
    uint64_t comm, bytes;
    uint32_t op, nranks;
    int spans_hosts;
    uint64_t calls;
    double transfer_ms, wait_ms, busbw_gbps; /* means over instances */
    uint64_t missing;                        /* instances some participant never reached */
};

struct sp_straggler {
    int rank;
    double last_fraction, mean_wait_ms;
    const char *cause; /* "compute", "input", "host", "memcpy", "mixed" */
};

#define SP_MODEL_TEXT 1024

/* The causes a finding can name and their table: causes.h. */
/* Severity from the share of step time fixing a cause would save:
 * high >= 20%, moderate >= 5%, low below (docs/analysis.md). */
int sp_severity_of_gain(double gain);
#define SP_GAIN_MODERATE 0.05
#define SP_GAIN_HIGH 0.20

struct sp_finding {
    int cause; /* enum sp_cause */
    int severity;
    double gain;             /* share of the mean step time saved if fixed */
    double step_ms_if_fixed; /* the mean step time the replay gives then; 0 unknown */
    int *ranks;              /* ranks concerned, ascending; all of them when the
                               finding concerns every rank (never empty) */
    int nranks;
    int step_first, step_last; /* steps concerned, inclusive, absolute */
    char evidence[SP_MODEL_TEXT];
    double *rank_gains;    /* straggler set: per ranks[x], the gain of fixing
                               that rank alone; NULL otherwise */
    const char *first_try; /* what to try first for what the evidence found
                               (a straggler's input: its input; memcpy from
                               pinned memory: not to pin it); NULL: the cause's */
};

/* The replay's check of itself (model_replay.c, docs/analysis.md "What-if"):
 * replayed unchanged it gives back the recorded times; no cause saves more
 * than its own time on the critical path; every found cause removed
 * together saves at least as much as the best one alone.  A gain the check
 * cannot back is withheld: its finding is not listed. */
struct sp_whatif_check {
    int done, ok;
    double replay_error_pct; /* largest |replayed - recorded| time of a node, % of the mean step */
    double step_error_pct;   /* replayed mean step against the recorded one, % */
    int replay_ok;
    int unplaced;                /* nodes the unchanged replay never placed */
    double saved_ms[SP_CAUSE_N]; /* per cause: step time its fix saves in the replay */
    double bound_ms[SP_CAUSE_N]; /* its own time on the critical path; < 0: not bounded */
    int bound_ok[SP_CAUSE_N];
    double ideal_ms, best_ms; /* replayed step, all found causes fixed / the best one alone; 0 n/a */
    int ideal_ok;
    uint32_t withheld; /* bit per cause whose gain the check could not back */
};
/* The finding's first thing to try: its own, else its cause's. */
const char *sp_finding_first_try(const struct sp_finding *f);

/* One counterfactual replayed node by node, kept for an output that draws
 * it beside the recording (export --whatif): the findings stage replays
 * it once more, the cause's fix as its finding priced it, after them. */
struct sp_whatif_nodes {
    int asked;            /* sp_model_keep_whatif was called */
    int cause;            /* enum sp_cause; SP_CAUSE_N: the job as recorded */
    int ok;               /* replayed: the replay could remove the cause */
    int64_t **arr, **end; /* [rank index][node index]: replayed arrival and
                             end, global ns; INT64_MIN where the replay
                             stopped (NULL when not ok) */
};

struct sp_model {
    struct sp_model_opts opts;
    const char *dir;
    char source[64];    /* "preload", "import:kineto", ... */
    uint32_t flags_any; /* SP_FLAG_* seen on any rank file */
    int world_size;
    /* How the job was laid out: processes that hold a rank, GPUs (ranks
     * with a GPU of their own), processes among them that hold several. */
    int rank_procs, gpus, multi_rank_procs;
    struct sp_rank *ranks; /* sorted by rank */
    int nranks;
    char (*hosts)[256];
    int nhosts;
    int64_t *host_offset;    /* ns added to a host's monotonic time */
    double skew_us;          /* estimated residual clock skew */
    const char *detected_by; /* markers | collectives | kernels | none | given (model_graph.h) */
    int steps_total;         /* aligned steps found on every rank */
    int step_number0;        /* the user's number of step 0 (its marker's), 0 when none */
    int steps_paused;        /* steps left out: recording was paused during them */
    int steps_set_aside;     /* passes between steps (evaluation) kept out of every step */
    int step_lo, step_hi;    /* steps in view [lo, hi) */
    double step_mean_ms, step_median_ms;
    double breakdown[SP_CAT_N]; /* fractions of step time over ranks in view */
    struct sp_coll_summary *colls;
    size_t ncolls;
    uint64_t coll_instances, coll_instances_incomplete;
    uint64_t coll_doubtful;          /* instances whose ends lie far apart: paired wrongly */
    struct sp_straggler *stragglers; /* one per rank, most often last first */
    int nstragglers;
    struct sp_finding findings[SP_CAUSE_N];
    int nfindings;         /* by gain, largest first */
    double ideal_step_ms;  /* every found cause removed together; 0 unknown */
    double replay_step_ms; /* the replay of the job as recorded */
    struct sp_whatif_check check;
    /* What the what-if replay found, kept after the findings for the
     * passes that replay a counterfactual again as it was priced (the
     * ideal, the check, whatif below): the straggler set, the stage and
     * the link scale it chose (model_int.h); NULL before the findings. */
    struct sp_replay *replay;
    /* The counterfactual asked for with sp_model_keep_whatif, node by node */
    struct sp_whatif_nodes whatif;
    /* The cause table (causes.h: sp_cause_table), SP_CAUSE_N rows, as the
     * passes read it: the table names their rules, evidence writers and
     * counterfactuals, so they take it from the model instead of calling
     * back into it. */
    const struct sp_cause_info *causes;
    int pipeline_stages, micro_batches; /* 0 when not pipelined */
    const char *pipeline_schedule;      /* "GPipe", "1F1B"; NULL unknown or not pipelined */
    enum sp_stage done;                 /* the last pass run */
    /* Warnings, each once: a warning made again from the same message
     * format is counted into the first ("... (and 3 more like it)"); past
     * SP_MODEL_MAX_WARNINGS distinct ones, the last says how many more
     * there were. */
    char *warnings[SP_MODEL_MAX_WARNINGS];
    int nwarnings;
    struct sp_warn_count *warn_count; /* how they are counted (model_util.c's) */
    int *missing_ranks;               /* ranks below world_size with no trace, ascending */
    int nmissing;
    uint64_t events, dropped;
    uint64_t gpu_events; /* GPU activity records on the ranks' own files */
    uint64_t api_events; /* CUDA runtime and NCCL calls on them */
    struct sp_file_rec *frecs;
    int nfrecs, files_bad;
    /* while grouping (model_load.c): where files' parents, ranks and
     * hosts are looked up (NULL: none) */
    struct sp_group_index *grouping;
    char run[64];         /* the run analyzed ("" when the traces name none) */
    int runs_found;       /* distinct runs in the directory (refused when > 1 without --run) */
    int files_other_runs; /* files of other runs left out (--run) */
    /* Summaries (scaleprof reduce, model_summary.c): what they hold for
     * pass 2, NULL when the model reads traces; and in reduce, the ranks
     * pass 2 classifies here (the others are other hosts'), NULL all. */
    void *reduced;
    const uint8_t *classify_only;
};

/* Opens the trace set under dir: finds the *.sprof files (recursively),
 * reads them (pass 1), groups processes under ranks and aligns host
 * clocks (SP_STAGE_LOAD).  Returns 0, or -1 when there is nothing to
 * analyze (m->warnings say why).  Free m with sp_model_free either way. */
int sp_model_open(const char *dir, const struct sp_model_opts *o, struct sp_model *m);
/* Runs the passes after the last one done, up to and including `until`.
 * Returns 0, or -1 when a pass found nothing to work on (say, no step to
 * classify; m->warnings say why): the passes before it stay valid. */
int sp_model_run(struct sp_model *m, enum sp_stage until);
/* Asks the findings stage (not run yet) to keep cause's counterfactual
 * node by node in m->whatif (SP_CAUSE_N: the job replayed as recorded).
 * Two int64 per replay node. */
void sp_model_keep_whatif(struct sp_model *m, int cause);
/* sp_model_open, then every pass. */
int sp_model_analyze(const char *dir, const struct sp_model_opts *o, struct sp_model *m);
/* The warm-up steps skipped: opts.skip when given (>= 0), else the
 * default for these traces (none in a step window). */
int sp_model_skip(const struct sp_model *m);
void sp_model_free(struct sp_model *m);

/* The warnings an analysis makes over a finished model, which it takes
 * const: in order, each with the format it was made from (what the
 * model counts alike warnings by), until its caller adds them to the
 * model's (sp_model_warn_all) where its renderers read them. */
struct sp_warn_list {
    const char **fmt;
    char **text;
    int n, cap;
};
/* Adds w's warnings to m's in order, as if each had been made there with
 * sp_model_warn (alike ones counted into the first, past the cap
 * counted), and empties w. */
void sp_model_warn_all(struct sp_model *m, struct sp_warn_list *w);
void sp_warn_list_free(struct sp_warn_list *w);

/* Transfer-weighted mean bus bandwidth of the collectives in view, GB/s:
 * spans 1 only those spanning hosts, 0 only those within a host, -1 all.
 * *transfer_ms (when not NULL) receives their summed transfer time. */
double sp_model_busbw(const struct sp_model *m, int spans, double *transfer_ms);

/* The CPU cores the job's own processes (those of its ranks and their
 * helpers) on host index `host` kept busy, from their CPU samples: each
 * process's CPU time over its sampled life, summed.  *ncores gets the
 * host's cores (0 unknown).  -1 when none of them was sampled.  Unlike
 * the host's busy figure, other users' processes are not in it. */
double sp_model_job_cores(const struct sp_model *m, int host, int *ncores);

/* How the job was laid out, for people: "4 ranks in 1 process (4 GPUs)",
 * "8 ranks in 8 processes (one GPU each)". */
void sp_model_layout_text(const struct sp_model *m, char *out, size_t len);

/* Per-rank view helpers for the verbs. */
double sp_model_rank_step_ms(const struct sp_model *m, const struct sp_rank *r);
/* The component ("compute", "memcpy", "input", "host", "other", "mixed")
 * whose excess over the other ranks' median explains rank index i's
 * excess, as the arrival table and the straggler finding say it. */
const char *sp_model_straggler_cause(const struct sp_model *m, int i);
void sp_model_rank_breakdown(const struct sp_model *m, const struct sp_rank *r, double out[SP_CAT_N]);

#endif
