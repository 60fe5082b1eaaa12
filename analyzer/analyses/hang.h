/*
 * hang.h - post-mortem of a hung or crashed job: which collective the job
 * stopped in, who never arrived, what those ranks were doing last, and
 * which ranks called different collectives at the same sequence number.
 *
 * The analysis works on the model after SP_STAGE_LOAD (the NCCL calls of
 * every rank, matched to their kernels) and, when asked (deep), one pass
 * of its own over the files of the ranks concerned: a small ring of the
 * last events per recording thread, the GPU work each process launched
 * and finished, its last CPU samples, and the syncs that returned after a
 * collective was entered (a completion seen from the host when CUPTI lost
 * the kernel's record).  Memory: per file, SP_HANG_MAX_THREADS rings of
 * `events` entries and SP_HANG_CPU_RING samples, whatever the trace's
 * length.
 *
 * What the trace can support (docs/analysis.md, "Hangs"): a call is
 * recorded when it returns, so a call still in progress when the process
 * was killed leaves no event; "entered" is a recorded NCCL host call;
 * "completed" is its kernel's end recorded, or a sync of its stream that
 * returned after it.  CUPTI records not yet flushed when a process is
 * killed are lost (up to a second with the preload), so an instance
 * entered everywhere without a recorded completion is shown as
 * unconfirmed, never as the cause.
 *
 * Errors are values: sp_hang_analyze returns 0, or -1 on memory
 * exhaustion (what was found stays valid).
 */
#ifndef SP_HANG_H
#define SP_HANG_H

#include <stdint.h>

#include "model.h"

#define SP_HANG_EVENTS_DEFAULT 4 /* last events shown per thread */
#define SP_HANG_EVENTS_MAX 64
#define SP_HANG_MAX_THREADS 256 /* threads followed per file; more are counted */
#define SP_HANG_CPU_RING 64     /* last CPU samples kept per file */
#define SP_HANG_MIN_S 1.0       /* a pending collective is a hang only after this */
#define SP_HANG_GAP_FACTOR 10.0 /* ... and after this many of its usual gaps */
#define SP_HANG_TEXT 1024

struct sp_hang_opts {
    int events;        /* last events kept per thread (1..SP_HANG_EVENTS_MAX) */
    double min_hang_s; /* > 0: a fixed bar instead of the default rule */
    int deep;          /* read the files of the ranks concerned (the verb); 0: model only (report) */
};
void sp_hang_opts_default(struct sp_hang_opts *o);

/* One event of a thread's ring, described for people. */
struct sp_hang_ev {
    int64_t t, dur;
    char what[160];
};
struct sp_hang_thread {
    uint32_t tid;
    int main; /* the thread that issued the rank's NCCL calls (or tid == pid) */
    int n;    /* events in ev, oldest first */
    struct sp_hang_ev *ev;
    int64_t last_t; /* global time of its last event */
};

/* A process of a rank as the end of its trace shows it. */
enum sp_hang_proc_state { SP_HANG_CLOSED,
                          SP_HANG_KILLED,
                          SP_HANG_OPEN };
struct sp_hang_proc {
    int32_t pid;
    int helper; /* a loader worker or other child of the rank */
    const char *path;
    int state;                  /* enum sp_hang_proc_state */
    int exit_status;            /* from its exit event, -1 none */
    int64_t last_t;             /* global: its last event other than a CPU sample */
    int64_t end_t;              /* global: its last event of any kind (CPU samples too) */
    uint64_t launches, kernels; /* kernels launched, kernel records (non-NCCL) */
    int64_t gpu_end;            /* global end of its last GPU record, 0 none */
    double cpu_share;           /* CPU use, cores, over the last samples; < 0 unknown */
    double cpu_span_s;          /* ... over this long */
    int cpu_since_last;         /* ... counted from the first sample after last_t */
    struct sp_hang_thread *threads;
    int nthreads, threads_dropped;
};

/* What one rank was doing when the traces end. */
struct sp_hang_rank {
    int rank;
    const char *state; /* in_collective | gpu_wait | own_code_after_launch |
                          input_wait | reading | exited | silent | unknown */
    char doing[SP_HANG_TEXT];
    int64_t last_t, end_t; /* global: last activity, end of its trace */
    struct sp_hang_proc *procs;
    int nprocs;
};

