/*
 * sprof.h - the scaleprof trace format: event schema, encoder, writer and
 * streaming reader.
 *
 * One file per process, DIR/<host>/<pid>.sprof, laid out in four regions
 * (docs/format.md is the full specification):
 *
 *   [header page]  fixed struct sp_file_header + TLV features (host, exe,
 *                  argv, ...); numbers that are learned late (rank, world
 *                  size, close clocks, loss counters) are fixed fields
 *                  updated in place.
 *   [strings]      an append-only arena of interned strings; an id is the
 *                  string's offset in the arena plus one (0: none), so ids
 *                  resolve without any ordering between threads.
 *   [slots]        fixed-size chunks that threads encode events into.  The
 *                  header page, strings and slots are mapped MAP_SHARED, so a
 *                  process killed by SIGKILL leaves every committed event in
 *                  the file.
 *   [frames]       zstd frames, one per full chunk, appended by a background
 *                  thread; a frame carries its chunk id so that a reader can
 *                  tell a compressed chunk from its stale slot.  Before
 *                  compressing, the thread regroups the chunk's events by
 *                  type and field (the column layout, SP_FRAME_COLUMNS),
 *                  which compresses about a third better than rows.
 *
 * Events are encoded as: type (1 byte), varint length of the rest, zigzag
 * varint time delta, then the type's fields as varints, in the order of
 * the schema below.  The codec remembers, per event type, the previous
 * event of that type in the chunk: times are coded from where it ended
 * (t + dur), and fields that grow (correlation ids, sequence numbers,
 * offsets) as differences from its values.  The memory starts empty at
 * each chunk, so each chunk is independently decodable.
 *
 * The schema is one table per event type (SP_EVENTS below).  It generates
 * the in-memory structs, the encoder, the decoder and the field names used
 * by `scaleprof dump --json`, so the four can never disagree.  Adding a
 * field at the END of a type is compatible: old readers skip it (a chunk
 * stores each event's encoded length), new readers read zero from old files.
 *
 * Errors are values: functions return 0 or a positive count on success and
 * a negative SP_E* code on failure; sp_strerror() names it.  Nothing in
 * this library aborts or prints.
 */
#ifndef SPROF_H
#define SPROF_H

#include <stddef.h>
#include <stdint.h>

#define SP_MAGIC "SPROF\r\n\032" /* 8 bytes; the \r\n\032 catches text-mode mangling */
#define SP_VERSION 4             /* 4: an IO event like the one before it is a repeat;
                                  * 3: frames may hold chunks in the column layout */
#define SP_VERSION_OLDEST 2      /* 2: rows only, still read; 1: times and ids coded
                             * without per-type memory, refused */
#define SP_HEADER_SIZE 4096u
#define SP_FRAME_MAGIC 0x52465053u /* "SPFR" little endian */
#define SP_SLOT_MAGIC 0x4c535053u  /* "SPSL" */

/* ---- enumerations carried in events ---------------------------------- */

enum sp_nccl_op {
    SP_NCCL_ALLREDUCE = 1,
    SP_NCCL_BROADCAST,
    SP_NCCL_REDUCE,
    SP_NCCL_ALLGATHER,
    SP_NCCL_REDUCESCATTER,
    SP_NCCL_SEND,
    SP_NCCL_RECV,
    SP_NCCL_ALLTOALL,
    SP_NCCL_GROUP_START,
    SP_NCCL_GROUP_END,
    SP_NCCL_GATHER,  /* ncclGather: peer is the root */
    SP_NCCL_SCATTER, /* ncclScatter: peer is the root */
    SP_NCCL_OP_MAX
};

/* An NCCL call's datatype field: ncclDataType_t as nccl.h numbers it, or
 * SP_DTYPE_UNKNOWN where the trace does not say. */
enum sp_nccl_dtype {
    SP_DTYPE_INT8 = 0,
    SP_DTYPE_UINT8,
    SP_DTYPE_INT32,
    SP_DTYPE_UINT32,
    SP_DTYPE_INT64,
    SP_DTYPE_UINT64,
    SP_DTYPE_FLOAT16,
    SP_DTYPE_FLOAT32,
    SP_DTYPE_FLOAT64,
    SP_DTYPE_BFLOAT16,
    SP_DTYPE_FP8E4M3,
    SP_DTYPE_FP8E5M2,
    SP_DTYPE_N,
    SP_DTYPE_UNKNOWN = 255
};
/* A datatype's name ("float32"; "?" for one outside the table) and its
 * size in bytes (0 for one outside the table): the one table of them. */
const char *sp_nccl_dtype_name(uint64_t dtype);
unsigned sp_nccl_dtype_size(uint64_t dtype);

/* What a comm_event did. */
enum sp_comm_kind {
    SP_COMM_INIT = 1,
    SP_COMM_SPLIT,
    SP_COMM_FINALIZE,
    SP_COMM_DESTROY,
    SP_COMM_ABORT,
};

enum sp_gpu_kind {
    SP_GPU_KERNEL = 1,
    SP_GPU_MEMCPY,
    SP_GPU_MEMSET,
    SP_GPU_NCCL_KERNEL, /* a kernel whose name says it is NCCL's */
};

