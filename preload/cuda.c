/*
 * cuda.c - the CUDA runtime calls that explain what the host did to the
 * GPU: kernel and graph launches, synchronizations, copies, memsets, and
 * the current device.
 *
 * Launches are the hot path (thousands per step): the call timed as a
 * span (preload.h: one tick before the real call, the tick after and one
 * conversion for both), and one event encoded straight into the
 * thread's slot (emit.h), inlined into each interposer of the table so
 * that its api and its zero fields are constants.  No CUPTI
 * correlation id is fetched per launch - that would cost more than the
 * whole record; the analyzer pairs a launch with its kernel by thread,
 * stream and order, and CUPTI's kernel records carry the names.
 *
 * Synchronizations are where the host waits, so they carry the call site:
 * the return addresses of the stack, hashed.  A site is symbolized
 * ("func+0x12 <- caller+0x40 ...") and interned only the first time it is
 * seen; later calls find its string id in a lock-free table.  Ids are
 * tagged with the trace file's generation (a forked child or a failed exec
 * opens a new file with its own strings) and re-interned when stale.
 *
 * Binaries bind versioned references (cudaLaunchKernel@libcudart.so.13).
 * An unversioned definition in a preloaded object still satisfies them:
 * glibc accepts an unversioned definition for a versioned reference from
 * another object.  Every name the runtime declares per-thread-default-
 * stream variants for (_ptsz, _ptds) is interposed under both names.
 *
 * Calls made while another interposer is inside its real call (NCCL's own
 * use of the runtime) are passed through unrecorded: the NCCL event already
 * covers them.  That is why, unlike io.c, the guard is held across the real
 * call here; a job that siglongjmps out of a blocking sync gets it back
 * through the guard's frame check (preload.h).
 *
 * Every recorded runtime call is one row of CUDA_FUNCTIONS, expanded by one
 * body (CUDA_DEFINE) on interpose.h's SP_REAL; only cudaSetDevice, which
 * also caches the thread's device, is written out.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>

#include "emit.h"
#include "interpose.h"
#include "intern.h"
#include "preload.h"
#include "sp_gpu.h"

#define STACK_DEPTH 8        /* frames kept per call site */
#define STACK_OURS_MAX 4     /* our own frames (wrapper, helpers) on top */
#define SITE_TABLE_SIZE 4096 /* distinct sync call sites, power of two */
#define SITE_TEXT_MAX 1024
#define SITE_HASH_SHIFT 20 /* hash bits that pick the first probe */
#define HASH_PRIME 0x100000001b3ull
#define HASH_SEED 0xcbf29ce484222325ull

/* The real runtime function; a missing one fails the call (interpose.h). */
#define CUDA_REAL(name, params) \
    SP_REAL(name, cudaError_t, params, sp_real, return cudaErrorSharedObjectSymbolNotFound)

/* ---- current device ------------------------------------------------------- */

__thread int sp_gpu_tls_device __attribute__((tls_model("initial-exec"))) = -1;
#define tls_device sp_gpu_tls_device

/* sp_gpu_current_device's slow path (sp_gpu.h): the runtime is asked. */
int sp_gpu_ask_device(void)
{
    if (SP_LIKELY(tls_device >= 0))
        return tls_device;
    static cudaError_t (*get_device)(int *);
    static atomic_int resolved;
    if (!atomic_load_explicit(&resolved, memory_order_acquire)) {
        get_device = (cudaError_t(*)(int *))sp_real("cudaGetDevice");
        atomic_store_explicit(&resolved, 1, memory_order_release);
    }
    int d = -1;
    if (get_device && get_device(&d) == cudaSuccess)
        tls_device = d;
    return d;
}

/* ---- call sites of synchronizations ----------------------------------------- */

/* Interned call-site texts, keyed by the hash of their stack (intern.h). */
static struct sp_id_slot sites[SITE_TABLE_SIZE];

/* "func+0x12 <- caller+0x40 <- ..." from return addresses. */
static void site_text(void *const *pcs, int n, char *out, size_t cap)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used + 1 < cap; i++) {
        Dl_info info;
        const char *sep = i ? " <- " : "";
        int w;
        if (dladdr(pcs[i], &info) && info.dli_sname)
            w = snprintf(out + used, cap - used, "%s%s+0x%lx", sep, info.dli_sname,
                         (unsigned long)((char *)pcs[i] - (char *)info.dli_saddr));
        else if (info.dli_fname)
            w = snprintf(out + used, cap - used, "%s%s+0x%lx", sep,
                         (strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1 : info.dli_fname),
                         (unsigned long)((char *)pcs[i] - (char *)info.dli_fbase));
        else
            w = snprintf(out + used, cap - used, "%s%p", sep, pcs[i]);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

/* Our own code's address range, so that the frames of the wrapper (and
 * of whatever the compiler did not inline) are left off the call site. */
static uintptr_t own_lo, own_hi;
static atomic_int own_range_known;

static int find_own_range(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size, (void)data;
    uintptr_t me = (uintptr_t)(void *)find_own_range;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && me >= lo && me < hi) {
            own_lo = lo;
            own_hi = hi;
            return 1;
        }
    }
    return 0;
}

