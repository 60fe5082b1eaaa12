/*
 * activity.c: where a finished kernel, copy or memset goes: one ground-truth
 * line, and the CUPTI sink when libcupti attached one.
 *
 * The sink pointer is set by libcupti through sim_cupti_attach() and read
 * with an atomic load on the stream workers: libcudart never loads libcupti
 * itself, it only talks to one that the program already loaded.
 */
#include "cudart_internal.h"

#include <stdatomic.h>
#include <stdio.h>

static _Atomic(const struct sim_cupti_ops *) sim_cupti_sink;

void sim_cupti_attach(const struct sim_cupti_ops *ops)
{
    if (ops && ops->version != SIM_CUPTI_OPS_VERSION)
        return;
    atomic_store(&sim_cupti_sink, ops);
}

static const char *sim_copy_kind_name(enum sim_copy_kind k)
{
    static const char *const names[] = {"h2h", "h2d", "d2h", "d2d"};
    return names[k];
}

static void sim_activity_truth(const struct sim_activity *a)
{
    char line[4096];
    if (a->kind == SIM_ACT_KERNEL)
        snprintf(line, sizeof line,
                 "{\"type\":\"kernel\",\"name\":\"%s\",\"device\":%u,\"stream\":%u,"
                 "\"start_ns\":%llu,\"end_ns\":%llu,\"correlation\":%u,"
                 "\"grid\":[%u,%u,%u],\"block\":[%u,%u,%u]}",
                 a->name, a->device, a->stream_id, (unsigned long long)a->start_ns,
                 (unsigned long long)a->end_ns, a->correlation, a->grid[0], a->grid[1],
                 a->grid[2], a->block[0], a->block[1], a->block[2]);
    else if (a->kind == SIM_ACT_MEMCPY)
        snprintf(line, sizeof line,
                 "{\"type\":\"memcpy\",\"kind\":\"%s\",\"bytes\":%llu,\"device\":%u,"
                 "\"stream\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"correlation\":%u}",
                 sim_copy_kind_name(a->copy_kind), (unsigned long long)a->bytes, a->device,
                 a->stream_id, (unsigned long long)a->start_ns, (unsigned long long)a->end_ns,
                 a->correlation);
    else
        snprintf(line, sizeof line,
                 "{\"type\":\"memset\",\"bytes\":%llu,\"value\":%u,\"device\":%u,"
                 "\"stream\":%u,\"start_ns\":%llu,\"end_ns\":%llu,\"correlation\":%u}",
                 (unsigned long long)a->bytes, a->memset_value, a->device, a->stream_id,
                 (unsigned long long)a->start_ns, (unsigned long long)a->end_ns,
                 a->correlation);
    sim_truth_line(line);
}

void sim_activity_emit(const struct sim_activity *a)
{
    sim_activity_truth(a);
    const struct sim_cupti_ops *ops = atomic_load(&sim_cupti_sink);
    if (ops)
        ops->record(a);
}
