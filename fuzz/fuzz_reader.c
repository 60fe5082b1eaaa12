/*
 * fuzz_reader.c - libFuzzer target for the trace reader: any bytes, read
 * as a trace file, must neither crash, hang, leak nor read out of bounds.
 *
 * The input becomes a file (a memfd, so nothing touches the disk) and goes
 * through everything a user of the reader calls: open, the header info,
 * every event, every string id an event names, diagnostics.  The event
 * decoder is also fed the raw bytes directly, as a chunk, and so is the
 * column layout's reader (sp_columns_to_rows), which frames' checksums
 * would otherwise shield from fuzzed bytes.
 *
 * Built and run by bench/fuzz.sh (clang -fsanitize=fuzzer,address,undefined);
 * seeds are small real traces, complete and killed mid-run.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzz_file.h"
#include "sprof.h"

static void read_as_chunk(const uint8_t *data, size_t size)
{
    struct sp_event ev = {0};
    struct sp_codec_state st;
    sp_codec_reset(&st);
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        long n = sp_decode_event(p, end, &ev, &st);
        if (n <= 0)
            break;
        p += n;
        (void)sp_event_name(ev.type);
    }
}

/* The bytes as a decompressed column-layout frame (CRCs keep fuzzed
 * payloads out of the file path, so this one is fed directly). */
static void read_as_columns(const uint8_t *data, size_t size)
{
    static uint8_t rows[1u << 20];
    long n = sp_columns_to_rows(rows, sizeof rows, data, size);
    if (n > 0)
        read_as_chunk(rows, (size_t)n);
}

static void read_as_file(const uint8_t *data, size_t size)
{
    char path[64];
    int fd = fuzz_as_file(data, size, "fuzz-trace", path, sizeof path);
    if (fd < 0)
        return;
    int err;
    struct sp_reader *r = sp_reader_open(path, &err);
    if (r) {
        const struct sp_file_info *info = sp_reader_info(r);
        size_t text = strlen(info->host) + strlen(info->argv) + strlen(info->exe);
        struct sp_event ev;
        while (sp_reader_next(r, &ev)) {
            int n;
            const struct sp_field_desc *f = sp_event_fields(ev.type, &n);
            for (int i = 0; i < n; i++) {
                uint64_t v;
                memcpy(&v, (const char *)&ev + f[i].offset, sizeof v);
                if (f[i].kind == SP_FK_STR)
                    text += strlen(sp_reader_string(r, v));
                else
                    (void)sp_enum_name(ev.type, f[i].name, v);
            }
        }
        text += strlen(sp_reader_diag(r));
        (void)text;
        sp_reader_close(r);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_as_chunk(data, size);
    read_as_columns(data, size);
    read_as_file(data, size);
    return 0;
}
