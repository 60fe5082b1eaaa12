/*
 * cuda.c - the CUDA runtime calls that explain what the host did to the
 * GPU: kernel and graph launches, synchronizations, copies, memsets, and
 * the current device.
 *
 * Launches are the hot path (thousands per step): one clock read before
 * and after the real call, and one event built on the stack.  No CUPTI
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
 * covers them.
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include <libunwind.h>

#include "preload.h"
#include "sp_gpu.h"

#define STACK_DEPTH 8          /* frames kept per call site */
#define STACK_OURS_MAX 4       /* our own frames (wrapper, helpers) on top */
#define SITE_TABLE_SIZE 4096   /* distinct sync call sites, power of two */
#define SITE_TEXT_MAX 1024
#define SITE_HASH_SHIFT 20     /* hash bits that pick the first probe */
#define HASH_PRIME 0x100000001b3ull
#define HASH_SEED 0xcbf29ce484222325ull

#define REAL(fn)                                                               \
    int entry_errno = errno;                                                   \
    static __typeof__(&fn) real_##fn;                                          \
    __typeof__(&fn) real = __atomic_load_n(&real_##fn, __ATOMIC_RELAXED);      \
    if (SP_UNLIKELY(!real)) {                                                  \
        real = (__typeof__(&fn))sp_real(#fn);                                  \
        __atomic_store_n(&real_##fn, real, __ATOMIC_RELAXED);                  \
    }                                                                          \
    if (SP_UNLIKELY(!real))                                                    \
        return cudaErrorSharedObjectSymbolNotFound;

/* Same, for the _ptsz/_ptds variants the headers only declare by macro. */
#define REAL_AS(type, fn)                                                      \
    int entry_errno = errno;                                                   \
    static type real_##fn;                                                     \
    type real = __atomic_load_n(&real_##fn, __ATOMIC_RELAXED);                 \
    if (SP_UNLIKELY(!real)) {                                                  \
        real = (type)sp_real(#fn);                                             \
        __atomic_store_n(&real_##fn, real, __ATOMIC_RELAXED);                  \
    }                                                                          \
    if (SP_UNLIKELY(!real))                                                    \
        return cudaErrorSharedObjectSymbolNotFound;

/* ---- current device ------------------------------------------------------- */

static __thread int tls_device __attribute__((tls_model("initial-exec"))) = -1;

int sp_gpu_current_device(void)
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

/* Interned call-site texts, keyed by the hash of their stack (sp_gpu.h). */
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
                         strrchr(info.dli_fname, '/') ? strrchr(info.dli_fname, '/') + 1
                                                      : info.dli_fname,
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

/* The interned call site of the caller of our wrapper; 0 when unknown. */
static uint32_t call_site(void)
{
    void *all[STACK_DEPTH + STACK_OURS_MAX];
    int total = unw_backtrace(all, STACK_DEPTH + STACK_OURS_MAX), skip = 0;
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

struct cuda_call {
    uint64_t t0;
    enum sp_cuda_api api;
    cudaStream_t stream;
    uint64_t bytes;
    enum sp_copy_kind copy_kind;
    uint32_t stack;
};

static void emit_cuda(const struct cuda_call *c, cudaError_t res)
{
    uint64_t t1 = sp_now();
    struct sp_event ev = {
        .type = SP_EV_CUDA,
        .t = c->t0,
        .cuda = {
            .dur = t1 - c->t0,
            .api = c->api,
            .stream = (uint64_t)(uintptr_t)c->stream,
            .device = sp_gpu_current_device(),
            .bytes = c->bytes,
            .copy_kind = c->copy_kind,
            .stack = c->stack,
            .result = res,
        },
    };
    sp_emit(&ev);
}

/* Record only outermost calls, only while recording. */
static inline int want_record(void)
{
    return sp_recording && sp_guard_depth == 0;
}

/* The shape every interposer shares.  STACK: 1 to capture the call site. */
#define CUDA_CALL(API, STREAM, BYTES, KIND, STACK, CALL)                      \
    do {                                                                       \
        sp_cupti_ensure();                                                     \
        if (!want_record()) {                                                  \
            errno = entry_errno;                                               \
            return CALL;                                                       \
        }                                                                      \
        struct cuda_call c = {.api = API, .stream = STREAM, .bytes = BYTES,    \
                              .copy_kind = KIND};                              \
        if (STACK)                                                             \
            c.stack = call_site();                                             \
        c.t0 = sp_now();                                                       \
        (void)SP_GUARD_ENTER();                                                \
        errno = entry_errno;                                                   \
        cudaError_t res = CALL;                                                \
        int saved = errno;                                                     \
        (void)SP_GUARD_LEAVE();                                                \
        emit_cuda(&c, res);                                                    \
        errno = saved;                                                         \
        return res;                                                            \
    } while (0)

/* ---- launches ----------------------------------------------------------------- */

typedef cudaError_t (*launch_fn)(const void *, dim3, dim3, void **, size_t, cudaStream_t);
typedef cudaError_t (*launch_ex_fn)(const cudaLaunchConfig_t *, const void *, void **);
typedef cudaError_t (*graph_launch_fn)(cudaGraphExec_t, cudaStream_t);
typedef cudaError_t (*stub_launch_fn)(cudaKernel_t, dim3, dim3, void **, size_t, cudaStream_t);

#define DEFINE_LAUNCH(fn)                                                      \
    SP_EXPORT cudaError_t fn(const void *func, dim3 grid, dim3 block, void **args,          \
                             size_t shared, cudaStream_t stream)               \
    {                                                                          \
        REAL_AS(launch_fn, fn);                                                \
        CUDA_CALL(SP_CUDA_LAUNCH, stream, 0, SP_COPY_UNKNOWN, 0,               \
                  real(func, grid, block, args, shared, stream));              \
    }
DEFINE_LAUNCH(cudaLaunchKernel)
DEFINE_LAUNCH(cudaLaunchKernel_ptsz)
DEFINE_LAUNCH(cudaLaunchCooperativeKernel)
DEFINE_LAUNCH(cudaLaunchCooperativeKernel_ptsz)

/* What nvcc emits for <<<>>> in CUDA 13 (after __cudaGetKernel). */
#define DEFINE_STUB_LAUNCH(fn)                                                 \
    SP_EXPORT cudaError_t fn(cudaKernel_t kernel, dim3 grid, dim3 block, void **args,      \
                             size_t shared, cudaStream_t stream)               \
    {                                                                          \
        REAL_AS(stub_launch_fn, fn);                                           \
        CUDA_CALL(SP_CUDA_LAUNCH, stream, 0, SP_COPY_UNKNOWN, 0,               \
                  real(kernel, grid, block, args, shared, stream));            \
    }
DEFINE_STUB_LAUNCH(__cudaLaunchKernel)
DEFINE_STUB_LAUNCH(__cudaLaunchKernel_ptsz)

#define DEFINE_LAUNCH_EX(fn)                                                   \
    SP_EXPORT cudaError_t fn(const cudaLaunchConfig_t *config, const void *func, void **args) \
    {                                                                          \
        REAL_AS(launch_ex_fn, fn);                                             \
        CUDA_CALL(SP_CUDA_LAUNCH, config ? config->stream : NULL, 0,           \
                  SP_COPY_UNKNOWN, 0, real(config, func, args));               \
    }
DEFINE_LAUNCH_EX(cudaLaunchKernelExC)
DEFINE_LAUNCH_EX(cudaLaunchKernelExC_ptsz)

#define DEFINE_GRAPH_LAUNCH(fn)                                                \
    SP_EXPORT cudaError_t fn(cudaGraphExec_t exec, cudaStream_t stream)        \
    {                                                                          \
        REAL_AS(graph_launch_fn, fn);                                          \
        CUDA_CALL(SP_CUDA_GRAPH_LAUNCH, stream, 0, SP_COPY_UNKNOWN, 0,         \
                  real(exec, stream));                                         \
    }
DEFINE_GRAPH_LAUNCH(cudaGraphLaunch)
DEFINE_GRAPH_LAUNCH(cudaGraphLaunch_ptsz)

/* ---- synchronization ---------------------------------------------------------- */

SP_EXPORT cudaError_t cudaDeviceSynchronize(void)
{
    REAL(cudaDeviceSynchronize);
    CUDA_CALL(SP_CUDA_DEVICE_SYNC, NULL, 0, SP_COPY_UNKNOWN, 1, real());
}

typedef cudaError_t (*stream_fn)(cudaStream_t);
#define DEFINE_STREAM_SYNC(fn)                                                 \
    SP_EXPORT cudaError_t fn(cudaStream_t stream)                              \
    {                                                                          \
        REAL_AS(stream_fn, fn);                                                \
        CUDA_CALL(SP_CUDA_STREAM_SYNC, stream, 0, SP_COPY_UNKNOWN, 1, real(stream)); \
    }
DEFINE_STREAM_SYNC(cudaStreamSynchronize)
DEFINE_STREAM_SYNC(cudaStreamSynchronize_ptsz)

SP_EXPORT cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    REAL(cudaEventSynchronize);
    CUDA_CALL(SP_CUDA_EVENT_SYNC, NULL, 0, SP_COPY_UNKNOWN, 1, real(event));
}

typedef cudaError_t (*wait_event_fn)(cudaStream_t, cudaEvent_t, unsigned int);
#define DEFINE_WAIT_EVENT(fn)                                                  \
    SP_EXPORT cudaError_t fn(cudaStream_t stream, cudaEvent_t event, unsigned int flags) \
    {                                                                          \
        REAL_AS(wait_event_fn, fn);                                            \
        CUDA_CALL(SP_CUDA_STREAM_WAIT_EVENT, stream, 0, SP_COPY_UNKNOWN, 0,    \
                  real(stream, event, flags));                                 \
    }
DEFINE_WAIT_EVENT(cudaStreamWaitEvent)
DEFINE_WAIT_EVENT(cudaStreamWaitEvent_ptsz)

/* ---- copies and memsets ---------------------------------------------------------- */

typedef cudaError_t (*memcpy_fn)(void *, const void *, size_t, enum cudaMemcpyKind);
typedef cudaError_t (*memcpy_async_fn)(void *, const void *, size_t, enum cudaMemcpyKind,
                                       cudaStream_t);
typedef cudaError_t (*memset_fn)(void *, int, size_t);
typedef cudaError_t (*memset_async_fn)(void *, int, size_t, cudaStream_t);

/* A blocking copy is a synchronization too: it carries its call site. */
#define DEFINE_MEMCPY(fn)                                                      \
    SP_EXPORT cudaError_t fn(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind) \
    {                                                                          \
        REAL_AS(memcpy_fn, fn);                                                \
        CUDA_CALL(SP_CUDA_MEMCPY, NULL, count, copy_kind_of(kind), 1,          \
                  real(dst, src, count, kind));                                \
    }
DEFINE_MEMCPY(cudaMemcpy)
DEFINE_MEMCPY(cudaMemcpy_ptds)

#define DEFINE_MEMCPY_ASYNC(fn)                                                \
    SP_EXPORT cudaError_t fn(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, \
                             cudaStream_t stream)                              \
    {                                                                          \
        REAL_AS(memcpy_async_fn, fn);                                          \
        CUDA_CALL(SP_CUDA_MEMCPY_ASYNC, stream, count, copy_kind_of(kind), 0,  \
                  real(dst, src, count, kind, stream));                        \
    }
DEFINE_MEMCPY_ASYNC(cudaMemcpyAsync)
DEFINE_MEMCPY_ASYNC(cudaMemcpyAsync_ptsz)

#define DEFINE_MEMSET(fn)                                                      \
    SP_EXPORT cudaError_t fn(void *dst, int value, size_t count)               \
    {                                                                          \
        REAL_AS(memset_fn, fn);                                                \
        CUDA_CALL(SP_CUDA_MEMSET, NULL, count, SP_COPY_UNKNOWN, 0,             \
                  real(dst, value, count));                                    \
    }
DEFINE_MEMSET(cudaMemset)
DEFINE_MEMSET(cudaMemset_ptds)

#define DEFINE_MEMSET_ASYNC(fn)                                                \
    SP_EXPORT cudaError_t fn(void *dst, int value, size_t count, cudaStream_t stream) \
    {                                                                          \
        REAL_AS(memset_async_fn, fn);                                          \
        CUDA_CALL(SP_CUDA_MEMSET, stream, count, SP_COPY_UNKNOWN, 0,           \
                  real(dst, value, count, stream));                            \
    }
DEFINE_MEMSET_ASYNC(cudaMemsetAsync)
DEFINE_MEMSET_ASYNC(cudaMemsetAsync_ptsz)

/* ---- device ------------------------------------------------------------------------- */

SP_EXPORT cudaError_t cudaSetDevice(int device)
{
    REAL(cudaSetDevice);
    sp_cupti_ensure();
    uint64_t t0 = sp_now();
    int outer = SP_GUARD_ENTER();
    errno = entry_errno;
    cudaError_t res = real(device);
    int saved = errno;
    (void)SP_GUARD_LEAVE();
    if (res == cudaSuccess)
        tls_device = device;
    if (outer && sp_recording) {
        struct cuda_call c = {.t0 = t0, .api = SP_CUDA_SET_DEVICE};
        emit_cuda(&c, res);
    }
    errno = saved;
    return res;
}
