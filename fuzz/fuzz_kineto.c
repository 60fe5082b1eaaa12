/*
 * fuzz_kineto.c - libFuzzer target for `scaleprof import kineto`: any
 * bytes, plain or gzip, converted as a Kineto trace must neither crash,
 * hang, leak nor read out of bounds, and must stay within the importer's
 * bounds (docs/import.md) in time and memory.
 *
 * The input becomes a file (a memfd: the importer's own path through
 * zlib's gzread, which passes plain bytes through and inflates gzip) and
 * is read by the JSON reader with a callback that runs the mapping
 * helpers on each event.  An input in which the reader found events then
 * goes through the whole conversion (reader, mapping, trace writer) into
 * a scratch directory: creating a trace file costs a few milliseconds,
 * too much to spend on inputs that never reach an event.  Raw bytes are
 * also fed to the number parser the reader uses for times.
 * An input that starts with the gzip magic takes the gzip path; libFuzzer
 * finds that prefix from the seeds (bench/fuzz.sh and fuzz/run_fuzz.sh
 * add a gzip copy of each plain seed).
 *
 * Built with -Dfuzz=enabled (clang); run by the suite 'fuzz' or
 * bench/fuzz.sh kineto.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "import_kineto.h"

#define NUMBER_TEXT_MAX 64

static char outdir[64];

static int on_event(void *ctx, const struct sp_kineto_event *ev, const struct sp_kineto_meta *meta)
{
    unsigned dsize;
    (void)ctx;
    (void)meta;
    (void)sp_import_copy_kind(ev->name);
    (void)sp_import_cuda_api(ev->name);
    (void)sp_import_nccl_op(ev->collective, ev->name);
    (void)sp_import_is_nccl_kernel(ev->name);
    (void)sp_import_dtype(ev->dtype, &dsize);
    return 0;
}

static void convert(const uint8_t *data, size_t size)
{
    char path[64], err[2048], line[2048];
    int fd = fuzz_as_file(data, size, "fuzz-kineto", path, sizeof path);
    if (fd < 0)
        return;
    static struct sp_kineto_meta meta;
    static struct sp_kineto_result res;
    (void)sp_kineto_read(path, on_event, NULL, &meta, &res);
    if (res.events) {
        static struct sp_import_summary sum; /* large: not on the stack */
        struct sp_import_opts opts = {outdir, 1};
        (void)sp_import_kineto_file(path, &opts, &sum, err, sizeof err);
        sp_import_format_summary(&sum, line, sizeof line);
        if (sum.out_path[0])
            unlink(sum.out_path);
    }
    close(fd);
}

static void parse_number(const uint8_t *data, size_t size)
{
    int64_t v;
    size_t n = size < NUMBER_TEXT_MAX ? size : NUMBER_TEXT_MAX;
    (void)sp_kineto_parse_scaled((const char *)data, n, 3, &v);
    (void)sp_kineto_parse_scaled((const char *)data, n, 0, &v);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *tmp = getenv("TMPDIR");
    snprintf(outdir, sizeof outdir, "%.40s/fuzz-kineto-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(outdir)) {
        perror("fuzz_kineto: mkdtemp");
        exit(1);
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    parse_number(data, size);
    convert(data, size);
    return 0;
}
