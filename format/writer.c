/*
 * writer.c - the recorder core: one trace file, filled lock-free by any
 * number of threads, compressed by one background thread.
 *
 * The file (docs/format.md) is created with O_EXCL|O_NOFOLLOW, sized with
 * ftruncate to the start of the frame region, its blocks reserved with
 * fallocate (so that a full disk fails here, at creation, and never as a
 * SIGBUS on a store into the mapping later), and its first three regions
 * (header page, strings arena, slots) are mapped MAP_SHARED.  Every byte a
 * thread stores into a slot is in the page cache at once, so a process
 * killed with SIGKILL leaves it in the file.
 *
 * Every traced process pays for creation, so it touches as little as it
 * can: the mapping is MADV_RANDOM (readahead made each first store cost
 * 1-2 ms), a slot's page is first touched when a thread claims it (an
 * all-zero slot is FREE), claims take the lowest FREE slot, and scans stop
 * at the highest slot ever claimed.  The descriptor stays where the kernel
 * put it: the preload creates writers on a thread with a descriptor table
 * of its own (preload/fd.c), where no number is the job's.
 *
 * The compressor regroups each chunk by type and field before zstd (the
 * column layout, columns.h); a chunk it cannot regroup exactly is
 * compressed in rows.
 *
 * Slots move through FREE -> ACTIVE -> FULL -> FLUSHING -> FREE:
 *   - a thread claims a FREE slot with a CAS, so no two threads share one;
 *   - it encodes events into it and publishes each with a release store of
 *     `used`: a reader (or a crash) never sees half an event;
 *   - when the next event might not fit it marks the slot FULL and claims
 *     another; when none is FREE the event is dropped and counted (the
 *     header's events_dropped, and a DROPPED event at the start of that
 *     thread's next chunk): the caller is never made to wait;
 *   - the compressor CASes FULL -> FLUSHING, appends one zstd frame carrying
 *     the chunk id, and only then stores FREE.  A crash between the two
 *     leaves the chunk in both places; the reader keeps the frame's copy.
 *   - a claim stores used = 0 before the new chunk id, so a crash in the
 *     middle of a claim shows either the old chunk (already in a frame) or
 *     an empty new one, never old bytes under a new id.
 *
 * Each thread caches its current slot in thread-local storage keyed by the
 * writer's generation, a number unique to each writer in this process.  A
 * forked child inherits its parent's cache; once it abandons the parent's
 * writer and creates its own, the generation differs and the stale slot
 * pointer is never used.
 *
 * A single-threaded tool can write several logical threads through
 * sp_writer_append_as: each keeps, in a table the writer owns, the same
 * state an OS thread keeps in thread-local storage (section "logical
 * threads" below), so the slot machinery is shared unchanged.
 *
 * Hot path (sp_writer_append with room in the slot): one compare of a
 * thread-local word (the writer's generation while the slot has room for
 * another event, else 0) with the writer's, the encoder, one release
 * store.  No lock, no allocation, no system call.  It is written once, in
 * append.h, so that the recorder can inline it where it builds an event.
 * The slow path (slot change) may issue one futex wake to nudge a sleeping
 * compressor.
 *
 * The preload interposes open, pwrite, close, mmap... in this same process,
 * so the writer makes its file system calls through syscall(2) and never
 * re-enters the interposers.  The compressor thread blocks every signal so
 * that the job's signals go to the job's threads.
 *
 * Errors are values: a frame that cannot be written (ENOSPC, EIO) stops
 * frame writing for good; its chunk stays in its slot (readable after the
 * process ends), and events refused from then on are counted with reason
 * SP_DROP_WRITE.  Nothing here prints, aborts or blocks the caller.
 */
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h> /* ZSTD_COMPRESSBOUND only: the library is behind compress.h */

#include "append.h"
#include "codec.h"
#include "columns.h"
#include "compress.h"
#include "sprof.h"
#include "summary.h"

#define SP_DEFAULT_SLOT_SIZE (128u * 1024u)
#define SP_DEFAULT_SLOT_COUNT 128u
#define SP_DEFAULT_STRINGS_SIZE (8ull * 1024 * 1024)
/* Level 1: on trace chunks it compresses as well as 3 (better, measured by
 * bench/format_bench) at twice the speed. */
#define SP_DEFAULT_ZSTD_LEVEL 1
/* Before the compressor is loaded (compress.h), a chunk this small is
 * stored raw rather than load it: a short process's last partial chunks. */
#define SP_RAW_SMALL (16u * 1024u)
#define SP_DEFAULT_MODE 0600
#define SP_DEFAULT_FLUSH_MS 20
#define SP_PAGE 4096u
/* A slot must hold its header, a DROPPED record and one largest event. */
#define SP_MIN_SLOT_SIZE 1024u
#define SP_MAX_SLOT_SIZE (64u * 1024u * 1024u)
#define SP_MAX_SLOT_COUNT 65536u
/* Arena ids are 32-bit: offset + 1. */
#define SP_MAX_STRINGS_SIZE (1ull << 31)
#define SP_STRING_ALIGN 4u
#define SP_FRAME_HCRC_BYTES 28u
#define NS_PER_SEC 1000000000ull
#define NS_PER_MS 1000000ull

struct pending_slot;

/* struct chunk_link (append.h): where the claiming thread's previous chunk
 * lives, so that the compressor never writes a thread's chunk before the
 * one it follows (a pass that was preempted mid-scan can see chunk k+1
 * FULL but have missed chunk k). */

struct sp_writer {
    struct sp_writer_head head; /* first: append.h reads the generation */
    size_t mem_size;            /* the mapping this struct and its buffers live in */
    size_t thread_stack;        /* the compressor's stack size, 0: the default */
    void (*wake)(void);         /* opts.wake: no thread, the caller's passes */
    /* opts.grow: the blocks reserved so far (atomic), grown by passes */
    int grow;
    uint32_t slots_reserved;   /* slots [0, n) have their blocks */
    uint64_t strings_reserved; /* arena bytes [0, n) have theirs */
    int reserve_failed;        /* atomic: a reservation failed (1 a full disk, 2 the floor) */
    uint64_t grow_floor;       /* opts.grow_floor */
    uint32_t reserve_gen;      /* atomic futex word: bumped when slots are added */
    uint32_t driver_tid;       /* atomic: the thread that runs sp_writer_pass */
    int fd;
    uint8_t *map;
    size_t map_size;
    struct sp_file_header *hdr;
    uint8_t *strings;
    uint64_t strings_size;
    uint8_t *slots;
    uint32_t slot_size, slot_count;

    uint64_t next_chunk; /* atomic */
    uint32_t touched;    /* atomic: slots [0, touched) were ever claimed */

    /* Compression: one pass at a time, under compress_lock. */
    pthread_mutex_t compress_lock;
    struct sp_zc *cctx; /* made with the first compressed frame */
    int level;
    uint8_t *cbuf;
    size_t cbuf_size;
    uint8_t *colbuf;                  /* a chunk regrouped into columns: slot capacity + slack */
    uint8_t *scratch;                 /* where the regrouping builds its columns */
    struct sp_summary_build *summary; /* the chunk's, while it is compressed */
    struct pending_slot *pending;     /* slot_count entries, for one pass */
    struct chunk_link *links;         /* per slot: the same thread's previous chunk */
    uint64_t frames_end;
    int frames_disabled; /* atomic: a frame write failed */

