/*
 * schema.c - the event codec's exported entry points and the schema's
 * introspection tables, all generated from the one SP_EVENTS table in
 * sprof.h.
 *
 * The codec itself (encoding, per-chunk state, generated per-type encoders
 * and decoders) lives in codec.h, so that the writer and the reader can
 * inline it; its top comment describes the encoding and docs/format.md
 * specifies it.  Here are the out-of-line pieces: long varints, the
 * exported sp_encode_event/sp_decode_event, and the tables that `scaleprof
 * dump` and the tests walk (field names, kinds, offsets; enum names).
 *
 * Introspection shows what a field holds, not how it is coded: a DUR
 * field is a duration (SP_FK_D) and a DS field an unsigned value
 * (SP_FK_U).
 */
#include <stddef.h>
#include <string.h>

#include "codec.h"
#include "sprof.h"
#include "summary.h"

int sp_get_uvarint_long(const uint8_t **pp, const uint8_t *end, uint64_t *out)
{
    const uint8_t *p = *pp;
    uint64_t v = 0;
    for (int shift = 0; shift < 7 * SP_VARINT_MAX; shift += 7) {
        if (p >= end)
            return SP_E_CORRUPT;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return SP_E_CORRUPT;
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *pp = p;
            *out = v;
            return 0;
        }
    }
    return SP_E_CORRUPT;
}

void sp_codec_reset(struct sp_codec_state *st)
{
    memset(st, 0, sizeof *st);
}

size_t sp_encode_event(uint8_t *out, const struct sp_event *ev, struct sp_codec_state *st)
{
    return sp_codec_encode(out, ev, st);
}

long sp_decode_event(const uint8_t *p, const uint8_t *end, struct sp_event *ev,
                     struct sp_codec_state *st)
{
    return sp_codec_decode(p, end, ev, st);
}

/* ---- field tables ------------------------------------------------------------ */

/* Per type, the position of its DUR field among its fields, -1 when it
 * has none: the only field a time walk must read. */
