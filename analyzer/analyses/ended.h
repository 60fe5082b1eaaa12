/*
 * ended.h - the ranks whose process did not end well: a fatal signal, a
 * non-zero exit, or a trace that ended without closing, each with the
 * last activity its trace recorded.  Asked by run (when a rank failed),
 * report (its first lines) and hang.
 *
 * How a process ended comes from two places.  The trace itself: a process
 * that exits closes its file (the header's CLOSED flag) after an EXIT
 * event; one killed or crashed leaves it unclosed, and the recorder
 * installs no signal handler (signals are the job's), so the trace alone
 * cannot say which signal.  And `scaleprof run`'s record: the launcher
 * waits for every rank and writes how each ended into
 * DIR/exit-status.<host> (SP_ENDED_FILE), a text file of lines
 *
 *   rank R pid P exit STATUS [stopped]
 *   rank R pid P signal N [stopped]
 *
 * "stopped": the launcher itself ended it (SIGTERM, then SIGKILL) after
 * another rank failed.  A record applies to the rank's trace with that pid
 * and rank; lines that do not parse are skipped.
 */
#ifndef SP_ENDED_H
#define SP_ENDED_H

#include <stddef.h>
#include <stdint.h>

#include "model.h"

#define SP_ENDED_FILE "exit-status"
#define SP_ENDED_TEXT 768

enum sp_ended_how {
    SP_ENDED_SIGNAL,   /* the launcher saw a fatal signal */
    SP_ENDED_EXIT,     /* a non-zero exit status (the launcher's, or the trace's EXIT) */
    SP_ENDED_UNCLOSED, /* no record: the trace ended without closing (killed or crashed) */
};

struct sp_ended {
    int rank;
    int32_t pid;
    const char *host;
    int how;                  /* enum sp_ended_how */
    int code;                 /* the signal or the exit status */
    int stopped;              /* the launcher stopped it after another rank failed */
    int closed;               /* its trace was closed */
    double before_s;          /* its trace ends this long before the job's traces */
    char last[SP_ENDED_TEXT]; /* its last recorded activity, in words */
};

struct sp_ended_set {
    struct sp_ended *v; /* those that failed first (by trace end), then those stopped */
    int n;
    int recorded; /* a launcher's record was found */
};

/* Finds them in an opened model (SP_STAGE_LOAD or later); 0, or -1 out of
 * memory (what was found stays valid).  A rank whose process is still
 * running (its file mapped by a live process here) is not one. */
int sp_ended_analyze(const struct sp_model *m, struct sp_ended_set *out);
void sp_ended_free(struct sp_ended_set *s);

/* "killed by signal 11 (SIGSEGV)", "exited with status 3", "its trace
 * ended without closing: killed or crashed". */
void sp_ended_how_text(const struct sp_ended *e, char *out, size_t len);

/* The set in sentences, each passed to line(): a sentence per rank that
 * failed, the first to end first, with its last activity; ranks that
 * ended the same way as one before, within SP_ENDED_GROUP_S of the end of
 * the traces (a job killed whole), and those the launcher stopped, one
 * sentence each group. */
#define SP_ENDED_GROUP_S 1.0
void sp_ended_text(const struct sp_ended_set *s, void (*line)(const char *text, void *arg), void *arg);

/* The ranks of s that failed by a launcher's record (a non-zero exit, or
 * a signal other than SIGKILL, SIGTERM and SIGINT, which a job killed
 * whole gets too; not stopped by it), into out (at most max); how many. */
int sp_ended_failed(const struct sp_ended_set *s, int *out, int max);

/* The set as the JSON array "ended" (docs/report-json.md). */
struct sp_json;
void sp_ended_json(struct sp_json *j, const struct sp_ended_set *s);

/* SIGSEGV for 11; "signal N" for one without a name. */
const char *sp_signal_name(int sig, char *buf, size_t len);

/* Appends one line to dir's record (SP_ENDED_FILE.<host>); for run. */
int sp_ended_record(const char *dir, int rank, int pid, int wait_status, int stopped);

/* The launcher's records (SP_ENDED_FILE.*) under from copied into to;
 * returns how many could not be. */
int sp_ended_copy_records(const char *from, const char *to);

#endif
