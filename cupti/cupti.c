/*
 * cupti.c - GPU activity (kernels, copies, memsets) through CUPTI, on the
 * recorder's clock, and the fallback when CUPTI cannot be had.
 *
 * Attach.  libcupti is dlopen'ed, never linked, so one build serves every
 * job: SCALEPROF_CUPTI_LIB when set (and only it), else the libcupti beside
 * the libcudart the job uses, else $CUDA_HOME/lib64 and
 * $CUDA_HOME/extras/CUPTI/lib64, else the loader's search for
 * libcupti.so.13 / libcupti.so.  Attaching happens once per process, at
 * whichever comes first: the driver calling InitializeInjection() (when
 * CUDA_INJECTION64_PATH names libscaleprof.so - `scaleprof run` sets it for
 * the whole process tree, since a setenv() inside a running, threaded job
 * is not safe), or the first CUDA or NCCL call interposed.
 *
 * Order matters: the timestamp callback (CLOCK_MONOTONIC, the recorder's
 * clock) is registered before any kind is enabled, then the buffer
 * callbacks, then CONCURRENT_KERNEL, MEMCPY and MEMSET.
 *
 * Buffers come from a pool allocated once at attach (BUF_COUNT x BUF_SIZE);
 * a request that finds the pool empty returns no buffer, CUPTI drops and
 * counts the records, and the count becomes a DROPPED event
 * (SP_DROP_CUPTI).  Completed buffers are turned into GPU events: kernels
 * whose name says NCCL ("ncclKernel*", "ncclDevKernel*") as
 * SP_GPU_NCCL_KERNEL, the rest as SP_GPU_KERNEL; names are interned once
 * per trace file through a content-hash cache (sp_intern_name).  They are
 * appended through sp_emit_gpu, which keeps or drops a record by when the
 * GPU ran it against the step window (core.c), not by when its buffer
 * arrived: buffers come late, usually after a window has closed.
 *
 * Conflict.  Before CUDA 13.3 CUPTI takes one subscriber.  If cuptiSubscribe
 * answers CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED, or enabling a
 * kind fails, another tool (PyTorch profiler, Nsight) owns CUPTI: one line
 * says so and sp_cupti_fallback tells nccl.c to time collectives with CUDA
 * events instead.  The probe subscription is released at once so that
 * the other tool keeps working when it starts after us.
 *
 * Flush.  A background thread calls cuptiActivityFlushAll(0) every
 * FLUSH_PERIOD_NS so completed buffers reach the trace while the job runs;
 * the core's flush hook forces the rest out before the file closes (never
 * from inside a CUPTI callback).  A forked child inherits our state but not
 * CUDA: it never flushes (a child flushing CUPTI state it did not create
 * can hang).
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cupti.h>

#include "intern.h"
#include "preload.h"
#include "sp_gpu.h"

#define BUF_COUNT 8
#define BUF_SIZE (4u << 20)
#define FLUSH_PERIOD_NS 1000000000L

/* ---- the CUPTI functions we use ------------------------------------------------ */

static struct {
    void *lib;
    CUptiResult (*register_timestamp)(CUpti_TimestampCallbackFunc);
    CUptiResult (*register_callbacks)(CUpti_BuffersCallbackRequestFunc,
                                      CUpti_BuffersCallbackCompleteFunc);
    CUptiResult (*enable)(CUpti_ActivityKind);
    CUptiResult (*next_record)(uint8_t *, size_t, CUpti_Activity **);
    CUptiResult (*dropped)(CUcontext, uint32_t, size_t *);
    CUptiResult (*flush_all)(uint32_t);
    CUptiResult (*subscribe)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *);
    CUptiResult (*unsubscribe)(CUpti_SubscriberHandle);
} cu;

enum { ATTACH_NONE,
       ATTACH_RUNNING,
       ATTACH_DONE };
atomic_int sp_cupti_attach_state; /* sp_gpu.h reads it on every call */
atomic_int sp_cupti_fallback;
void (*_Atomic sp_cupti_drain_hook)(int final);
#define attach_state sp_cupti_attach_state
static atomic_int active; /* CUPTI activity is being recorded */
static pid_t attach_pid;  /* the process that attached (fork check) */

int sp_cupti_active(void)
{
    return atomic_load_explicit(&active, memory_order_relaxed) && getpid() == attach_pid;
}

/* ---- locating libcupti --------------------------------------------------------- */

static void *try_open(const char *path)
{
    return dlopen(path, RTLD_NOW | RTLD_LOCAL);
}

static void *open_beside(const char *dir)
{
    static const char *const sonames[] = {"libcupti.so.13", "libcupti.so"};
    char path[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof sonames / sizeof *sonames; i++) {
        if (snprintf(path, sizeof path, "%s/%s", dir, sonames[i]) >= (int)sizeof path)
            return NULL;
        void *h = try_open(path);
        if (h)
            return h;
    }
    return NULL;
}