    /* Background thread and its wake-up word. */
    int background;
    int flush_ms;
    int thread_started;
    pthread_t thread;
    uint32_t nudges;       /* atomic futex word: bumped to wake the compressor */
    int sleeping;          /* atomic */
    int stop;              /* atomic */
    pid_t owner;           /* the process that created the writer (and its thread) */
    void (*on_pass)(void); /* sp_writer_opts.on_pass */

    /* Logical threads of sp_writer_append_as (one caller thread at a time). */
    struct logical_thread *logical;
    uint32_t nlogical, logical_cap, logical_last;
    uint64_t logical_clock; /* bumped per append_as: least recently used */

    /* sp_writer_set_end_clocks: close keeps these instead of the clock. */
    int keep_end_clocks;
    uint64_t end_mono, end_real;
};

/* The calling thread's current slot (struct sp_tls_slot, append.h), valid
 * only while its gen is the writer's. */
__thread struct sp_tls_slot sp_writer_tls __attribute__((tls_model("initial-exec")));
#define tls sp_writer_tls

/* One logical thread of sp_writer_append_as: the same slot state an OS
 * thread keeps in `tls`, held by the writer instead. */
struct logical_thread {
    uint32_t tid;
    uint64_t used_at; /* w->logical_clock at its last append */
    struct sp_tls_slot st;
};
static uint64_t next_generation = 1; /* atomic */

/* ---- raw system calls (never through the preload's interposers) ---------- */

static int raw_open(int dirfd, const char *path, int flags, int mode)
{
    return (int)syscall(SYS_openat, dirfd, path, flags, mode);
}

static void raw_close(int fd)
{
    syscall(SYS_close, fd);
}

static int raw_pwrite_all(int fd, const uint8_t *buf, size_t len, uint64_t off)
{
    while (len > 0) {
        long n = syscall(SYS_pwrite64, fd, buf, len, (long)off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0)
                errno = EIO;
            return -1;
        }
        buf += n;
        len -= (size_t)n;
        off += (uint64_t)n;
    }
    return 0;
}

/* MADV_RANDOM: a store to a page of the file not yet in memory first
 * reads it in, and with the default readahead the kernel builds a large
 * window (large folios, zeroed) around it: 1-2 ms per fault at a process's
 * start, measured on ext4 (bench/format_bench, "start").  Our pages are
 * touched in no predictable order and never read back through the map,
 * so readahead is only cost: without it a first touch is a few us. */
static void *raw_mmap_shared(int fd, size_t size)
{
    long p = syscall(SYS_mmap, NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0L);
    if (p == -1)
        return NULL;
    syscall(SYS_madvise, (void *)p, size, MADV_RANDOM);
    return (void *)p;
}

static void raw_munmap(void *p, size_t size)
{
    syscall(SYS_munmap, p, size);
}

static uint32_t raw_gettid(void)
{
    return (uint32_t)syscall(SYS_gettid);
}

/* The system call, not the vDSO: these reads are rare (a header, a
 * close, a thread's last drops), and the vDSO reads the TSC, which the
 * writer's user may have made trap (prctl PR_SET_TSC). */
static uint64_t clock_ns(clockid_t id)
{
    struct timespec ts;
    syscall(SYS_clock_gettime, id, &ts);
    return (uint64_t)ts.tv_sec * NS_PER_SEC + (uint64_t)ts.tv_nsec;
}

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

/* ---- slots ------------------------------------------------------------------ */

static struct sp_slot_header *slot_at(const struct sp_writer *w, uint32_t i)
{
    return (struct sp_slot_header *)(w->slots + (size_t)i * w->slot_size);
}

static uint32_t slot_capacity(const struct sp_writer *w)
{
    return w->slot_size - (uint32_t)sizeof(struct sp_slot_header);
}

static uint32_t slot_state(const struct sp_slot_header *s)
{
    return __atomic_load_n(&s->state, __ATOMIC_ACQUIRE);
}

static int slot_cas(struct sp_slot_header *s, uint32_t from, uint32_t to)
{
    return __atomic_compare_exchange_n(&s->state, &from, to, 0, __ATOMIC_ACQ_REL,
                                       __ATOMIC_RELAXED);
}

static void slot_set_state(struct sp_slot_header *s, uint32_t state)
{
    __atomic_store_n(&s->state, state, __ATOMIC_RELEASE);
}

/* Slots [0, touched) were claimed at least once; the others are all zero
 * (FREE) and their pages were never faulted in.  Scans of the slots stop
 * there, so a short process touches one slot page, not one per slot. */
static uint32_t slots_touched(const struct sp_writer *w)
{
    return __atomic_load_n(&w->touched, __ATOMIC_ACQUIRE);
}

static void note_touched(struct sp_writer *w, uint32_t i)
{
    uint32_t seen = slots_touched(w);
    while (seen <= i &&
           !__atomic_compare_exchange_n(&w->touched, &seen, i + 1, 1, __ATOMIC_ACQ_REL,
                                        __ATOMIC_ACQUIRE))
        ;
}

/* Claims a FREE slot for the calling thread and starts a new chunk in it.
 * The lowest FREE slot: a process that records slowly keeps reusing the
 * same few slots (pages already in memory) instead of walking through
 * all of them; claims are rare (one per slot's worth of events), so the
 * scan from 0 costs nothing that matters. */
static struct sp_slot_header *claim_slot(struct sp_writer *w, struct sp_tls_slot *ts,
                                         uint32_t tid)
{
    uint32_t n = w->grow ? __atomic_load_n(&w->slots_reserved, __ATOMIC_ACQUIRE) : w->slot_count;
    for (uint32_t i = 0; i < n; i++) {
        struct sp_slot_header *s = slot_at(w, i);
        if (__atomic_load_n(&s->state, __ATOMIC_RELAXED) != SP_SLOT_FREE ||
            !slot_cas(s, SP_SLOT_FREE, SP_SLOT_ACTIVE))
            continue;
        note_touched(w, i);
        w->links[i] = ts->last;
        __atomic_store_n(&s->used, 0, __ATOMIC_RELEASE);
        s->magic = SP_SLOT_MAGIC;
        s->tid = tid;
        uint64_t id = __atomic_add_fetch(&w->next_chunk, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&s->chunk_id, id, __ATOMIC_RELEASE);
        return s;
    }
    return NULL;
}

static void tls_use_slot(const struct sp_writer *w, struct sp_tls_slot *ts,
                         struct sp_slot_header *s)
{
    ts->slot = s;
    ts->data = (uint8_t *)(s + 1);
    ts->pos = ts->data;
    ts->limit = ts->data + slot_capacity(w) - SP_EVENT_MAX_BYTES;
    ts->ready = ts->gen;
    sp_codec_reset(&ts->codec);
}

/* No slot: the next append takes the slow path. */
static void tls_forget_slot(struct sp_tls_slot *ts)
{
    ts->slot = NULL;
    ts->data = NULL;
    ts->pos = (uint8_t *)1;
    ts->limit = NULL;
    ts->ready = 0;
}

/* ---- compression ------------------------------------------------------------- */