static int is_ours(void *pc)
{
    if (!atomic_load_explicit(&own_range_known, memory_order_acquire)) {
        dl_iterate_phdr(find_own_range, NULL);
        atomic_store_explicit(&own_range_known, 1, memory_order_release);
    }
    return (uintptr_t)pc >= own_lo && (uintptr_t)pc < own_hi;
}

/* libunwind is loaded on the first call site wanted, not linked: most
 * traced processes never sync a stream and should not map it.  It is
 * loaded from the service thread (its open must not take a descriptor of
 * the job's), waited for at most SP_UNWIND_WAIT_NS: a caller holding the
 * loader's lock (a sync from a library constructor) goes on without. */
#define SP_UNWIND_WAIT_NS (50ull * 1000 * 1000)
static int (*real_unw_backtrace)(void **, int);

static void load_unwind(void *arg)
{
    (void)arg;
    void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        h = dlopen("libunwind.so", RTLD_NOW | RTLD_LOCAL);
    if (h)
        __atomic_store_n(&real_unw_backtrace, (int (*)(void **, int))dlsym(h, "unw_backtrace"),
                         __ATOMIC_RELEASE);
}

static struct sp_fd_job unwind_job = {.fn = load_unwind};

static int backtrace_pcs(void **out, int max)
{
    int (*bt)(void **, int) = __atomic_load_n(&real_unw_backtrace, __ATOMIC_ACQUIRE);
    if (!bt && sp_fd_job_run(&unwind_job, SP_UNWIND_WAIT_NS))
        bt = __atomic_load_n(&real_unw_backtrace, __ATOMIC_ACQUIRE);
    return bt ? bt(out, max) : 0;
}

/* The interned call site of the caller of our wrapper; 0 when unknown. */
static uint32_t call_site(void)
{
    void *all[STACK_DEPTH + STACK_OURS_MAX];
    int total = backtrace_pcs(all, STACK_DEPTH + STACK_OURS_MAX), skip = 0;
    while (skip < total && skip < STACK_OURS_MAX && is_ours(all[skip]))
        skip++;
    void **pcs = all + skip;
    int n = total - skip < STACK_DEPTH ? total - skip : STACK_DEPTH;
    if (n <= 0)
        return 0;
    uint64_t h = HASH_SEED;
    for (int i = 0; i < n; i++) {
        h ^= (uint64_t)(uintptr_t)pcs[i];
        h *= HASH_PRIME;
    }
    h |= 1; /* 0 marks a free entry */
    struct sp_id_slot *slot = sp_id_slot_find(sites, SITE_TABLE_SIZE, h, SITE_HASH_SHIFT);
    uint32_t id = slot ? sp_id_slot_get(slot, sp_generation) : 0;
    if (id)
        return id;
    /* first time in this file, or the table is full */
    char text[SITE_TEXT_MAX];
    site_text(pcs, n, text, sizeof text);
    id = sp_intern(text);
    if (slot)
        sp_id_slot_set(slot, sp_generation, id);
    return id;
}

/* ---- the event ------------------------------------------------------------------ */

static enum sp_copy_kind copy_kind_of(enum cudaMemcpyKind k)
{
    switch (k) {
    case cudaMemcpyHostToHost: return SP_COPY_H2H;
    case cudaMemcpyHostToDevice: return SP_COPY_H2D;
    case cudaMemcpyDeviceToHost: return SP_COPY_D2H;
    case cudaMemcpyDeviceToDevice: return SP_COPY_D2D;
    default: return SP_COPY_UNKNOWN;
    }
}

/* The table's last column: whether a call carries its call site.  An
 * asynchronous copy returns at once, unless its host memory is pageable:
 * then it waits for the copy, and the GPU's queue before it, like a sync
 * (what .item() does); it carries the site when it took BLOCKED_NS. */
#define SITE_NEVER 0
#define SITE_ALWAYS 1
#define SITE_IF_BLOCKED 2
#define BLOCKED_NS 50000

struct cuda_call {
    struct sp_span span; /* its start, converted at its end (preload.h) */
    enum sp_cuda_api api;
    cudaStream_t stream;
    uint64_t bytes;
    enum sp_copy_kind copy_kind;
    uint32_t stack;
};

