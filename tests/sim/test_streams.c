/*
 * Operations on one stream run in order, one after the other; two streams
 * run at the same time; copies and memsets really move bytes; an event wait
 * orders one stream after another; the device synchronisation waits for
 * every stream; the legacy default stream synchronises with blocking streams;
 * a copy from pageable host memory is slower than from pinned (allocated or
 * registered) memory, and asynchronous only for pinned memory.
 */
#include "sim_test.h"

/* A kernel queued first keeps the stream busy while the host queues the
 * measured operations, so a host thread preempted on this loaded machine
 * cannot stretch what the events measure. */
#define BLOCKER_MS 15

static float sim_elapsed(cudaEvent_t a, cudaEvent_t b)
{
    float ms = -1;
    SIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    return ms;
}

static void one_stream_runs_in_order(void)
{
    cudaStream_t s;
    cudaEvent_t e[4];
    SIM_CUDA(cudaStreamCreate(&s));
    for (int i = 0; i < 4; i++)
        SIM_CUDA(cudaEventCreate(&e[i]));
    SIM_CUDA(sim_test_kernel_ms(BLOCKER_MS, s));
    SIM_CUDA(cudaEventRecord(e[0], s));
    SIM_CUDA(sim_test_kernel_ms(10, s));
    SIM_CUDA(cudaEventRecord(e[1], s));
    SIM_CUDA(sim_test_kernel_ms(5, s));
    SIM_CUDA(cudaEventRecord(e[2], s));
    SIM_CUDA(sim_test_kernel_ms(10, s));
    SIM_CUDA(cudaEventRecord(e[3], s));
    SIM_CHECK(cudaStreamQuery(s) == cudaErrorNotReady);
    SIM_CUDA(cudaStreamSynchronize(s));
    SIM_CHECK(cudaStreamQuery(s) == cudaSuccess);
    float a = sim_elapsed(e[0], e[1]), b = sim_elapsed(e[1], e[2]), c = sim_elapsed(e[2], e[3]);
    printf("in order: %.3f %.3f %.3f ms\n", a, b, c);
    SIM_CHECK(a > 9.9 && a < 10.1);
    SIM_CHECK(b > 4.9 && b < 5.1);
    SIM_CHECK(c > 9.9 && c < 10.1);
    SIM_CUDA(cudaStreamDestroy(s));
}

static void two_streams_overlap(void)
{
    cudaStream_t s1, s2;
    SIM_CUDA(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    SIM_CUDA(cudaStreamCreateWithPriority(&s2, cudaStreamNonBlocking, -1));
    uint64_t t0 = sim_test_now_ns();
    SIM_CUDA(sim_test_kernel_ms(40, s1));
    SIM_CUDA(sim_test_kernel_ms(40, s2));
    SIM_CUDA(cudaDeviceSynchronize());
    double ms = (double)(sim_test_now_ns() - t0) / 1e6;
    printf("two 40 ms kernels on two streams: %.3f ms\n", ms);
    SIM_CHECK(ms >= 40 && ms < 75); /* serialised would be 80 */
}

static void event_wait_orders_streams(void)
{
    cudaStream_t s1, s2;
    cudaEvent_t done, a, b;
    SIM_CUDA(cudaStreamCreate(&s1));
    SIM_CUDA(cudaStreamCreate(&s2));
    SIM_CUDA(cudaEventCreate(&done));
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CUDA(sim_test_kernel_ms(BLOCKER_MS, s1));
    SIM_CUDA(cudaEventRecord(a, s1));
    SIM_CUDA(sim_test_kernel_ms(20, s1));
    SIM_CUDA(cudaEventRecord(done, s1));
    SIM_CUDA(cudaStreamWaitEvent(s2, done, 0));
    SIM_CUDA(sim_test_kernel_ms(5, s2));
    SIM_CUDA(cudaEventRecord(b, s2));
    SIM_CUDA(cudaEventSynchronize(b));
    float ms = sim_elapsed(a, b);
    printf("wait event: %.3f ms\n", ms);
    SIM_CHECK(ms > 24.9 && ms < 25.1);
}

static void copies_move_bytes(void)
{
    enum { N = 1 << 20 };
    char *host = malloc(N), *back = malloc(N), *dev, *dev2;
    for (int i = 0; i < N; i++)
        host[i] = (char)(i * 7);
    SIM_CUDA(cudaMalloc((void **)&dev, N));
    SIM_CUDA(cudaMalloc((void **)&dev2, N));
    SIM_CUDA(cudaMemcpy(dev, host, N, cudaMemcpyHostToDevice));
    SIM_CUDA(cudaMemcpyAsync(dev2, dev, N, cudaMemcpyDefault, 0));
    SIM_CUDA(cudaMemsetAsync(dev2, 0x5a, 16, 0));
    SIM_CUDA(cudaMemcpy(back, dev2, N, cudaMemcpyDeviceToHost));
    for (int i = 0; i < 16; i++)
        SIM_CHECK(back[i] == 0x5a);
    SIM_CHECK(memcmp(back + 16, host + 16, N - 16) == 0);
    SIM_CUDA(cudaFree(dev));
    SIM_CUDA(cudaFree(dev2));
    free(host);
    free(back);
}

static void copies_take_the_modelled_time(void)
{
    size_t n = 25u << 20; /* 26.2 MB at 25 GB/s: 1.05 ms */
    char *host, *dev;
    cudaEvent_t a, b;
    SIM_CUDA(cudaMallocHost((void **)&host, n));
    SIM_CUDA(cudaMalloc((void **)&dev, n));
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CUDA(sim_test_kernel_ms(BLOCKER_MS, 0));
    SIM_CUDA(cudaEventRecord(a, 0));
    SIM_CUDA(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, 0));
    SIM_CUDA(cudaEventRecord(b, 0));
    SIM_CUDA(cudaEventSynchronize(b));
    float ms = sim_elapsed(a, b);
    printf("H2D %zu bytes: %.3f ms\n", n, ms);
    SIM_CHECK(ms > 1.04 && ms < 1.06);
    SIM_CUDA(cudaFreeHost(host));
    SIM_CUDA(cudaFree(dev));
}

