/*
 * cudart.c: the CUDA runtime API of the simulated libcudart.so.13, except
 * kernel launches (launch.c): devices, memory, copies, streams, events,
 * errors and versions.
 *
 * Every call draws a correlation id (as the real runtime does for each API
 * call) so that activity records can be tied back to the call that caused
 * them.  Errors follow the runtime's rules: each call returns its status and
 * a failing one also sets the thread's last error, which cudaGetLastError
 * returns and clears.  Calls the simulator does not model return
 * cudaErrorNotSupported after one line on stderr.
 */
#include "cudart_internal.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define SIM_DEVICE_MEMORY (80ull << 30)
#define SIM_ALLOC_ALIGN 256
#define SIM_MMAP_BYTES (1u << 20)

static _Thread_local int sim_device;
static _Thread_local cudaError_t sim_last_error = cudaSuccess;
static atomic_uint sim_correlation;

int sim_current_device(void) { return sim_device; }

uint32_t sim_next_correlation(void) { return atomic_fetch_add(&sim_correlation, 1) + 1; }

uint32_t sim_api_enter(void) { return sim_next_correlation(); }

cudaError_t sim_set_error(cudaError_t err)
{
    if (err != cudaSuccess)
        sim_last_error = err;
    return err;
}

static cudaError_t sim_not_supported(const char *name)
{
    sim_unsupported("cudart", name);
    return sim_set_error(cudaErrorNotSupported);
}

/* ------------------------------------------------------------ allocations */

/* Every allocation is remembered so that copies can tell device memory from
 * pinned and pageable host memory (cudaMemcpyDefault, CUPTI memory kinds). */
struct sim_alloc {
    char *base;
    size_t size;
    int device; /* -1: pinned host memory */
    int owned;  /* 0: the caller's memory, registered with cudaHostRegister */
};

static pthread_mutex_t sim_alloc_lock = PTHREAD_MUTEX_INITIALIZER;
static struct sim_alloc *sim_allocs;
static size_t sim_nallocs, sim_allocs_cap;
static size_t sim_device_bytes;

static void sim_alloc_add(void *p, size_t size, int device, int owned)
{
    pthread_mutex_lock(&sim_alloc_lock);
    if (sim_nallocs == sim_allocs_cap) {
        size_t cap = sim_allocs_cap ? 2 * sim_allocs_cap : 64;
        struct sim_alloc *n = realloc(sim_allocs, cap * sizeof *n);
        if (n) {
            sim_allocs = n;
            sim_allocs_cap = cap;
        }
    }
    if (sim_nallocs < sim_allocs_cap)
        sim_allocs[sim_nallocs++] = (struct sim_alloc){p, size, device, owned};
    if (device >= 0)
        sim_device_bytes += size;
    pthread_mutex_unlock(&sim_alloc_lock);
}

/* Forgets P; returns 0 when P is not a device (WANT_DEVICE) or host
 * allocation that we OWN (or registered memory, when OWNED is 0), else 1
 * and its size in *SIZE. */
static int sim_alloc_remove(void *p, int want_device, int owned, size_t *size)
{
    int found = 0;
    pthread_mutex_lock(&sim_alloc_lock);
    for (size_t i = 0; i < sim_nallocs; i++) {
        if (sim_allocs[i].base != p || (sim_allocs[i].device >= 0) != want_device ||
            sim_allocs[i].owned != owned)
            continue;
        if (sim_allocs[i].device >= 0)
            sim_device_bytes -= sim_allocs[i].size;
        *size = sim_allocs[i].size;
        sim_allocs[i] = sim_allocs[--sim_nallocs];
        found = 1;
        break;
    }
    pthread_mutex_unlock(&sim_alloc_lock);
    return found;
}

/* -2: unknown (pageable host), -1: pinned host, >= 0: device number. */
static int sim_alloc_lookup(const void *p)
{
    int where = -2;
    const char *c = p;
    pthread_mutex_lock(&sim_alloc_lock);
    for (size_t i = 0; i < sim_nallocs; i++) {
        if (c >= sim_allocs[i].base && c < sim_allocs[i].base + sim_allocs[i].size) {
            where = sim_allocs[i].device;
            break;
        }
    }
    pthread_mutex_unlock(&sim_alloc_lock);
    return where;
}