/* An instance some ranks entered and nobody completed. */
struct sp_hang_inst {
    uint64_t comm, seq, bytes;
    uint32_t op, dtype, nranks;
    int hung;     /* pending long enough to be a hang, or stranded (else: the job was stopped while running) */
    int stranded; /* a member that never entered it had exited: it could never complete, however
                   * short the wait (a launcher stopped the others at once, as torchrun does) */
    int inside;   /* every member entered it: stuck inside the collective */
    int *entered, nentered, *missing, nmissing, *absent, nabsent;
    int absent_unnamed;                      /* members with no trace whose ranks are unknown */
    uint64_t last_done;                      /* last instance of the communicator known complete, 0 none */
    int64_t last_done_t;                     /* global end of it, 0 none */
    uint64_t unconfirmed_lo, unconfirmed_hi; /* entered by all, completion not recorded; 0 none */
    int64_t first_entry_t,
        last_entry_t; /* global: first entry of this instance, last entry of any call on the comm */
    double pending_s; /* from the last entry on the comm to the end of the traces */
    double bar_s;     /* the bar pending_s had to pass */
    double hung_s;    /* from last_done_t (else first_entry_t) to the end */
    /* The member that stopped making progress first: its trace (CPU
     * samples included, so it ran until its process stopped) ends
     * stalled_s before any other member's, by SP_HANG_MIN_S or more, and
     * was not closed (stopped, frozen, killed or crashed, not exited);
     * -1 none. */
    int stalled_rank;
    double stalled_s;
};

/* Ranks that called different collectives at the same (comm, seq). */
struct sp_hang_call {
    uint32_t op, dtype;
    uint64_t bytes;
    int *ranks;
    int nranks;
};
struct sp_hang_desync {
    uint64_t comm, seq;
    struct sp_hang_call a, b; /* a: the call most ranks made; b: the other */
    int kinds;                /* distinct calls at this seq (2 or more) */
    uint64_t later;           /* later sequence numbers of the comm that mismatch too */
};

/* A communicator: per rank with a trace, the last sequence number it
 * entered and the last whose completion it recorded (0: none). */
struct sp_hang_member {
    int rank;
    uint64_t entered, completed;
};
struct sp_hang_comm {
    uint64_t comm;
    uint32_t nranks;
    uint64_t last_completed; /* on any rank: every instance up to it is complete */
    struct sp_hang_member *members;
    int nmembers;
};

struct sp_hang {
    int64_t end_t; /* global end of the job's traces */
    struct sp_hang_comm *comms;
    int ncomms;
    struct sp_hang_inst *insts; /* one per communicator with a pending instance */
    int ninsts, nhung;
    struct sp_hang_desync *desyncs;
    int ndesyncs;
    struct sp_hang_rank *ranks; /* ranks of the hung instances, missing first (deep only) */
    int nranks;
    double hung_s;                /* the job: min over hung instances, < 0 when none */
    int completion_known;         /* some call of the job has a recorded completion */
    int cpu_sampled;              /* some file has CPU samples (the traces run until the end) */
    struct sp_warn_list warnings; /* trace files the deep pass cannot read here */
};

/* Finds pending and hung instances and desyncs in the model (after
 * SP_STAGE_LOAD); with o->deep, reads the files of the ranks concerned
 * (sp_trace_feed) to say what each was doing, and says in h->warnings
 * (for m: sp_model_warn_all) which it cannot read.  Free h with
 * sp_hang_free. */
/* The entry of `rank` in h->ranks (filled with deep analysis), NULL if none. */
const struct sp_hang_rank *sp_hang_rank_of(const struct sp_hang *h, int rank);
int sp_hang_analyze(const struct sp_model *m, const struct sp_hang_opts *o, struct sp_hang *h);
/* A pending instance that a rank which failed (a fatal signal or a
 * non-zero exit the launcher recorded, sp_ended_failed) never entered can never
 * complete: marked hung and stranded, as mark_stranded does for a rank
 * whose trace shows it exited. */
void sp_hang_mark_failed(struct sp_hang *h, const int *ranks, int n);

void sp_hang_free(struct sp_hang *h);
/* "allreduce", ...; "op" unknown. */
const char *sp_hang_op_name(uint32_t op);

#endif
