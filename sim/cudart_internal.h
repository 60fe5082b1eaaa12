/*
 * cudart_internal.h: what the files of the simulated libcudart share.
 *
 * A device is a number; device memory is host memory.  Every stream owns a
 * FIFO of operations run by its own worker thread, which keeps the stream's
 * virtual clock: an operation starts at max(end of the previous one, its
 * ready time) and the worker sleeps until its modelled end.  One process-wide
 * lock (sim_lock) guards all queues, counters and events; nobody sleeps while
 * holding it.  Completion of any operation is broadcast on sim_done_cv, on
 * which host-side synchronisation waits.
 */
#ifndef SIM_CUDART_INTERNAL_H
#define SIM_CUDART_INTERNAL_H

#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdint.h>

#include "sim_common.h"
#include "sim_private.h"

#define SIM_DEFAULT_STREAM_ID 7u
#define SIM_MAX_DEVICES 64

enum sim_op_kind {
    SIM_OP_KERNEL,
    SIM_OP_MEMCPY,
    SIM_OP_MEMSET,
    SIM_OP_EVENT,  /* event record: completes at the stream's current time */
    SIM_OP_WAIT,   /* wait for an event recorded on another stream */
    SIM_OP_CUSTOM, /* libnccl's work, see sim_private.h */
    SIM_OP_HOSTFN, /* cudaLaunchHostFunc / cudaStreamAddCallback */
};

struct sim_event {
    unsigned flags;
    uint64_t gen_recorded; /* records issued */
    uint64_t gen_done;     /* records completed */
    uint64_t time_ns;      /* virtual time of the last completed record */
};

struct sim_op {
    enum sim_op_kind kind;
    struct sim_op *next;
    uint64_t seq;      /* position in its stream, from 1 */
    uint64_t ready_ns; /* earliest virtual start */
    uint64_t duration_ns;
    struct sim_activity act; /* kernel, memcpy, memset: what is reported */
    void *dst;
    const void *src;
    size_t bytes;
    int value;
    struct sim_event *event;
    uint64_t event_gen;
    int owns_event; /* an implicit event, freed with the WAIT op */
    struct sim_custom_op custom;
    void (*host_fn)(void *);
    void *host_arg;
};

struct sim_stream {
    uint32_t id;
    int device;
    unsigned flags;
    int priority;
    int destroyed;
    struct sim_op *head, *tail;
    uint64_t submitted, completed;
    uint64_t vclock; /* virtual end of the last operation */
    pthread_cond_t work_cv;
    pthread_t thread;
    struct sim_stream *next_all;
};

extern pthread_mutex_t sim_lock;
extern pthread_cond_t sim_done_cv;

/* model.c: the time model (sim_model(): sim_private.h) */
uint64_t sim_model_kernel_ns(dim3 grid, dim3 block);
/* HOST_PINNED: the host side of an H2D or D2H copy is pinned memory. */
uint64_t sim_model_copy_ns(size_t bytes, enum sim_copy_kind kind, int host_pinned);

/* stream.c */
struct sim_stream *sim_stream_resolve(cudaStream_t s);
struct sim_op *sim_op_new(enum sim_op_kind kind);
/* Queues OP on ST, which the caller named HANDLE (0 and cudaStreamLegacy
 * get the legacy default stream's implicit synchronisation). */
void sim_stream_submit(cudaStream_t handle, struct sim_stream *st, struct sim_op *op);
void sim_stream_wait_seq(struct sim_stream *st, uint64_t seq);
void sim_stream_sync(struct sim_stream *st);
void sim_device_sync(int device);
struct sim_stream *sim_stream_create(int device, unsigned flags, int priority);
void sim_stream_destroy(struct sim_stream *st);
int sim_stream_idle(struct sim_stream *st);

/* cudart.c */
int sim_current_device(void);
cudaError_t sim_set_error(cudaError_t err);
uint32_t sim_api_enter(void);
enum sim_copy_kind sim_copy_kind_of(const void *dst, const void *src, enum cudaMemcpyKind kind,
                                    int *src_pinned, int *dst_pinned);

/* activity.c */
void sim_activity_emit(const struct sim_activity *a);

#endif
