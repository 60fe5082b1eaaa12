/*
 * sim_private.h: the private interface that the simulated libcudart exports
 * to its two siblings, under the version node SIM_PRIVATE_1 (never under the
 * real libcudart.so.13 node, so no application can bind it by accident).
 *
 * libnccl links against libcudart and uses it to put its work on the user's
 * stream (a "custom" operation that the stream worker runs when the stream
 * reaches it), to draw correlation ids and to write ground truth.
 *
 * libcupti does not link against libcudart: at load time (and again when
 * activity is enabled) it looks libcudart up with dlopen(RTLD_NOLOAD) and, if
 * present, installs its record sink with sim_cupti_attach().  libcudart then
 * reports every finished operation to the sink.  Without libcupti nothing is
 * reported and nothing is loaded.
 */
#ifndef SIM_PRIVATE_H
#define SIM_PRIVATE_H

#include <stdint.h>
#include <stddef.h>

/* What one finished device operation looked like. */
enum sim_activity_kind {
    SIM_ACT_KERNEL = 1,
    SIM_ACT_MEMCPY = 2,
    SIM_ACT_MEMSET = 3,
};

/* Copy directions, shared by truth and CUPTI. */
enum sim_copy_kind {
    SIM_COPY_H2H = 0,
    SIM_COPY_H2D = 1,
    SIM_COPY_D2H = 2,
    SIM_COPY_D2D = 3,
};

struct sim_activity {
    enum sim_activity_kind kind;
    const char *name;  /* kernels: mangled name, valid for the process life */
    uint64_t start_ns; /* CLOCK_MONOTONIC */
    uint64_t end_ns;
    uint32_t device;
    uint32_t stream_id;
    uint32_t correlation;
    uint32_t grid[3], block[3];
    uint32_t shared_mem;
    uint64_t bytes; /* memcpy, memset */
    enum sim_copy_kind copy_kind;
    int src_pinned, dst_pinned; /* host side of a copy is pinned memory */
    uint32_t memset_value;
};

/* The sink libcupti installs; called on stream worker threads. */
struct sim_cupti_ops {
    int version; /* SIM_CUPTI_OPS_VERSION */
    void (*record)(const struct sim_activity *a);
};
#define SIM_CUPTI_OPS_VERSION 1

/* A custom stream operation: RUN is called on the stream's worker thread
 * when the stream reaches the op, with the op's virtual start time; it
 * returns the virtual end time (the worker then sleeps until then) and sets
 * *FAILED when the op was abandoned.  RELEASE frees ARG afterwards. */
struct sim_custom_op {
    uint64_t (*run)(void *arg, uint64_t start_ns, int *failed);
    void (*release)(void *arg);
    void *arg;
    const char *kernel_name; /* non-NULL: reported as a kernel */
    uint32_t correlation;
};

typedef void (*sim_cupti_attach_fn)(const struct sim_cupti_ops *ops);

/* The time model of every simulated library, read once from the
 * environment (model.c, docs/sim.md): GPUs, copies, and the links
 * collectives cross. */
struct sim_model {
    double threads_per_us, launch_latency_us, launch_call_us, pinned_gbps, pageable_gbps, d2d_gbps;
    int gpus_per_node;
    double nvlink_gbps, net_gbps, nccl_latency_us;
};

/* Exported by libcudart (SIM_PRIVATE_1). */
const struct sim_model *sim_model(void);
void sim_cupti_attach(const struct sim_cupti_ops *ops);
int sim_stream_enqueue_custom(void *stream, const struct sim_custom_op *op);
int sim_stream_device(void *stream);
uint32_t sim_stream_id(void *stream);
uint32_t sim_next_correlation(void);
void sim_truth_line(const char *json);
void sim_truth_flush(void);

#endif