enum sim_copy_kind sim_copy_kind_of(const void *dst, const void *src, enum cudaMemcpyKind kind,
                                    int *src_pinned, int *dst_pinned)
{
    int s = sim_alloc_lookup(src), d = sim_alloc_lookup(dst);
    *src_pinned = s == -1;
    *dst_pinned = d == -1;
    switch (kind) {
    case cudaMemcpyHostToHost: return SIM_COPY_H2H;
    case cudaMemcpyHostToDevice: return SIM_COPY_H2D;
    case cudaMemcpyDeviceToHost: return SIM_COPY_D2H;
    case cudaMemcpyDeviceToDevice: return SIM_COPY_D2D;
    default: break;
    }
    if (s >= 0)
        return d >= 0 ? SIM_COPY_D2D : SIM_COPY_D2H;
    return d >= 0 ? SIM_COPY_H2D : SIM_COPY_H2H;
}

/* Big allocations are mapped, not malloc'ed: their pages cost nothing until
 * touched, so a job may "allocate" a GPU's worth of memory on a small host. */
static void *sim_alloc_bytes(size_t size)
{
    if (size >= SIM_MMAP_BYTES) {
        void *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    void *p = NULL;
    if (posix_memalign(&p, SIM_ALLOC_ALIGN, size ? size : 1) != 0)
        return NULL;
    return p;
}

static void sim_free_bytes(void *p, size_t size)
{
    if (size >= SIM_MMAP_BYTES)
        munmap(p, size);
    else
        free(p);
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    sim_api_enter();
    if (!devPtr)
        return sim_set_error(cudaErrorInvalidValue);
    *devPtr = sim_alloc_bytes(size);
    if (!*devPtr)
        return sim_set_error(cudaErrorMemoryAllocation);
    sim_alloc_add(*devPtr, size, sim_device, 1);
    return cudaSuccess;
}

cudaError_t cudaFree(void *devPtr)
{
    sim_api_enter();
    if (!devPtr)
        return cudaSuccess;
    sim_device_sync(sim_device); /* like the real cudaFree, it synchronises */
    size_t size;
    if (!sim_alloc_remove(devPtr, 1, 1, &size))
        return sim_set_error(cudaErrorInvalidValue);
    sim_free_bytes(devPtr, size);
    return cudaSuccess;
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t stream)
{
    (void)stream;
    return cudaMalloc(devPtr, size);
}

cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t stream)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (st)
        sim_stream_sync(st);
    size_t size = 0;
    if (devPtr && !sim_alloc_remove(devPtr, 1, 1, &size))
        return sim_set_error(cudaErrorInvalidValue);
    if (devPtr)
        sim_free_bytes(devPtr, size);
    return cudaSuccess;
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    (void)flags;
    sim_api_enter();
    if (!pHost)
        return sim_set_error(cudaErrorInvalidValue);
    *pHost = sim_alloc_bytes(size);
    if (!*pHost)
        return sim_set_error(cudaErrorMemoryAllocation);
    sim_alloc_add(*pHost, size, -1, 1);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **ptr, size_t size) { return cudaHostAlloc(ptr, size, 0); }

cudaError_t cudaFreeHost(void *ptr)
{
    sim_api_enter();
    if (!ptr)
        return cudaSuccess;
    size_t size;
    if (!sim_alloc_remove(ptr, 0, 1, &size))
        return sim_set_error(cudaErrorInvalidValue);
    sim_free_bytes(ptr, size);
    return cudaSuccess;
}

cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    (void)flags;
    sim_api_enter();
    sim_alloc_add(ptr, size, -1, 0);
    return cudaSuccess;
}

cudaError_t cudaHostUnregister(void *ptr)
{
    sim_api_enter();
    size_t size;
    return sim_alloc_remove(ptr, 0, 0, &size) ? cudaSuccess : sim_set_error(cudaErrorHostMemoryNotRegistered);
}