#define SM_IS_DUR_U 0
#define SM_IS_DUR_S 0
#define SM_IS_DUR_D 0
#define SM_IS_DUR_DS 0
#define SM_IS_DUR_STR 0
#define SM_IS_DUR_DUR 1
#define SM_X_FIND(kind, field)      \
    if (SM_IS_DUR_##kind && at < 0) \
        at = i;                     \
    i++;
static int dur_index(unsigned type)
{
    int at = -1, i = 0;
    switch (type) {
#define SM_X_CASE(id, NAME, name, FIELDS) \
    case id:                              \
        FIELDS(SM_X_FIND)                 \
        break;
        SP_EVENTS(SM_X_CASE)
#undef SM_X_CASE
    default:
        break;
    }
    (void)i;
    return at;
}
#undef SM_X_FIND

int sp_schema_dur_at[SP_EV_MAX];
static int dur_at_ready; /* benign race: every thread computes the same */

void sp_schema_dur_init(void)
{
    if (__atomic_load_n(&dur_at_ready, __ATOMIC_ACQUIRE))
        return;
    for (unsigned t = 0; t < SP_EV_MAX; t++)
        sp_schema_dur_at[t] = dur_index(t);
    __atomic_store_n(&dur_at_ready, 1, __ATOMIC_RELEASE);
}


/* offsetof needs the member path spelled out per type, so each type gets
 * its own field macro naming its union member. */
#define SP_FK_OF_U SP_FK_U
#define SP_FK_OF_S SP_FK_S
#define SP_FK_OF_STR SP_FK_STR
#define SP_FK_OF_D SP_FK_D
#define SP_FK_OF_DUR SP_FK_D
#define SP_FK_OF_DS SP_FK_U
#define SP_X_DESC_FIELD_FOR(member, kind, field) \
    {#field, SP_FK_OF_##kind, offsetof(struct sp_event, member.field)},
#define SP_X_MK(id, NAME, name, FIELDS) \
    static const struct sp_field_desc fields_##name[] = {FIELDS(SP_DESC_##name)};
#define SP_DESC_nccl(k, f) SP_X_DESC_FIELD_FOR(nccl, k, f)
#define SP_DESC_comm(k, f) SP_X_DESC_FIELD_FOR(comm, k, f)
#define SP_DESC_gpu(k, f) SP_X_DESC_FIELD_FOR(gpu, k, f)
#define SP_DESC_cuda(k, f) SP_X_DESC_FIELD_FOR(cuda, k, f)
#define SP_DESC_io(k, f) SP_X_DESC_FIELD_FOR(io, k, f)
#define SP_DESC_wait(k, f) SP_X_DESC_FIELD_FOR(wait, k, f)
#define SP_DESC_marker(k, f) SP_X_DESC_FIELD_FOR(marker, k, f)
#define SP_DESC_proc(k, f) SP_X_DESC_FIELD_FOR(proc, k, f)
#define SP_DESC_cpu(k, f) SP_X_DESC_FIELD_FOR(cpu, k, f)
#define SP_DESC_dropped(k, f) SP_X_DESC_FIELD_FOR(dropped, k, f)
#define SP_DESC_clock(k, f) SP_X_DESC_FIELD_FOR(clock, k, f)
#define SP_DESC_thread(k, f) SP_X_DESC_FIELD_FOR(thread, k, f)
SP_EVENTS(SP_X_MK)

struct type_desc {
    const char *name;
    const struct sp_field_desc *fields;
    int nfields;
};

static const struct type_desc types[SP_EV_MAX] = {
#define SP_X_TYPE(id, NAME, name, FIELDS) \
    [id] = {#name, fields_##name, (int)(sizeof fields_##name / sizeof fields_##name[0])},
    SP_EVENTS(SP_X_TYPE)
#undef SP_X_TYPE
};

static const struct type_desc *type_desc(int type)
{
    if (type <= SP_EV_NONE || type >= SP_EV_MAX || !types[type].name)
        return NULL;
    return &types[type];
}

const char *sp_event_name(int type)
{
    const struct type_desc *d = type_desc(type);
    return d ? d->name : NULL;
}

const struct sp_field_desc *sp_event_fields(int type, int *n)
{
    const struct type_desc *d = type_desc(type);
    if (n)
        *n = d ? d->nfields : 0;
    return d ? d->fields : NULL;
}

/* ---- enum names ------------------------------------------------------------------ */

static const char *const nccl_ops[] = {
    [SP_NCCL_ALLREDUCE] = "allreduce",
    [SP_NCCL_BROADCAST] = "broadcast",
    [SP_NCCL_REDUCE] = "reduce",
    [SP_NCCL_ALLGATHER] = "allgather",
    [SP_NCCL_REDUCESCATTER] = "reducescatter",
    [SP_NCCL_SEND] = "send",
    [SP_NCCL_RECV] = "recv",
    [SP_NCCL_ALLTOALL] = "alltoall",
    [SP_NCCL_GROUP_START] = "group_start",
    [SP_NCCL_GROUP_END] = "group_end",
    [SP_NCCL_GATHER] = "gather",
    [SP_NCCL_SCATTER] = "scatter",
};
static const char *const comm_kinds[] = {
    [SP_COMM_INIT] = "init",
    [SP_COMM_SPLIT] = "split",
    [SP_COMM_FINALIZE] = "finalize",
    [SP_COMM_DESTROY] = "destroy",
    [SP_COMM_ABORT] = "abort",
};
static const char *const gpu_kinds[] = {
    [SP_GPU_KERNEL] = "kernel",
    [SP_GPU_MEMCPY] = "memcpy",
    [SP_GPU_MEMSET] = "memset",
    [SP_GPU_NCCL_KERNEL] = "nccl_kernel",
};
static const char *const copy_kinds[] = {
    [SP_COPY_UNKNOWN] = "unknown",
    [SP_COPY_H2D] = "h2d",
    [SP_COPY_D2H] = "d2h",
    [SP_COPY_D2D] = "d2d",
    [SP_COPY_H2H] = "h2h",
};
static const char *const mem_kinds[] = {
    [SP_MEM_UNKNOWN] = "unknown",
    [SP_MEM_PAGEABLE] = "pageable",
    [SP_MEM_PINNED] = "pinned",
    [SP_MEM_DEVICE] = "device",
    [SP_MEM_MANAGED] = "managed",
    [SP_MEM_OTHER] = "other",
};
static const char *const cuda_apis[] = {
    [SP_CUDA_LAUNCH] = "launch",
    [SP_CUDA_GRAPH_LAUNCH] = "graph_launch",
    [SP_CUDA_DEVICE_SYNC] = "device_sync",
    [SP_CUDA_STREAM_SYNC] = "stream_sync",
    [SP_CUDA_EVENT_SYNC] = "event_sync",
    [SP_CUDA_STREAM_WAIT_EVENT] = "stream_wait_event",
    [SP_CUDA_MEMCPY] = "memcpy",
    [SP_CUDA_MEMCPY_ASYNC] = "memcpy_async",
    [SP_CUDA_MEMSET] = "memset",
    [SP_CUDA_SET_DEVICE] = "set_device",
    [SP_CUDA_MALLOC] = "malloc",
    [SP_CUDA_FREE] = "free",
};
static const char *const io_ops[] = {
    [SP_IO_OPEN] = "open",
    [SP_IO_CLOSE] = "close",
    [SP_IO_READ] = "read",
    [SP_IO_PREAD] = "pread",
    [SP_IO_READV] = "readv",
    [SP_IO_PREADV] = "preadv",
    [SP_IO_FREAD] = "fread",
    [SP_IO_WRITE] = "write",
    [SP_IO_RECV] = "recv",
    [SP_IO_MMAP] = "mmap",
    [SP_IO_FOPEN] = "fopen",
    [SP_IO_PWRITE] = "pwrite",
    [SP_IO_WRITEV] = "writev",
    [SP_IO_FWRITE] = "fwrite",
    [SP_IO_FSYNC] = "fsync",
    [SP_IO_FDATASYNC] = "fdatasync",
};
static const char *const fd_kinds[] = {
    [SP_FD_UNKNOWN] = "unknown",
    [SP_FD_FILE] = "file",
    [SP_FD_PIPE] = "pipe",
    [SP_FD_SOCKET] = "socket",
    [SP_FD_DEVICE] = "device",
    [SP_FD_OTHER] = "other",
};
static const char *const wait_ops[] = {
    [SP_WAIT_POLL] = "poll",
    [SP_WAIT_PPOLL] = "ppoll",
    [SP_WAIT_SELECT] = "select",
    [SP_WAIT_PSELECT] = "pselect",
    [SP_WAIT_EPOLL] = "epoll",
    [SP_WAIT_DATALOADER] = "dataloader",
};
static const char *const marker_kinds[] = {
    [SP_MARK_PUSH] = "push",
    [SP_MARK_POP] = "pop",
    [SP_MARK_INSTANT] = "instant",
    [SP_MARK_RANGE] = "range",
};
static const char *const proc_kinds[] = {
    [SP_PROC_FORK] = "fork",
    [SP_PROC_VFORK] = "vfork",
    [SP_PROC_SPAWN] = "spawn",
    [SP_PROC_EXEC] = "exec",
    [SP_PROC_EXIT] = "exit",
    [SP_PROC_SIGNAL] = "signal",
    [SP_PROC_START] = "start",
    [SP_PROC_STOP] = "stop",
};
static const char *const drop_reasons[] = {
    [SP_DROP_NO_SLOT] = "no_slot",
    [SP_DROP_STRINGS] = "strings",
    [SP_DROP_CUPTI] = "cupti",
    [SP_DROP_WRITE] = "write",
};

#define SP_NAMES(a) a, sizeof a / sizeof a[0]
struct enum_field {
    int type;
    const char *field;
    const char *const *names;
    size_t count;
};
static const struct enum_field enum_fields[] = {
    {SP_EV_NCCL, "op", SP_NAMES(nccl_ops)},
    {SP_EV_COMM, "kind", SP_NAMES(comm_kinds)},
    {SP_EV_GPU, "kind", SP_NAMES(gpu_kinds)},
    {SP_EV_GPU, "copy_kind", SP_NAMES(copy_kinds)},
    {SP_EV_GPU, "src_mem", SP_NAMES(mem_kinds)},
    {SP_EV_GPU, "dst_mem", SP_NAMES(mem_kinds)},
    {SP_EV_CUDA, "api", SP_NAMES(cuda_apis)},
    {SP_EV_CUDA, "copy_kind", SP_NAMES(copy_kinds)},
    {SP_EV_IO, "op", SP_NAMES(io_ops)},
    {SP_EV_IO, "fd_kind", SP_NAMES(fd_kinds)},
    {SP_EV_WAIT, "op", SP_NAMES(wait_ops)},
    {SP_EV_WAIT, "fd_kind", SP_NAMES(fd_kinds)},
    {SP_EV_MARKER, "kind", SP_NAMES(marker_kinds)},
    {SP_EV_PROC, "kind", SP_NAMES(proc_kinds)},
    {SP_EV_DROPPED, "reason", SP_NAMES(drop_reasons)},
};

/* ncclDataType_t, in nccl.h's order (enum sp_nccl_dtype). */
static const struct {
    const char *name;
    unsigned size;
} nccl_dtypes[SP_DTYPE_N] = {
    [SP_DTYPE_INT8] = {"int8", 1},
    [SP_DTYPE_UINT8] = {"uint8", 1},
    [SP_DTYPE_INT32] = {"int32", 4},
    [SP_DTYPE_UINT32] = {"uint32", 4},
    [SP_DTYPE_INT64] = {"int64", 8},
    [SP_DTYPE_UINT64] = {"uint64", 8},
    [SP_DTYPE_FLOAT16] = {"float16", 2},
    [SP_DTYPE_FLOAT32] = {"float32", 4},
    [SP_DTYPE_FLOAT64] = {"float64", 8},
    [SP_DTYPE_BFLOAT16] = {"bfloat16", 2},
    [SP_DTYPE_FP8E4M3] = {"fp8e4m3", 1},
    [SP_DTYPE_FP8E5M2] = {"fp8e5m2", 1},
};

const char *sp_nccl_dtype_name(uint64_t dtype)
{
    return dtype < SP_DTYPE_N ? nccl_dtypes[dtype].name : "?";
}

unsigned sp_nccl_dtype_size(uint64_t dtype)
{
    return dtype < SP_DTYPE_N ? nccl_dtypes[dtype].size : 0;
}

const char *sp_enum_name(int type, const char *field, uint64_t value)
{
    if (!field)
        return NULL;
    for (size_t i = 0; i < sizeof enum_fields / sizeof enum_fields[0]; i++) {
        const struct enum_field *e = &enum_fields[i];
        if (e->type == type && !strcmp(e->field, field))
            return value < e->count ? e->names[value] : NULL;
    }
    return NULL;
}

const char *sp_strerror(int err)
{
    switch (err) {
    case SP_OK: return "success";
    case SP_E_IO: return "input/output error (see errno)";
    case SP_E_NOMEM: return "out of memory";
    case SP_E_MAGIC: return "not a scaleprof trace";
    case SP_E_VERSION: return "trace written by a newer, incompatible scaleprof";
    case SP_E_TRUNCATED: return "trace is truncated";
    case SP_E_CORRUPT: return "trace is corrupt (checksum or structure mismatch)";
    case SP_E_FULL: return "buffer full, event dropped";
    case SP_E_ARG: return "invalid argument";
    case SP_E_OLD_VERSION:
        return "trace written in an older scaleprof format that this version no longer "
               "reads: record it again";
    default: return "unknown error";
    }
}
