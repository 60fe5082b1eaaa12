/*
 * make_trace.c - writes a small, known trace for the dump verb's test: a
 * data-loader read of a file whose name needs JSON escaping, a kernel, an
 * all-reduce and a marker.  `make_trace PATH [crash] [small]`: "crash"
 * exits without closing the writer, as a killed process would;
 * "small" uses tiny slots and arena (fuzzing seeds) and adds enough
 * events for several frames, reads among them.
 */
#include <string.h>

#include "testutil.h"

#define NAME_WITH_QUOTES "/data/img \"001\"\\\t\xc3\xa9.jpg"

#define SMALL_EXTRA_EVENTS 300
/* In those, a read after every IO_EVERY-th marker, its offset moved every
 * IO_RUN markers. */
#define IO_EVERY 3
#define IO_RUN 30

static int has_flag(int argc, char **argv, const char *flag)
{
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], flag))
            return 1;
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: make_trace PATH [crash] [small]\n");
        return 2;
    }
    int err;
    int small = has_flag(argc, argv, "small");
    struct sp_writer_opts tiny = {.slot_size = 1024, .slot_count = 4, .strings_size = 4096, .background = 0};
    struct sp_writer *w = sp_writer_create(argv[1], small ? &tiny : NULL, &err);
    CHECK(w, "create %s: %s", argv[1], sp_strerror(err));
    sp_writer_add_tlv(w, SP_TLV_HOST, "gpu-node-3", 10);
    sp_writer_add_tlv(w, SP_TLV_SOURCE, "preload", 7);
    struct sp_file_header *h = sp_writer_header(w);
    h->rank = 1;
    h->world_size = 8;

    struct sp_event ev = {.type = SP_EV_IO, .t = 1000000};
    ev.io.dur = 2500;
    ev.io.op = SP_IO_READ;
    ev.io.fd = 7;
    ev.io.fd_kind = SP_FD_FILE;
    ev.io.path = sp_writer_intern(w, NAME_WITH_QUOTES, strlen(NAME_WITH_QUOTES));
    ev.io.ret = 4096;
    ev.io.bytes = 4096;
    CHECK(sp_writer_append(w, &ev) == 0, "append");

    struct sp_event k = {.type = SP_EV_GPU, .t = 1003000};
    k.gpu.dur = 150000;
    k.gpu.kind = SP_GPU_KERNEL;
    k.gpu.name = sp_writer_intern(w, "_Z6matmulPfS_S_i", 16);
    k.gpu.correlation = 42;
    CHECK(sp_writer_append(w, &k) == 0, "append");

    struct sp_event n = {.type = SP_EV_NCCL, .t = 1200000};
    n.nccl.op = SP_NCCL_ALLREDUCE;
    n.nccl.comm = 0xabcdef;
    n.nccl.seq = 1;
    n.nccl.bytes = 1 << 20;
    n.nccl.peer = -1;
    CHECK(sp_writer_append(w, &n) == 0, "append");

    struct sp_event m = {.type = SP_EV_MARKER, .t = 1300000};
    m.marker.kind = SP_MARK_PUSH;
    m.marker.name = sp_writer_intern(w, "step 3", 6);
    CHECK(sp_writer_append(w, &m) == 0, "append");

    for (int i = 0; small && i < SMALL_EXTRA_EVENTS; i++) {
        m.t += 1000 + (uint64_t)i * 37;
        m.marker.kind = i % 2 ? SP_MARK_POP : SP_MARK_PUSH;
        m.marker.depth = (uint64_t)i;
        CHECK(sp_writer_append(w, &m) == 0, "append");
        if (i % IO_EVERY == 0) { /* reads of the file in runs: mostly repeats of the one before */
            ev.t = m.t + 10;
            ev.io.dur = 100 + (uint64_t)i;
            ev.io.offset = (uint64_t)(i / IO_RUN) * 4096;
            ev.io.ret = i % 17 ? 4096 : 0;
            CHECK(sp_writer_append(w, &ev) == 0, "append");
        }
    }
    if (has_flag(argc, argv, "crash"))
        _exit(0); /* die without closing: the trace is what a crash leaves */
    CHECK(sp_writer_close(w) == 0, "close");
    return 0;
}