/* Copy direction for memcpy activity and API calls. */
enum sp_copy_kind {
    SP_COPY_UNKNOWN = 0,
    SP_COPY_H2D,
    SP_COPY_D2H,
    SP_COPY_D2D,
    SP_COPY_H2H,
};

/* Where a copy's source or destination lies (CUPTI's memory kinds): the
 * host side of an H2D or D2H copy is pageable (the driver stages it through
 * a pinned buffer, and an asynchronous copy is synchronous for the host) or
 * pinned (page-locked: cudaMallocHost, cudaHostAlloc, cudaHostRegister). */
enum sp_mem_kind {
    SP_MEM_UNKNOWN = 0,
    SP_MEM_PAGEABLE,
    SP_MEM_PINNED,
    SP_MEM_DEVICE,
    SP_MEM_MANAGED,
    SP_MEM_OTHER, /* arrays, static allocations */
};

enum sp_cuda_api {
    SP_CUDA_LAUNCH = 1, /* cudaLaunchKernel*, __cudaLaunchKernel*, cooperative */
    SP_CUDA_GRAPH_LAUNCH,
    SP_CUDA_DEVICE_SYNC,
    SP_CUDA_STREAM_SYNC,
    SP_CUDA_EVENT_SYNC,
    SP_CUDA_STREAM_WAIT_EVENT,
    SP_CUDA_MEMCPY,       /* blocking copy */
    SP_CUDA_MEMCPY_ASYNC, /* asynchronous copy */
    SP_CUDA_MEMSET,
    SP_CUDA_SET_DEVICE,
    SP_CUDA_MALLOC,
    SP_CUDA_FREE,
    SP_CUDA_API_MAX
};

enum sp_io_op {
    SP_IO_OPEN = 1,
    SP_IO_CLOSE,
    SP_IO_READ,
    SP_IO_PREAD,
    SP_IO_READV,
    SP_IO_PREADV,
    SP_IO_FREAD,
    SP_IO_WRITE,
    SP_IO_RECV,
    SP_IO_MMAP,
    SP_IO_FOPEN,
    SP_IO_PWRITE, /* pwrite, pwritev: bytes written at an offset */
    SP_IO_WRITEV,
    SP_IO_FWRITE,
    SP_IO_FSYNC, /* fsync: bytes 0; its duration is the flush */
    SP_IO_FDATASYNC,
    SP_IO_OP_MAX
};

/* What an I/O op does, one answer for every reader.  A read takes data in:
 * read, pread, readv, preadv, fread, and recv (recv, recvfrom, recvmsg on
 * a socket); a write puts data out; a flush waits for written data to
 * reach the disk.  Open, close and mmap move no data. */
static inline int sp_io_op_is_read(uint64_t op)
{
    return op == SP_IO_READ || op == SP_IO_PREAD || op == SP_IO_READV || op == SP_IO_PREADV ||
           op == SP_IO_FREAD || op == SP_IO_RECV;
}

static inline int sp_io_op_is_write(uint64_t op)
{
    return op == SP_IO_WRITE || op == SP_IO_PWRITE || op == SP_IO_WRITEV || op == SP_IO_FWRITE;
}

static inline int sp_io_op_is_flush(uint64_t op)
{
    return op == SP_IO_FSYNC || op == SP_IO_FDATASYNC;
}

enum sp_fd_kind {
    SP_FD_UNKNOWN = 0,
    SP_FD_FILE,
    SP_FD_PIPE,
    SP_FD_SOCKET,
    SP_FD_DEVICE,
    SP_FD_OTHER,
};

enum sp_wait_op {
    SP_WAIT_POLL = 1,
    SP_WAIT_PPOLL,
    SP_WAIT_SELECT,
    SP_WAIT_PSELECT,
    SP_WAIT_EPOLL,
    SP_WAIT_DATALOADER, /* a framework's data-loader wait seen by another
                           tool (imports): the host waited for input */
};

enum sp_marker_kind {
    SP_MARK_PUSH = 1, /* nvtxRangePush: name */
    SP_MARK_POP,      /* nvtxRangePop: name of the range it closes when known */
    SP_MARK_INSTANT,  /* nvtxMark */
    SP_MARK_RANGE,    /* a complete range with duration (imports, start/end) */
};

enum sp_proc_kind {
    SP_PROC_FORK = 1, /* pid: the child */
    SP_PROC_VFORK,
    SP_PROC_SPAWN,
    SP_PROC_EXEC,   /* path: the program; this process continues in a new file */
    SP_PROC_EXIT,   /* status: the exit status */
    SP_PROC_SIGNAL, /* status: the fatal signal caught */
    SP_PROC_START,  /* recording (re)started, e.g. after SCALEPROF_STEPS */
    SP_PROC_STOP,   /* recording paused */
};

enum sp_drop_reason {
    SP_DROP_NO_SLOT = 1, /* every buffer slot was full: the writer never blocks */
    SP_DROP_STRINGS,     /* string arena full: ids of later strings are 0 */
    SP_DROP_CUPTI,       /* CUPTI reported dropped activity records */
    SP_DROP_WRITE,       /* a frame could not be written (disk full, ...) */
};

