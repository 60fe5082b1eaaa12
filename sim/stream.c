/*
 * stream.c: streams, their worker threads, and the virtual clock.
 *
 * Each stream is a FIFO run by one worker thread.  The worker takes the next
 * operation, computes its virtual start as max(end of the previous operation,
 * the operation's ready time), sleeps until that start (the stream "reaches"
 * the operation in real time), performs it (copies bytes, runs libnccl's
 * custom op, calls a host function), then sleeps until the modelled end with
 * an absolute CLOCK_MONOTONIC deadline.  The next operation starts at the
 * virtual end, not at the moment the worker woke up, so wake-up latency never
 * accumulates.  Streams run concurrently, like a GPU with spare SMs.
 *
 * Default streams (0, cudaStreamLegacy, cudaStreamPerThread) map to one
 * lazily created stream per device.  Work named by 0 or cudaStreamLegacy
 * follows the legacy default stream's rule (it waits for the device's
 * blocking streams and they wait for it), through implicit events inserted
 * only when the other stream still has work queued.  Streams are never freed: a destroyed
 * stream's worker drains its queue and exits, the small struct stays on the
 * list so late lookups stay safe.  After fork() the child forgets all streams
 * (their workers do not exist there) and starts afresh.
 */
#include "cudart_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#define SIM_TIMER_SLACK_NS 1
#define SIM_MAX_BARRIER 64 /* streams one legacy-stream op waits for */

pthread_mutex_t sim_lock = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t sim_done_cv = PTHREAD_COND_INITIALIZER;

static struct sim_stream *sim_all_streams;
static struct sim_stream *sim_default_streams[SIM_MAX_DEVICES];
static uint32_t sim_next_stream_id = 13;
static pthread_once_t sim_fork_once = PTHREAD_ONCE_INIT;

static void sim_after_fork_child(void)
{
    pthread_mutex_init(&sim_lock, NULL);
    pthread_cond_init(&sim_done_cv, NULL);
    sim_all_streams = NULL;
    memset(sim_default_streams, 0, sizeof sim_default_streams);
}

static void sim_install_fork_handler(void)
{
    pthread_atfork(NULL, NULL, sim_after_fork_child);
}

struct sim_op *sim_op_new(enum sim_op_kind kind)
{
    struct sim_op *op = calloc(1, sizeof *op);
    if (!op) {
        fprintf(stderr, "sim(cudart): out of memory\n");
        abort();
    }
    op->kind = kind;
    op->ready_ns = sim_now_ns();
    return op;
}

/* Waits (under sim_lock) until EV has completed record number GEN. */
static uint64_t sim_wait_event_locked(struct sim_event *ev, uint64_t gen)
{
    while (ev->gen_done < gen)
        pthread_cond_wait(&sim_done_cv, &sim_lock);
    return ev->time_ns;
}

/* Performs OP, which starts at virtual time START; returns its virtual end. */
static uint64_t sim_op_execute(struct sim_op *op, uint64_t start)
{
    int failed = 0;
    switch (op->kind) {
    case SIM_OP_KERNEL:
    case SIM_OP_EVENT:
        return start + op->duration_ns;
    case SIM_OP_MEMCPY:
        if (op->bytes && op->dst != op->src)
            memmove(op->dst, op->src, op->bytes);
        return start + op->duration_ns;
    case SIM_OP_MEMSET:
        memset(op->dst, op->value, op->bytes);
        return start + op->duration_ns;
    case SIM_OP_WAIT:
        return start;
    case SIM_OP_CUSTOM:
        return op->custom.run(op->custom.arg, start, &failed);
    case SIM_OP_HOSTFN:
        op->host_fn(op->host_arg);
        return start > sim_now_ns() ? start : sim_now_ns();
    }
    return start;
}

static void sim_op_report(struct sim_stream *st, struct sim_op *op, uint64_t start, uint64_t end)
{
    struct sim_activity *a = &op->act;
    if (op->kind == SIM_OP_CUSTOM) {
        if (!op->custom.kernel_name)
            return;
        a->kind = SIM_ACT_KERNEL;
        a->name = op->custom.kernel_name;
        a->correlation = op->custom.correlation;
        a->grid[0] = a->grid[1] = a->grid[2] = 1;
        a->block[0] = 64;
        a->block[1] = a->block[2] = 1;
    } else if (op->kind != SIM_OP_KERNEL && op->kind != SIM_OP_MEMCPY && op->kind != SIM_OP_MEMSET) {
        return;
    }
    a->start_ns = start;
    a->end_ns = end;
    a->device = (uint32_t)st->device;
    a->stream_id = st->id;
    sim_activity_emit(a);
}

