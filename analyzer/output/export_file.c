/*
 * export_file.c - where `scaleprof export` writes (export_trace.h): FILE,
 * through zlib when its name ends in .gz, or stdout for "-"; a note before
 * a timeline too large for a viewer, and after it the lines that say what
 * went in.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <zlib.h>

#include "export_trace.h"

#define BIG_OUTPUT 1e9  /* past this, say how to shrink it */
#define GZ_RATIO 12.0   /* the JSON compresses about this much at level 1 */
#define GZ_RATIO_PB 5.5 /* the protobuf (names interned already): 1.2 GB to 214 MB at 1024 ranks */
#define OUT_BUFFER (1 << 20)

/* ---- the output: a FILE, through zlib when gzip'd ---- */

static ssize_t gz_write(void *cookie, const char *buf, size_t n)
{
    int w = gzwrite((gzFile)cookie, buf, (unsigned)n);
    return w > 0 ? w : -1;
}

static int gz_close(void *cookie)
{
    return gzclose((gzFile)cookie) == Z_OK ? 0 : -1;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t a = strlen(s), b = strlen(suffix);
    return a >= b && !strcmp(s + a - b, suffix);
}

static FILE *open_output(const char *path, int *gz)
{
    *gz = sp_export_path_is_gz(path);
    if (!strcmp(path, "-")) return stdout;
    if (!*gz) return fopen(path, "w");
    gzFile z = gzopen(path, "wb1"); /* level 1: most of the size off at a fraction of the time */
    if (!z) return NULL;
    cookie_io_functions_t io = {.write = gz_write, .close = gz_close};
    FILE *f = fopencookie(z, "w", io);
    if (!f) gzclose(z);
    return f;
}

static void warn_size(const char *dir, double bytes, int gz, int json)
{
    double out = gz ? bytes / (json ? GZ_RATIO : GZ_RATIO_PB) : bytes;
    if (bytes < BIG_OUTPUT && out < BIG_OUTPUT) return;
    fprintf(stderr,
            "scaleprof export: note: the timeline will be about %.1f GB%s%s; viewers load up to a "
            "few GB "
            "at best. --steps A:B (a few steps) and --ranks LIST (the ranks of interest) make it "
            "smaller, "
            "e.g. scaleprof export %s --steps 10:12 --ranks 0-7 -o small.%s\n",
            bytes / 1e9, gz ? (json ? " of JSON" : " of protobuf") : "",
            gz ? " before compression" : "", dir, json ? "json.gz" : "pftrace");
}

int sp_export_path_is_gz(const char *path)
{
    return ends_with(path, ".gz");
}

int sp_export_path_is_json(const char *path)
{
    return ends_with(path, ".json") || ends_with(path, ".json.gz");
}

int sp_export_write(const struct sp_model *m, const struct sp_export_opts *o, const char *dir, const char *path,
                    int json, struct sp_export_done *d)
{
    int gz;
    if (json || o->detail == SP_EXPORT_FULL)
        warn_size(dir, json ? sp_export_estimate(m, o) : sp_export_perfetto_estimate(m, o),
                  sp_export_path_is_gz(path), json);
    FILE *f = open_output(path, &gz);
    if (!f) {
        fprintf(stderr, "scaleprof export: %s: %s\n", path, strerror(errno));
        return -1;
    }
    setvbuf(f, NULL, _IOFBF, OUT_BUFFER);
    memset(d, 0, sizeof *d);
    int wrc = json ? sp_export_trace(m, o, f, &d->st) : sp_export_perfetto(m, o, f, &d->st);
    int crc = f == stdout ? fflush(f) : fclose(f);
    if (wrc < 0 || crc != 0) {
        d->failed = 1;
        d->err = errno;
        if (f != stdout) unlink(path);
    }
    return 0;
}

int sp_export_say(const struct sp_model *m, const struct sp_export_opts *o, const char *path, int json,
                  const struct sp_export_done *d)
{
    const struct sp_export_stats *st = &d->st;
    for (int i = 0; i < m->nwarnings; i++)
        fprintf(stderr, "scaleprof export: warning: %s\n", m->warnings[i]);
    if (d->failed) {
        fprintf(stderr, "scaleprof export: %s: could not be written (%s)\n", path, strerror(d->err));
        return 1;
    }
    if (st->dropped)
        fprintf(stderr, "scaleprof export: warning: %llu events too large to encode were left out\n",
                (unsigned long long)st->dropped);
    if (st->summary)
        fprintf(stderr,
                "scaleprof export: %s: summary timeline (%d ranks x %d steps%s): every rank's "
                "steps and categories, %d rank%s named by the findings in full; --full for "
                "everything, --ranks/--steps for a part\n",
                path, st->ranks, m->steps_total,
                o->detail == SP_EXPORT_SUMMARY ? ", --summary" : " is past what the viewer holds in full",
                st->detailed, st->detailed == 1 ? "" : "s");
    fprintf(stderr,
            "scaleprof export: %s: %d rank%s, %llu trace events, %llu timeline entries, %llu "
            "arrows%s; open it in ui.perfetto.dev%s\n",
            path, st->ranks, st->ranks == 1 ? "" : "s", (unsigned long long)st->events,
            (unsigned long long)st->slices, (unsigned long long)st->flows,
            st->whatif_ok ? ", with the what-if replay" : "", json ? " or chrome://tracing" : "");
    return 0;
}
