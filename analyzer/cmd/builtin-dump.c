/*
 * builtin-dump.c - `scaleprof dump`: print trace files as they are, header
 * first, then one event per line, as text or as JSON lines.
 *
 * It is the format's window for people and scripts.  Option parsing and
 * the reading of each file only: the header, event and damage lines are
 * output/dump_out.c's.  Exit status: 0, 1 when a file could not be read
 * as a trace, 2 for a usage error.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "builtin.h"
#include "dump_out.h"
#include "model_summary.h"
#include "opt.h"
#include "sprof.h"
#include "traceset.h"

#define OUT_BUFFER (1u << 16)

struct dump_opts {
    int json;
    int header_only;
};

static void usage(FILE *out)
{
    // clang-format off
    fprintf(out,
            "usage: scaleprof dump [--json] [--header-only] FILE...\n"
            "\n"
            "Print scaleprof trace files: the header (host, pid, rank, clocks, loss\n"
            "counters), then every event, one per line, in the order the reader streams\n"
            "them (each thread's events in order; threads interleave by chunk).\n"
            "\n"
            "  --json         JSON lines: a {\"type\":\"header\",...} object per file, then\n"
            "                 one object per event with \"type\", \"t\" (ns), \"tid\" and every\n"
            "                 field by name; strings resolved; enum fields also as NAME_name\n"
            "  --header-only  print the headers only\n"
            SP_COLOR_HELP
            "  -h, --help     this text\n"
            "\n"
            "Damage (truncated or corrupt frames) is described on stderr; the intact\n"
            "events are still printed.  Exit status 1 when a FILE is not a readable trace.\n");
    // clang-format on
}

struct dump_ctx {
    const char *path;
    const struct dump_opts *o;
};

static int dump_open(void *ctx, struct sp_reader *r)
{
    const struct dump_ctx *d = ctx;
    const struct sp_file_info *info = sp_reader_info(r);
    sp_dump_header(stdout, d->path, info, d->o->json);
    if (d->o->header_only) {
        fflush(stdout);
        sp_dump_damage(d->path, r);
        return 1; /* no event wanted: stop before the first */
    }
    return 0;
}

static int dump_event(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    const struct dump_ctx *d = ctx;
    sp_dump_event(stdout, r, ev, d->o->json);
    return 0;
}

static void dump_close(void *ctx, struct sp_reader *r)
{
    const struct dump_ctx *d = ctx;
    if (!d->o->json && !d->o->header_only)
        sp_dump_totals(stdout, sp_reader_stats(r));
    fflush(stdout);
    sp_dump_damage(d->path, r);
}

static int dump_file(const char *path, const struct dump_opts *o)
{
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "scaleprof dump: %s is a directory: dump reads trace files (%s/<host>/<pid>.sprof); "
                        "scaleprof report reads a directory\n",
                path, path);
        return 1;
    }
    size_t len = strlen(path), sl = strlen(SP_SUMMARY_SUFFIX);
    if (len >= sl && !strcmp(path + len - sl, SP_SUMMARY_SUFFIX)) {
        fprintf(stderr, "scaleprof dump: %s is a summary (scaleprof reduce), which holds no events: dump the "
                        "trace files it was made from\n",
                path);
        return 1;
    }
    struct sp_pass pass = {.tool = {.any = dump_event}, .open = dump_open, .close = dump_close};
    struct dump_ctx d = {path, o};
    int err = 0;
    sp_trace_feed(path, &pass, &d, &err);
    if (err) {
        fprintf(stderr, "scaleprof dump: %s: %s%s%s\n", path, sp_strerror(err), err == SP_E_IO ? ": " : "",
                err == SP_E_IO ? strerror(errno) : "");
        return 1;
    }
    return 0;
}

int cmd_dump(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'J'},
        {"header-only", no_argument, NULL, 'H'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct dump_opts o = {0};
    struct sp_opts p;
    int c;
    sp_opts_init(&p, "dump", opts, NULL);
    while ((c = sp_opts_next(&p, argc, argv, "h")) != -1) {
        switch (c) {
        case 'J': o.json = 1; break;
        case 'H': o.header_only = 1; break;
        case 'h': usage(stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    int first = optind;
    if (first >= argc) {
        usage(stderr);
        return SP_EXIT_USAGE;
    }
    static char buffer[OUT_BUFFER];
    setvbuf(stdout, buffer, _IOFBF, sizeof buffer);
    int status = 0;
    for (int i = first; i < argc; i++)
        status |= dump_file(argv[i], &o);
    return status;
}