static void sim_op_free(struct sim_op *op)
{
    if (op->owns_event)
        free(op->event);
    if (op->kind == SIM_OP_CUSTOM && op->custom.release)
        op->custom.release(op->custom.arg);
    free(op);
}

/* Takes the next operation of ST, or NULL when the stream is destroyed and
 * drained. */
static struct sim_op *sim_stream_next(struct sim_stream *st)
{
    pthread_mutex_lock(&sim_lock);
    while (!st->head && !st->destroyed)
        pthread_cond_wait(&st->work_cv, &sim_lock);
    struct sim_op *op = st->head;
    if (op) {
        st->head = op->next;
        if (!st->head)
            st->tail = NULL;
    }
    pthread_mutex_unlock(&sim_lock);
    return op;
}

static void sim_stream_complete(struct sim_stream *st, struct sim_op *op, uint64_t end)
{
    pthread_mutex_lock(&sim_lock);
    st->vclock = end;
    st->completed = op->seq;
    if (op->kind == SIM_OP_EVENT && op->event->gen_done < op->event_gen) {
        op->event->gen_done = op->event_gen;
        op->event->time_ns = end;
    }
    pthread_cond_broadcast(&sim_done_cv);
    pthread_mutex_unlock(&sim_lock);
}

/* Copies, memsets, NCCL work and host functions do something at their
 * start, so the worker waits for it in real time; a kernel or an event only
 * needs its end, and skipping the start wait saves a wake-up per launch. */
static int sim_op_acts_at_start(const struct sim_op *op)
{
    return op->kind != SIM_OP_KERNEL && op->kind != SIM_OP_EVENT && op->kind != SIM_OP_WAIT;
}

static void *sim_stream_worker(void *arg)
{
    struct sim_stream *st = arg;
    struct sim_op *op;
    prctl(PR_SET_TIMERSLACK, SIM_TIMER_SLACK_NS); /* wake at the deadline, not 50 us later */
    while ((op = sim_stream_next(st))) {
        uint64_t start = st->vclock > op->ready_ns ? st->vclock : op->ready_ns;
        if (op->kind == SIM_OP_WAIT) {
            pthread_mutex_lock(&sim_lock);
            uint64_t t = sim_wait_event_locked(op->event, op->event_gen);
            pthread_mutex_unlock(&sim_lock);
            if (t > start)
                start = t;
        }
        if (sim_op_acts_at_start(op))
            sim_sleep_until(start);
        uint64_t end = sim_op_execute(op, start);
        sim_sleep_until(end);
        sim_op_report(st, op, start, end);
        sim_stream_complete(st, op, end);
        sim_op_free(op);
    }
    return NULL;
}

/* A new stream with its worker; ID 0 draws the next free stream id. */
static struct sim_stream *sim_stream_new(int device, unsigned flags, int priority, uint32_t id)
{
    pthread_once(&sim_fork_once, sim_install_fork_handler);
    struct sim_stream *st = calloc(1, sizeof *st);
    if (!st)
        return NULL;
    st->device = device;
    st->flags = flags;
    st->priority = priority;
    pthread_cond_init(&st->work_cv, NULL);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int rc = pthread_create(&st->thread, &attr, sim_stream_worker, st);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        free(st);
        return NULL;
    }
    pthread_mutex_lock(&sim_lock);
    st->id = id ? id : sim_next_stream_id++;
    st->next_all = sim_all_streams;
    sim_all_streams = st;
    pthread_mutex_unlock(&sim_lock);
    return st;
}

struct sim_stream *sim_stream_create(int device, unsigned flags, int priority)
{
    return sim_stream_new(device, flags, priority, 0);
}

void sim_stream_destroy(struct sim_stream *st)
{
    pthread_mutex_lock(&sim_lock);
    st->destroyed = 1;
    pthread_cond_signal(&st->work_cv);
    pthread_mutex_unlock(&sim_lock);
}

static struct sim_stream *sim_default_stream(int device)
{
    pthread_mutex_lock(&sim_lock);
    struct sim_stream *st = sim_default_streams[device];
    pthread_mutex_unlock(&sim_lock);
    if (st)
        return st;
    st = sim_stream_new(device, 0, 0, SIM_DEFAULT_STREAM_ID);
    if (!st)
        return NULL;
    pthread_mutex_lock(&sim_lock);
    if (sim_default_streams[device]) { /* lost a race: keep the first */
        st->destroyed = 1;
        pthread_cond_signal(&st->work_cv);
        st = sim_default_streams[device];
    } else {
        sim_default_streams[device] = st;
    }
    pthread_mutex_unlock(&sim_lock);
    return st;
}

