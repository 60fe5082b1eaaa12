/*
 * import_kineto.h - convert one PyTorch-profiler (Kineto) trace into one
 * scaleprof trace file (DIR/<host>/<pid>.sprof).
 *
 * The mapping rules (docs/import.md lists them with examples) are pure
 * functions of one Kineto event, plus two small bounded tables: interned
 * names and per-communicator sequence counters.  The conversion streams:
 * memory does not depend on the size of the input.
 */
#ifndef SP_IMPORT_KINETO_H
#define SP_IMPORT_KINETO_H

#include <stddef.h>
#include <stdint.h>

#include "import_json.h"

#define SP_IMPORT_HOST "imported" /* Kineto traces do not name their host */
#define SP_IMPORT_SKIP_KINDS 16   /* distinct skipped categories counted by name */

/* Bounds on what one input may make (docs/import.md).  Past one, the
 * conversion goes on without the excess, and fails at the end with a
 * message naming the bound, how much was left out and the byte of the
 * JSON text where it began.  The reader's own bounds (depth, token
 * length) stop the conversion where they are passed. */
#define SP_IMPORT_NAMES_MAX 49152       /* distinct kernel and step names */
#define SP_IMPORT_NAME_BYTES (4u << 20) /* their text, in the trace's string arena */
#define SP_IMPORT_COMMS_MAX 1024        /* communicators (process groups) */
#define SP_IMPORT_RANKS_MAX 1048576     /* distributedInfo world_size */
enum sp_import_bound {
    SP_BOUND_NAMES,
    SP_BOUND_COMMS,
    SP_BOUND_RANKS,
    SP_BOUNDS
};

struct sp_import_opts {
    const char *outdir;
    int force; /* replace an existing output file */
};

/* What one conversion did: the summary line is printed from this. */
struct sp_import_summary {
    uint64_t events; /* scaleprof events written */
    uint64_t kernels, nccl, memcpy, memset, cuda, steps, dataloader;
    uint64_t p2p_no_peer; /* sends and recvs whose peer the trace does not name */
    uint64_t dropped;     /* events the writer could not take */
    uint64_t skipped_total;
    struct {
        char cat[32];
        uint64_t n;
    } skipped[SP_IMPORT_SKIP_KINDS];
    struct {
        uint64_t n;      /* events (names, collectives, headers) left out */
        uint64_t offset; /* byte of the first, in the JSON text */
    } bounds[SP_BOUNDS];
    char out_path[4096 + 64]; /* DIR/<host>/<pid>.sprof */
    char tmp_path[4096 + 64]; /* converted, not yet placed there: "" once placed */
    struct sp_kineto_meta meta;
    struct sp_kineto_result read;
    int64_t pid;
};

/* Convert `in`.  Returns 0 on success; -1 on failure with a message in
 * err.  When the input is malformed or truncated part way, the events
 * before the error are still written to a valid, closed output file
 * (sum->out_path says where) and -1 is returned. */
int sp_import_kineto_file(const char *in, const struct sp_import_opts *opts,
                          struct sp_import_summary *sum, char *err, size_t errlen);

/* The two halves of sp_import_kineto_file, for converting several files
 * in parallel and placing their outputs in the order given (so that two
 * inputs of one pid behave as they would one after the other):
 * sp_import_kineto_convert writes a closed output under a temporary name
 * (sum->tmp_path, when there is one; same returns and messages), and
 * sp_import_kineto_place renames it to sum->out_path: 0, or -1 with err
 * replaced (the name exists without opts->force, or the rename failed).
 * Conversions share nothing and may run in any threads; placing is done
 * by one thread. */
int sp_import_kineto_convert(const char *in, const struct sp_import_opts *opts,
                             struct sp_import_summary *sum, char *err, size_t errlen);
int sp_import_kineto_place(struct sp_import_summary *sum, const struct sp_import_opts *opts, char *err,
                           size_t errlen);

/* Format the one-line summary ("imported N events: ...; skipped ..."). */
void sp_import_format_summary(const struct sp_import_summary *sum, char *buf, size_t len);

/* The mapping helpers, exposed for their tests. */
int sp_import_copy_kind(const char *memcpy_name); /* enum sp_copy_kind */
/* "Memcpy HtoD (Pageable -> Device)": enum sp_mem_kind of each side, 0 unknown */
void sp_import_mem_kinds(const char *memcpy_name, int *src, int *dst);
int sp_import_cuda_api(const char *runtime_name);                       /* enum sp_cuda_api, 0 skip */
int sp_import_nccl_op(const char *collective, const char *kernel_name); /* enum sp_nccl_op, 0 unknown */
int sp_import_is_nccl_kernel(const char *name);
int sp_import_dtype(const char *dtype, unsigned *size); /* ncclDataType_t, -1 unknown */

#endif
