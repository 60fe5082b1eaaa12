/*
 * builtin-dump.c - `scaleprof dump`: print trace files as they are, header
 * first, then one event per line, as text or as JSON lines.
 *
 * It is the format's window for people and scripts: every field the schema
 * defines is printed by name (the names come from the schema tables, so a
 * new field shows up here without touching this file), strings are
 * resolved to their text, and enum values get their symbolic name beside
 * the number.  Damage the reader skipped is reported on stderr, so stdout
 * stays parseable.  Exit status: 0, 1 when a file could not be read as a
 * trace, 2 for a usage error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "model_summary.h"
#include "builtin.h"
#include "json.h"
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

/* ---- JSON strings ---------------------------------------------------------- */

/* s as a JSON string, always valid UTF-8 (json.h). */
static void json_string(FILE *out, const char *s)
{
    sp_json_put_string(out, s);
}

/* ---- header ------------------------------------------------------------------ */

static void flag_names(uint32_t flags, char *buf, size_t cap)
{
    static const struct {
        uint32_t bit;
        const char *name;
    } names[] = {{SP_FLAG_CLOSED, "closed"},
                 {SP_FLAG_IMPORTED, "imported"},
                 {SP_FLAG_NO_FILE_IO, "no_file_io"},
                 {SP_FLAG_NO_CPU, "no_cpu"}};
    buf[0] = 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (flags & names[i].bit)
            snprintf(buf + strlen(buf), cap - strlen(buf), "%s%s", buf[0] ? "," : "",
                     names[i].name);
}

static void header_json(FILE *out, const char *path, const struct sp_file_info *in)
{
    const struct sp_file_header *h = &in->hdr;
    char flags[128];
    flag_names(h->flags, flags, sizeof flags);
    fputs("{\"type\":\"header\",\"file\":", out);
    json_string(out, path);
    fprintf(out,
            ",\"version\":%" PRIu32 ",\"pid\":%" PRId32 ",\"ppid\":%" PRId32 ",\"rank\":%" PRId32
            ",\"local_rank\":%" PRId32 ",\"world_size\":%" PRId32 ",\"local_world_size\":%" PRId32
            ",\"start_mono\":%" PRIu64 ",\"start_real\":%" PRIu64 ",\"end_mono\":%" PRIu64
            ",\"end_real\":%" PRIu64 ",\"events_dropped\":%" PRIu64 ",\"strings_dropped\":%" PRIu64
            ",\"flags\":%" PRIu32 ",\"closed\":%s,\"slot_size\":%" PRIu32 ",\"slot_count\":%" PRIu32
            ",\"strings_used\":%" PRIu64 ",\"strings_size\":%" PRIu64,
            h->version, h->pid, h->ppid, h->rank, h->local_rank, h->world_size,
            h->local_world_size, h->start_mono, h->start_real, h->end_mono, h->end_real,
            h->events_dropped, h->strings_dropped, h->flags, in->closed ? "true" : "false",
            h->slot_size, h->slot_count, h->strings_used, h->strings_size);
    fputs(",\"flag_names\":", out);
    json_string(out, flags);
    // clang-format off
    const struct {
        const char *key, *val;
    } texts[] = {{"host", in->host}, {"exe", in->exe}, {"argv", in->argv},
                 {"source", in->source}, {"cuda_devices", in->cuda_devices},
                 {"run", in->run}, {"clock", in->clock[0] ? in->clock : "monotonic"}, {"clock_calibration", in->clock_cal}};
    // clang-format on
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        fprintf(out, ",\"%s\":", texts[i].key);
        json_string(out, texts[i].val);
    }
    fputs("}\n", out);
}

/* Header text as recorded, with control bytes (a terminal's escape
 * sequences in an argv) shown as \xNN, never passed to the terminal. */
static void text_escaped(FILE *out, const char *s)
{
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 32 || *p == 127)
            fprintf(out, "\\x%02x", *p);
        else
            fputc(*p, out);
}

static void header_text(FILE *out, const char *path, const struct sp_file_info *in)
{
    const struct sp_file_header *h = &in->hdr;
    char flags[128];
    flag_names(h->flags, flags, sizeof flags);
    fprintf(out, "# %s\n", path);
    fprintf(out, "#   version %" PRIu32 "  pid %" PRId32 "  ppid %" PRId32 "  host %s\n", h->version,
            h->pid, h->ppid, in->host[0] ? in->host : "?");
    // clang-format off
    fprintf(out, "#   rank %" PRId32 "  local_rank %" PRId32 "  world_size %" PRId32
                 "  local_world_size %" PRId32 "\n",
            h->rank, h->local_rank, h->world_size, h->local_world_size);
    // clang-format on
    if (in->exe[0] || in->argv[0]) {
        fputs("#   exe ", out);
        text_escaped(out, in->exe);
        fputs("  argv ", out);
        text_escaped(out, in->argv);
        fputc('\n', out);
    }
    if (in->source[0] || in->cuda_devices[0] || in->run[0]) {
        fputs("#   source ", out);
        text_escaped(out, in->source);
        fputs("  cuda_devices ", out);
        text_escaped(out, in->cuda_devices);
        if (in->run[0]) {
            fputs("  run ", out);
            text_escaped(out, in->run);
        }
        fputc('\n', out);
    }
    // clang-format off
    fprintf(out, "#   start mono %" PRIu64 " real %" PRIu64 "  end mono %" PRIu64 " real %" PRIu64
                 "%s\n",
            h->start_mono, h->start_real, h->end_mono, h->end_real,
            in->closed ? "" : "  (never closed: the process died or still runs)");
    // clang-format on
    /* Times are CLOCK_MONOTONIC ns whichever clock was read; writers
     * before the clock TLV read clock_gettime. */
    fprintf(out, "#   clock %s%s%s\n", in->clock[0] ? in->clock : "monotonic",
            in->clock_cal[0] ? "; " : "", in->clock_cal);
    fprintf(out, "#   events_dropped %" PRIu64 "  strings_dropped %" PRIu64 "  flags %s\n",
            h->events_dropped, h->strings_dropped, flags[0] ? flags : "none");
    // clang-format off
    fprintf(out, "#   slots %" PRIu32 " x %" PRIu32 " bytes  strings %" PRIu64 " of %" PRIu64
                 " bytes\n",
            h->slot_count, h->slot_size, h->strings_used, h->strings_size);
    // clang-format on
}

