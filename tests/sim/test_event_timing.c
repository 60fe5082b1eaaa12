/*
 * A 20 ms kernel measured with events takes 20 ms (within 5%), and the host
 * waiting for it really waits about that long: the simulated GPU keeps real
 * time.  A 10 ms kernel queued first keeps the stream busy while the host
 * queues the measured ones, so host preemption cannot stretch the events.
 */
#include "sim_test.h"

int main(void)
{
    sim_test_register_kernels();
    cudaEvent_t a, b;
    SIM_CUDA(cudaEventCreate(&a));
    SIM_CUDA(cudaEventCreate(&b));
    for (int round = 0; round < 3; round++) {
        uint64_t t0 = sim_test_now_ns();
        SIM_CUDA(sim_test_kernel_ms(10, 0));
        SIM_CUDA(cudaEventRecord(a, 0));
        SIM_CUDA(sim_test_kernel_ms(20, 0));
        SIM_CUDA(cudaEventRecord(b, 0));
        SIM_CHECK(cudaEventQuery(b) == cudaErrorNotReady);
        SIM_CUDA(cudaEventSynchronize(b));
        double wall = (double)(sim_test_now_ns() - t0) / 1e6;
        float ms = 0;
        SIM_CUDA(cudaEventElapsedTime(&ms, a, b));
        printf("round %d: events %.3f ms, host wall %.3f ms\n", round, ms, wall);
        SIM_CHECK(ms > 19.0 && ms < 21.0);
        SIM_CHECK(wall > 29.9 && wall < 200); /* the host waited; late wake-ups happen under load */
    }
    printf("ok\n");
    return 0;
}