/* The directory of the libcudart the job has loaded, when it has one. */
static int cudart_dir(char *out, size_t len)
{
    void *sym = dlsym(RTLD_DEFAULT, "cudaRuntimeGetVersion");
    Dl_info info;
    if (!sym || !dladdr(sym, &info) || !info.dli_fname || !strchr(info.dli_fname, '/'))
        return 0;
    snprintf(out, len, "%s", info.dli_fname);
    char *slash = strrchr(out, '/');
    *slash = 0;
    return 1;
}

static void *open_cupti(void)
{
    const char *explicit_lib = getenv("SCALEPROF_CUPTI_LIB");
    if (explicit_lib && *explicit_lib)
        return try_open(explicit_lib);
    char dir[PATH_MAX];
    void *h = NULL;
    if (cudart_dir(dir, sizeof dir) && (h = open_beside(dir)))
        return h;
    const char *home = getenv("CUDA_HOME");
    if (home && *home) {
        snprintf(dir, sizeof dir, "%s/lib64", home);
        if ((h = open_beside(dir)))
            return h;
        snprintf(dir, sizeof dir, "%s/extras/CUPTI/lib64", home);
        if ((h = open_beside(dir)))
            return h;
    }
    if ((h = try_open("libcupti.so.13")))
        return h;
    return try_open("libcupti.so");
}

static int resolve_cupti(void *lib)
{
#define SYM(field, name) (cu.field = (__typeof__(cu.field))dlsym(lib, name))
    SYM(register_timestamp, "cuptiActivityRegisterTimestampCallback");
    SYM(register_callbacks, "cuptiActivityRegisterCallbacks");
    SYM(enable, "cuptiActivityEnable");
    SYM(next_record, "cuptiActivityGetNextRecord");
    SYM(dropped, "cuptiActivityGetNumDroppedRecords");
    SYM(flush_all, "cuptiActivityFlushAll");
    SYM(subscribe, "cuptiSubscribe");
    SYM(unsubscribe, "cuptiUnsubscribe");
#undef SYM
    return cu.register_timestamp && cu.register_callbacks && cu.enable && cu.next_record &&
           cu.flush_all;
}

/* ---- buffers -------------------------------------------------------------------- */

static uint8_t *buffers[BUF_COUNT];
static atomic_uint free_mask; /* bit i: buffers[i] is free */

/* CUPTI wants 8-byte aligned buffers: mmap's pages and BUF_SIZE steps give more. */
static int make_pool(void)
{
    uint8_t *all = mmap(NULL, (size_t)BUF_COUNT * BUF_SIZE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (all == MAP_FAILED)
        return 0;
    for (int i = 0; i < BUF_COUNT; i++)
        buffers[i] = all + (size_t)i * BUF_SIZE;
    atomic_store(&free_mask, (1u << BUF_COUNT) - 1);
    return 1;
}

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    unsigned m = atomic_load(&free_mask);
    while (m) {
        unsigned bit = m & -m;
        if (atomic_compare_exchange_weak(&free_mask, &m, m & ~bit)) {
            *buffer = buffers[__builtin_ctz(bit)];
            *size = BUF_SIZE;
            *max_records = 0;
            return;
        }
    }
    *buffer = NULL; /* pool empty: CUPTI drops and counts */
    *size = 0;
    *max_records = 0;
}

static void buffer_release(uint8_t *buffer)
{
    for (int i = 0; i < BUF_COUNT; i++)
        if (buffers[i] == buffer)
            atomic_fetch_or(&free_mask, 1u << i);
}

/* ---- records -> events ---------------------------------------------------------- */

static int is_nccl_kernel(const char *name)
{
    return name && (!strncmp(name, "ncclKernel", 10) || !strncmp(name, "ncclDevKernel", 13));
}

static enum sp_copy_kind copy_kind_of(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOD: return SP_COPY_H2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOH: return SP_COPY_D2H;
    case CUPTI_ACTIVITY_MEMCPY_KIND_DTOD: return SP_COPY_D2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_PTOP: return SP_COPY_D2D;
    case CUPTI_ACTIVITY_MEMCPY_KIND_HTOH: return SP_COPY_H2H;
    default: return SP_COPY_UNKNOWN;
    }
}

/* CUPTI's memory kinds, as the trace names them. */
static enum sp_mem_kind mem_kind_of(uint8_t k)
{
    switch (k) {
    case CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE: return SP_MEM_PAGEABLE;
    case CUPTI_ACTIVITY_MEMORY_KIND_PINNED: return SP_MEM_PINNED;
    case CUPTI_ACTIVITY_MEMORY_KIND_DEVICE: return SP_MEM_DEVICE;
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED:
    case CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC: return SP_MEM_MANAGED;
    case CUPTI_ACTIVITY_MEMORY_KIND_UNKNOWN: return SP_MEM_UNKNOWN;
    default: return SP_MEM_OTHER;
    }
}

