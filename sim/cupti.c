/*
 * cupti.c: the simulated libcupti.so.13: activity records for kernels,
 * copies and memsets of the simulated runtime, in the real CUDA 13 record
 * structs (CUpti_ActivityKernel10, CUpti_ActivityMemcpy6,
 * CUpti_ActivityMemset4).
 *
 * libcupti does not link against libcudart.  When loaded (and again when an
 * activity kind is enabled) it looks for an already loaded libcudart with
 * dlopen(RTLD_NOLOAD) and installs its record sink through the private
 * sim_cupti_attach().  The runtime's stream workers then call the sink for
 * every finished operation; the sink converts the record and appends it to
 * the current buffer, asking the client for buffers through the registered
 * request callback.  Full buffers are handed to the completion callback by a
 * CUPTI-internal thread (woken when a buffer fills, and every flush period);
 * cuptiActivityFlushAll hands over everything, partial buffers included.
 *
 * Timestamps: the simulated timeline is CLOCK_MONOTONIC.  Records carry
 * CLOCK_REALTIME ns by default, like real CUPTI; when the client registers a
 * timestamp callback, records use the client's clock, through an offset
 * calibrated at registration.  An offset below SIM_SAME_CLOCK_NS is taken as
 * zero: a client clock that agrees with CLOCK_MONOTONIC to the microsecond
 * *is* CLOCK_MONOTONIC, and its records then equal the ground truth exactly.
 */
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim_common.h"
#include "sim_private.h"

#define SIM_RECORD_ALIGN 8
#define SIM_SAME_CLOCK_NS 1000
#define SIM_DEFAULT_FLUSH_MS 100
#define SIM_MAX_KINDS 128
#define SIM_MAX_PENDING 1024

struct sim_buffer {
    uint8_t *data;
    size_t size, used;
};

static struct {
    pthread_mutex_t lock;
    pthread_cond_t wake;
    _Atomic int enabled[SIM_MAX_KINDS];
    CUpti_BuffersCallbackRequestFunc request;
    CUpti_BuffersCallbackCompleteFunc complete;
    struct sim_buffer current;
    struct sim_buffer pending[SIM_MAX_PENDING];
    int npending;
    size_t dropped;
    CUpti_TimestampCallbackFunc ts_cb;
    int64_t ts_offset;        /* client clock - CLOCK_MONOTONIC */
    uint32_t flush_period_ms; /* 0: only full buffers are delivered periodically */
    int thread_started;
    int subscribed;
    CUptiResult last_error;
} sim_cupti = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
};

static pthread_mutex_t sim_deliver_lock = PTHREAD_MUTEX_INITIALIZER;

static CUptiResult sim_cupti_not_supported(const char *name)
{
    sim_unsupported("cupti", name);
    return CUPTI_ERROR_NOT_SUPPORTED;
}

/* ------------------------------------------------------------ clock */

/* CLIENT() - CLOCK_MONOTONIC, from the tightest of a few samples. */
static int64_t sim_calibrate(uint64_t (*client)(void))
{
    int64_t best_offset = 0;
    uint64_t best_span = UINT64_MAX;
    for (int i = 0; i < 7; i++) {
        uint64_t a = sim_now_ns(), c = client(), b = sim_now_ns();
        if (b - a < best_span) {
            best_span = b - a;
            best_offset = (int64_t)(c - (a + (b - a) / 2));
        }
    }
    return best_offset;
}

static uint64_t sim_realtime_client(void) { return sim_realtime_ns(); }

static uint64_t sim_client_ts(uint64_t mono) { return (uint64_t)((int64_t)mono + sim_cupti.ts_offset); }