/* Inlined into each interposer of the table, where the api, the copy
 * kind and which fields are zero are constants. */
static inline __attribute__((always_inline)) void emit_cuda(const struct cuda_call *c, struct sp_times tm,
                                                            cudaError_t res)
{
    struct sp_event ev = {
        .type = SP_EV_CUDA,
        .t = tm.t0,
        .cuda = {
            .dur = tm.dur,
            .api = c->api,
            .stream = (uint64_t)(uintptr_t)c->stream,
            .device = sp_gpu_current_device(),
            .bytes = c->bytes,
            .copy_kind = c->copy_kind,
            .stack = c->stack,
            .result = res,
        },
    };
    sp_emit_inline(&ev); /* both callers restore errno next */
}

/* Record only outermost calls, only while recording. */
static inline __attribute__((always_inline)) int want_record(void)
{
    return sp_recording && !sp_guard_held();
}

/* ---- the table ---------------------------------------------------------------
 *
 * Every runtime call recorded, once.  Columns: name, parameters, arguments
 * passed on, then what the event says: api, stream, bytes, copy kind, and
 * whether to capture the call site (synchronizations and blocking copies,
 * where the host waits).  All return cudaError_t; a missing real function
 * returns cudaErrorSharedObjectSymbolNotFound.  The _ptsz/_ptds names are
 * the per-thread-default-stream variants.  __cudaLaunchKernel is what nvcc
 * emits for <<<>>> in CUDA 13 (after __cudaGetKernel).  A blocking copy is
 * a synchronization too: it carries its call site. */
#define LAUNCH_PARAMS const void *func, dim3 grid, dim3 block, void **kargs, size_t shared, cudaStream_t stream
#define LAUNCH_ARGS (func, grid, block, kargs, shared, stream)
#define STUB_PARAMS cudaKernel_t kernel, dim3 grid, dim3 block, void **kargs, size_t shared, cudaStream_t stream
#define STUB_ARGS (kernel, grid, block, kargs, shared, stream)
#define EX_PARAMS const cudaLaunchConfig_t *config, const void *func, void **kargs
#define EX_STREAM (config ? config->stream : NULL)
#define MEMCPY_PARAMS void *dst, const void *src, size_t count, enum cudaMemcpyKind kind
#define MEMCPY_ASYNC_PARAMS MEMCPY_PARAMS, cudaStream_t stream
#define NONE SP_COPY_UNKNOWN

#define CUDA_FUNCTIONS(X)                                                                                   \
    X(cudaLaunchKernel, (LAUNCH_PARAMS), LAUNCH_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)                   \
    X(cudaLaunchKernel_ptsz, (LAUNCH_PARAMS), LAUNCH_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)              \
    X(cudaLaunchCooperativeKernel, (LAUNCH_PARAMS), LAUNCH_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)        \
    X(cudaLaunchCooperativeKernel_ptsz, (LAUNCH_PARAMS), LAUNCH_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)   \
    X(__cudaLaunchKernel, (STUB_PARAMS), STUB_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)                     \
    X(__cudaLaunchKernel_ptsz, (STUB_PARAMS), STUB_ARGS, SP_CUDA_LAUNCH, stream, 0, NONE, 0)                \
    X(cudaLaunchKernelExC, (EX_PARAMS), (config, func, kargs), SP_CUDA_LAUNCH, EX_STREAM, 0, NONE, 0)       \
    X(cudaLaunchKernelExC_ptsz, (EX_PARAMS), (config, func, kargs), SP_CUDA_LAUNCH, EX_STREAM, 0, NONE, 0)  \
    X(cudaGraphLaunch, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream),                         \
      SP_CUDA_GRAPH_LAUNCH, stream, 0, NONE, 0)                                                             \
    X(cudaGraphLaunch_ptsz, (cudaGraphExec_t exec, cudaStream_t stream), (exec, stream),                    \
      SP_CUDA_GRAPH_LAUNCH, stream, 0, NONE, 0)                                                             \
    X(cudaDeviceSynchronize, (void), (), SP_CUDA_DEVICE_SYNC, NULL, 0, NONE, 1)                             \
    X(cudaStreamSynchronize, (cudaStream_t stream), (stream), SP_CUDA_STREAM_SYNC, stream, 0, NONE, 1)      \
    X(cudaStreamSynchronize_ptsz, (cudaStream_t stream), (stream), SP_CUDA_STREAM_SYNC, stream, 0, NONE, 1) \
    X(cudaEventSynchronize, (cudaEvent_t event), (event), SP_CUDA_EVENT_SYNC, NULL, 0, NONE, 1)             \
    X(cudaStreamWaitEvent, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),                    \
      (stream, event, flags), SP_CUDA_STREAM_WAIT_EVENT, stream, 0, NONE, 0)                                \
    X(cudaStreamWaitEvent_ptsz, (cudaStream_t stream, cudaEvent_t event, unsigned int flags),               \
      (stream, event, flags), SP_CUDA_STREAM_WAIT_EVENT, stream, 0, NONE, 0)                                \
    X(cudaMemcpy, (MEMCPY_PARAMS), (dst, src, count, kind), SP_CUDA_MEMCPY, NULL, count,                    \
      copy_kind_of(kind), 1)                                                                                \
    X(cudaMemcpy_ptds, (MEMCPY_PARAMS), (dst, src, count, kind), SP_CUDA_MEMCPY, NULL, count,               \
      copy_kind_of(kind), 1)                                                                                \
    X(cudaMemcpyAsync, (MEMCPY_ASYNC_PARAMS), (dst, src, count, kind, stream), SP_CUDA_MEMCPY_ASYNC,        \
      stream, count, copy_kind_of(kind), SITE_IF_BLOCKED)                                                   \
    X(cudaMemcpyAsync_ptsz, (MEMCPY_ASYNC_PARAMS), (dst, src, count, kind, stream),                         \
      SP_CUDA_MEMCPY_ASYNC, stream, count, copy_kind_of(kind), SITE_IF_BLOCKED)                             \
    X(cudaMemset, (void *dst, int value, size_t count), (dst, value, count), SP_CUDA_MEMSET, NULL,          \
      count, NONE, 0)                                                                                       \
    X(cudaMemset_ptds, (void *dst, int value, size_t count), (dst, value, count), SP_CUDA_MEMSET,           \
      NULL, count, NONE, 0)                                                                                 \
    X(cudaMemsetAsync, (void *dst, int value, size_t count, cudaStream_t stream),                           \
      (dst, value, count, stream), SP_CUDA_MEMSET, stream, count, NONE, 0)                                  \
    X(cudaMemsetAsync_ptsz, (void *dst, int value, size_t count, cudaStream_t stream),                      \
      (dst, value, count, stream), SP_CUDA_MEMSET, stream, count, NONE, 0)