cudaError_t cudaMemGetInfo(size_t *free_bytes, size_t *total)
{
    sim_api_enter();
    pthread_mutex_lock(&sim_alloc_lock);
    size_t used = sim_device_bytes;
    pthread_mutex_unlock(&sim_alloc_lock);
    if (total)
        *total = SIM_DEVICE_MEMORY;
    if (free_bytes)
        *free_bytes = used < SIM_DEVICE_MEMORY ? SIM_DEVICE_MEMORY - used : 0;
    return cudaSuccess;
}

/* ------------------------------------------------------------ copies */

/* How a copy or a memset of count bytes to dst on stream starts: the
 * call counted, its pointers checked (ptrs_ok), the stream resolved into
 * *st, and its operation made, reported as activity act_kind.  NULL, with
 * *err the call's error (set as the last), when a pointer is missing or
 * the stream is not one. */
static struct sim_op *sim_bytes_op(enum sim_op_kind kind, enum sim_activity_kind act_kind, void *dst, size_t count,
                                   int ptrs_ok, cudaStream_t stream, struct sim_stream **st, cudaError_t *err)
{
    uint32_t corr = sim_api_enter();
    *st = ptrs_ok ? sim_stream_resolve(stream) : NULL;
    if (!*st) {
        *err = sim_set_error(ptrs_ok ? cudaErrorInvalidResourceHandle : cudaErrorInvalidValue);
        return NULL;
    }
    struct sim_op *op = sim_op_new(kind);
    op->dst = dst;
    op->bytes = count;
    op->act.kind = act_kind;
    op->act.bytes = count;
    op->act.correlation = corr;
    return op;
}

static cudaError_t sim_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream, int sync)
{
    struct sim_stream *st;
    cudaError_t err;
    struct sim_op *op = sim_bytes_op(SIM_OP_MEMCPY, SIM_ACT_MEMCPY, dst, count, !count || (dst && src), stream, &st, &err);
    if (!op)
        return err;
    op->src = src;
    op->act.copy_kind = sim_copy_kind_of(dst, src, kind, &op->act.src_pinned, &op->act.dst_pinned);
    enum sim_copy_kind ck = op->act.copy_kind;
    int host_pinned = ck == SIM_COPY_H2D   ? op->act.src_pinned
                      : ck == SIM_COPY_D2H ? op->act.dst_pinned
                                           : 1;
    op->duration_ns = sim_model_copy_ns(count, ck, host_pinned);
    sim_stream_submit(stream, st, op);
    /* as CUDA's: an asynchronous copy to or from pageable memory returns
     * only when the copy is done (the host's buffer may be reused then) */
    if (sync || !host_pinned)
        sim_stream_sync(st);
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return sim_copy(dst, src, count, kind, NULL, 1);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    return sim_copy(dst, src, count, kind, stream, 0);
}

cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return sim_copy(dst, src, count, kind, cudaStreamPerThread, 1);
}

cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                 enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return sim_copy(dst, src, count, kind, stream, 0);
}

cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice, size_t count)
{
    (void)dstDevice, (void)srcDevice;
    return sim_copy(dst, src, count, cudaMemcpyDeviceToDevice, NULL, 1);
}

cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                size_t count, cudaStream_t stream)
{
    (void)dstDevice, (void)srcDevice;
    return sim_copy(dst, src, count, cudaMemcpyDeviceToDevice, stream, 0);
}

static cudaError_t sim_memset(void *dst, int value, size_t count, cudaStream_t stream, int sync)
{
    struct sim_stream *st;
    cudaError_t err;
    struct sim_op *op = sim_bytes_op(SIM_OP_MEMSET, SIM_ACT_MEMSET, dst, count, !count || dst, stream, &st, &err);
    if (!op)
        return err;
    op->value = value;
    op->act.memset_value = (uint32_t)value;
    op->duration_ns = sim_model_copy_ns(count, SIM_COPY_D2D, 1);
    sim_stream_submit(stream, st, op);
    if (sync)
        sim_stream_sync(st);
    return cudaSuccess;
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return sim_memset(devPtr, value, count, NULL, 1);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return sim_memset(devPtr, value, count, stream, 0);
}

cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return sim_memset(devPtr, value, count, cudaStreamPerThread, 1);
}

cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return sim_memset(devPtr, value, count, stream, 0);
}

/* ------------------------------------------------------------ devices */

cudaError_t cudaGetDeviceCount(int *count)
{
    sim_api_enter();
    if (!count)
        return sim_set_error(cudaErrorInvalidValue);
    *count = sim_model()->gpus_per_node;
    return cudaSuccess;
}

static int sim_valid_device(int device) { return device >= 0 && device < sim_model()->gpus_per_node; }

cudaError_t cudaSetDevice(int device)
{
    sim_api_enter();
    if (!sim_valid_device(device))
        return sim_set_error(cudaErrorInvalidDevice);
    sim_device = device;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    sim_api_enter();
    if (!device)
        return sim_set_error(cudaErrorInvalidValue);
    *device = sim_device;
    return cudaSuccess;
}

cudaError_t cudaInitDevice(int device, unsigned int deviceFlags, unsigned int flags)
{
    (void)deviceFlags, (void)flags;
    sim_api_enter();
    return sim_valid_device(device) ? cudaSuccess : sim_set_error(cudaErrorInvalidDevice);
}

cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    (void)flags;
    sim_api_enter();
    return cudaSuccess;
}

cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    sim_api_enter();
    if (flags)
        *flags = 0;
    return cudaSuccess;
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    sim_api_enter();
    if (!prop)
        return sim_set_error(cudaErrorInvalidValue);
    if (!sim_valid_device(device))
        return sim_set_error(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "Simulated GPU");
    prop->uuid.bytes[0] = (char)device;
    prop->totalGlobalMem = SIM_DEVICE_MEMORY;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 0x7fffffff;
    prop->maxGridSize[1] = prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 65536;
    prop->major = 9;
    prop->minor = 0;
    prop->multiProcessorCount = 132;
    prop->pciBusID = device + 1;
    prop->pciDeviceID = 0;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->concurrentKernels = 1;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->l2CacheSize = 50 << 20;
    prop->memoryBusWidth = 5120;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    sim_api_enter();
    if (!value)
        return sim_set_error(cudaErrorInvalidValue);
    if (!sim_valid_device(device))
        return sim_set_error(cudaErrorInvalidDevice);
    switch (attr) {
    case cudaDevAttrComputeCapabilityMajor: *value = 9; break;
    case cudaDevAttrComputeCapabilityMinor: *value = 0; break;
    case cudaDevAttrMultiProcessorCount: *value = 132; break;
    case cudaDevAttrWarpSize: *value = 32; break;
    case cudaDevAttrMaxThreadsPerBlock: *value = 1024; break;
    case cudaDevAttrPciBusId: *value = device + 1; break;
    default: *value = 0; break;
    }
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    sim_api_enter();
    sim_device_sync(sim_device);
    sim_truth_flush();
    return cudaSuccess;
}

cudaError_t cudaDeviceReset(void)
{
    sim_api_enter();
    sim_device_sync(sim_device);
    sim_truth_flush();
    return cudaSuccess;
}

cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    sim_api_enter();
    if (!canAccessPeer)
        return sim_set_error(cudaErrorInvalidValue);
    *canAccessPeer = sim_valid_device(device) && sim_valid_device(peerDevice) && device != peerDevice;
    return cudaSuccess;
}

cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    (void)flags;
    sim_api_enter();
    return sim_valid_device(peerDevice) ? cudaSuccess : sim_set_error(cudaErrorInvalidDevice);
}

cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    sim_api_enter();
    if (leastPriority)
        *leastPriority = 0;
    if (greatestPriority)
        *greatestPriority = -5;
    return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char *pciBusId, int len, int device)
{
    sim_api_enter();
    if (!pciBusId || len <= 0)
        return sim_set_error(cudaErrorInvalidValue);
    snprintf(pciBusId, (size_t)len, "00000000:%02X:00.0", device + 1);
    return cudaSuccess;
}

/* ------------------------------------------------------------ streams */