CUptiResult cuptiGetTimestamp(uint64_t *timestamp)
{
    if (!timestamp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    CUpti_TimestampCallbackFunc cb = sim_cupti.ts_cb;
    *timestamp = cb ? cb() : sim_realtime_ns();
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc funcTimestamp)
{
    pthread_mutex_lock(&sim_cupti.lock);
    sim_cupti.ts_cb = funcTimestamp;
    int64_t off = sim_calibrate(funcTimestamp ? (uint64_t(*)(void))funcTimestamp : sim_realtime_client);
    if (off > -SIM_SAME_CLOCK_NS && off < SIM_SAME_CLOCK_NS)
        off = 0;
    sim_cupti.ts_offset = off;
    pthread_mutex_unlock(&sim_cupti.lock);
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ buffers */

static size_t sim_record_size(CUpti_ActivityKind kind)
{
    switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    default: return 0;
    }
}

static size_t sim_align_up(size_t n) { return (n + SIM_RECORD_ALIGN - 1) & ~(size_t)(SIM_RECORD_ALIGN - 1); }

/* Moves the current buffer, if it holds anything, to the pending list. */
static void sim_retire_current_locked(void)
{
    if (!sim_cupti.current.data)
        return;
    if (sim_cupti.current.used == 0 && sim_cupti.npending == SIM_MAX_PENDING)
        return;
    if (sim_cupti.npending == SIM_MAX_PENDING) { /* nobody delivers: drop, keep the buffer */
        sim_cupti.current.used = 0;
        return;
    }
    sim_cupti.pending[sim_cupti.npending++] = sim_cupti.current;
    memset(&sim_cupti.current, 0, sizeof sim_cupti.current);
}

/* Room for SIZE bytes in the current buffer, or NULL (record dropped). */
static uint8_t *sim_reserve_locked(size_t size)
{
    struct sim_buffer *b = &sim_cupti.current;
    if (b->data && b->used + size > b->size) {
        sim_retire_current_locked();
        pthread_cond_signal(&sim_cupti.wake);
    }
    if (!b->data) {
        if (!sim_cupti.request)
            return NULL;
        uint8_t *data = NULL;
        size_t bsize = 0, maxrec = 0;
        sim_cupti.request(&data, &bsize, &maxrec);
        if (!data || bsize < size)
            return NULL;
        *b = (struct sim_buffer){data, bsize, 0};
    }
    uint8_t *p = b->data + b->used;
    b->used += sim_align_up(size);
    if (b->used > b->size)
        b->used = b->size;
    return p;
}

static void sim_append(const void *record, size_t size)
{
    pthread_mutex_lock(&sim_cupti.lock);
    uint8_t *p = sim_reserve_locked(size);
    if (p)
        memcpy(p, record, size);
    else
        sim_cupti.dropped++;
    pthread_mutex_unlock(&sim_cupti.lock);
}

/* Hands every pending buffer to the client, outside our lock. */
static void sim_deliver(int include_current)
{
    pthread_mutex_lock(&sim_deliver_lock); /* keep buffers in order */
    pthread_mutex_lock(&sim_cupti.lock);
    if (include_current && sim_cupti.current.used)
        sim_retire_current_locked();
    struct sim_buffer out[SIM_MAX_PENDING];
    int n = sim_cupti.npending;
    memcpy(out, sim_cupti.pending, (size_t)n * sizeof out[0]);
    sim_cupti.npending = 0;
    CUpti_BuffersCallbackCompleteFunc complete = sim_cupti.complete;
    pthread_mutex_unlock(&sim_cupti.lock);
    for (int i = 0; i < n; i++)
        if (complete)
            complete(NULL, 0, out[i].data, out[i].size, out[i].used);
    pthread_mutex_unlock(&sim_deliver_lock);
}

static void *sim_flush_thread(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&sim_cupti.lock);
        uint32_t ms = sim_cupti.flush_period_ms ? sim_cupti.flush_period_ms : SIM_DEFAULT_FLUSH_MS;
        uint64_t deadline = sim_realtime_ns() + ms * SIM_NS_PER_MS;
        struct timespec ts = {(time_t)(deadline / SIM_NS_PER_S), (long)(deadline % SIM_NS_PER_S)};
        if (!sim_cupti.npending)
            pthread_cond_timedwait(&sim_cupti.wake, &sim_cupti.lock, &ts);
        int partial = sim_cupti.flush_period_ms != 0;
        pthread_mutex_unlock(&sim_cupti.lock);
        sim_deliver(partial);
    }
    return NULL;
}

CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc funcBufferRequested,
                                           CUpti_BuffersCallbackCompleteFunc funcBufferCompleted)
{
    if (!funcBufferRequested || !funcBufferCompleted)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim_cupti.lock);
    sim_cupti.request = funcBufferRequested;
    sim_cupti.complete = funcBufferCompleted;
    int start = !sim_cupti.thread_started;
    sim_cupti.thread_started = 1;
    pthread_mutex_unlock(&sim_cupti.lock);
    if (start) {
        pthread_t t;
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_create(&t, &attr, sim_flush_thread, NULL);
        pthread_attr_destroy(&attr);
    }
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag; /* forced or not, all finished work is delivered */
    sim_deliver(1);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityFlush(CUcontext context, uint32_t streamId, uint32_t flag)
{
    (void)context, (void)streamId;
    return cuptiActivityFlushAll(flag);
}

CUptiResult cuptiActivityFlushPeriod(uint32_t time)
{
    pthread_mutex_lock(&sim_cupti.lock);
    sim_cupti.flush_period_ms = time;
    pthread_cond_signal(&sim_cupti.wake);
    pthread_mutex_unlock(&sim_cupti.lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext context, uint32_t streamId, size_t *dropped)
{
    (void)context, (void)streamId;
    if (!dropped)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim_cupti.lock);
    *dropped = sim_cupti.dropped;
    sim_cupti.dropped = 0;
    pthread_mutex_unlock(&sim_cupti.lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t validBufferSizeBytes,
                                       CUpti_Activity **record)
{
    if (!buffer || !record)
        return CUPTI_ERROR_INVALID_PARAMETER;
    size_t off = 0;
    if (*record) {
        size_t size = sim_record_size((*record)->kind);
        if (!size)
            return CUPTI_ERROR_INVALID_KIND;
        off = (size_t)((uint8_t *)*record - buffer) + sim_align_up(size);
    }
    if (off + sizeof(CUpti_Activity) > validBufferSizeBytes) {
        *record = NULL;
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    }
    *record = (CUpti_Activity *)(buffer + off);
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ records */

static int sim_kind_on(CUpti_ActivityKind k) { return atomic_load(&sim_cupti.enabled[k]); }

/* What every record of a GPU operation says of it, by the same field
 * names in each record type: when, where, and the call it came from. */
#define SIM_RECORD_OPERATION(r, a)                \
    do {                                          \
        (r).start = sim_client_ts((a)->start_ns); \
        (r).end = sim_client_ts((a)->end_ns);     \
        (r).deviceId = (a)->device;               \
        (r).contextId = (a)->device + 1;          \
        (r).streamId = (a)->stream_id;            \
        (r).correlationId = (a)->correlation;     \
    } while (0)

static void sim_record_kernel(const struct sim_activity *a)
{
    CUpti_ActivityKind kind = sim_kind_on(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)
                                  ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                                  : CUPTI_ACTIVITY_KIND_KERNEL;
    if (!sim_kind_on(kind))
        return;
    CUpti_ActivityKernel10 r;
    memset(&r, 0, sizeof r);
    r.kind = kind;
    SIM_RECORD_OPERATION(r, a);
    r.completed = r.end;
    r.gridX = (int32_t)a->grid[0], r.gridY = (int32_t)a->grid[1], r.gridZ = (int32_t)a->grid[2];
    r.blockX = (int32_t)a->block[0], r.blockY = (int32_t)a->block[1], r.blockZ = (int32_t)a->block[2];
    r.dynamicSharedMemory = (int32_t)a->shared_mem;
    r.gridId = a->correlation;
    r.name = a->name;
    r.launchType = CUPTI_ACTIVITY_LAUNCH_TYPE_REGULAR;
    sim_append(&r, sizeof r);
}

static uint8_t sim_cupti_copy_kind(enum sim_copy_kind k)
{
    static const uint8_t kinds[] = {CUPTI_ACTIVITY_MEMCPY_KIND_HTOH, CUPTI_ACTIVITY_MEMCPY_KIND_HTOD,
                                    CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMCPY_KIND_DTOD};
    return kinds[k];
}

static uint8_t sim_memory_kind(int device_side, int pinned)
{
    if (device_side)
        return CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    return pinned ? CUPTI_ACTIVITY_MEMORY_KIND_PINNED : CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
}

static void sim_record_memcpy(const struct sim_activity *a)
{
    if (!sim_kind_on(CUPTI_ACTIVITY_KIND_MEMCPY))
        return;
    CUpti_ActivityMemcpy6 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
    r.copyKind = sim_cupti_copy_kind(a->copy_kind);
    r.srcKind = sim_memory_kind(a->copy_kind == SIM_COPY_D2H || a->copy_kind == SIM_COPY_D2D, a->src_pinned);
    r.dstKind = sim_memory_kind(a->copy_kind == SIM_COPY_H2D || a->copy_kind == SIM_COPY_D2D, a->dst_pinned);
    r.bytes = a->bytes;
    SIM_RECORD_OPERATION(r, a);
    r.runtimeCorrelationId = a->correlation;
    r.copyCount = 1;
    sim_append(&r, sizeof r);
}

static void sim_record_memset(const struct sim_activity *a)
{
    if (!sim_kind_on(CUPTI_ACTIVITY_KIND_MEMSET))
        return;
    CUpti_ActivityMemset4 r;
    memset(&r, 0, sizeof r);
    r.kind = CUPTI_ACTIVITY_KIND_MEMSET;
    r.value = a->memset_value;
    r.bytes = a->bytes;
    SIM_RECORD_OPERATION(r, a);
    r.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
    sim_append(&r, sizeof r);
}

static void sim_record(const struct sim_activity *a)
{
    switch (a->kind) {
    case SIM_ACT_KERNEL: sim_record_kernel(a); break;
    case SIM_ACT_MEMCPY: sim_record_memcpy(a); break;
    case SIM_ACT_MEMSET: sim_record_memset(a); break;
    }
}

static const struct sim_cupti_ops sim_ops = {SIM_CUPTI_OPS_VERSION, sim_record};

/* Installs the sink in an already loaded libcudart, if any. */
static void sim_attach(void)
{
    void *h = dlopen("libcudart.so.13", RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return;
    sim_cupti_attach_fn attach = (sim_cupti_attach_fn)dlsym(h, "sim_cupti_attach");
    if (attach)
        attach(&sim_ops);
    dlclose(h);
}

__attribute__((constructor)) static void sim_cupti_load(void)
{
    sim_cupti.ts_offset = sim_calibrate(sim_realtime_client);
    sim_attach();
}

/* ------------------------------------------------------------ enable */

static int sim_kind_supported(CUpti_ActivityKind kind) { return sim_record_size(kind) != 0; }

CUptiResult cuptiActivityEnable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= SIM_MAX_KINDS)
        return CUPTI_ERROR_INVALID_KIND;
    if (!sim_kind_supported(kind))
        return CUPTI_SUCCESS; /* accepted; the simulator produces no such records */
    atomic_store(&sim_cupti.enabled[kind], 1);
    sim_attach();
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableAndDump(CUpti_ActivityKind kind) { return cuptiActivityEnable(kind); }

CUptiResult cuptiActivityDisable(CUpti_ActivityKind kind)
{
    if ((unsigned)kind >= SIM_MAX_KINDS)
        return CUPTI_ERROR_INVALID_KIND;
    atomic_store(&sim_cupti.enabled[kind], 0);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiActivityEnableContext(CUcontext context, CUpti_ActivityKind kind)
{
    (void)context;
    return cuptiActivityEnable(kind);
}

CUptiResult cuptiActivityDisableContext(CUcontext context, CUpti_ActivityKind kind)
{
    (void)context;
    return cuptiActivityDisable(kind);
}

CUptiResult cuptiActivityEnableLatencyTimestamps(uint8_t enable)
{
    (void)enable;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiActivityEnableLaunchAttributes(uint8_t enable)
{
    (void)enable;
    return CUPTI_SUCCESS;
}
CUptiResult cuptiFinalize(void)
{
    cuptiActivityFlushAll(1);
    return CUPTI_SUCCESS;
}

/* ------------------------------------------------------------ subscribers */

CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *subscriber, CUpti_CallbackFunc callback,
                           void *userdata)
{
    (void)callback, (void)userdata;
    if (!subscriber)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim_cupti.lock);
    int busy = sim_cupti.subscribed;
    sim_cupti.subscribed = 1;
    pthread_mutex_unlock(&sim_cupti.lock);
    if (busy)
        return sim_cupti.last_error = CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    *subscriber = (CUpti_SubscriberHandle)&sim_cupti;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle subscriber)
{
    if (subscriber != (CUpti_SubscriberHandle)&sim_cupti)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&sim_cupti.lock);
    sim_cupti.subscribed = 0;
    pthread_mutex_unlock(&sim_cupti.lock);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiEnableCallback(uint32_t enable, CUpti_SubscriberHandle subscriber,
                                CUpti_CallbackDomain domain, CUpti_CallbackId cbid)
{
    (void)enable, (void)subscriber, (void)domain, (void)cbid;
    return sim_cupti_not_supported("cuptiEnableCallback");
}

CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle subscriber,
                              CUpti_CallbackDomain domain)
{
    (void)enable, (void)subscriber, (void)domain;
    return sim_cupti_not_supported("cuptiEnableDomain");
}

CUptiResult cuptiEnableAllDomains(uint32_t enable, CUpti_SubscriberHandle subscriber)
{
    (void)enable, (void)subscriber;
    return sim_cupti_not_supported("cuptiEnableAllDomains");
}

CUptiResult cuptiActivityPushExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t id)
{
    (void)kind, (void)id;
    return sim_cupti_not_supported("cuptiActivityPushExternalCorrelationId");
}

