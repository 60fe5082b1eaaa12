/*
 * launch.h - starting a job with the recorder attached, as `scaleprof
 * run` does (launch.c): the options settled into ranks and nodes, the
 * job run and waited for, and what to run next on its traces.
 */
#ifndef SP_LAUNCH_H
#define SP_LAUNCH_H

#include <stddef.h>

#define SP_LAUNCH_MAX_PROCS 1024
#define SP_LAUNCH_DEFAULT_DIR "scaleprof-out"
#define SP_LAUNCH_DEFAULT_PORT "29500"
/* The status of a job whose command did not start (as a shell says it). */
#define SP_LAUNCH_NOT_STARTED 127

struct sp_launch_opts {
    const char *dir;
    const char *preload;
    const char *master_port;
    int nproc;    /* ranks started here; 0: one process, no rank variables */
    int per_node; /* --nproc_per_node: ranks per node (0: not given), settled into nproc */
    int nnodes;
    int node_rank;           /* --node_rank: this launcher starts that real node's ranks; -1 all nodes here */
    int world;               /* WORLD_SIZE: nproc, or nnodes x nproc for one real node (settled) */
    const char *master_addr; /* NULL: 127.0.0.1 unless MASTER_ADDR is set */
    int sim;
    int force;      /* --force: add to a directory that holds traces already */
    int keep_going; /* --keep-going: a failed rank does not stop the others */
    char **cmd;
};

/* The ranks this launcher starts (nproc) and the job's (world), from
 * nproc or per_node, nnodes and node_rank.  0, or -1 after saying on
 * stderr why the options do not make a job. */
int sp_launch_settle(struct sp_launch_opts *o);

/* Runs o->cmd with the recorder attached: the environment, the output
 * directory (its absolute path in outdir), the ranks started, waited for
 * and stopped when one fails (unless keep_going); *failed set when a rank
 * failed.  The worst status of the ranks (SP_LAUNCH_NOT_STARTED: the
 * command did not start), or -1 when the job could not be set up (said
 * on stderr). */
int sp_launch_run(const struct sp_launch_opts *o, char *outdir, size_t len, int *failed);

/* The number of trace files (*.sprof) under dir, a few levels down. */
int sp_launch_traces_in(const char *dir);

/* On stderr: how the ranks that failed ended (when failed), then the next
 * step that will work on outdir's traces: report, unless they saw no GPU
 * (compare and html would refuse them): then report's host-side view and
 * the host timeline, or with no rank either (nothing export can group) a
 * file's events. */
void sp_launch_next_step(const char *outdir, int failed);

#endif