/* H2D of N bytes from HOST behind a BLOCKER_MS kernel on a fresh stream:
 * the copy's GPU time (events) and how long cudaMemcpyAsync kept the host. */
static void timed_h2d(const char *host, char *dev, size_t n, float *gpu_ms, double *call_ms)
{
    cudaStream_t s;
    cudaEvent_t a, b;
    SIM_CUDA(cudaStreamCreate(&s));
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CUDA(sim_test_kernel_ms(BLOCKER_MS, s));
    SIM_CUDA(cudaEventRecord(a, s));
    uint64_t t0 = sim_test_now_ns();
    SIM_CUDA(cudaMemcpyAsync(dev, host, n, cudaMemcpyHostToDevice, s));
    *call_ms = (double)(sim_test_now_ns() - t0) / 1e6;
    SIM_CUDA(cudaEventRecord(b, s));
    SIM_CUDA(cudaEventSynchronize(b));
    *gpu_ms = sim_elapsed(a, b);
    SIM_CUDA(cudaStreamDestroy(s));
}

static void pageable_copies_are_slower_and_synchronous(void)
{
    size_t n = 25u << 20; /* 26.2 MB: 1.05 ms at 25 GB/s pinned, 2.62 ms at 10 GB/s pageable */
    char *pinned, *dev, *pageable = malloc(n), *registered = malloc(n);
    SIM_CHECK(pageable && registered);
    SIM_CUDA(cudaHostAlloc((void **)&pinned, n, cudaHostAllocDefault));
    SIM_CUDA(cudaHostRegister(registered, n, cudaHostRegisterDefault));
    SIM_CUDA(cudaMalloc((void **)&dev, n));
    /* every page touched once first: a page fault is not the copy's time */
    memset(pageable, 1, n);
    memset(registered, 2, n);
    memset(pinned, 3, n);
    SIM_CUDA(cudaMemcpy(dev, pinned, n, cudaMemcpyHostToDevice));
    float gpu_ms;
    double call_ms;
    timed_h2d(pageable, dev, n, &gpu_ms, &call_ms);
    printf("H2D from pageable memory: %.3f ms on the GPU, the call kept the host %.3f ms\n", gpu_ms, call_ms);
    /* the event after it is queued only once the host is back, and the host
     * is back once the bytes really moved: the modelled time is a floor */
    SIM_CHECK(gpu_ms > 2.61);
    SIM_CHECK(call_ms >= BLOCKER_MS + 2.6); /* it waited for the kernel before it and for itself */
    timed_h2d(pinned, dev, n, &gpu_ms, &call_ms);
    printf("H2D from pinned memory: %.3f ms on the GPU, the call kept the host %.3f ms\n", gpu_ms, call_ms);
    SIM_CHECK(gpu_ms > 1.04 && gpu_ms < 1.06);
    SIM_CHECK(call_ms < BLOCKER_MS); /* queued behind the kernel, not waited for */
    timed_h2d(registered, dev, n, &gpu_ms, &call_ms);
    printf("H2D from registered memory: %.3f ms on the GPU\n", gpu_ms);
    SIM_CHECK(gpu_ms > 1.04 && gpu_ms < 1.06);
    SIM_CUDA(cudaHostUnregister(registered));
    SIM_CUDA(cudaFreeHost(pinned));
    SIM_CUDA(cudaFree(dev));
    free(pageable);
    free(registered);
}