static void nudge_compressor(struct sp_writer *w)
{
    __atomic_add_fetch(&w->nudges, 1, __ATOMIC_SEQ_CST);
    if (w->wake) /* driven by the caller's thread (opts.wake) */
        w->wake();
    else if (__atomic_load_n(&w->sleeping, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &w->nudges, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

static void disable_frames(struct sp_writer *w)
{
    __atomic_store_n(&w->frames_disabled, 1, __ATOMIC_RELEASE);
}

/* The chunk's summary (summary.h) as a skippable frame at `out`: the
 * bytes written, 0 when the rows do not walk cleanly (a damaged chunk
 * gets no summary; readers then compute what they can).  `built`: the
 * column transform's first pass already made it (w->summary). */
static size_t chunk_summary(struct sp_writer *w, const struct sp_slot_header *s,
                            const uint8_t *rows, uint32_t used, uint8_t *out, int built)
{
    if (!built) {
        sp_summary_begin(w->summary, s->tid);
        if (sp_summary_from_rows(w->summary, rows, used) < 0)
            return 0;
    }
    return sp_summary_encode(&w->summary->s, out);
}

/* Whether LEN more bytes of the file would leave its file system less
 * free than opts.grow_floor.  The free space is read again each time: the
 * job's own writes may have used it since the trace was made.  Called
 * before a growing reservation (rare: a doubling) and before a frame is
 * appended (one per filled slot, 128 KiB of events). */
static int into_floor(const struct sp_writer *w, uint64_t len)
{
    struct statfs fs;
    if (!w->grow_floor || !len || syscall(SYS_fstatfs, w->fd, &fs) != 0 || !fs.f_blocks)
        return 0;
    uint64_t unit = fs.f_frsize ? (uint64_t)fs.f_frsize : (uint64_t)fs.f_bsize;
    return (uint64_t)fs.f_bavail * unit < w->grow_floor + len;
}

/* Compresses slot `s` (already FLUSHING, owned by us) into one frame at the
 * end of the file.  0 on success or when empty, SP_E_IO otherwise. */
static int write_frame(struct sp_writer *w, struct sp_slot_header *s)
{
    uint32_t used = __atomic_load_n(&s->used, __ATOMIC_ACQUIRE);
    if (used > slot_capacity(w))
        used = slot_capacity(w);
    if (used == 0)
        return 0;
    struct sp_frame_header fh;
    uint8_t *payload = w->cbuf + sizeof fh;
    const uint8_t *src = (const uint8_t *)(s + 1);
    sp_summary_begin(w->summary, s->tid); /* built by the transform's first pass */
    size_t usize = sp_columns_from_rows(w->colbuf, slot_capacity(w), src, used, w->scratch, w->summary);
    uint32_t layout = usize ? SP_FRAME_COLUMNS : 0;
    if (usize)
        src = w->colbuf;
    else
        usize = used; /* a chunk that cannot be regrouped stays in rows */
    size_t slen = chunk_summary(w, s, (const uint8_t *)(s + 1), used, payload, layout != 0);
    size_t cap = w->cbuf_size - sizeof fh - slen, csize;
    if (!w->cctx && (sp_zc_loaded() || usize > SP_RAW_SMALL) && sp_zc_load())
        w->cctx = sp_zc_create(w->level);
    csize = w->cctx ? sp_zc_compress(w->cctx, payload + slen, cap, src, usize, w->level) : 0;
    if (!csize) /* not loaded, not worth it, or failed: stored as it is */
        csize = sp_zc_raw_frame(payload + slen, cap, src, usize);
    if (!csize) {
        errno = ENOMEM;
        return SP_E_IO;
    }
    /* Readers bound a frame by what a slot compresses to at worst: a
     * summary that would take a frame past it is left out. */
    if (slen && slen + csize > ZSTD_COMPRESSBOUND(w->slot_size)) {
        memmove(payload, payload + slen, csize);
        slen = 0;
    }
    csize += slen;
    fh.magic = SP_FRAME_MAGIC;
    fh.csize = (uint32_t)csize;
    fh.usize = (uint32_t)usize | layout;
    fh.tid = s->tid;
    fh.chunk_id = __atomic_load_n(&s->chunk_id, __ATOMIC_ACQUIRE);
    fh.crc = sp_crc32c(0, payload, csize);
    fh.hcrc = sp_crc32c(0, &fh, SP_FRAME_HCRC_BYTES);
    memcpy(w->cbuf, &fh, sizeof fh);
    if (into_floor(w, sizeof fh + csize)) {
        /* as a full disk: the slot stays in the mapping, whose blocks it has */
        __atomic_store_n(&w->reserve_failed, 2, __ATOMIC_RELAXED);
        errno = ENOSPC;
        return SP_E_IO;
    }
    if (raw_pwrite_all(w->fd, w->cbuf, sizeof fh + csize, w->frames_end) < 0)
        return SP_E_IO;
    w->frames_end += sizeof fh + csize;
    return 0;
}

struct pending_slot {
    uint64_t chunk_id;
    uint32_t index;
};

static int by_chunk(const void *a, const void *b)
{
    const struct pending_slot *x = a, *y = b;
    return x->chunk_id < y->chunk_id ? -1 : x->chunk_id > y->chunk_id;
}

/* True while the chunk before slot i's (same thread) still waits in its
 * slot: slot i must wait for it. */
static int predecessor_pending(const struct sp_writer *w, uint32_t i)
{
    const struct chunk_link *l = &w->links[i];
    if (!l->chunk_id)
        return 0;
    const struct sp_slot_header *p = slot_at(w, l->slot);
    return __atomic_load_n(&p->chunk_id, __ATOMIC_ACQUIRE) == l->chunk_id &&
           slot_state(p) != SP_SLOT_FREE;
}

static int wants_compression(uint32_t state, int all)
{
    return state == SP_SLOT_FULL || (all && state == SP_SLOT_ACTIVE);
}

/* One pass over the slots: every FULL slot (and ACTIVE ones too when
 * `all`, at close) becomes a frame and is freed.  Frames are written in
 * chunk id order, so one thread's chunks follow each other in the file.
 * Caller holds compress_lock.  Returns 0, or SP_E_IO once frame writing is
 * off. */
static int compress_slots(struct sp_writer *w, int all)
{
    uint32_t n = 0, touched = slots_touched(w);
    for (uint32_t i = 0; i < touched; i++) {
        struct sp_slot_header *s = slot_at(w, i);
        if (wants_compression(slot_state(s), all))
            w->pending[n++] = (struct pending_slot){__atomic_load_n(&s->chunk_id, __ATOMIC_ACQUIRE), i};
    }
    qsort(w->pending, n, sizeof *w->pending, by_chunk);
    for (uint32_t k = 0; k < n; k++) {
        if (__atomic_load_n(&w->frames_disabled, __ATOMIC_ACQUIRE))
            return SP_E_IO;
        struct sp_slot_header *s = slot_at(w, w->pending[k].index);
        uint32_t st = slot_state(s);
        if (!wants_compression(st, all) || predecessor_pending(w, w->pending[k].index) ||
            !slot_cas(s, st, SP_SLOT_FLUSHING))
            continue;
        if (write_frame(w, s) < 0) {
            disable_frames(w);
            slot_set_state(s, SP_SLOT_FULL); /* the data stays recoverable */
            return SP_E_IO;
        }
        slot_set_state(s, SP_SLOT_FREE);
    }
    return __atomic_load_n(&w->frames_disabled, __ATOMIC_ACQUIRE) ? SP_E_IO : 0;
}

static int compress_now(struct sp_writer *w, int all)
{
    pthread_mutex_lock(&w->compress_lock);
    int rc = compress_slots(w, all);
    pthread_mutex_unlock(&w->compress_lock);
    return rc;
}

static void wait_for_nudge(struct sp_writer *w, uint32_t seen)
{
    struct timespec ts = {w->flush_ms / 1000, (long)(w->flush_ms % 1000) * (long)NS_PER_MS};
    __atomic_store_n(&w->sleeping, 1, __ATOMIC_SEQ_CST);
    if (!__atomic_load_n(&w->stop, __ATOMIC_SEQ_CST))
        syscall(SYS_futex, &w->nudges, FUTEX_WAIT_PRIVATE, seen, &ts, NULL, 0);
    __atomic_store_n(&w->sleeping, 0, __ATOMIC_SEQ_CST);
}

static void *compressor_main(void *arg)
{
    struct sp_writer *w = arg;
    pthread_setname_np(pthread_self(), "scaleprof-zstd");
    while (!__atomic_load_n(&w->stop, __ATOMIC_ACQUIRE)) {
        uint32_t seen = __atomic_load_n(&w->nudges, __ATOMIC_SEQ_CST);
        compress_now(w, 0);
        if (w->on_pass)
            w->on_pass();
        wait_for_nudge(w, seen);
    }
    return NULL;
}

/* Starts the compressor with every signal blocked; the thread inherits the
 * mask, so no signal can land on it even before it runs. */
static int start_compressor(struct sp_writer *w)
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    if (w->thread_stack)
        pthread_attr_setstacksize(&attr, w->thread_stack);
    int rc = pthread_create(&w->thread, &attr, compressor_main, w);
    if (rc != 0 && w->thread_stack) /* a size this libc refuses: its default */
        rc = pthread_create(&w->thread, NULL, compressor_main, w);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0)
        return SP_E_NOMEM;
    w->thread_started = 1;
    return 0;
}

static void stop_compressor(struct sp_writer *w)
{
    if (!w->thread_started)
        return;
    __atomic_store_n(&w->stop, 1, __ATOMIC_SEQ_CST);
    __atomic_add_fetch(&w->nudges, 1, __ATOMIC_SEQ_CST);
    syscall(SYS_futex, &w->nudges, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
    pthread_join(w->thread, NULL);
    w->thread_started = 0;
}

/* ---- creation ------------------------------------------------------------------ */

static int check_opts(struct sp_writer_opts *o)
{
    if (!o->slot_size)
        o->slot_size = SP_DEFAULT_SLOT_SIZE;
    if (!o->slot_count)
        o->slot_count = SP_DEFAULT_SLOT_COUNT;
    if (!o->strings_size)
        o->strings_size = SP_DEFAULT_STRINGS_SIZE;
    if (!o->zstd_level)
        o->zstd_level = SP_DEFAULT_ZSTD_LEVEL;
    if (!o->mode)
        o->mode = SP_DEFAULT_MODE;
    if (o->flush_interval_ms <= 0)
        o->flush_interval_ms = SP_DEFAULT_FLUSH_MS;
    if (o->slot_size < SP_MIN_SLOT_SIZE || o->slot_size > SP_MAX_SLOT_SIZE ||
        o->slot_size % 8 || o->slot_count > SP_MAX_SLOT_COUNT ||
        o->strings_size > SP_MAX_STRINGS_SIZE)
        return SP_E_ARG;
    return 0;
}

static void init_header(struct sp_writer *w)
{
    struct sp_file_header *h = w->hdr;
    memcpy(h->magic, SP_MAGIC, sizeof h->magic);
    h->version = SP_VERSION;
    h->header_size = SP_HEADER_SIZE;
    h->strings_offset = SP_HEADER_SIZE;
    h->strings_size = w->strings_size;
    h->slots_offset = SP_HEADER_SIZE + w->strings_size;
    h->slot_size = w->slot_size;
    h->slot_count = w->slot_count;
    h->frames_offset = w->frames_end;
    h->pid = getpid();
    h->ppid = getppid();
    h->rank = h->local_rank = h->world_size = h->local_world_size = -1;
    h->start_mono = clock_ns(CLOCK_MONOTONIC);
    h->start_real = clock_ns(CLOCK_REALTIME);
}

/* Reserves the mapped region's blocks so that later stores into the
 * mapping cannot fault on a full disk.  File systems without fallocate
 * keep the file sparse. */
static int reserve_blocks(int fd, uint64_t size)
{
    if (syscall(SYS_fallocate, fd, 0, 0L, (long)size) == 0)
        return 0;
    return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : -1;
}

/* Blocks for [off, off + len) of the file; 0, or -1 (a full disk). */
static int reserve_range(int fd, uint64_t off, uint64_t len)
{
    if (!len || syscall(SYS_fallocate, fd, 0, (long)off, (long)len) == 0)
        return 0;
    return errno == EOPNOTSUPP || errno == ENOSYS ? 0 : -1;
}

/* A growing reservation of LEN more bytes, never into the floor: 0, or
 * the reason it was not made (reserve_failed's values). */
static int grow_range(struct sp_writer *w, uint64_t off, uint64_t len)
{
    if (into_floor(w, len))
        return 2;
    return reserve_range(w->fd, off, len) == 0 ? 0 : 1;
}

/* opts.grow: what is reserved at creation, and how far ahead of use each
 * pass keeps the reservation (the header page, then a little of the
 * arena and a few slots; doubling as they are used). */
#define SP_GROW_STRINGS (256u * 1024u)
#define SP_GROW_SLOTS 32u /* 32 threads recording at once from the start drop nothing */

static uint64_t slots_file_offset(const struct sp_writer *w, uint32_t i)
{
    return SP_HEADER_SIZE + w->strings_size + (uint64_t)i * w->slot_size;
}

/* Keeps the reservation ahead of use (the driver's thread, each pass):
 * the arena doubled once less than half of SP_GROW_STRINGS is left, the
 * slots doubled once fewer than SP_GROW_SLOTS / 2 are left unclaimed.  A
 * reservation that fails leaves things as they are: appenders then
 * count what does not fit as dropped, and never store into a page
 * without blocks. */
static void grow_reservation(struct sp_writer *w)
{
    uint64_t used = __atomic_load_n(&w->hdr->strings_used, __ATOMIC_RELAXED);
    uint64_t have = w->strings_reserved;
    if (used + SP_GROW_STRINGS / 2 > have && have < w->strings_size) {
        uint64_t want = round_up(have * 2 > used + SP_GROW_STRINGS ? have * 2 : used + SP_GROW_STRINGS, SP_PAGE);
        if (want > w->strings_size)
            want = w->strings_size;
        int why = grow_range(w, SP_HEADER_SIZE + have, want - have);
        if (!why)
            __atomic_store_n(&w->strings_reserved, want, __ATOMIC_RELEASE);
        else
            __atomic_store_n(&w->reserve_failed, why, __ATOMIC_RELAXED);
    }
    uint32_t slots = w->slots_reserved, touched = slots_touched(w);
    if (touched + SP_GROW_SLOTS / 2 > slots && slots < w->slot_count) {
        uint32_t want = slots * 2 > touched + SP_GROW_SLOTS ? slots * 2 : touched + SP_GROW_SLOTS;
        if (want > w->slot_count)
            want = w->slot_count;
        int why = grow_range(w, slots_file_offset(w, slots), (uint64_t)(want - slots) * w->slot_size);
        if (!why)
            __atomic_store_n(&w->slots_reserved, want, __ATOMIC_RELEASE);
        else
            __atomic_store_n(&w->reserve_failed, why, __ATOMIC_RELAXED);
    }
    if (__atomic_load_n(&w->slots_reserved, __ATOMIC_RELAXED) != slots || w->reserve_failed) {
        __atomic_add_fetch(&w->reserve_gen, 1, __ATOMIC_SEQ_CST); /* waiters: look again */
        syscall(SYS_futex, &w->reserve_gen, FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
    }
}

static int open_file(struct sp_writer *w, int dirfd, const char *path, int mode)
{
    w->fd = raw_open(dirfd, path, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
    if (w->fd < 0)
        return SP_E_IO;
    if (syscall(SYS_ftruncate, w->fd, (long)w->map_size) < 0)
        goto fail;
    if (w->grow) {
        w->strings_reserved = w->strings_size < SP_GROW_STRINGS ? w->strings_size : SP_GROW_STRINGS;
        w->slots_reserved = w->slot_count < SP_GROW_SLOTS ? w->slot_count : SP_GROW_SLOTS;
        if (reserve_range(w->fd, 0, SP_HEADER_SIZE + w->strings_reserved) < 0 ||
            reserve_range(w->fd, slots_file_offset(w, 0), (uint64_t)w->slots_reserved * w->slot_size) < 0)
            goto fail;
    } else if (reserve_blocks(w->fd, w->map_size) < 0) {
        goto fail;
    }
    w->map = raw_mmap_shared(w->fd, w->map_size);
    if (!w->map)
        goto fail;
    return 0;
fail:;
    int e = errno;
    raw_close(w->fd);
    syscall(SYS_unlinkat, dirfd, path, 0);
    errno = e;
    return SP_E_IO;
}

/* The writer and its buffers live in one private anonymous mapping, not
 * in malloc'd memory: the recorder creates and closes writers on a thread
 * of its own, and a thread's first malloc (or free: glibc sets up the
 * thread's cache first) gives it an arena of its own, 64 MiB of address
 * space that RLIMIT_AS counts.  (Only the logical-thread table of
 * single-threaded tools grows with realloc.) */
#define SP_MEM_ALIGN 64u

static size_t mem_take(size_t *at, size_t len)
{
    size_t off = *at;
    *at = round_up(off + len, SP_MEM_ALIGN);
    return off;
}

static void free_writer(struct sp_writer *w)
{
    sp_zc_free(w->cctx);
    free(w->logical);
    raw_munmap(w, w->mem_size);
}

struct sp_writer *sp_writer_create(const char *path, const struct sp_writer_opts *opts, int *err)
{
    return sp_writer_create_at(AT_FDCWD, path, opts, err);
}

struct sp_writer *sp_writer_create_at(int dirfd, const char *path, const struct sp_writer_opts *opts, int *err)
{
    struct sp_writer_opts o = {0};
    int dummy;
    if (!err)
        err = &dummy;
    if (opts)
        o = *opts;
    if (!path || (*err = check_opts(&o)) < 0) {
        *err = SP_E_ARG;
        return NULL;
    }
    size_t cbuf_size = sizeof(struct sp_frame_header) + SP_SUMMARY_MAX + ZSTD_COMPRESSBOUND(o.slot_size);
    size_t count = o.slot_count ? o.slot_count : 1;
    size_t at = 0;
    size_t w_off = mem_take(&at, sizeof(struct sp_writer));
    size_t cbuf_off = mem_take(&at, cbuf_size);
    size_t colbuf_off = mem_take(&at, o.slot_size + SP_COLUMNS_SLACK);
    size_t scratch_off = mem_take(&at, SP_COLUMNS_SCRATCH(o.slot_size) * sizeof *((struct sp_writer *)0)->scratch);
    size_t summary_off = mem_take(&at, sizeof *((struct sp_writer *)0)->summary);
    size_t pending_off = mem_take(&at, count * sizeof *((struct sp_writer *)0)->pending);
    size_t links_off = mem_take(&at, count * sizeof *((struct sp_writer *)0)->links);
    size_t mem_size = round_up(at, SP_PAGE);
    long mem = syscall(SYS_mmap, NULL, mem_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0L);
    if (mem < 0 && mem > -4096) {
        *err = SP_E_NOMEM;
        return NULL;
    }
    uint8_t *base = (uint8_t *)mem; /* zero-filled, as calloc's was */
    struct sp_writer *w = (struct sp_writer *)(void *)(base + w_off);
    w->mem_size = mem_size;
    w->slot_size = o.slot_size;
    w->slot_count = o.slot_count;
    w->strings_size = round_up(o.strings_size, SP_PAGE);
    w->map_size = SP_HEADER_SIZE + w->strings_size + (size_t)w->slot_size * w->slot_count;
    w->frames_end = w->map_size;
    w->level = o.zstd_level;
    w->background = opts ? opts->background : 1;
    w->flush_ms = o.flush_interval_ms;
    w->on_pass = o.on_pass;
    w->thread_stack = o.thread_stack;
    w->wake = o.wake;
    w->grow = o.grow && o.wake;
    w->grow_floor = w->grow ? o.grow_floor : 0;
    w->cbuf_size = cbuf_size;
    w->cbuf = (void *)(base + cbuf_off);
    w->colbuf = (void *)(base + colbuf_off);
    w->scratch = (void *)(base + scratch_off);
    w->summary = (void *)(base + summary_off);
    w->pending = (void *)(base + pending_off);
    w->links = (void *)(base + links_off);
    pthread_mutex_init(&w->compress_lock, NULL);
    if ((*err = open_file(w, dirfd, path, o.mode)) < 0) {
        free_writer(w);
        return NULL;
    }
    w->hdr = (struct sp_file_header *)w->map;
    w->strings = w->map + SP_HEADER_SIZE;
    w->slots = w->strings + w->strings_size;
    w->head.gen = __atomic_fetch_add(&next_generation, 1, __ATOMIC_RELAXED);
    w->owner = getpid();
    init_header(w);
    if (w->background && !o.defer_thread && !w->wake && (*err = start_compressor(w)) < 0) {
        raw_munmap(w->map, w->map_size);
        raw_close(w->fd);
        free_writer(w);
        return NULL;
    }
    *err = 0;
    return w;
}

int sp_writer_start_thread(struct sp_writer *w)
{
    if (!w || !w->background || w->wake)
        return SP_E_ARG;
    return w->thread_started ? 0 : start_compressor(w);
}

int sp_writer_pass(struct sp_writer *w)
{
    if (!w)
        return SP_E_ARG;
    if (w->grow) {
        __atomic_store_n(&w->driver_tid, raw_gettid(), __ATOMIC_RELAXED);
        grow_reservation(w);
    }
    int rc = compress_now(w, 0);
    if (w->on_pass)
        w->on_pass();
    return rc;
}

/* ---- header, TLVs, strings ----------------------------------------------------- */

struct sp_file_header *sp_writer_header(struct sp_writer *w)
{
    return w ? w->hdr : NULL;
}

#define SP_TLV_HEAD 8u
#define SP_TLV_ALIGN 8u

int sp_writer_add_tlv(struct sp_writer *w, uint16_t id, const void *data, uint32_t len)
{
    if (!w || id == 0 || (len && !data))
        return SP_E_ARG;
    size_t area = SP_HEADER_SIZE - sizeof(struct sp_file_header);
    size_t at = w->hdr->tlv_size;
    size_t need = round_up(SP_TLV_HEAD + (uint64_t)len, SP_TLV_ALIGN);
    /* Keep room for the terminating id 0. */
    if (at + need + SP_TLV_HEAD > area)
        return SP_E_FULL;
    uint8_t *p = w->map + sizeof(struct sp_file_header) + at;
    uint16_t flags = 0;
    memcpy(p, &id, 2);
    memcpy(p + 2, &flags, 2);
    memcpy(p + 4, &len, 4);
    if (len)
        memcpy(p + SP_TLV_HEAD, data, len);
    __atomic_store_n(&w->hdr->tlv_size, (uint32_t)(at + need), __ATOMIC_RELEASE);
    return 0;
}

uint32_t sp_writer_intern(struct sp_writer *w, const char *s, size_t len)
{
    if (!w || (!s && len))
        return 0;
    uint64_t need = round_up(sizeof(uint32_t) + len + 1, SP_STRING_ALIGN);
    uint64_t off;
    if (w->grow) {
        /* Within the blocks reserved so far, and never past them: a gap
         * in the arena's middle would end a reader's walk of it. */
        off = __atomic_load_n(&w->hdr->strings_used, __ATOMIC_RELAXED);
        do {
            if (off + need > __atomic_load_n(&w->strings_reserved, __ATOMIC_ACQUIRE)) {
                __atomic_add_fetch(&w->hdr->strings_dropped, 1, __ATOMIC_RELAXED);
                nudge_compressor(w);
                return 0;
            }
        } while (!__atomic_compare_exchange_n(&w->hdr->strings_used, &off, off + need, 1, __ATOMIC_RELAXED,
                                              __ATOMIC_RELAXED));
    } else {
        off = __atomic_fetch_add(&w->hdr->strings_used, need, __ATOMIC_RELAXED);
        if (off + need > w->strings_size) {
            __atomic_add_fetch(&w->hdr->strings_dropped, 1, __ATOMIC_RELAXED);
            return 0;
        }
    }
    uint8_t *p = w->strings + off;
    if (len)
        memcpy(p + sizeof(uint32_t), s, len);
    p[sizeof(uint32_t) + len] = 0;
    /* Stored last: a reader sees the length only once the bytes are there.
     * It counts the NUL, so a written string never has length 0. */
    __atomic_store_n((uint32_t *)p, (uint32_t)(len + 1), __ATOMIC_RELEASE);
    return (uint32_t)(off + 1);
}

/* ---- appending ------------------------------------------------------------------- */

static inline __attribute__((always_inline)) void put_event(struct sp_tls_slot *ts,
                                                            const struct sp_event *ev)
{
    uint8_t *pos = ts->pos;
    ts->pos = pos + sp_codec_encode(pos, ev, &ts->codec);
}

/* Makes the events put so far visible (append.h). */
#define publish sp_writer_publish

static void count_drop(struct sp_writer *w, struct sp_tls_slot *ts)
{
    int write_failed = __atomic_load_n(&w->frames_disabled, __ATOMIC_ACQUIRE);
    ts->drop_reason = write_failed ? SP_DROP_WRITE : SP_DROP_NO_SLOT;
    ts->pending_drops++;
    __atomic_add_fetch(&w->hdr->events_dropped, 1, __ATOMIC_RELAXED);
}

/* The first event of a chunk says how many were lost before it. */
static void put_pending_drops(struct sp_tls_slot *ts, uint64_t t)
{
    if (!ts->pending_drops)
        return;
    struct sp_event d = {.type = SP_EV_DROPPED, .t = t};
    d.dropped.count = ts->pending_drops;
    d.dropped.reason = ts->drop_reason;
    put_event(ts, &d);
    ts->pending_drops = 0;
}

/* Hands the thread's slot to the compressor (FULL) and forgets it. */
static void retire_slot(struct sp_writer *w, struct sp_tls_slot *ts)
{
    if (ts->slot) {
        ts->last.chunk_id = ts->slot->chunk_id;
        ts->last.slot = (uint32_t)(((uint8_t *)ts->slot - w->slots) / w->slot_size);
        slot_set_state(ts->slot, SP_SLOT_FULL);
        if (w->background)
            nudge_compressor(w);
        else
            compress_now(w, 0);
    }
    tls_forget_slot(ts);
}

/* opts.grow: every reserved slot is taken (more threads recording at once
 * than the reservation had room for).  Rather than drop this thread's
 * events, wake the driver, whose pass reserves more (only the service
 * thread holds the trace's fd), and wait for it; claim again after each
 * pass it makes, and wait again while the reservation is still short for
 * this thread (64 threads starting at once need two doublings of
 * SP_GROW_SLOTS), SP_GROW_WAIT_NS at a time and SP_GROW_WAIT_MAX_NS in
 * all: on a loaded machine the driver may take tens of milliseconds to
 * run.  Not when the reservation failed (a full disk) or has every slot
 * already. */
#define SP_GROW_WAIT_NS 5000000L
#define SP_GROW_WAIT_MAX_NS 60000000L

static int growth_may_help(struct sp_writer *w)
{
    return !__atomic_load_n(&w->reserve_failed, __ATOMIC_RELAXED) &&
           __atomic_load_n(&w->slots_reserved, __ATOMIC_ACQUIRE) < w->slot_count;
}

static struct sp_slot_header *claim_after_growth(struct sp_writer *w, struct sp_tls_slot *ts)
{
    if (!growth_may_help(w))
        return NULL;
    int e = errno;
    struct sp_slot_header *s = NULL;
    if (raw_gettid() == __atomic_load_n(&w->driver_tid, __ATOMIC_RELAXED)) {
        grow_reservation(w); /* the driver itself (its CPU samples): no one to wait for */
        s = claim_slot(w, ts, raw_gettid());
        errno = e;
        return s;
    }
    for (long waited = 0; !s && waited < SP_GROW_WAIT_MAX_NS && growth_may_help(w); waited += SP_GROW_WAIT_NS) {
        /* the generation before the claim: a pass that ends between the
         * two is not slept through */
        uint32_t seen = __atomic_load_n(&w->reserve_gen, __ATOMIC_SEQ_CST);
        s = claim_slot(w, ts, raw_gettid());
        if (s)
            break;
        nudge_compressor(w);
        struct timespec ts_wait = {0, SP_GROW_WAIT_NS};
        syscall(SYS_futex, &w->reserve_gen, FUTEX_WAIT_PRIVATE, seen, &ts_wait, NULL, 0);
        s = claim_slot(w, ts, raw_gettid());
    }
    errno = e;
    return s;
}

int sp_writer_reserve_slow(struct sp_writer *w, uint64_t t)
{
    if (tls.gen != w->head.gen) {
        /* all but the host's words (append.h) */
        memset(&tls.ready, 0, sizeof tls - offsetof(struct sp_tls_slot, ready));
        tls_forget_slot(&tls);
        tls.gen = w->head.gen;
    } else {
        retire_slot(w, &tls);
    }
    struct sp_slot_header *s = claim_slot(w, &tls, raw_gettid());
    if (!s && w->grow)
        s = claim_after_growth(w, &tls);
    if (!s) {
        count_drop(w, &tls);
        if (w->background)
            nudge_compressor(w);
        return 0;
    }
    tls_use_slot(w, &tls, s);
    put_pending_drops(&tls, t);
    return 1;
}

int sp_writer_append(struct sp_writer *w, const struct sp_event *ev)
{
    if (__builtin_expect(tls.ready != w->head.gen, 0) && !sp_writer_reserve_slow(w, ev->t))
        return SP_E_FULL;
    sp_writer_put(ev);
    return 0;
}

void sp_writer_thread_exit(struct sp_writer *w)
{
    if (!w || tls.gen != w->head.gen)
        return;
    /* The thread's last losses, if any, go into its last chunk: it will
     * have no next one. */
    if (tls.slot && tls.pending_drops && tls.pos <= tls.limit) {
        put_pending_drops(&tls, clock_ns(CLOCK_MONOTONIC));
        publish(&tls);
    }
    retire_slot(w, &tls);
}

/* ---- logical threads ------------------------------------------------------------- *
 * sp_writer_append_as: one caller thread writing the events of several
 * logical threads (an importer's lanes).  Each logical thread keeps what an
 * OS thread keeps in `tls` - its slot, its chunk's codec memory, its
 * previous chunk - in a small table owned by the writer, so its events
 * stay in order in chunks of its own and read back with its tid.
 *
 * The table holds at most slot_count entries (one slot each at most) and
 * grows by doubling; a lookup checks the last entry used, then scans.
 * When a claim finds no FREE slot, the least recently used other logical
 * thread's slot is retired (FULL, compressed at once) and the claim
 * retried; when the table is full, the least recently used entry is
 * retired the same way and handed to the new tid.  Its chunks are then
 * all in frames, so when that tid comes back its next chunk follows them:
 * more logical threads than slots cost smaller chunks, never an error or
 * a lost event. */

#define SP_LOGICAL_FIRST_CAP 4u

/* Retires lt's slot and, with a background compressor, compresses it now
 * so that the slot is FREE when this returns (frames permitting). */
static void retire_logical(struct sp_writer *w, struct logical_thread *lt)
{
    struct sp_tls_slot *ts = &lt->st;
    if (!ts->slot)
        return;
    if (ts->pending_drops && ts->pos <= ts->limit) {
        put_pending_drops(ts, clock_ns(CLOCK_MONOTONIC));
        publish(ts);
    }
    retire_slot(w, ts);
    if (w->background)
        compress_now(w, 0);
}

/* The least recently used logical thread other than `except` that holds
 * a slot (with_slot) or any at all; NULL when there is none. */
static struct logical_thread *least_recent(struct sp_writer *w, const struct logical_thread *except,
                                           int with_slot)
{
    struct logical_thread *best = NULL;
    for (uint32_t i = 0; i < w->nlogical; i++) {
        struct logical_thread *lt = &w->logical[i];
        if (lt == except || (with_slot && !lt->st.slot))
            continue;
        if (!best || lt->used_at < best->used_at)
            best = lt;
    }
    return best;
}

static void logical_init(struct sp_writer *w, struct logical_thread *lt, uint32_t tid)
{
    memset(lt, 0, sizeof *lt);
    lt->tid = tid;
    lt->st.gen = w->head.gen;
    tls_forget_slot(&lt->st);
}

/* A new entry for tid: a fresh one while the table may grow, else the
 * least recently used one, retired first. */
static struct logical_thread *logical_add(struct sp_writer *w, uint32_t tid)
{
    if (w->nlogical == w->logical_cap && w->logical_cap < w->slot_count) {
        uint32_t cap = w->logical_cap ? w->logical_cap * 2 : SP_LOGICAL_FIRST_CAP;
        if (cap > w->slot_count)
            cap = w->slot_count;
        struct logical_thread *p = realloc(w->logical, cap * sizeof *p);
        if (p) {
            w->logical = p;
            w->logical_cap = cap;
        }
    }
    struct logical_thread *lt;
    if (w->nlogical < w->logical_cap) {
        lt = &w->logical[w->nlogical++];
    } else {
        lt = least_recent(w, NULL, 0);
        if (!lt)
            return NULL; /* no memory for even one entry */
        retire_logical(w, lt);
    }
    logical_init(w, lt, tid);
    return lt;
}

static struct logical_thread *logical_of(struct sp_writer *w, uint32_t tid)
{
    if (w->logical_last < w->nlogical && w->logical[w->logical_last].tid == tid)
        return &w->logical[w->logical_last];
    struct logical_thread *lt = NULL;
    for (uint32_t i = 0; i < w->nlogical && !lt; i++)
        if (w->logical[i].tid == tid)
            lt = &w->logical[i];
    if (!lt)
        lt = logical_add(w, tid);
    if (lt)
        w->logical_last = (uint32_t)(lt - w->logical);
    return lt;
}

/* A slot for lt, making room by retiring other logical threads' slots. */
static struct sp_slot_header *claim_logical_slot(struct sp_writer *w, struct logical_thread *lt)
{
    struct sp_slot_header *s = claim_slot(w, &lt->st, lt->tid);
    struct logical_thread *victim;
    while (!s && (victim = least_recent(w, lt, 1)) != NULL) {
        retire_logical(w, victim);
        s = claim_slot(w, &lt->st, lt->tid);
    }
    return s;
}

static __attribute__((noinline)) int append_as_slow(struct sp_writer *w, struct logical_thread *lt,
                                                    const struct sp_event *ev)
{
    struct sp_tls_slot *ts = &lt->st;
    retire_slot(w, ts);
    struct sp_slot_header *s = claim_logical_slot(w, lt);
    if (!s) {
        count_drop(w, ts);
        return SP_E_FULL;
    }
    tls_use_slot(w, ts, s);
    put_pending_drops(ts, ev->t);
    put_event(ts, ev);
    publish(ts);
    return 0;
}

int sp_writer_append_as(struct sp_writer *w, const struct sp_event *ev, uint32_t tid)
{
    if (!w || !ev)
        return SP_E_ARG;
    struct logical_thread *lt = logical_of(w, tid);
    if (!lt) {
        __atomic_add_fetch(&w->hdr->events_dropped, 1, __ATOMIC_RELAXED);
        return SP_E_NOMEM;
    }
    lt->used_at = ++w->logical_clock;
    struct sp_tls_slot *ts = &lt->st;
    if (__builtin_expect(ts->ready != w->head.gen, 0))
        return append_as_slow(w, lt, ev);
    put_event(ts, ev);
    publish(ts);
    return 0;
}

int sp_writer_set_end_clocks(struct sp_writer *w, uint64_t mono, uint64_t real)
{
    if (!w)
        return SP_E_ARG;
    w->keep_end_clocks = 1;
    w->end_mono = mono;
    w->end_real = real;
    return 0;
}

/* ---- closing ------------------------------------------------------------------------ */

/* The closing thread's own losses get their DROPPED record now: there is
 * no next chunk to carry them. */
static void flush_pending_drops(struct sp_writer *w, struct sp_tls_slot *ts, uint32_t tid)
{
    if (ts->gen != w->head.gen || !ts->pending_drops)
        return;
    if (!ts->slot || ts->pos > ts->limit) {
        retire_slot(w, ts);
        struct sp_slot_header *s = claim_slot(w, ts, tid);
        if (!s)
            return;
        tls_use_slot(w, ts, s);
    }
    put_pending_drops(ts, clock_ns(CLOCK_MONOTONIC));
    publish(ts);
}

static int all_slots_free(const struct sp_writer *w)
{
    for (uint32_t i = 0; i < slots_touched(w); i++)
        if (slot_state(slot_at(w, i)) != SP_SLOT_FREE)
            return 0;
    return 1;
}

static void punch_hole(int fd, uint64_t off, uint64_t len)
{
    if (len)
        syscall(SYS_fallocate, fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE, (long)off,
                (long)len);
}

/* At close: give back the blocks reserved at creation that hold nothing -
 * the arena's unused tail, and the slots once every chunk is in a frame.
 * The file keeps its size and layout; the holes read as zeros (FREE). */
static void release_unused_blocks(struct sp_writer *w, int slots_too)
{
    uint64_t used = __atomic_load_n(&w->hdr->strings_used, __ATOMIC_ACQUIRE);
    if (used > w->strings_size)
        used = w->strings_size;
    uint64_t from = round_up(used, SP_PAGE);
    /* One call for both when it can: the arena's tail and the slots are
     * next to each other, and each call costs ~0.2 ms on ext4. */
    uint64_t slots = slots_too ? (uint64_t)w->slot_size * w->slot_count : 0;
    punch_hole(w->fd, SP_HEADER_SIZE + from, w->strings_size - from + slots);
}

/* At close, a trace is made as small as its content when its frames fit
 * in the space that the arena's unused tail and the slots (all FREE by
 * then) leave before the frames: the frames are copied there, just after
 * the strings in use (at the arena's start when there are none: a
 * process that read only pipes), the header is switched over to that
 * layout (no slots, the arena cut to its pages in use, the frames at the
 * copy), and the file is cut after the last frame.  So a short process's
 * trace is a few KiB on disk and in `ls` alike, and copying it (scp, tar,
 * an object store, which know nothing of holes) moves that much, not the
 * 24 MiB of the reservation.
 *
 * Crash safety, step by step: slot_count 0 first (every slot is FREE, so
 * the header reads the same events without them, and a reader never
 * takes the copy's bytes in the slot region for a slot); the copy lands
 * where no reader looks (beyond strings_used, in slots no longer
 * counted); an SP_TLV_FRAMES naming the copy is added; then the header's
 * fields are stored one at a time in an order in which every
 * intermediate header is a valid layout that reads the same events -
 * strings_size, slots_offset, and last frames_offset, which makes the
 * copy the frames; readers then stop at the TLV's end, so the old frames,
 * until the file is cut, are never read twice.  Returns the new file
 * size, or 0 when the trace keeps its layout (its frames are more than
 * that space, or a write failed: the unused blocks are then punched as
 * before). */
static uint64_t compact(struct sp_writer *w)
{
    struct sp_file_header *h = w->hdr;
    uint64_t used = __atomic_load_n(&h->strings_used, __ATOMIC_ACQUIRE);
    if (used > w->strings_size)
        used = w->strings_size;
    uint64_t arena = round_up(used, SP_PAGE), from = h->frames_offset;
    uint64_t len = w->frames_end - from, at = SP_HEADER_SIZE + arena;
    if (at + len > from)
        return 0; /* the copy would overwrite the frames it copies */
    __atomic_store_n(&h->slot_count, 0, __ATOMIC_RELEASE);
    for (uint64_t done = 0; done < len;) {
        size_t n = len - done < w->cbuf_size ? (size_t)(len - done) : w->cbuf_size;
        long got = syscall(SYS_pread64, w->fd, w->cbuf, n, (long)(from + done));
        if (got <= 0 || raw_pwrite_all(w->fd, w->cbuf, (size_t)got, at + done) < 0)
            return 0;
        done += (uint64_t)got;
    }
    uint64_t range[2] = {at, at + len};
    if (sp_writer_add_tlv(w, SP_TLV_FRAMES, range, sizeof range) < 0)
        return 0;
    __atomic_store_n(&h->strings_size, arena, __ATOMIC_RELEASE);
    __atomic_store_n(&h->slots_offset, at, __ATOMIC_RELEASE);
    __atomic_store_n(&h->frames_offset, at, __ATOMIC_RELEASE);
    return at + len;
}

/* Every logical thread's losses get their DROPPED record; its partial
 * slot stays ACTIVE for the close's final pass. */
static void flush_logical_threads(struct sp_writer *w)
{
    for (uint32_t i = 0; i < w->nlogical; i++)
        flush_pending_drops(w, &w->logical[i].st, w->logical[i].tid);
}

/* The close clocks: the machine's now, unless the caller set its own. */
static void stamp_end_clocks(struct sp_writer *w)
{
    w->hdr->end_mono = w->keep_end_clocks ? w->end_mono : clock_ns(CLOCK_MONOTONIC);
    w->hdr->end_real = w->keep_end_clocks ? w->end_real : clock_ns(CLOCK_REALTIME);
}

int sp_writer_close(struct sp_writer *w)
{
    if (!w)
        return SP_E_ARG;
    stop_compressor(w);
    compress_now(w, 0); /* frees slots for the closing thread's DROPPED record */
    flush_pending_drops(w, &tls, raw_gettid());
    if (tls.gen == w->head.gen)
        tls_forget_slot(&tls);
    flush_logical_threads(w);
    int rc = compress_now(w, 1);
    if (rc == SP_E_IO && __atomic_load_n(&w->reserve_failed, __ATOMIC_RELAXED) == 2)
        rc = SP_E_FULL; /* chunks kept in the mapping, not appended into the floor: the trace is whole */
    stamp_end_clocks(w);
    __atomic_or_fetch(&w->hdr->flags, SP_FLAG_CLOSED, __ATOMIC_RELEASE);
    uint64_t size = rc == 0 && all_slots_free(w) ? compact(w) : 0;
    if (!size)
        release_unused_blocks(w, rc == 0 && all_slots_free(w));
    raw_munmap(w->map, w->map_size);
    if (size)
        syscall(SYS_ftruncate, w->fd, (long)size);
    raw_close(w->fd);
    pthread_mutex_destroy(&w->compress_lock);
    free_writer(w);
    return rc;
}

int sp_writer_reserve_failed(const struct sp_writer *w)
{
    return w ? __atomic_load_n(&w->reserve_failed, __ATOMIC_RELAXED) : 0;
}

int sp_writer_fd(const struct sp_writer *w)
{
    return w ? w->fd : -1;
}

void sp_writer_abandon(struct sp_writer *w)
{
    if (!w)
        return;
    /* In a forked child the parent's compressor thread does not exist and
     * its lock may have been held at fork: touch neither.  Nor the fd: the
     * writer may have been made in a descriptor table the child did not
     * copy (preload/fd.c), where that number is one of the child's own
     * files.  Called in the creating process instead, the thread must stop
     * before the memory it uses goes away. */
    int creator = getpid() == w->owner;
    if (w->thread_started && creator)
        stop_compressor(w);
    raw_munmap(w->map, w->map_size);
    if (creator)
        raw_close(w->fd);
    free_writer(w);
}