static void emit_gpu(uint64_t start, uint64_t end, struct sp_ev_gpu g)
{
    struct sp_event ev = {.type = SP_EV_GPU, .t = start, .gpu = g};
    ev.gpu.dur = end > start ? end - start : 0;
    sp_emit_gpu(&ev); /* by when it ran, not when CUPTI delivered it */
}

static void kernel_record(const CUpti_ActivityKernel10 *k)
{
    uint64_t threads = (uint64_t)k->gridX * (uint64_t)k->gridY * (uint64_t)k->gridZ *
                       (uint64_t)k->blockX * (uint64_t)k->blockY * (uint64_t)k->blockZ;
    emit_gpu(k->start, k->end,
             (struct sp_ev_gpu){
                 .kind = is_nccl_kernel(k->name) ? SP_GPU_NCCL_KERNEL : SP_GPU_KERNEL,
                 .device = k->deviceId,
                 .stream = k->streamId,
                 .name = sp_intern_name(k->name),
                 .correlation = k->correlationId,
                 .graph = k->graphId,
                 .grid = threads,
             });
}

static void memcpy_record(const CUpti_ActivityMemcpy6 *m)
{
    emit_gpu(m->start, m->end,
             (struct sp_ev_gpu){
                 .kind = SP_GPU_MEMCPY,
                 .device = m->deviceId,
                 .stream = m->streamId,
                 .copy_kind = copy_kind_of(m->copyKind),
                 .bytes = m->bytes,
                 .correlation = m->correlationId,
                 .graph = m->graphId,
                 .src_mem = mem_kind_of(m->srcKind),
                 .dst_mem = mem_kind_of(m->dstKind),
             });
}

static void memset_record(const CUpti_ActivityMemset4 *m)
{
    emit_gpu(m->start, m->end,
             (struct sp_ev_gpu){
                 .kind = SP_GPU_MEMSET,
                 .device = m->deviceId,
                 .stream = m->streamId,
                 .bytes = m->bytes,
                 .correlation = m->correlationId,
                 .graph = m->graphId,
             });
}

static void emit_dropped(size_t count)
{
    struct sp_event ev = {.type = SP_EV_DROPPED, .t = sp_now(), .dropped = {.count = count, .reason = SP_DROP_CUPTI}};
    sp_emit(&ev);
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)size;
    int saved = errno;
    (void)SP_GUARD_ENTER(); /* CUPTI's thread: nothing it calls is the job's */
    CUpti_Activity *rec = NULL;
    while (buffer && cu.next_record(buffer, valid, &rec) == CUPTI_SUCCESS) {
        switch (rec->kind) {
        case CUPTI_ACTIVITY_KIND_KERNEL:
        case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
            kernel_record((const CUpti_ActivityKernel10 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMCPY:
            memcpy_record((const CUpti_ActivityMemcpy6 *)rec);
            break;
        case CUPTI_ACTIVITY_KIND_MEMSET:
            memset_record((const CUpti_ActivityMemset4 *)rec);
            break;
        default:
            break;
        }
    }
    size_t dropped = 0;
    if (cu.dropped && cu.dropped(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        emit_dropped(dropped);
    if (buffer)
        buffer_release(buffer);
    SP_GUARD_LEAVE();
    errno = saved;
}

static uint64_t CUPTIAPI monotonic_ns(void)
{
    return sp_now();
}

/* ---- flushing ---------------------------------------------------------------------- */

static void flush_hook(int final)
{
    if (getpid() != attach_pid)
        return; /* a forked child: CUDA state it did not create, never touched */
    if (sp_cupti_active())
        cu.flush_all(final ? CUPTI_ACTIVITY_FLAG_FLUSH_FORCED : 0);
    void (*drain)(int) = atomic_load(&sp_cupti_drain_hook);
    if (drain)
        drain(final);
}

static void *flush_thread(void *arg)
{
    (void)arg;
    struct timespec period = {FLUSH_PERIOD_NS / 1000000000L, FLUSH_PERIOD_NS % 1000000000L};
    sp_guard_forever(); /* our thread: record nothing it does */
    for (;;) {
        nanosleep(&period, NULL);
        if (getpid() != attach_pid)
            return NULL;
        flush_hook(0);
    }
    return NULL;
}

static void start_flush_thread(void)
{
    pthread_t th;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&th, &attr, flush_thread, NULL) != 0)
        sp_log("no CUPTI flush thread: GPU activity reaches the trace at exit only");
    pthread_attr_destroy(&attr);
}

/* ---- attaching ------------------------------------------------------------------------ */

static void CUPTIAPI probe_callback(void *ud, CUpti_CallbackDomain d, CUpti_CallbackId id,
                                    const void *data)
{
    (void)ud, (void)d, (void)id, (void)data;
}

/* Another tool holds CUPTI when a subscriber of ours is refused. */
static int cupti_taken(void)
{
    if (!cu.subscribe)
        return 0;
    CUpti_SubscriberHandle sub;
    CUptiResult r = cu.subscribe(&sub, probe_callback, NULL);
    if (r == CUPTI_SUCCESS) {
        if (cu.unsubscribe)
            cu.unsubscribe(sub);
        return 0;
    }
    return r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
}

static int enable_kinds(void)
{
    static const CUpti_ActivityKind kinds[] = {
        CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
        CUPTI_ACTIVITY_KIND_MEMCPY,
        CUPTI_ACTIVITY_KIND_MEMSET,
    };
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++)
        if (cu.enable(kinds[i]) != CUPTI_SUCCESS)
            return 0;
    return 1;
}