static void devices_and_errors(void)
{
    int n = 0, d = -1;
    SIM_CUDA(cudaGetDeviceCount(&n));
    SIM_CHECK(n == sim_test_env_int("SIM_GPUS_PER_NODE", 8));
    SIM_CUDA(cudaSetDevice(n - 1));
    SIM_CUDA(cudaGetDevice(&d));
    SIM_CHECK(d == n - 1);
    struct cudaDeviceProp prop;
    SIM_CUDA(cudaGetDeviceProperties(&prop, 0));
    SIM_CHECK(strcmp(prop.name, "Simulated GPU") == 0);
    SIM_CHECK(cudaSetDevice(n) == cudaErrorInvalidDevice);
    SIM_CHECK(cudaPeekAtLastError() == cudaErrorInvalidDevice);
    SIM_CHECK(cudaGetLastError() == cudaErrorInvalidDevice);
    SIM_CHECK(cudaGetLastError() == cudaSuccess);
    SIM_CHECK(strcmp(cudaGetErrorName(cudaErrorInvalidDevice), "cudaErrorInvalidDevice") == 0);
    SIM_CHECK(cudaStreamBeginCapture(0, cudaStreamCaptureModeGlobal) == cudaErrorNotSupported);
    cudaGraph_t graph;
    SIM_CHECK(cudaGraphCreate(&graph, 0) == cudaErrorNotSupported); /* a generated stub */
    cudaStream_t gone;
    SIM_CUDA(cudaStreamCreate(&gone));
    SIM_CUDA(cudaStreamDestroy(gone));
    SIM_CHECK(cudaStreamSynchronize(gone) == cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    int v = 0;
    SIM_CUDA(cudaRuntimeGetVersion(&v));
    SIM_CHECK(v >= 13000);
    SIM_CUDA(cudaSetDevice(0));
}

/* cudaMemcpy on the legacy default stream waits for a blocking stream's
 * kernel, but not for a non-blocking stream's. */
static void legacy_default_stream_synchronises(void)
{
    cudaStream_t blocking, nonblocking;
    char *dev, host[64];
    SIM_CUDA(cudaMalloc((void **)&dev, sizeof host));
    SIM_CUDA(cudaStreamCreate(&blocking));
    SIM_CUDA(cudaStreamCreateWithFlags(&nonblocking, cudaStreamNonBlocking));

    uint64_t t0 = sim_test_now_ns();
    SIM_CUDA(sim_test_kernel_ms(30, nonblocking));
    SIM_CUDA(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    double free_ms = (double)(sim_test_now_ns() - t0) / 1e6;
    SIM_CUDA(cudaDeviceSynchronize());

    t0 = sim_test_now_ns();
    SIM_CUDA(sim_test_kernel_ms(30, blocking));
    SIM_CUDA(cudaMemcpy(host, dev, sizeof host, cudaMemcpyDeviceToHost));
    double ordered_ms = (double)(sim_test_now_ns() - t0) / 1e6;
    printf("legacy cudaMemcpy after a 30 ms kernel: non-blocking stream %.3f ms, blocking %.3f ms\n",
           free_ms, ordered_ms);
    SIM_CHECK(free_ms < 20);
    SIM_CHECK(ordered_ms >= 30);

    cudaEvent_t a, b; /* and a blocking stream waits for the legacy stream */
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    SIM_CUDA(cudaEventRecord(a, blocking));
    SIM_CUDA(sim_test_kernel_ms(20, 0));
    SIM_CUDA(sim_test_kernel_ms(1, blocking));
    SIM_CUDA(cudaEventRecord(b, blocking));
    SIM_CUDA(cudaEventSynchronize(b));
    float ms = 0;
    SIM_CUDA(cudaEventElapsedTime(&ms, a, b));
    SIM_CHECK(ms > 20.9);
    SIM_CUDA(cudaFree(dev));
}

int main(void)
{
    sim_test_register_kernels();
    devices_and_errors();
    one_stream_runs_in_order();
    two_streams_overlap();
    event_wait_orders_streams();
    copies_move_bytes();
    copies_take_the_modelled_time();
    pageable_copies_are_slower_and_synchronous();
    legacy_default_stream_synchronises();
    printf("ok\n");
    return 0;
}
