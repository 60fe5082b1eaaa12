/*
 * reduce.c - one process's part of `scaleprof reduce` (reduce.h): read
 * this host's traces, meet the other parts once through the summary
 * directory, and write this part's summary (model_summary.h).
 *
 * Which traces are a part's own: DIR's subdirectories (one per host, as
 * the recorder writes them), sorted by name; part I of N takes the J-th
 * for every J = I mod N, and traces directly in DIR go to part 0.  With
 * own_all, DIR is this host's alone (a local disk) and all of it is read.
 *
 * Pass 2 needs what only the whole job gives (step boundaries agreed by
 * every rank, collective arrivals, host clock offsets), so the parts meet
 * once, through SUMMARY (a directory every host sees): each writes its
 * pass-1 records to SUMMARY/.parts/I.p1, waits until all N are there,
 * reads them (kilobytes per rank-step), runs the job-wide passes, and
 * classifies its own ranks' events.  No process talks to another and no
 * service runs: the launcher starts them, a shared directory joins them.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>

#include "ended.h"
#include "model.h"
#include "model_summary.h"
#include "reduce.h"
#include "traceset.h"

#define POLL_NS 50000000L /* 50 ms between looks at the shared directory */

/* What tells this job's parts from a former reduce's left in SUMMARY. */
static void job_token(char *out, size_t len, int parts, const char *dir)
{
    static const char *const ids[] = {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "SLURM_JOB_ID",
                                      "SLURM_STEP_ID", "TORCHELASTIC_RUN_ID"};
    size_t n = (size_t)snprintf(out, len, "%d:%s", parts, dir);
    for (size_t i = 0; i < sizeof ids / sizeof ids[0] && n < len; i++) {
        const char *v = getenv(ids[i]);
        if (v)
            n += (size_t)snprintf(out + n, len - n, ":%s", v);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Appends p to (*v)[*n]; out of memory, frees p and returns -1. */
static int push_path(char ***v, int *n, char *p)
{
    char **q = realloc(*v, ((size_t)*n + 1) * sizeof *q);
    if (!q) {
        free(p);
        return -1;
    }
    *v = q;
    (*v)[(*n)++] = p;
    return 0;
}

/* The trace paths this part reads: the host subdirectories of dir it
 * owns, in name order, and (part 0) the traces directly in dir. */
static int own_paths(const char *dir, int part, int parts, int own_all, char ***out, int *nhostdirs)
{
    *out = NULL;
    *nhostdirs = 0;
    if (own_all) {
        const char *why = "";
        int n = sp_trace_find(dir, out, &why);
        if (n < 0)
            fprintf(stderr, "scaleprof reduce: %s: %s\n", dir, why);
        *nhostdirs = n > 0;
        return n;
    }
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "scaleprof reduce: %s: %s\n", dir, strerror(errno));
        return -1;
    }
    char **subs = NULL, **paths = NULL;
    int nsubs = 0, n = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        char *p;
        struct stat st;
        if (asprintf(&p, "%s/%s", dir, e->d_name) < 0)
            break;
        if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
            if (push_path(&subs, &nsubs, p) < 0)
                break;
        } else if (part == 0 && S_ISREG(st.st_mode) && strlen(p) > 6 && !strcmp(p + strlen(p) - 6, ".sprof")) {
            if (push_path(&paths, &n, p) < 0)
                break;
        } else {
            free(p);
        }
    }
    closedir(d);
    if (nsubs)
        qsort(subs, (size_t)nsubs, sizeof *subs, cmp_str);
    for (int j = 0; j < nsubs; j++) {
        if (j % parts == part) {
            char **v;
            const char *why = "";
            int k = sp_trace_find(subs[j], &v, &why);
            if (k > 0) {
                char **q = realloc(paths, ((size_t)n + (size_t)k) * sizeof *q);
                if (q) {
                    paths = q;
                    memcpy(paths + n, v, (size_t)k * sizeof *v);
                    n += k;
                    free(v);
                } else {
                    sp_trace_paths_free(v, k);
                }
            } else {
                free(v);
            }
            ++*nhostdirs;
        }
        free(subs[j]);
    }
    free(subs);
    *out = paths;
    return n;
}

/* Writes b, compressed, to path through a temporary name, so a reader
 * sees all or none; *written gets the bytes on disk. */
static int write_atomic(const char *path, const struct sp_sbuf *raw, size_t *written)
{
    char *tmp;
    struct sp_sbuf packed, *b = &packed;
    if (sp_summary_pack(raw, &packed) < 0)
        return -1;
    if (asprintf(&tmp, "%s.tmp.%d", path, (int)getpid()) < 0) {
        sp_sbuf_free(&packed);
        return -1;
    }
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(b->p, 1, b->n, f) == b->n;
    if (f && fclose(f) != 0)
        ok = 0;
    if (ok && rename(tmp, path) != 0)
        ok = 0;
    if (!ok)
        unlink(tmp);
    free(tmp);
    if (written)
        *written = b->n;
    sp_sbuf_free(&packed);
    return ok ? 0 : -1;
}