/* ---- the event schema ---------------------------------------------------
 *
 * X(type_id, NAME, name, FIELDS) lists the event types; FIELDS(F) lists a
 * type's fields as F(kind, field).  Kinds: U unsigned varint, S signed
 * (zigzag) varint, STR an interned string id (shown resolved by readers),
 * D a duration in ns (unsigned), DUR the event's own duration (a D after
 * which the next event of the type is timed from t + dur), DS an unsigned
 * value that grows, coded as the zigzag difference from the same field of
 * the previous event of the type in the chunk (introspection shows DUR as
 * D and DS as U: the value, not its coding).  Every event also has `t`,
 * its time in CLOCK_MONOTONIC ns (for host events the time the call was
 * entered).  Only append fields at the end of a list, and never reuse a
 * type id.
 */

#define SP_FIELDS_NCCL(F)                                                     \
    F(DUR, dur)        /* host time inside the call */                        \
    F(U, comm)         /* communicator id: identical on all ranks */          \
    F(DS, seq)         /* per-communicator sequence number, from 1 */         \
    F(U, op)           /* enum sp_nccl_op */                                  \
    F(U, count)        /* elements */                                         \
    F(U, datatype)     /* ncclDataType_t */                                   \
    F(U, bytes)        /* message bytes (send buffer; allgather: per rank) */ \
    F(S, peer)         /* root or peer rank, -1 when none */                  \
    F(U, stream)       /* cudaStream_t as a number */                         \
    F(U, group_depth)  /* ncclGroupStart nesting when called */               \
    F(S, result)       /* ncclResult_t */                                     \
    F(U, nranks)       /* communicator size */                                \
    F(S, rank)         /* this process's rank in the communicator */          \
    F(DS, correlation) /* of the kernel launch, when known */                 \
    F(DS, gpu_start)   /* GPU execution start (fallback timing), 0 unknown */ \
    F(D, gpu_dur)      /* GPU execution duration, 0 unknown */                \
    F(S, device)                                                              \
    F(U, peer_seq) /* send: k-th to peer; recv: k-th from peer; from 1 */

#define SP_FIELDS_COMM(F)                                       \
    F(DUR, dur)                                                 \
    F(U, kind) /* enum sp_comm_kind */                          \
    F(U, comm) /* communicator id */                            \
    F(U, nranks)                                                \
    F(S, rank)                                                  \
    F(S, device) /* CUDA device ordinal */                      \
    F(U, parent) /* parent communicator id for split, else 0 */ \
    F(S, color)                                                 \
    F(S, key)                                                   \
    F(S, result)

#define SP_FIELDS_GPU(F)                                                      \
    F(DUR, dur) /* end - t; t is the start */                                 \
    F(U, kind)  /* enum sp_gpu_kind */                                        \
    F(S, device)                                                              \
    F(U, stream)       /* CUPTI stream id or cudaStream_t number */           \
    F(U, copy_kind)    /* enum sp_copy_kind, memcpy only */                   \
    F(U, bytes)        /* memcpy/memset bytes */                              \
    F(STR, name)       /* kernel name (mangled, as CUPTI gives it) */         \
    F(DS, correlation) /* matches the cuda_api event that launched it */      \
    F(U, graph)        /* CUDA graph id, 0 when none */                       \
    F(U, grid)         /* total threads (grid x block) for kernels */         \
    F(U, src_mem)      /* enum sp_mem_kind of a copy's source, memcpy only */ \
    F(U, dst_mem)      /* ... of its destination */

#define SP_FIELDS_CUDA(F)                                         \
    F(DUR, dur)                                                   \
    F(U, api) /* enum sp_cuda_api */                              \
    F(U, stream)                                                  \
    F(DS, correlation) /* CUPTI correlation id, 0 unknown */      \
    F(S, device)       /* current device */                       \
    F(U, bytes)        /* copies */                               \
    F(U, copy_kind)                                               \
    F(STR, stack) /* call site (deduplicated), sync calls only */ \
    F(S, result)  /* cudaError_t */                               \
    F(STR, name)  /* kernel name when known */

#define SP_FIELDS_IO(F)                                        \
    F(DUR, dur)                                                \
    F(U, op) /* enum sp_io_op */                               \
    F(S, fd)                                                   \
    F(U, fd_kind) /* enum sp_fd_kind */                        \
    F(STR, path)  /* the file's path, interned at open */      \
    F(S, ret)     /* return value: bytes or fd, -1 on error */ \
    F(U, bytes)   /* bytes requested */                        \
    F(DS, offset)                                              \
    F(U, err) /* errno when ret < 0 */

#define SP_FIELDS_WAIT(F)              \
    F(DUR, dur)                        \
    F(U, op) /* enum sp_wait_op */     \
    F(U, nfds)                         \
    F(S, ret)                          \
    F(S, timeout_ms) /* -1 infinite */ \
    F(U, fd_kind)    /* kind of the first fd waited on */

#define SP_FIELDS_MARKER(F)                                      \
    F(DUR, dur) /* SP_MARK_RANGE only */                         \
    F(U, kind)  /* enum sp_marker_kind */                        \
    F(STR, name)                                                 \
    F(U, depth)  /* nesting depth after a push / before a pop */ \
    F(U, domain) /* 0: default domain */

#define SP_FIELDS_PROC(F)                     \
    F(U, kind) /* enum sp_proc_kind */        \
    F(S, pid)  /* child pid for fork/spawn */ \
    F(S, status)                              \
    F(STR, path) /* exec'd program */