struct sim_stream *sim_stream_resolve(cudaStream_t s)
{
    if (s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread)
        return sim_default_stream(sim_current_device());
    struct sim_stream *st = (struct sim_stream *)s;
    pthread_mutex_lock(&sim_lock);
    int gone = st->destroyed; /* its worker is gone: nothing would run */
    pthread_mutex_unlock(&sim_lock);
    return gone ? NULL : st;
}

static void sim_stream_append(struct sim_stream *st, struct sim_op *op)
{
    pthread_mutex_lock(&sim_lock);
    op->seq = ++st->submitted;
    if (st->tail)
        st->tail->next = op;
    else
        st->head = op;
    st->tail = op;
    pthread_cond_signal(&st->work_cv);
    pthread_mutex_unlock(&sim_lock);
}

/* LATER starts its next operation only after what EARLIER has queued so
 * far: an implicit event recorded on EARLIER, waited for on LATER. */
static void sim_order_after(struct sim_stream *later, struct sim_stream *earlier)
{
    struct sim_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return;
    ev->gen_recorded = 1;
    struct sim_op *record = sim_op_new(SIM_OP_EVENT), *wait = sim_op_new(SIM_OP_WAIT);
    record->event = wait->event = ev;
    record->event_gen = wait->event_gen = 1;
    wait->owns_event = 1;
    sim_stream_append(earlier, record);
    sim_stream_append(later, wait);
}

static int sim_stream_busy_locked(const struct sim_stream *st)
{
    return !st->destroyed && st->completed < st->submitted;
}

/* The legacy default stream's rule: its work waits for all earlier work of
 * the device's blocking streams, and theirs waits for its earlier work.
 * Non-blocking streams and the per-thread handle are exempt. */
static void sim_legacy_barrier(cudaStream_t handle, struct sim_stream *st)
{
    if (st->flags & cudaStreamNonBlocking)
        return;
    int legacy = handle == NULL || handle == cudaStreamLegacy;
    struct sim_stream *busy[SIM_MAX_BARRIER];
    int n = 0;
    pthread_mutex_lock(&sim_lock);
    struct sim_stream *def = sim_default_streams[st->device];
    if (legacy) {
        for (struct sim_stream *o = sim_all_streams; o && n < SIM_MAX_BARRIER; o = o->next_all)
            if (o != st && o->device == st->device && !(o->flags & cudaStreamNonBlocking) &&
                sim_stream_busy_locked(o))
                busy[n++] = o;
    } else if (def && def != st && sim_stream_busy_locked(def)) {
        busy[n++] = def;
    }
    pthread_mutex_unlock(&sim_lock);
    for (int i = 0; i < n; i++)
        sim_order_after(st, busy[i]);
}

void sim_stream_submit(cudaStream_t handle, struct sim_stream *st, struct sim_op *op)
{
    sim_legacy_barrier(handle, st);
    sim_stream_append(st, op);
}

void sim_stream_wait_seq(struct sim_stream *st, uint64_t seq)
{
    pthread_mutex_lock(&sim_lock);
    while (st->completed < seq)
        pthread_cond_wait(&sim_done_cv, &sim_lock);
    pthread_mutex_unlock(&sim_lock);
}

void sim_stream_sync(struct sim_stream *st)
{
    pthread_mutex_lock(&sim_lock);
    uint64_t seq = st->submitted;
    while (st->completed < seq)
        pthread_cond_wait(&sim_done_cv, &sim_lock);
    pthread_mutex_unlock(&sim_lock);
}

int sim_stream_idle(struct sim_stream *st)
{
    pthread_mutex_lock(&sim_lock);
    int idle = st->completed == st->submitted;
    pthread_mutex_unlock(&sim_lock);
    return idle;
}

void sim_device_sync(int device)
{
    pthread_mutex_lock(&sim_lock);
    for (struct sim_stream *st = sim_all_streams; st; st = st->next_all) {
        if (st->device != device)
            continue;
        uint64_t seq = st->submitted;
        while (st->completed < seq)
            pthread_cond_wait(&sim_done_cv, &sim_lock);
    }
    pthread_mutex_unlock(&sim_lock);
}

/* --- the private interface for libnccl --- */

int sim_stream_enqueue_custom(void *stream, const struct sim_custom_op *custom)
{
    struct sim_stream *st = sim_stream_resolve((cudaStream_t)stream);
    if (!st)
        return -1;
    struct sim_op *op = sim_op_new(SIM_OP_CUSTOM);
    op->custom = *custom;
    sim_stream_submit((cudaStream_t)stream, st, op);
    return 0;
}

int sim_stream_device(void *stream)
{
    struct sim_stream *st = sim_stream_resolve((cudaStream_t)stream);
    return st ? st->device : 0;
}

uint32_t sim_stream_id(void *stream)
{
    struct sim_stream *st = sim_stream_resolve((cudaStream_t)stream);
    return st ? st->id : 0;
}