static int make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || errno == EEXIST)
        return 0;
    fprintf(stderr, "scaleprof reduce: %s: %s\n", path, strerror(errno));
    return -1;
}

static void print_warnings(const struct sp_model *m)
{
    for (int i = 0; i < m->nwarnings; i++)
        fprintf(stderr, "scaleprof reduce: warning: %s\n", m->warnings[i]);
}

/* Waits until every part's pass-1 record of this job is in parts_dir and
 * reads them all into m (own[] marks this part's files).  0, or -1 when
 * one did not come within wait_s or could not be read. */
static int gather(struct sp_model *m, const char *parts_dir, int parts, const char *token, int wait_s,
                  uint8_t **own, int part)
{
    unsigned char **blobs = calloc((size_t)parts, sizeof *blobs);
    size_t *lens = calloc((size_t)parts, sizeof *lens);
    if (!blobs || !lens) {
        free(blobs);
        free(lens);
        return -1;
    }
    struct timespec t0, now, nap = {0, POLL_NS};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int have = 0, rc = 0;
    /* in order, from the first part not yet seen: each process opens each
     * part's file about once, not once per look (thousands of hosts poll
     * one shared directory) */
    while (have < parts) {
        for (int i = have; i < parts; i++) {
            char *p;
            if (asprintf(&p, "%s/%d.p1", parts_dir, i) < 0)
                break;
            unsigned char *b;
            size_t n;
            int found = sp_summary_slurp(p, &b, &n) == 0;
            if (found) {
                struct sp_model probe;
                memset(&probe, 0, sizeof probe);
                probe.opts = m->opts;
                /* a part of another job (left from before): wait for this job's */
                if (sp_summary_read(&probe, p, b, n, token, NULL) == -2) {
                    free(b);
                    found = 0;
                } else {
                    blobs[i] = b;
                    lens[i] = n;
                    have++;
                }
                sp_model_free(&probe);
            }
            free(p);
            if (!found)
                break;
        }
        if (have == parts)
            break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= wait_s) {
            fprintf(stderr, "scaleprof reduce: part %d of %d not in %s after %d s (is every process started, and "
                            "%s on a filesystem all of them see?)\n",
                    have, parts, parts_dir, wait_s, parts_dir);
            rc = -1;
            break;
        }
        nanosleep(&nap, NULL);
    }
    for (int i = 0; i < parts && rc == 0; i++) {
        char *name;
        if (asprintf(&name, "%s/%d.p1", parts_dir, i) < 0) {
            rc = -1;
            break;
        }
        int from = m->nfrecs;
        if (sp_summary_read(m, name, blobs[i], lens[i], token, own) < 0)
            rc = -1;
        for (int k = from; own && *own && k < m->nfrecs; k++)
            (*own)[k] = i == part;
        free(name);
    }
    for (int i = 0; i < parts; i++)
        free(blobs[i]);
    free(blobs);
    free(lens);
    return rc;
}

/* Waits for every part's summary, so that no part's pass-1 record is
 * removed while another part still reads it. */
static void wait_summaries(const char *out, int parts, int wait_s)
{
    struct timespec t0, now, nap = {0, POLL_NS};
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int i = 0; i < parts;) {
        char *p;
        if (asprintf(&p, "%s/part-%06d%s", out, i, SP_SUMMARY_SUFFIX) < 0)
            return;
        int there = access(p, F_OK) == 0;
        free(p);
        if (there) {
            i++;
            continue;
        }
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec >= wait_s)
            return;
        nanosleep(&nap, NULL);
    }
}

/* An empty model of dir with the verb's options, for a pass to fill. */
static void model_start(struct sp_model *m, const struct sp_model_opts *o, const char *dir)
{
    memset(m, 0, sizeof *m);
    m->opts = *o;
    m->dir = dir;
}