#define SP_FIELDS_CPU(F)                                                       \
    F(DS, user_ns)      /* process CPU time in user mode since start */        \
    F(DS, sys_ns)       /* ... in kernel mode */                               \
    F(U, busy_permille) /* machine busy fraction since last sample, 0..1000 */ \
    F(U, ncores)        /* online cores */                                     \
    F(U, threads)       /* threads in this process */

#define SP_FIELDS_DROPPED(F)                                         \
    F(U, count)  /* events lost since the previous dropped record */ \
    F(U, reason) /* enum sp_drop_reason */

#define SP_FIELDS_CLOCK(F)                                       \
    F(DS, realtime)   /* CLOCK_REALTIME ns read right after t */ \
    F(D, uncertainty) /* ns between the two reads */

#define SP_FIELDS_THREAD(F)        \
    F(STR, name) /* thread name */ \
    F(U, os_tid)

/* X(type_id, NAME, name, FIELDS) */
#define SP_EVENTS(X)                           \
    X(1, NCCL, nccl, SP_FIELDS_NCCL)           \
    X(2, COMM, comm, SP_FIELDS_COMM)           \
    X(3, GPU, gpu, SP_FIELDS_GPU)              \
    X(4, CUDA, cuda, SP_FIELDS_CUDA)           \
    X(5, IO, io, SP_FIELDS_IO)                 \
    X(6, WAIT, wait, SP_FIELDS_WAIT)           \
    X(7, MARKER, marker, SP_FIELDS_MARKER)     \
    X(8, PROC, proc, SP_FIELDS_PROC)           \
    X(9, CPU, cpu, SP_FIELDS_CPU)              \
    X(10, DROPPED, dropped, SP_FIELDS_DROPPED) \
    X(11, CLOCK, clock, SP_FIELDS_CLOCK)       \
    X(12, THREAD, thread, SP_FIELDS_THREAD)

enum sp_event_type {
    SP_EV_NONE = 0,
#define SP_X_ENUM(id, NAME, name, FIELDS) SP_EV_##NAME = id,
    SP_EVENTS(SP_X_ENUM)
#undef SP_X_ENUM
        SP_EV_MAX
};

/* Field storage types: all 64-bit so the schema can grow without changing
 * the struct layout rules.  STR is a 32-bit id stored widened. */
#define SP_FIELD_TYPE_U uint64_t
#define SP_FIELD_TYPE_D uint64_t
#define SP_FIELD_TYPE_DUR uint64_t
#define SP_FIELD_TYPE_DS uint64_t
#define SP_FIELD_TYPE_S int64_t
#define SP_FIELD_TYPE_STR uint64_t
#define SP_X_FIELD(kind, field) SP_FIELD_TYPE_##kind field;
#define SP_X_STRUCT(id, NAME, name, FIELDS) \
    struct sp_ev_##name {                   \
        FIELDS(SP_X_FIELD)                  \
    };
SP_EVENTS(SP_X_STRUCT)
#undef SP_X_STRUCT
#undef SP_X_FIELD

/* A decoded event.  `tid` is the recording thread (OS tid) from the chunk. */
struct sp_event {
    uint8_t type; /* enum sp_event_type */
    uint32_t tid;
    uint64_t t; /* CLOCK_MONOTONIC ns */
    union {
#define SP_X_MEMBER(id, NAME, name, FIELDS) struct sp_ev_##name name;
        SP_EVENTS(SP_X_MEMBER)
#undef SP_X_MEMBER
    };
};

/* ---- errors ------------------------------------------------------------- */

enum sp_error {
    SP_OK = 0,
    SP_E_IO = -1, /* a system call failed; errno says why */
    SP_E_NOMEM = -2,
    SP_E_MAGIC = -3,     /* not a scaleprof trace */
    SP_E_VERSION = -4,   /* a trace from a newer, incompatible writer */
    SP_E_TRUNCATED = -5, /* data ends early */
    SP_E_CORRUPT = -6,   /* checksum or structure mismatch */
    SP_E_FULL = -7,      /* buffer or arena full */
    SP_E_ARG = -8,
    SP_E_OLD_VERSION = -9, /* a trace in a format this reader no longer reads */
};
const char *sp_strerror(int err);

/* ---- schema introspection (dump, JSON, tests) ---------------------------- */

enum sp_field_kind { SP_FK_U,
                     SP_FK_S,
                     SP_FK_STR,
                     SP_FK_D };
struct sp_field_desc {
    const char *name;
    enum sp_field_kind kind;
    size_t offset; /* within struct sp_event */
};
/* Name of an event type ("nccl", "gpu", ...), NULL when unknown. */
const char *sp_event_name(int type);
/* The fields of a type, in encoding order; *n receives the count. */
const struct sp_field_desc *sp_event_fields(int type, int *n);
/* Symbolic names for enum-valued fields ("allreduce", "h2d"), or NULL. */
const char *sp_enum_name(int type, const char *field, uint64_t value);

/* ---- encoding ------------------------------------------------------------ */

/* Longest encoded event: type byte, length varint (bytes after it), time
 * delta, fields.  The length lets old readers skip fields added later. */
#define SP_EVENT_MAX_BYTES 256

/* What the codec remembers within one chunk: per event type, where its
 * previous event ended (t + dur) and that event's fields (only the DS ones
 * are used).  Encoder and decoder keep identical copies; zero it at the
 * start of every chunk (sp_codec_reset), which is what makes a chunk
 * decodable alone. */
