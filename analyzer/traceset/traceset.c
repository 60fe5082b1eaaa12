/*
 * traceset.c - finding a job's trace files and feeding one to a pass.
 *
 * The directory walk remembers every directory it entered by (device,
 * inode): a link to a parent, or two links to each other, is entered once
 * and the walk ends.  Files are taken by name (*.sprof) and kind (regular
 * after following links); the reader itself decides whether one is a
 * trace.
 *
 * The feed loop (inline, in traceset.h) is the only sp_reader_next loop of
 * the analyzer: the pass
 * decides the types read and, in its open callback, the fields; events go
 * to its sp_tool by type.  Every SP_PASS_EVERY events the pass may act on
 * what it has seen (pass 2 reduces the steps no thread can still add to;
 * pass 1 stops reading kernel names once it no longer needs them).
 */
#include "grow.h"
#include "traceset.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* ---- finding files ---- */

struct walk {
    char **paths;
    size_t n, cap;
    struct {
        dev_t dev;
        ino_t ino;
    } * seen;
    size_t nseen, capseen;
};

static int push(void **v, size_t *n, size_t *cap, size_t elt)
{
    void *p = sp_grow(*v, *n, cap, elt, 64);
    if (!p)
        return -1;
    *v = p;
    return 0;
}

/* Whether the directory was entered before; remembers it otherwise. */
static int entered(struct walk *w, const struct stat *st)
{
    for (size_t i = 0; i < w->nseen; i++)
        if (w->seen[i].dev == st->st_dev && w->seen[i].ino == st->st_ino)
            return 1;
    if (push((void **)&w->seen, &w->nseen, &w->capseen, sizeof *w->seen) < 0)
        return 1;
    w->seen[w->nseen].dev = st->st_dev;
    w->seen[w->nseen].ino = st->st_ino;
    w->nseen++;
    return 0;
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

static void walk_dir(struct walk *w, const char *dir, int depth)
{
    if (depth > SP_TRACE_MAX_DEPTH)
        return;
    DIR *d = opendir(dir);
    if (!d) {
        if (errno == ENOMEM)
            sp_alloc_lost();
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p;
        if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
            continue;
        struct stat st;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (!entered(w, &st))
                walk_dir(w, p, depth + 1);
            free(p);
        } else if (S_ISREG(st.st_mode) && has_suffix(e->d_name, ".sprof") &&
                   push((void **)&w->paths, &w->n, &w->cap, sizeof *w->paths) == 0) {
            w->paths[w->n++] = p;
        } else {
            free(p);
        }
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

int sp_trace_find(const char *dir, char ***paths, const char **why)
{
    *paths = NULL;
    struct stat st;
    if (stat(dir, &st) != 0) {
        *why = errno == ENOENT ? "no such file or directory" : strerror(errno);
        return SP_E_IO;
    }
    if (!S_ISDIR(st.st_mode)) {
        *why = "not a directory (give the directory that holds the traces)";
        return SP_E_ARG;
    }
    struct walk w = {0};
    entered(&w, &st);
    walk_dir(&w, dir, 0);
    free(w.seen);
    if (w.n)
        qsort(w.paths, w.n, sizeof *w.paths, cmp_str);
    *paths = w.paths;
    return (int)w.n;
}

void sp_trace_paths_free(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
    free(paths);
}

/* ---- times outside the trace's span ---- */

#define SP_TIME_SLACK_NS (24ull * 3600 * 1000000000ull)      /* a day */
#define SP_TIME_OPEN_NS (366ull * 24 * 3600 * 1000000000ull) /* a year: a trace never closed */

void sp_trace_window(const struct sp_reader *r, uint64_t *lo, uint64_t *span)
{
    const struct sp_file_header *h = &sp_reader_info(r)->hdr;
    uint64_t start = h->start_mono, end = h->end_mono;
    if (!start && !end) { /* no anchor at all: every time is taken */
        *lo = 0;
        *span = UINT64_MAX;
        return;
    }
    uint64_t top = end > start ? end : (start > UINT64_MAX - SP_TIME_OPEN_NS ? UINT64_MAX : start + SP_TIME_OPEN_NS);
    *lo = start > SP_TIME_SLACK_NS ? start - SP_TIME_SLACK_NS : 0;
    uint64_t hi = top > UINT64_MAX - SP_TIME_SLACK_NS ? UINT64_MAX : top + SP_TIME_SLACK_NS;
    *span = hi - *lo;
}

void sp_trace_note_bad_times(struct sp_reader *r, uint64_t n, uint64_t t, uint64_t lo, uint64_t span)
{
    char line[256];
    snprintf(line, sizeof line,
             "%llu event%s with a time far outside the trace's own span (the first at %llu ns; its events "
             "may lie from %llu to %llu ns), left out as damage",
             (unsigned long long)n, n == 1 ? "" : "s", (unsigned long long)t, (unsigned long long)lo,
             (unsigned long long)(lo + span));
    sp_reader_add_diag(r, line);
}