int sp_reduce_part(const struct sp_reduce_job *job)
{
    const char *dir = job->dir, *out = job->out;
    int part = job->part, parts = job->parts, own_all = job->own_all, wait_s = job->wait_s;
    const struct sp_model_opts o = *job->opts;

    char *parts_dir;
    if (make_dir(out) < 0 || asprintf(&parts_dir, "%s/.parts", out) < 0)
        return 1;
    if (make_dir(parts_dir) < 0) {
        free(parts_dir);
        return 1;
    }
    char token[1024];
    job_token(token, sizeof token, parts, dir);

    /* pass 1 over this part's own traces */
    char **paths;
    int nhostdirs;
    int n = own_paths(dir, part, parts, own_all, &paths, &nhostdirs);
    if (n < 0) {
        free(parts_dir);
        return 1;
    }
    struct sp_model mine;
    model_start(&mine, &o, dir);
    if (n > 0 && sp_summary_scan(&mine, paths, n) < 0) {
        print_warnings(&mine);
        sp_model_free(&mine);
        free(parts_dir);
        return 1;
    }
    if (n == 0)
        free(paths);
    struct sp_sbuf p1 = {0};
    sp_summary_put_header(&p1, &mine, token);
    sp_summary_put_frecs(&p1, &mine, NULL);
    sp_model_free(&mine);
    /* A summary of ours from before goes first: a part past the meeting
     * then knows that every summary it sees is of this reduce. */
    char *old;
    if (asprintf(&old, "%s/part-%06d%s", out, part, SP_SUMMARY_SUFFIX) >= 0) {
        unlink(old);
        free(old);
    }
    char *p1_path;
    if (asprintf(&p1_path, "%s/%d.p1", parts_dir, part) < 0 || write_atomic(p1_path, &p1, NULL) < 0) {
        fprintf(stderr, "scaleprof reduce: %s/%d.p1: could not be written (%s)\n", parts_dir, part, strerror(errno));
        sp_sbuf_free(&p1);
        free(parts_dir);
        return 1;
    }

    /* every part's records: the job-wide passes, then pass 2 on our ranks */
    struct sp_model m;
    model_start(&m, &o, dir);
    m.detected_by = "none";
    uint8_t *own = malloc(1);
    int rc = gather(&m, parts_dir, parts, token, wait_s, &own, part);
    if (rc == 0) {
        sp_summary_sort_frecs(&m, own);
        rc = m.nfrecs ? sp_summary_open(&m) : -1;
        if (!m.nfrecs)
            fprintf(stderr, "scaleprof reduce: no *.sprof trace files under %s\n", dir);
    }
    uint8_t *which = NULL;
    int nmine = 0;
    if (rc == 0) {
        which = calloc((size_t)m.nranks + 1, 1);
        for (int i = 0; which && i < m.nranks; i++) {
            const struct sp_rank *r = &m.ranks[i];
            which[i] = r->nfiles > 0;
            for (int f = 0; f < r->nfiles; f++)
                which[i] &= own[r->files[f] - m.frecs];
            nmine += which[i];
        }
        m.classify_only = which;
        if (!which || sp_model_run(&m, SP_STAGE_COLLECTIVES) < 0)
            rc = -1;
        else
            sp_model_run(&m, SP_STAGE_CLASSIFY); /* no step on our ranks: their summary says so */
    }
    if (rc < 0)
        print_warnings(&m);
    char *sum_path = NULL;
    struct sp_sbuf *s = &p1;
    size_t written = 0;
    if (rc == 0) {
        /* the records as pass 1 left them (the grouping since took the
         * calls and markers): this part's pass-1 record, then its ranks */
        sp_summary_put_ranks(s, &m, which);
        if (asprintf(&sum_path, "%s/part-%06d%s", out, part, SP_SUMMARY_SUFFIX) < 0 ||
            write_atomic(sum_path, s, &written) < 0) {
            fprintf(stderr, "scaleprof reduce: %s: could not be written (%s)\n", sum_path ? sum_path : out,
                    strerror(errno));
            rc = -1;
        }
    }
    if (rc == 0 && sp_ended_copy_records(dir, out) > 0) /* how the ranks ended, as scaleprof run wrote it */
        fprintf(stderr, "scaleprof reduce: warning: %s: the launcher's exit records (%s.*) could not all be "
                        "copied beside the summaries\n",
                dir, SP_ENDED_FILE);
    if (rc == 0) {
        int steps = m.step_hi - m.step_lo;
        printf("scaleprof reduce: part %d of %d: %d host director%s, %d trace file(s), %d rank(s), %d step(s) "
               "in view -> %s (%.1f KiB)\n",
               part, parts, nhostdirs, nhostdirs == 1 ? "y" : "ies", n, nmine, steps, sum_path, written / 1024.0);
        fflush(stdout);
        wait_summaries(out, parts, wait_s);
        unlink(p1_path);
        rmdir(parts_dir); /* the last part's succeeds */
    }
    sp_sbuf_free(&p1);
    free(sum_path);
    free(p1_path);
    free(parts_dir);
    free(which);
    free(own);
    m.classify_only = NULL;
    sp_model_free(&m);
    return rc == 0 ? 0 : 1;
}
