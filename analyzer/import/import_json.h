/*
 * import_json.h - a streaming reader of PyTorch-profiler (Kineto) JSON.
 *
 * It turns one trace file, plain or gzip, into a sequence of flat event
 * records handed to a callback, one per element of "traceEvents", plus the
 * few top-level facts the importer needs (distributedInfo,
 * baseTimeNanoseconds).  Memory does not grow with the file: only the
 * event being parsed is kept, in fixed-size fields; names longer than
 * their field are truncated (and flagged).
 *
 * Times are converted from the text of the JSON number (microseconds,
 * possibly fractional or with an exponent) straight to integer
 * nanoseconds, never through a double, so "1623142623460111.123" keeps
 * its last nanosecond.
 *
 * Errors are values: sp_kineto_read() returns 0 or -1, and on -1 the
 * result carries a message with the byte offset and line:column where
 * reading stopped.  Every event completed before that point has already
 * been delivered.
 *
 * Bounds (docs/import.md): nesting deeper than SP_KINETO_DEPTH_MAX, or one
 * string, number or literal longer than SP_KINETO_TOKEN_MAX bytes, stops
 * reading there with a message naming the bound.  yajl would otherwise
 * keep one byte per open level and re-read a token split across chunks
 * from its start at every chunk: memory linear and time quadratic in the
 * input.
 */
#ifndef SP_IMPORT_JSON_H
#define SP_IMPORT_JSON_H

#include <stddef.h>
#include <stdint.h>

#define SP_KINETO_NAME_MAX 4096        /* kernel names run to a few KiB */
#define SP_KINETO_SHORT_MAX 128        /* cat, ph, dtype, collective, group names */
#define SP_KINETO_DIM_MAX 3            /* grid and block are [x, y, z] */
#define SP_KINETO_DEPTH_MAX 1024       /* open maps and arrays; Kineto writes 6 */
#define SP_KINETO_TOKEN_MAX (1u << 20) /* bytes of one string or number */
#define SP_KINETO_GROUP_MAX 64         /* ranks of "Process Group Ranks" kept: PyTorch
                                          lists 30 at most, then "..., last" */

/* One element of traceEvents, flattened.  `has_*` says a field was seen;
 * numbers default to 0 and the signed ids to -1. */
struct sp_kineto_event {
    char ph[8];
    char cat[SP_KINETO_SHORT_MAX];
    char name[SP_KINETO_NAME_MAX];
    size_t name_len;
    int name_truncated;
    int64_t pid; /* -1 when absent or not a number ("Spans") */
    int64_t tid; /* trailing number of a string tid ("stream 7") */
    int has_ts, has_dur;
    int64_t ts_ns; /* trace clock, ns */
    int64_t dur_ns;
    /* args */
    int64_t correlation, stream, device; /* -1 unknown */
    uint64_t bytes;
    uint64_t grid[SP_KINETO_DIM_MAX], block[SP_KINETO_DIM_MAX];
    int grid_n, block_n;
    char collective[SP_KINETO_SHORT_MAX]; /* args "Collective name" */
    char dtype[SP_KINETO_SHORT_MAX];
    char pg_name[SP_KINETO_SHORT_MAX]; /* args "Process Group Name" */
    int has_pg_name;
    uint64_t in_nelems;
    int64_t group_size; /* -1 unknown */
    int64_t pg_rank;    /* this rank's index in "Process Group Ranks", -1 unknown */
    /* "Process Group Ranks" (text "[0, 8, 16]" or an array): the global
     * ranks of the group, in group-rank order; the first ones are kept. */
    int has_group;
    int group_n;        /* entries in group[] */
    int group_elided;   /* the list goes on past group[] ("..." or longer) */
    int64_t group_last; /* the last rank listed, -1 none */
    int64_t group[SP_KINETO_GROUP_MAX];
    int64_t src_rank, dst_rank; /* "Src Rank" (recv), "Dst Rank" (send): global ranks, -1 unknown */
    int64_t rank_arg;           /* "Rank" (record_param_comms; a send's or recv's peer in the group), -1 */
    int64_t external_id;        /* "External id": links a kernel to the cpu op that launched it, -1 */
    int has_seq;
    uint64_t seq;    /* args "Seq" */
    uint64_t offset; /* byte of the JSON text where the event's map opened */
};

/* Top-level facts; filled as they are met (Kineto writes distributedInfo
 * before traceEvents, baseTimeNanoseconds after). */
struct sp_kineto_meta {
    int has_dist;
    int64_t rank, world_size; /* -1 unknown */
    char backend[SP_KINETO_SHORT_MAX];
    uint64_t dist_offset; /* byte where distributedInfo opened */
    int has_base;
    uint64_t base_ns; /* realtime ns = base_ns + ts_ns */
    int saw_trace_events;
    int bare_array; /* the document is the array of events (no "traceEvents") */
};

struct sp_kineto_result {
    int gzip;            /* the input was gzip-compressed */
    uint64_t bytes;      /* JSON bytes parsed (uncompressed) */
    uint64_t events;     /* traceEvents elements delivered */
    uint64_t err_offset; /* byte offset of the error in the JSON text */
    uint64_t err_line, err_col;
    char err[1024]; /* "" when no error */
    int bound;      /* reading stopped at one of the bounds above */
};

/* Called once per completed event; return 0 to go on, non-zero to stop
 * (sp_kineto_read then fails with the callback's message in res->err if
 * it wrote one, else "stopped by the importer"). */
typedef int (*sp_kineto_event_fn)(void *ctx, const struct sp_kineto_event *ev,
                                  const struct sp_kineto_meta *meta);

/* Stream `path` (plain or gzip JSON).  Returns 0 when the whole file was
 * a Kineto trace, -1 otherwise with res->err set (unreadable, malformed,
 * truncated, or not a Kineto trace: no traceEvents array). */
int sp_kineto_read(const char *path, sp_kineto_event_fn fn, void *ctx,
                   struct sp_kineto_meta *meta, struct sp_kineto_result *res);

/* The index (group rank) of global rank `rank` in the event's "Process
 * Group Ranks", -1 when the list does not say.  A list elided by the
 * profiler ("[0, 2, 4, ..., 62]") still places its last rank (index
 * "Group size" - 1) and, when the ranks it shows are evenly spaced and the
 * last one continues that spacing, any rank on it. */
int64_t sp_kineto_group_index(const struct sp_kineto_event *ev, int64_t rank);

/* Parse the decimal text of a JSON number into an integer scaled by
 * 10^pow10 (3: microseconds to nanoseconds), rounding to nearest.
 * Returns 0, or -1 when the text is not a number or does not fit. */
int sp_kineto_parse_scaled(const char *s, size_t len, int pow10, int64_t *out);

#endif
