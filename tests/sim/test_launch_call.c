/*
 * SIM_LAUNCH_CALL_US: each launch call keeps the host that long, and the
 * kernel is queued at the call's end.  With 300 us per call, each of 20
 * launches of a 10 us kernel returns no sooner than 300 us after it was
 * made, and a sync right after the last one waits only for that kernel
 * (the ones before it ran while the host was in the next calls).
 */
#include "sim_test.h"

#define CALL_US 300
#define LAUNCHES 20

int main(void)
{
    setenv("SIM_LAUNCH_CALL_US", "300", 1); /* read at the first CUDA call */
    sim_test_register_kernels();
    uint64_t least = UINT64_MAX;
    for (int i = 0; i < LAUNCHES; i++) {
        uint64_t t0 = sim_test_now_ns();
        SIM_CUDA(sim_test_kernel_ms(0.01, 0));
        uint64_t d = sim_test_now_ns() - t0;
        least = d < least ? d : least;
    }
    uint64_t t0 = sim_test_now_ns();
    SIM_CUDA(cudaDeviceSynchronize());
    double sync_ms = (double)(sim_test_now_ns() - t0) / 1e6;
    printf("shortest launch call %.3f ms, sync after the last %.3f ms\n", (double)least / 1e6, sync_ms);
    SIM_CHECK(least >= (uint64_t)CALL_US * 1000);
    SIM_CHECK(sync_ms < 0.9 * LAUNCHES * CALL_US / 1000.0); /* the earlier kernels were done */
    printf("ok\n");
    return 0;
}
