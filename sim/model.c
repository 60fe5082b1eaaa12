/*
 * model.c: how long a kernel, a copy or a memset takes on a simulated GPU.
 *
 * The numbers come from the environment once per process (see docs/sim.md):
 *   kernel  = total threads / SIM_THREADS_PER_US microseconds; it cannot start
 *             before its launch call + SIM_LAUNCH_LATENCY_US; the launch
 *             call itself keeps the host SIM_LAUNCH_CALL_US (0: returns at
 *             once), spinning, as a slow launch path does
 *   copy    = bytes / bandwidth: H2D and D2H at SIM_PINNED_GBPS when the
 *             host side is pinned memory, SIM_PAGEABLE_GBPS when it is
 *             pageable (the driver stages it through a pinned buffer, as
 *             CUDA's does, so it is slower); SIM_D2D_GBPS for D2D, H2H and
 *             memset.  SIM_PCIE_GBPS, when set, is the pinned default.
 *   collective: SIM_NVLINK_GBPS, SIM_NET_GBPS and SIM_NCCL_LATENCY_US, for
 *             libnccl's (nccl_group.c), which asks sim_model() here.
 * GB/s means 1e9 bytes per second, so bytes / GBps is nanoseconds.
 */
#include "cudart_internal.h"

/* pageable copies reach about 40% of pinned ones on PCIe 4 hosts */
#define SIM_PAGEABLE_DEFAULT_GBPS 10

static struct sim_model sim_model_values;
static pthread_once_t sim_model_once = PTHREAD_ONCE_INIT;

static void sim_model_load(void)
{
    sim_model_values.threads_per_us = sim_env_double("SIM_THREADS_PER_US", 1000);
    sim_model_values.launch_latency_us = sim_env_double("SIM_LAUNCH_LATENCY_US", 5);
    sim_model_values.launch_call_us = sim_env_double("SIM_LAUNCH_CALL_US", 0);
    double pcie = sim_env_double("SIM_PCIE_GBPS", 25);
    sim_model_values.pinned_gbps = sim_env_double("SIM_PINNED_GBPS", pcie);
    sim_model_values.pageable_gbps = sim_env_double("SIM_PAGEABLE_GBPS", SIM_PAGEABLE_DEFAULT_GBPS);
    sim_model_values.d2d_gbps = sim_env_double("SIM_D2D_GBPS", 1000);
    double n = sim_env_double("SIM_GPUS_PER_NODE", 8);
    sim_model_values.gpus_per_node = n > SIM_MAX_DEVICES ? SIM_MAX_DEVICES : (int)n;
    if (sim_model_values.gpus_per_node < 1)
        sim_model_values.gpus_per_node = 1;
    sim_model_values.nvlink_gbps = sim_env_double("SIM_NVLINK_GBPS", 300);
    sim_model_values.net_gbps = sim_env_double("SIM_NET_GBPS", 25);
    sim_model_values.nccl_latency_us = sim_env_double("SIM_NCCL_LATENCY_US", 10);
}

const struct sim_model *sim_model(void)
{
    pthread_once(&sim_model_once, sim_model_load);
    return &sim_model_values;
}

uint64_t sim_model_kernel_ns(dim3 grid, dim3 block)
{
    double threads = (double)grid.x * grid.y * grid.z * (double)block.x * block.y * block.z;
    return (uint64_t)(threads / sim_model()->threads_per_us * SIM_NS_PER_US);
}

uint64_t sim_model_copy_ns(size_t bytes, enum sim_copy_kind kind, int host_pinned)
{
    const struct sim_model *md = sim_model();
    double gbps = md->d2d_gbps;
    if (kind == SIM_COPY_H2D || kind == SIM_COPY_D2H)
        gbps = host_pinned ? md->pinned_gbps : md->pageable_gbps;
    return (uint64_t)((double)bytes / gbps);
}