struct sp_codec_state {
    uint64_t end[SP_EV_MAX];
    /* 1: IO events are coded as in version 3 (never a repeat): set by a
     * reader of an older trace after each reset; 0 (reset) for this
     * version's coding. */
    uint64_t io_plain;
#define SP_X_PREV(id, NAME, name, FIELDS) struct sp_ev_##name name;
    SP_EVENTS(SP_X_PREV)
#undef SP_X_PREV
};
void sp_codec_reset(struct sp_codec_state *st);

/* Encode `ev` at `out` (room for SP_EVENT_MAX_BYTES) and update the
 * chunk's codec state.  Returns bytes written.  Never fails. */
size_t sp_encode_event(uint8_t *out, const struct sp_event *ev, struct sp_codec_state *st);
/* Decode one event from [p, end), updating the chunk's codec state.
 * Returns bytes consumed, 0 at a clean end (padding byte 0), or a negative
 * SP_E* when the bytes are malformed.  An event of a type this reader does
 * not know is skipped (bytes consumed, state untouched) with ev->type set
 * and nothing else filled in. */
long sp_decode_event(const uint8_t *p, const uint8_t *end, struct sp_event *ev,
                     struct sp_codec_state *st);

/* ---- on-disk structures ---------------------------------------------------- */

#define SP_TLV_HOST 1         /* hostname, text */
#define SP_TLV_EXE 2          /* /proc/self/exe target, text */
#define SP_TLV_ARGV 3         /* argv joined by NUL bytes */
#define SP_TLV_CUDA_DEVICES 4 /* text: visible device list */
#define SP_TLV_SOURCE 5       /* text: "preload", "import:kineto", ... */
#define SP_TLV_ENV 6          /* KEY=VALUE\0... of the launcher variables kept */
#define SP_TLV_CLOCK 7        /* text: the clock the times were read from ("tsc (...)",
                             * "monotonic (...)"); all times are CLOCK_MONOTONIC ns */
#define SP_TLV_CLOCK_CAL 8    /* text: the TSC calibration's figures, at close */
#define SP_TLV_FRAMES 17      /* two u64, start and end: a trace compacted at close
                             * (writer.c): while frames_offset == start, the frames
                             * end at `end` and nothing after it is read */
#define SP_TLV_RUN 16         /* text: the run's identity, the same in every process
                               of one job (SCALEPROF_RUN_ID) */

/* The header page.  Little endian; numbers that change after creation are
 * updated in place through the shared mapping (atomically where a reader of
 * a live file could see them).  The TLV area follows immediately and runs
 * to SP_HEADER_SIZE: {uint16 id, uint16 flags, uint32 len, bytes[len]},
 * padded to 8; id 0 ends the list.  Readers skip ids they do not know. */
struct sp_file_header {
    char magic[8];
    uint32_t version;
    uint32_t header_size; /* SP_HEADER_SIZE */
    uint64_t strings_offset;
    uint64_t strings_size; /* arena capacity */
    uint64_t strings_used; /* bytes allocated in the arena (atomic) */
    uint64_t slots_offset;
    uint32_t slot_size; /* bytes per slot, header included */
    uint32_t slot_count;
    uint64_t frames_offset; /* first frame; frames run to end of file */
    int32_t pid, ppid;
    int32_t rank, local_rank, world_size, local_world_size; /* -1 unknown */
    uint64_t start_mono, start_real;                        /* clock pair at start */
    uint64_t end_mono, end_real;                            /* clock pair at close; 0 if never closed */
    uint64_t events_dropped;                                /* total lost events (atomic) */
    uint64_t strings_dropped;
    uint32_t flags;    /* SP_FLAG_* */
    uint32_t tlv_size; /* bytes of TLV area in use */
    uint64_t reserved[8];
};
#define SP_FLAG_CLOSED 1u     /* the writer closed the file cleanly */
#define SP_FLAG_IMPORTED 2u   /* converted from another tool's trace */
#define SP_FLAG_NO_FILE_IO 4u /* the source could not record file I/O */
#define SP_FLAG_NO_CPU 8u     /* ... nor CPU samples */

/* Slot header: a chunk being filled by one thread.  `used` counts bytes of
 * whole events after the header, and is stored with release order after
 * each event, so a reader never sees half an event. */
struct sp_slot_header {
    uint32_t magic;    /* SP_SLOT_MAGIC */
    uint32_t state;    /* SP_SLOT_* */
    uint64_t chunk_id; /* unique within the file, from 1 */
    uint32_t tid;
    uint32_t used;
    uint64_t reserved[5];
};
enum { SP_SLOT_FREE = 0,
       SP_SLOT_ACTIVE = 1,
       SP_SLOT_FULL = 2,
       SP_SLOT_FLUSHING = 3 };

/* Frame header, followed by `csize` bytes of one zstd frame that
 * decompresses to `usize & SP_FRAME_SIZE_MASK` bytes: the chunk's events,
 * in rows as in a slot, or regrouped by type and field when usize has
 * SP_FRAME_COLUMNS set (version 3; docs/format.md, "Column layout"). */
