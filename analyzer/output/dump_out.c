/*
 * dump_out.c - `scaleprof dump`'s renderers: a trace file's header and its
 * events, as text or as JSON lines, and the damage the reader skipped.
 *
 * Every field the schema defines is printed by name (the names come from
 * the schema tables, so a new field shows up here without touching this
 * file), strings are resolved to their text, and enum values get their
 * symbolic name beside the number.  Header text is printed as recorded,
 * with control bytes escaped.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "dump_out.h"
#include "json.h"

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
    sp_json_put_string(out, path);
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
    sp_json_put_string(out, flags);
    // clang-format off
    const struct {
        const char *key, *val;
    } texts[] = {{"host", in->host}, {"exe", in->exe}, {"argv", in->argv},
                 {"source", in->source}, {"cuda_devices", in->cuda_devices},
                 {"run", in->run}, {"clock", in->clock[0] ? in->clock : "monotonic"}, {"clock_calibration", in->clock_cal}};
    // clang-format on
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        fprintf(out, ",\"%s\":", texts[i].key);
        sp_json_put_string(out, texts[i].val);
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
            sp_json_put_string(out, sp_reader_string(r, v));
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
                sp_json_put_string(out, sp_reader_string(r, v)); /* quoted, escaped */
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

void sp_dump_header(FILE *out, const char *path, const struct sp_file_info *in, int json)
{
    if (json)
        header_json(out, path, in);
    else
        header_text(out, path, in);
}

void sp_dump_event(FILE *out, const struct sp_reader *r, const struct sp_event *ev, int json)
{
    if (json)
        event_json(out, r, ev);
    else
        event_text(out, r, ev);
}

void sp_dump_totals(FILE *out, const struct sp_reader_stats *st)
{
    // clang-format off
    fprintf(out, "# %" PRIu64 " events from %" PRIu64 " frames and %" PRIu64
                 " chunks left in slots; %" PRIu64 " damaged frames, %" PRIu64 " bytes skipped\n",
            st->events, st->frames, st->slots_recovered, st->frames_bad, st->bytes_skipped);
    // clang-format on
}

void sp_dump_damage(const char *path, const struct sp_reader *r)
{
    const char *diag = sp_reader_diag(r);
    for (const char *line = diag; *line;) {
        const char *nl = strchr(line, '\n');
        int len = nl ? (int)(nl - line) : (int)strlen(line);
        fprintf(stderr, "scaleprof dump: %s: %.*s\n", path, len, line);
        line += len + (nl ? 1 : 0);
    }
}
