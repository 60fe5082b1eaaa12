/*
 * make_trace.c - writes a small, known trace for the dump verb's test: a
 * data-loader read of a file whose name needs JSON escaping, a kernel, an
 * all-reduce and a marker.  `make_trace PATH [crash]`: with "crash" the
 * writer is abandoned instead of closed, as if the process had died.
 */
#include <string.h>

#include "testutil.h"

#define NAME_WITH_QUOTES "/data/img \"001\"\\\t\xc3\xa9.jpg"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: make_trace PATH [crash]\n");
        return 2;
    }
    int err;
    struct sp_writer *w = sp_writer_create(argv[1], NULL, &err);
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

    if (argc > 2 && !strcmp(argv[2], "crash"))
        sp_writer_abandon(w);
    else
        CHECK(sp_writer_close(w) == 0, "close");
    return 0;
}