#define SP_FRAME_COLUMNS 0x80000000u
#define SP_FRAME_SIZE_MASK 0x7fffffffu
struct sp_frame_header {
    uint32_t magic; /* SP_FRAME_MAGIC */
    uint32_t csize;
    uint32_t usize; /* payload bytes, | SP_FRAME_COLUMNS */
    uint32_t tid;
    uint64_t chunk_id;
    uint32_t crc;  /* CRC-32C of the compressed bytes */
    uint32_t hcrc; /* CRC-32C of the header's first 28 bytes */
};

uint32_t sp_crc32c(uint32_t crc, const void *buf, size_t len);

/* A column-layout payload (a decompressed frame with SP_FRAME_COLUMNS)
 * back in rows, as sp_decode_event reads them: for tools that walk frames
 * themselves.  Writes at most `cap` bytes at `out`; returns the bytes
 * written, SP_E_FULL when they do not fit, or SP_E_CORRUPT.  Events of
 * types this build does not know are left out. */
long sp_columns_to_rows(uint8_t *out, size_t cap, const uint8_t *cols, size_t len);

/* ---- writer --------------------------------------------------------------- *
 * A writer owns one trace file.  It is the recorder core: the preload uses
 * one per process, `scaleprof import` one per converted rank.  Appending
 * is lock-free and allocation-free: each thread fills its own slot; when a
 * slot is full it is handed to the writer's background thread, which
 * compresses it into a frame.  When no slot is free the event is dropped
 * and counted, never waited for. */

struct sp_writer;

struct sp_writer_opts {
    uint32_t slot_size;    /* default 128 KiB */
    uint32_t slot_count;   /* default 128 */
    uint64_t strings_size; /* default 8 MiB */
    int zstd_level;        /* default 1 */
    int mode;              /* file mode, default 0600 */
    int background;        /* 1: start the compressor thread (default), 0: compress inline on slot full (single-threaded tools) */
    int flush_interval_ms; /* how often the compressor looks at slots; default 20 */
    void (*on_pass)(void); /* called by the compressor thread after each pass (the
                             * recorder recalibrates its clock there); NULL: none */
    int defer_thread;      /* with background: the thread starts when
                             * sp_writer_start_thread() is called, not at creation
                             * (full slots wait in the file until then) */
    size_t thread_stack;   /* the compressor thread's stack size; 0: the libc default (8 MiB) */
    void (*wake)(void);    /* with background: no compressor thread at all; a slot
                             * filled calls wake() (from the appending thread:
                             * it must be async-signal-safe and not block), and the
                             * caller's own thread runs sp_writer_pass() soon
                             * after, and every flush_interval_ms */
    int grow;              /* with wake: the file's blocks are reserved as they are
                             * needed, by the passes, not all at creation: the header
                             * page, 256 KiB of the arena and 32 slots at first, and
                             * ahead of use from then on; what does not fit while a
                             * pass catches up is counted as dropped */
    uint64_t grow_floor;   /* with grow: free space (what an unprivileged writer may
                             * use) the file system keeps: a reservation that would
                             * leave less is not made, as if the disk were full
                             * (sp_writer_reserve_failed says 2); 0: no check */
};

/* Create `path` (O_EXCL, never following a symlink) and map it.  On
 * failure returns NULL and stores an SP_E* in *err. */
struct sp_writer *sp_writer_create(const char *path, const struct sp_writer_opts *opts, int *err);
/* The same, `path` relative to the directory open as `dirfd` (openat's
 * rule; AT_FDCWD: as sp_writer_create).  The recorder creates its trace
 * in the directory it checked, by that directory's descriptor. */
struct sp_writer *sp_writer_create_at(int dirfd, const char *path, const struct sp_writer_opts *opts, int *err);
/* Starts a deferred compressor thread (opts.defer_thread); 0, or SP_E_NOMEM.
 * The thread shares the caller's descriptor table: call it from a thread
 * where the writer's fd is valid. */
int sp_writer_start_thread(struct sp_writer *w);
/* One compression pass, then opts.on_pass (opts.wake's driver thread). */
int sp_writer_pass(struct sp_writer *w);
/* 0, or why a growing reservation (opts.grow) was not made: 1 a full
 * disk, 2 it would have left less free than opts.grow_floor. */
int sp_writer_reserve_failed(const struct sp_writer *w);
/* Fill header numbers and TLVs before events are written or later. */
struct sp_file_header *sp_writer_header(struct sp_writer *w);
int sp_writer_add_tlv(struct sp_writer *w, uint16_t id, const void *data, uint32_t len);
/* Intern a string: returns its id (>0), or 0 when the arena is full (the
 * loss is counted).  Lock-free; the same text may get two ids if interned
 * twice - readers don't care. */
uint32_t sp_writer_intern(struct sp_writer *w, const char *s, size_t len);
/* Append one event from the calling thread.  Returns 0, or SP_E_FULL when
 * it was dropped (counted).  Safe from any thread, lock-free. */
int sp_writer_append(struct sp_writer *w, const struct sp_event *ev);
/* Hand the calling thread's partial slot over for compression (a thread
 * about to exit). */