static cudaError_t sim_stream_new(cudaStream_t *pStream, unsigned flags, int priority)
{
    sim_api_enter();
    if (!pStream)
        return sim_set_error(cudaErrorInvalidValue);
    struct sim_stream *st = sim_stream_create(sim_device, flags, priority);
    if (!st)
        return sim_set_error(cudaErrorMemoryAllocation);
    *pStream = (cudaStream_t)st;
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return sim_stream_new(pStream, 0, 0); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return sim_stream_new(pStream, flags, 0);
}

cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags, int priority)
{
    return sim_stream_new(pStream, flags, priority);
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    sim_api_enter();
    if (!stream || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    sim_stream_destroy((struct sim_stream *)stream);
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    sim_stream_sync(st);
    sim_truth_flush();
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    return sim_stream_idle(st) ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream) { return cudaStreamQuery(stream); }

cudaError_t cudaStreamGetFlags(cudaStream_t stream, unsigned int *flags)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st || !flags)
        return sim_set_error(cudaErrorInvalidValue);
    *flags = st->flags;
    return cudaSuccess;
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int *priority)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st || !priority)
        return sim_set_error(cudaErrorInvalidValue);
    *priority = st->priority;
    return cudaSuccess;
}

cudaError_t cudaStreamGetId(cudaStream_t stream, unsigned long long *streamId)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st || !streamId)
        return sim_set_error(cudaErrorInvalidValue);
    *streamId = st->id;
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    (void)flags;
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    struct sim_event *ev = (struct sim_event *)event;
    if (!st || !ev)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    struct sim_op *op = sim_op_new(SIM_OP_WAIT);
    op->event = ev;
    pthread_mutex_lock(&sim_lock);
    op->event_gen = ev->gen_recorded;
    pthread_mutex_unlock(&sim_lock);
    sim_stream_submit(stream, st, op);
    return cudaSuccess;
}

cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return cudaStreamWaitEvent(stream, event, flags);
}

cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    sim_api_enter();
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!st || !fn)
        return sim_set_error(cudaErrorInvalidValue);
    struct sim_op *op = sim_op_new(SIM_OP_HOSTFN);
    op->host_fn = fn;
    op->host_arg = userData;
    sim_stream_submit(stream, st, op);
    return cudaSuccess;
}

cudaError_t cudaStreamIsCapturing(cudaStream_t stream, enum cudaStreamCaptureStatus *pCaptureStatus)
{
    (void)stream;
    sim_api_enter();
    if (!pCaptureStatus)
        return sim_set_error(cudaErrorInvalidValue);
    *pCaptureStatus = cudaStreamCaptureStatusNone;
    return cudaSuccess;
}

cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                     unsigned long long *id, cudaGraph_t *graph,
                                     const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                     size_t *numDeps)
{
    (void)stream, (void)status, (void)id, (void)graph, (void)deps, (void)edges, (void)numDeps;
    return sim_not_supported("cudaStreamGetCaptureInfo");
}

cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    (void)stream, (void)mode;
    return sim_not_supported("cudaStreamBeginCapture");
}

cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    (void)stream, (void)pGraph;
    return sim_not_supported("cudaStreamEndCapture");
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    (void)graphExec, (void)stream;
    return sim_not_supported("cudaGraphLaunch");
}

cudaError_t cudaFuncGetAttributes(struct cudaFuncAttributes *attr, const void *func)
{
    (void)attr, (void)func;
    return sim_not_supported("cudaFuncGetAttributes");
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    (void)func, (void)attr, (void)value;
    sim_api_enter();
    return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes, const void *ptr)
{
    sim_api_enter();
    if (!attributes)
        return sim_set_error(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof *attributes);
    int where = sim_alloc_lookup(ptr);
    attributes->type = where >= 0    ? cudaMemoryTypeDevice
                       : where == -1 ? cudaMemoryTypeHost
                                     : cudaMemoryTypeUnregistered;
    attributes->device = where >= 0 ? where : sim_device;
    attributes->devicePointer = where != -2 ? (void *)ptr : NULL;
    attributes->hostPointer = where < 0 ? (void *)ptr : NULL;
    return cudaSuccess;
}