/* The one body: the real call with the caller's errno and our guard held
 * (so NCCL's or the runtime's nested calls are not recorded), timed as a
 * span, one event after. */
#define CUDA_DEFINE(name, params, fwd, API, STREAM, BYTES, KIND, STACK)                         \
    SP_EXPORT cudaError_t name params                                                           \
    {                                                                                           \
        int entry_errno = errno;                                                                \
        CUDA_REAL(name, params);                                                                \
        sp_cupti_ensure();                                                                      \
        if (!want_record()) {                                                                   \
            errno = entry_errno;                                                                \
            return real fwd;                                                                    \
        }                                                                                       \
        struct cuda_call c = {.api = API, .stream = STREAM, .bytes = BYTES, .copy_kind = KIND}; \
        if (STACK == SITE_ALWAYS)                                                               \
            c.stack = call_site();                                                              \
        sp_span_begin(&c.span);                                                                 \
        sp_guard_take(); /* want_record() saw it free; call_site()'s guards are balanced */     \
        errno = entry_errno;                                                                    \
        cudaError_t res = real fwd;                                                             \
        int saved = errno;                                                                      \
        struct sp_times tm = sp_span_end(c.span);                                               \
        sp_guard_drop();                                                                        \
        if (STACK == SITE_IF_BLOCKED && tm.dur > BLOCKED_NS)                                    \
            c.stack = call_site();                                                              \
        emit_cuda(&c, tm, res);                                                                 \
        errno = saved;                                                                          \
        return res;                                                                             \
    }
CUDA_FUNCTIONS(CUDA_DEFINE)

/* cudaLaunchKernel_ptsz and friends are declared only through macros when
 * CUDA_API_PER_THREAD_DEFAULT_STREAM is set; the table defines them all. */

/* ---- device ------------------------------------------------------------------------- */

SP_EXPORT cudaError_t cudaSetDevice(int device)
{
    int entry_errno = errno;
    CUDA_REAL(cudaSetDevice, (int device));
    sp_cupti_ensure();
    struct cuda_call c = {.api = SP_CUDA_SET_DEVICE};
    sp_span_begin(&c.span);
    int outer = SP_GUARD_ENTER();
    errno = entry_errno;
    cudaError_t res = real(device);
    int saved = errno;
    struct sp_times tm = sp_span_end(c.span);
    (void)SP_GUARD_LEAVE();
    if (res == cudaSuccess)
        tls_device = device;
    if (outer && sp_recording)
        emit_cuda(&c, tm, res);
    errno = saved;
    return res;
}