void sp_writer_thread_exit(struct sp_writer *w);
/* Append one event as logical thread `tid`, for a single-threaded tool
 * that writes the events of several threads (an importer's lanes): each
 * tid gets a slot of its own, its events keep their order, and a reader
 * gives them back in that order with that tid.  Calls must come from one
 * thread at a time (the tid table is not shared); meant for background =
 * 0, where a full slot is compressed inline.  The tid table holds at most
 * slot_count entries: with more logical threads than that (or than free
 * slots), the least recently used one's slot is retired and compressed
 * at once, so the newcomer gets a slot - never an error, never a lost
 * event, only smaller chunks.  Returns 0, SP_E_FULL when the event was
 * dropped (counted, e.g. frame writing failed), SP_E_NOMEM, SP_E_ARG. */
int sp_writer_append_as(struct sp_writer *w, const struct sp_event *ev, uint32_t tid);
/* Make sp_writer_close store these end clocks (end_mono, end_real)
 * instead of the machine's clocks at close: for tools that write a trace
 * on another machine's clock (an importer).  0 or SP_E_ARG. */
int sp_writer_set_end_clocks(struct sp_writer *w, uint64_t mono, uint64_t real);
/* Compress every slot, stamp the close clocks (the machine's, or those of
 * sp_writer_set_end_clocks), unmap and close.  Returns
 * 0, SP_E_IO (data left in slots is still readable), or SP_E_FULL (chunks
 * left in slots rather than appended into opts.grow_floor: the trace is
 * whole). */
int sp_writer_close(struct sp_writer *w);
/* In a forked child: forget the parent's writer without touching its file
 * (unmap only, no thread to join).  In the creating process it stops the
 * compressor first; what the slots hold stays in the file, as after a
 * crash. */
void sp_writer_abandon(struct sp_writer *w);
/* The descriptor the writer writes its file through, in the table of the
 * thread that created it (the recorder's service thread: preload/fd.c);
 * -1 for NULL. */
int sp_writer_fd(const struct sp_writer *w);

/* ---- reader --------------------------------------------------------------- *
 * Streams a trace file: compressed frames first, then chunks a killed
 * process left in its slots (skipping those that also made it into a
 * frame).  Within a chunk events come in the thread's order; chunks of
 * different threads interleave.  Damage is skipped: a corrupt frame is
 * reported once through the diagnostics list and reading resumes at the
 * next frame. */

struct sp_reader;

struct sp_file_info {
    struct sp_file_header hdr; /* copy, validated */
    char host[256];
    char exe[1024];
    char argv[4096]; /* arguments joined by spaces */
    char source[64];
    char cuda_devices[256];
    int closed;          /* SP_FLAG_CLOSED was set */
    char clock[128];     /* SP_TLV_CLOCK, "" when absent (older writers: monotonic) */
    char clock_cal[128]; /* SP_TLV_CLOCK_CAL */
    char run[64];        /* SP_TLV_RUN, "" in traces without it */
};

struct sp_reader_stats {
    uint64_t frames, frames_bad, slots_recovered, events, bytes_skipped;
    uint64_t frames_skipped; /* not decompressed: no wanted type (summary) */
};

/* Open and validate the header.  NULL with *err set on failure (not a
 * trace, newer version, unreadable). */
struct sp_reader *sp_reader_open(const char *path, int *err);
const struct sp_file_info *sp_reader_info(const struct sp_reader *r);
/* Next event: 1 when *ev was filled, 0 at end of file.  Damage does not
 * stop the stream; it is counted and described by sp_reader_diag(). */
int sp_reader_next(struct sp_reader *r, struct sp_event *ev);
/* The same event in place, without a copy: NULL at the end of the file.
 * The event is the reader's, valid until the next call on r. */
const struct sp_event *sp_reader_next_ref(struct sp_reader *r);
/* The next events in place, up to max of them into out[], in the order
 * sp_reader_next_ref gives them: as many as are decoded already, at least
 * one unless the file is at its end (then 0).  They are the reader's,
 * valid until the next call on r that reads (a mask set in between
 * leaves them as they are, and takes effect as it would have between
 * them one by one).  They count as read (sp_reader_stats) when given. */
size_t sp_reader_next_refs(struct sp_reader *r, const struct sp_event **out, size_t max);

/* Which event types sp_reader_next (and sp_reader_feed) deliver: a mask of
 * SP_TYPE_BIT(type), all types by default.  The others are stepped over
 * without decoding their fields, which is much cheaper than decoding
 * them and dropping them (in the column layout their bytes are not even
 * read): ask only for what you use.  Skipping is exact: the events
 * delivered are exactly those of an unmasked read, filtered, because each
 * type's codec memory is used by that type alone.  Call it before the
 * first sp_reader_next; a later call takes effect from the next chunk,
 * since a type's memory is only right when the type was decoded from the
 * chunk's start.  Types >= SP_TYPE_MASK_BITS (none exist yet) are
 * delivered only with SP_TYPES_ALL.  Stats count delivered events. */
#define SP_TYPE_MASK_BITS 32u
#define SP_TYPE_BIT(t) (1u << (t))
#define SP_TYPES_ALL 0xffffffffu
void sp_reader_set_types(struct sp_reader *r, uint32_t mask);
/* Which fields of events of `type` sp_reader_next (and sp_reader_feed)
 * fill: a mask of SP_FIELD_BIT(name, field), all by default.  The fields
 * left out read as 0 and, in the column layout, their bytes are not even
 * read, so a pass that needs a type's time but few of its fields pays for
 * those only.  `t` and the duration field (dur) are always filled: the
 * next event's time is counted from this one's end.  Exact like the type
 * mask, and taken up at the same moments: before the first sp_reader_next,
 * else from the next chunk; fewer fields than the chunk being read fills
 * are also left out of it from the type's next block of decoded events
 * (at most 64 events of the type on).  SP_FIELDS_ALL restores a type. */