enum attach_outcome { ATTACHED,
                      NO_CUPTI,
                      CUPTI_BUSY,
                      NOT_YET };

/* libcupti is loaded on the recorder's service thread, whose descriptor
 * table is its own: the loader's open of the library never takes, even
 * for a moment, a number the job's other threads could meet.  The first
 * attach waits for it at most LOAD_WAIT_NS (the caller may itself hold
 * the loader's lock - a CUDA call from a library constructor - and the
 * load would then wait for it); when it is not done, the call goes on and
 * a later CUDA or NCCL call attaches, without waiting again. */
#define LOAD_WAIT_NS (1000ull * 1000 * 1000)
static void *loaded_lib;

static void load_cupti(void *arg)
{
    (void)arg;
    __atomic_store_n(&loaded_lib, open_cupti(), __ATOMIC_RELEASE);
}

static struct sp_fd_job load_job = {.fn = load_cupti};
static int load_waited;

static enum attach_outcome attach(void)
{
    const struct sp_config *cfg = sp_config();
    if (cfg && !cfg->cupti)
        return NO_CUPTI;
    int done = sp_fd_job_run(&load_job, load_waited ? 0 : LOAD_WAIT_NS);
    load_waited = 1;
    if (!done && atomic_load(&load_job.state) == SP_JOB_POSTED)
        return NOT_YET;
    void *lib = done ? __atomic_load_n(&loaded_lib, __ATOMIC_ACQUIRE) : open_cupti();
    if (!lib || !resolve_cupti(lib))
        return NO_CUPTI;
    cu.lib = lib;
    if (cupti_taken())
        return CUPTI_BUSY;
    if (cu.register_timestamp(monotonic_ns) != CUPTI_SUCCESS)
        return CUPTI_BUSY;
    if (!make_pool())
        return NO_CUPTI;
    if (cu.register_callbacks(buffer_requested, buffer_completed) != CUPTI_SUCCESS ||
        !enable_kinds())
        return CUPTI_BUSY;
    return ATTACHED;
}

void sp_cupti_attach_now(void)
{
    int expect = ATTACH_NONE;
    if (!atomic_compare_exchange_strong(&attach_state, &expect, ATTACH_RUNNING))
        return; /* another thread attaches; this call goes on without waiting */
    int saved = errno;
    (void)SP_GUARD_ENTER();
    attach_pid = getpid();
    sp_core_flush_hook = flush_hook;
    switch (attach()) {
    case NOT_YET: /* still loading: a later call attaches */
        sp_core_flush_hook = NULL;
        atomic_store_explicit(&attach_state, ATTACH_NONE, memory_order_release);
        SP_GUARD_LEAVE();
        errno = saved;
        return;
    case ATTACHED:
        atomic_store(&active, 1);
        start_flush_thread();
        break;
    case CUPTI_BUSY:
        sp_log("CUPTI is in use by another tool (PyTorch profiler, Nsight?): "
               "falling back to CUDA-event timing of collectives");
        atomic_store(&sp_cupti_fallback, 1);
        break;
    case NO_CUPTI:
        sp_log("CUPTI not available: kernels are not recorded; "
               "collectives are timed with CUDA events");
        atomic_store(&sp_cupti_fallback, 1);
        break;
    }
    atomic_store_explicit(&attach_state, ATTACH_DONE, memory_order_release);
    SP_GUARD_LEAVE();
    errno = saved;
}

/* The driver calls this when CUDA_INJECTION64_PATH names our library. */
SP_EXPORT int InitializeInjection(void)
{
    sp_cupti_ensure();
    return 1;
}
