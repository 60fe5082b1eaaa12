/*
 * CUPTI's activity records agree with the simulator's ground truth: every
 * kernel (including NCCL's), copy and memset appears once, with the same
 * name, stream, correlation id and the very same start and end (the client's
 * timestamp callback is CLOCK_MONOTONIC, the truth's clock).  Buffers come
 * from the client's request callback; full ones arrive by themselves from
 * CUPTI's thread, the rest on flush.  A second subscriber is refused.
 * A copy's memory kinds say where its bytes were (pageable, pinned, device)
 * and its time follows them (SIM_PAGEABLE_GBPS, SIM_PINNED_GBPS defaults).
 */
#include <cupti.h>
#include <nccl.h>

#include "sim_test.h"

#define MAX_RECORDS 4096
#define SMALL_BUFFER (3 * sizeof(CUpti_ActivityKernel10))

struct rec {
    int kind;
    const char *name;
    uint64_t start, end;
    uint32_t stream, corr;
    uint8_t copy, src, dst; /* memcpy: copyKind, srcKind, dstKind */
    uint64_t bytes;
};
#define PAGEABLE_GBPS 10 /* the sim's defaults */
#define PINNED_GBPS 25

static struct rec recs[MAX_RECORDS];
static int nrecs, deliveries;

static void CUPTIAPI on_request(uint8_t **buffer, size_t *size, size_t *max)
{
    *buffer = aligned_alloc(8, SMALL_BUFFER);
    *size = SMALL_BUFFER;
    *max = 0;
}

static void keep(CUpti_Activity *r)
{
    struct rec *o = &recs[nrecs++];
    o->kind = r->kind;
    if (r->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        CUpti_ActivityKernel10 *k = (CUpti_ActivityKernel10 *)r;
        *o = (struct rec){r->kind, k->name, k->start, k->end, k->streamId, k->correlationId, 0, 0, 0, 0};
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
        CUpti_ActivityMemcpy6 *m = (CUpti_ActivityMemcpy6 *)r;
        *o = (struct rec){r->kind, "memcpy", m->start, m->end, m->streamId, m->correlationId,
                          m->copyKind, m->srcKind, m->dstKind, m->bytes};
    } else if (r->kind == CUPTI_ACTIVITY_KIND_MEMSET) {
        CUpti_ActivityMemset4 *m = (CUpti_ActivityMemset4 *)r;
        *o = (struct rec){r->kind, "memset", m->start, m->end, m->streamId, m->correlationId, 0, 0, 0, 0};
    } else {
        nrecs--;
    }
}

static void CUPTIAPI on_complete(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size, size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *r = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &r) == CUPTI_SUCCESS && nrecs < MAX_RECORDS)
        keep(r);
    __atomic_add_fetch(&deliveries, 1, __ATOMIC_SEQ_CST);
    free(buffer);
}

static uint64_t CUPTIAPI monotonic_ns(void) { return sim_test_now_ns(); }

static void CUPTIAPI on_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *data)
{
    (void)u, (void)d, (void)id, (void)data;
}

static void setup_cupti(void)
{
    CUpti_SubscriberHandle a, b;
    SIM_CHECK(cuptiSubscribe(&a, on_callback, NULL) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiSubscribe(&b, on_callback, NULL) == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED);
    uint64_t ts = 0;
    struct timespec now;
    SIM_CHECK(cuptiGetTimestamp(&ts) == CUPTI_SUCCESS);
    clock_gettime(CLOCK_REALTIME, &now);
    double diff = (double)ts - ((double)now.tv_sec * 1e9 + (double)now.tv_nsec);
    SIM_CHECK(diff > -1e6 && diff < 1e6); /* default clock: CLOCK_REALTIME */
    SIM_CHECK(cuptiActivityRegisterTimestampCallback(monotonic_ns) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityRegisterCallbacks(on_request, on_complete) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_DRIVER) == CUPTI_SUCCESS);
    uint32_t v = 0;
    SIM_CHECK(cuptiGetVersion(&v) == CUPTI_SUCCESS && v == CUPTI_API_VERSION);
}