#define SP_FIELD_BIT(name, field) \
    (UINT64_C(1) << (offsetof(struct sp_ev_##name, field) / sizeof(uint64_t)))
#define SP_FIELDS_ALL UINT64_MAX
void sp_reader_set_fields(struct sp_reader *r, unsigned type, uint64_t fields);
/* Leaves out the events of `type` a pass has no use for, by one field's
 * value (a GPU event's kind, say): an event whose field `field` (one
 * SP_FIELD_BIT) holds a value below 64 without its bit in `values` is not
 * delivered, unless its time lies outside [lo, lo + span] (the window of
 * sp_trace_window, traceset.h: such an event is delivered, so that the
 * damage is counted where it was).  The events left out are still decoded
 * for the times and differences of the ones after them, and their field
 * is filled whatever the field mask says; but they cost neither a
 * delivery nor a caller's look at them.  Taken up before the first
 * sp_reader_next; later, from the type's next block of decoded events
 * (at most 64 events of the type on) when the chunk being read fills the
 * field, else from the next chunk.  A `field` of 0 delivers every event
 * of the type again. */
void sp_reader_select(struct sp_reader *r, unsigned type, uint64_t field, uint64_t values, uint64_t lo,
                      uint64_t span);
/* Chunk summaries: what a chunk holds, told before its events.  The
 * writer stores one with every frame (docs/format.md, "Chunk summaries");
 * for a chunk without one (an older writer, a chunk left in a slot, a
 * frame in rows) the reader computes the same figures from the events'
 * times.  With a summary callback set, each chunk's summary is given to
 * it before the chunk's first event, and a chunk holding none of the types
 * the type mask asks for is stepped over without being decompressed: a
 * pass that only counts a type and bounds its times reads the summaries
 * instead of the events.  Counts cover the event types this reader
 * knows; times are starts (`t`), in the trace's clock like the events. */
struct sp_chunk_summary {
    uint32_t tid;
    uint32_t types;  /* SP_TYPE_BIT()s of the types present */
    int stored;      /* 1: read from the file, 0: computed by the reader */
    uint64_t events; /* events of known types in the chunk */
    uint64_t count[SP_EV_MAX];
    uint64_t t_min[SP_EV_MAX], t_max[SP_EV_MAX]; /* earliest, latest start per type */
    /* lag[a][b]: how far an event of type b started before the latest
     * start of a type-a event earlier in the chunk (0: never).  The
     * disorder of any set of types S within the chunk is the largest
     * lag[a][b] with a and b in S. */
    uint64_t lag[SP_EV_MAX][SP_EV_MAX];
};
typedef void (*sp_summary_fn)(void *ctx, const struct sp_chunk_summary *s);
/* Set before the first sp_reader_next; NULL turns summaries off.  0, or
 * SP_E_NOMEM (no summaries then), SP_E_ARG.  Frames stepped over whole
 * are counted in sp_reader_stats' frames_skipped. */
int sp_reader_set_summary(struct sp_reader *r, sp_summary_fn fn, void *ctx);

/* Text of string id, or "" when unknown. */
const char *sp_reader_string(const struct sp_reader *r, uint64_t id);
/* Human-readable descriptions of damage seen so far, "" when none. */
const char *sp_reader_diag(const struct sp_reader *r);
/* Adds a line of damage a caller found in the events themselves (the
 * analyzer's feed loop: times far outside the trace's span) to the
 * reader's diagnostics. */
void sp_reader_add_diag(struct sp_reader *r, const char *line);
const struct sp_reader_stats *sp_reader_stats(const struct sp_reader *r);
void sp_reader_close(struct sp_reader *r);

/* The perf-tool style interface: a struct of callbacks fed event by event.
 * A NULL callback skips that type.  A callback returning non-zero stops the
 * stream and sp_reader_feed returns that value. */
struct sp_tool {
#define SP_X_CB(id, NAME, name, FIELDS) \
    int (*name)(void *ctx, const struct sp_reader *r, const struct sp_event *ev);
    SP_EVENTS(SP_X_CB)
#undef SP_X_CB
    /* Called for every event before the typed callback, when set. */
    int (*any)(void *ctx, const struct sp_reader *r, const struct sp_event *ev);
};
int sp_reader_feed(struct sp_reader *r, const struct sp_tool *tool, void *ctx);
/* One event to the tool: `any` first, then the event's own callback.
 * Inline, so that a constant tool's callbacks are called directly. */
static inline __attribute__((always_inline)) int sp_tool_dispatch(const struct sp_tool *tool, void *ctx,
                                                                  const struct sp_reader *r,
                                                                  const struct sp_event *ev)
{
    if (tool->any) {
        int rc = tool->any(ctx, r, ev);
        if (rc)
            return rc;
    }
    switch (ev->type) {
#define SP_X_DISPATCH(id, NAME, name, FIELDS) \
    case id:                                  \
        return tool->name ? tool->name(ctx, r, ev) : 0;
        SP_EVENTS(SP_X_DISPATCH)
#undef SP_X_DISPATCH
    default:
        return 0;
    }
}

#endif