/* ------------------------------------------------------------ events */

static cudaError_t sim_event_new(cudaEvent_t *event, unsigned flags)
{
    sim_api_enter();
    if (!event)
        return sim_set_error(cudaErrorInvalidValue);
    struct sim_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return sim_set_error(cudaErrorMemoryAllocation);
    ev->flags = flags;
    *event = (cudaEvent_t)ev;
    return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t *event) { return sim_event_new(event, 0); }

cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    return sim_event_new(event, flags);
}

/* Events are never freed: a stream may still hold a record of it. */
cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    sim_api_enter();
    return event ? cudaSuccess : sim_set_error(cudaErrorInvalidResourceHandle);
}

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    sim_api_enter();
    struct sim_event *ev = (struct sim_event *)event;
    struct sim_stream *st = sim_stream_resolve(stream);
    if (!ev || !st)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    struct sim_op *op = sim_op_new(SIM_OP_EVENT);
    op->event = ev;
    pthread_mutex_lock(&sim_lock);
    op->event_gen = ++ev->gen_recorded;
    pthread_mutex_unlock(&sim_lock);
    sim_stream_submit(stream, st, op);
    return cudaSuccess;
}

cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return cudaEventRecord(event, stream);
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int flags)
{
    (void)flags;
    return cudaEventRecord(event, stream);
}

/* Whether the event's last record is done; with block, once it is. */
static cudaError_t sim_event_done(cudaEvent_t event, int block)
{
    sim_api_enter();
    struct sim_event *ev = (struct sim_event *)event;
    if (!ev)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&sim_lock);
    while (block && ev->gen_done < ev->gen_recorded)
        pthread_cond_wait(&sim_done_cv, &sim_lock);
    int done = ev->gen_done >= ev->gen_recorded;
    pthread_mutex_unlock(&sim_lock);
    return done ? cudaSuccess : cudaErrorNotReady;
}

cudaError_t cudaEventQuery(cudaEvent_t event) { return sim_event_done(event, 0); }

cudaError_t cudaEventSynchronize(cudaEvent_t event) { return sim_event_done(event, 1); }

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    sim_api_enter();
    struct sim_event *a = (struct sim_event *)start, *b = (struct sim_event *)end;
    if (!ms || !a || !b)
        return sim_set_error(cudaErrorInvalidValue);
    if ((a->flags | b->flags) & cudaEventDisableTiming)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    pthread_mutex_lock(&sim_lock);
    int recorded = a->gen_recorded && b->gen_recorded;
    int done = a->gen_done >= a->gen_recorded && b->gen_done >= b->gen_recorded;
    double diff = (double)b->time_ns - (double)a->time_ns;
    pthread_mutex_unlock(&sim_lock);
    if (!recorded)
        return sim_set_error(cudaErrorInvalidResourceHandle);
    if (!done)
        return cudaErrorNotReady;
    *ms = (float)(diff / 1e6);
    return cudaSuccess;
}

/* ------------------------------------------------------------ errors, versions */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = sim_last_error;
    sim_last_error = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return sim_last_error; }

struct sim_error_text {
    cudaError_t code;
    const char *name, *text;
};

static const struct sim_error_text sim_errors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
    {cudaErrorUnknown, "cudaErrorUnknown", "unknown error"},
};

static const struct sim_error_text *sim_error_lookup(cudaError_t e)
{
    for (size_t i = 0; i < sizeof sim_errors / sizeof sim_errors[0]; i++)
        if (sim_errors[i].code == e)
            return &sim_errors[i];
    return NULL;
}

const char *cudaGetErrorString(cudaError_t error)
{
    const struct sim_error_text *t = sim_error_lookup(error);
    return t ? t->text : "unrecognized error code";
}

const char *cudaGetErrorName(cudaError_t error)
{
    const struct sim_error_text *t = sim_error_lookup(error);
    return t ? t->name : "cudaErrorUnknown";
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return sim_set_error(cudaErrorInvalidValue);
    *driverVersion = CUDART_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return sim_set_error(cudaErrorInvalidValue);
    *runtimeVersion = CUDART_VERSION;
    return cudaSuccess;
}