static void workload(void)
{
    cudaStream_t s1, s2;
    SIM_CUDA(cudaStreamCreate(&s1));
    SIM_CUDA(cudaStreamCreate(&s2));
    float *dev, host[256] = {1};
    SIM_CUDA(cudaMalloc((void **)&dev, sizeof host));
    for (int i = 0; i < 4; i++) {
        SIM_CUDA(sim_test_kernel_ms(1, s1));
        cudaLaunchConfig_t cfg = {.gridDim = {2, 1, 1}, .blockDim = {64, 1, 1}, .stream = s2};
        SIM_CUDA(cudaLaunchKernelExC(&cfg, (const void *)(uintptr_t)sim_test_other_stub, NULL));
    }
    float *pinned;
    SIM_CUDA(cudaMallocHost((void **)&pinned, sizeof host));
    SIM_CUDA(cudaMemcpyAsync(dev, host, sizeof host, cudaMemcpyHostToDevice, s1));
    SIM_CUDA(cudaMemsetAsync(dev, 0, sizeof host, s2));
    SIM_CUDA(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    SIM_CUDA(cudaMemcpyAsync(dev, pinned, sizeof host, cudaMemcpyHostToDevice, s1));

    ncclComm_t comm;
    SIM_CHECK(ncclCommInitAll(&comm, 1, NULL) == ncclSuccess);
    SIM_CHECK(ncclAllReduce(dev, dev, 256, ncclFloat, ncclSum, comm, s1) == ncclSuccess);
    SIM_CHECK(ncclGroupStart() == ncclSuccess);
    SIM_CHECK(ncclSend(dev, 16, ncclFloat, 0, comm, s1) == ncclSuccess);
    SIM_CHECK(ncclRecv(dev + 16, 16, ncclFloat, 0, comm, s1) == ncclSuccess);
    SIM_CHECK(ncclGroupEnd() == ncclSuccess);
    SIM_CUDA(cudaDeviceSynchronize());
    SIM_CHECK(ncclCommDestroy(comm) == ncclSuccess);
    SIM_CUDA(cudaFreeHost(pinned));
}

/* The copy of KIND from SRC to DST memory, exactly one, taking BYTES at
 * GBPS (bytes / GB/s is ns, truncated as the sim does). */
static void copy_is(uint8_t kind, uint8_t src, uint8_t dst, double gbps)
{
    int n = 0;
    for (int i = 0; i < nrecs; i++) {
        const struct rec *r = &recs[i];
        if (r->kind != CUPTI_ACTIVITY_KIND_MEMCPY || r->copy != kind || r->src != src || r->dst != dst)
            continue;
        printf("copy kind %u, memory %u -> %u: %llu bytes in %llu ns\n", kind, src, dst,
               (unsigned long long)r->bytes, (unsigned long long)(r->end - r->start));
        SIM_CHECK(r->end - r->start == (uint64_t)((double)r->bytes / gbps));
        n++;
    }
    SIM_CHECK(n == 1);
}

static const struct rec *find(uint32_t corr, int kind)
{
    for (int i = 0; i < nrecs; i++)
        if (recs[i].corr == corr && recs[i].kind == kind)
            return &recs[i];
    return NULL;
}

static int compare_with_truth(const char *dir)
{
    struct sim_truth t = sim_truth_read(dir);
    int matched = 0;
    for (int i = 0; i < t.n; i++) {
        const char *l = t.lines[i];
        int kind = sim_json_has(l, "kernel")   ? CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL
                   : sim_json_has(l, "memcpy") ? CUPTI_ACTIVITY_KIND_MEMCPY
                   : sim_json_has(l, "memset") ? CUPTI_ACTIVITY_KIND_MEMSET
                                               : 0;
        if (!kind)
            continue;
        const struct rec *r = find((uint32_t)sim_json_u64(l, "correlation"), kind);
        SIM_CHECK(r != NULL);
        SIM_CHECK(r->start == sim_json_u64(l, "start_ns"));
        SIM_CHECK(r->end == sim_json_u64(l, "end_ns"));
        SIM_CHECK(r->stream == sim_json_u64(l, "stream"));
        if (kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
            char name[256];
            sim_json_str(l, "name", name, sizeof name);
            SIM_CHECK(strcmp(name, r->name) == 0);
        }
        matched++;
    }
    return matched;
}

static int has_name(const char *name)
{
    for (int i = 0; i < nrecs; i++)
        if (recs[i].kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && !strcmp(recs[i].name, name))
            return 1;
    return 0;
}

static void CUPTIAPI no_buffer(uint8_t **buffer, size_t *size, size_t *max)
{
    *buffer = NULL;
    *size = 0;
    *max = 0;
}

/* A client that hands out no buffer loses records, and is told how many. */
static void records_without_buffers_are_counted(void)
{
    SIM_CHECK(cuptiActivityRegisterCallbacks(no_buffer, on_complete) == CUPTI_SUCCESS);
    SIM_CUDA(sim_test_kernel_ms(0.1, 0));
    SIM_CUDA(sim_test_kernel_ms(0.1, 0));
    SIM_CUDA(cudaDeviceSynchronize());
    size_t dropped = 0;
    SIM_CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS);
    SIM_CHECK(dropped == 2);
}

int main(void)
{
    char *dir = sim_test_mkdtemp();
    setenv("SIM_TRUTH", dir, 1);
    sim_test_register_kernels();
    setup_cupti();
    workload();
    sim_test_sleep_ms(300); /* full buffers come without asking */
    int early = __atomic_load_n(&deliveries, __ATOMIC_SEQ_CST);
    SIM_CHECK(cuptiActivityFlushAll(0) == CUPTI_SUCCESS);
    SIM_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED) == CUPTI_SUCCESS);
    size_t dropped = 1;
    SIM_CHECK(cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped == 0);
    int matched = compare_with_truth(dir);
    printf("%d records, %d delivered before the flush, %d match the ground truth\n",
           nrecs, early, matched);
    SIM_CHECK(early > 0);
    SIM_CHECK(matched == nrecs && nrecs == 4 + 4 + 4 + 2);
    copy_is(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
            PAGEABLE_GBPS);
    copy_is(CUPTI_ACTIVITY_MEMCPY_KIND_DTOH, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE, CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE,
            PAGEABLE_GBPS);
    copy_is(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD, CUPTI_ACTIVITY_MEMORY_KIND_PINNED, CUPTI_ACTIVITY_MEMORY_KIND_DEVICE,
            PINNED_GBPS);
    SIM_CHECK(has_name(SIM_TEST_BUSY_NAME) && has_name(SIM_TEST_OTHER_NAME));
    SIM_CHECK(has_name("ncclDevKernel_AllReduce_Sum_f32_RING_LL"));
    SIM_CHECK(has_name("ncclDevKernel_SendRecv"));
    records_without_buffers_are_counted();
    sim_truth_remove(dir);
    printf("ok\n");
    return 0;
}