CUptiResult cuptiActivityPopExternalCorrelationId(CUpti_ExternalCorrelationKind kind, uint64_t *lastId)
{
    (void)kind, (void)lastId;
    return sim_cupti_not_supported("cuptiActivityPopExternalCorrelationId");
}

/* ------------------------------------------------------------ misc */

CUptiResult cuptiGetVersion(uint32_t *version)
{
    if (!version)
        return CUPTI_ERROR_INVALID_PARAMETER;
    *version = CUPTI_API_VERSION;
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetLastError(void)
{
    CUptiResult r = sim_cupti.last_error;
    sim_cupti.last_error = CUPTI_SUCCESS;
    return r;
}

CUptiResult cuptiGetResultString(CUptiResult result, const char **str)
{
    if (!str)
        return CUPTI_ERROR_INVALID_PARAMETER;
    switch (result) {
    case CUPTI_SUCCESS: *str = "CUPTI_SUCCESS"; break;
    case CUPTI_ERROR_INVALID_PARAMETER: *str = "CUPTI_ERROR_INVALID_PARAMETER"; break;
    case CUPTI_ERROR_INVALID_KIND: *str = "CUPTI_ERROR_INVALID_KIND"; break;
    case CUPTI_ERROR_MAX_LIMIT_REACHED: *str = "CUPTI_ERROR_MAX_LIMIT_REACHED"; break;
    case CUPTI_ERROR_NOT_SUPPORTED: *str = "CUPTI_ERROR_NOT_SUPPORTED"; break;
    case CUPTI_ERROR_QUEUE_EMPTY: *str = "CUPTI_ERROR_QUEUE_EMPTY"; break;
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
        *str = "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED";
        break;
    default: *str = "CUPTI_ERROR_UNKNOWN"; return CUPTI_ERROR_INVALID_PARAMETER;
    }
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetStreamIdEx(CUcontext context, CUstream stream, uint8_t perThreadStream,
                               uint32_t *streamId)
{
    (void)context, (void)perThreadStream;
    if (!streamId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    uint32_t (*id_of)(void *) = (uint32_t(*)(void *))dlsym(RTLD_DEFAULT, "sim_stream_id");
    if (!id_of)
        return sim_cupti_not_supported("cuptiGetStreamIdEx");
    *streamId = id_of(stream);
    return CUPTI_SUCCESS;
}

CUptiResult cuptiGetStreamId(CUcontext context, CUstream stream, uint32_t *streamId)
{
    return cuptiGetStreamIdEx(context, stream, 0, streamId);
}

CUptiResult cuptiGetDeviceId(CUcontext context, uint32_t *deviceId)
{
    if (!deviceId)
        return CUPTI_ERROR_INVALID_PARAMETER;
    (void)context;
    *deviceId = 0;
    return CUPTI_SUCCESS;
}