/* ---- events ----------------------------------------------------------------------- */

static uint64_t field_u(const struct sp_event *ev, const struct sp_field_desc *f)
{
    uint64_t v;
    memcpy(&v, (const char *)ev + f->offset, sizeof v);
    return v;
}

static void event_json(FILE *out, const struct sp_reader *r, const struct sp_event *ev)
{
    int n;
    const struct sp_field_desc *f = sp_event_fields(ev->type, &n);
    fprintf(out, "{\"type\":\"%s\",\"t\":%" PRIu64 ",\"tid\":%" PRIu32, sp_event_name(ev->type),
            ev->t, ev->tid);
    for (int i = 0; i < n; i++) {
        uint64_t v = field_u(ev, &f[i]);
        fprintf(out, ",\"%s\":", f[i].name);
        if (f[i].kind == SP_FK_STR) {
            json_string(out, sp_reader_string(r, v));
        } else if (f[i].kind == SP_FK_S) {
            fprintf(out, "%" PRId64, (int64_t)v);
        } else {
            fprintf(out, "%" PRIu64, v);
            const char *name = sp_enum_name(ev->type, f[i].name, v);
            if (name)
                fprintf(out, ",\"%s_name\":\"%s\"", f[i].name, name);
        }
    }
    fputs("}\n", out);
}

static void event_text(FILE *out, const struct sp_reader *r, const struct sp_event *ev)
{
    int n;
    const struct sp_field_desc *f = sp_event_fields(ev->type, &n);
    fprintf(out, "%" PRIu64 " %" PRIu32 " %-7s", ev->t, ev->tid, sp_event_name(ev->type));
    for (int i = 0; i < n; i++) {
        uint64_t v = field_u(ev, &f[i]);
        if (f[i].kind == SP_FK_STR) {
            if (v) {
                fprintf(out, " %s=", f[i].name);
                json_string(out, sp_reader_string(r, v)); /* quoted, escaped */
            }
        } else if (f[i].kind == SP_FK_S) {
            fprintf(out, " %s=%" PRId64, f[i].name, (int64_t)v);
        } else {
            const char *name = sp_enum_name(ev->type, f[i].name, v);
            if (name)
                fprintf(out, " %s=%s", f[i].name, name);
            else
                fprintf(out, " %s=%" PRIu64, f[i].name, v);
        }
    }
    fputc('\n', out);
}

/* ---- files ------------------------------------------------------------------------ */

static void report_damage(const char *path, const struct sp_reader *r)
{
    const char *diag = sp_reader_diag(r);
    for (const char *line = diag; *line;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "scaleprof dump: %s: %.*s\n", path, len, line);
        line += len + (nl ? 1 : 0);
    }
}

struct dump_ctx {
    const char *path;
    const struct dump_opts *o;
};

static int dump_open(void *ctx, struct sp_reader *r)
{
    const struct dump_ctx *d = ctx;
    const struct sp_file_info *info = sp_reader_info(r);
    if (d->o->json)
        header_json(stdout, d->path, info);
    else
        header_text(stdout, d->path, info);
    if (d->o->header_only) {
        fflush(stdout);
        report_damage(d->path, r);
        return 1; /* no event wanted: stop before the first */
    }
    return 0;
}

static int dump_event(void *ctx, const struct sp_reader *r, const struct sp_event *ev)
{
    const struct dump_ctx *d = ctx;
    if (d->o->json)
        event_json(stdout, r, ev);
    else
        event_text(stdout, r, ev);
    return 0;
}

static void dump_close(void *ctx, struct sp_reader *r)
{
    const struct dump_ctx *d = ctx;
    if (!d->o->json && !d->o->header_only) {
        const struct sp_reader_stats *st = sp_reader_stats(r);
        printf("# %" PRIu64 " events from %" PRIu64 " frames and %" PRIu64
               " chunks left in slots; %" PRIu64 " damaged frames, %" PRIu64 " bytes skipped\n",
               st->events, st->frames, st->slots_recovered, st->frames_bad, st->bytes_skipped);
    }
    fflush(stdout);
    report_damage(d->path, r);
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
