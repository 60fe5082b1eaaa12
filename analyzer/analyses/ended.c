/*
 * ended.c - the ranks whose process did not end well, and what each was
 * doing last (see ended.h for where the facts come from).
 *
 * Last activity, from what pass 1 kept of a rank: its last NCCL call
 * (entered when the host call returned; completed when its kernel's end
 * was recorded), the last step marker it pushed, and when its trace's last
 * event was, against the end of the job's traces.  No file is read again:
 * run and report ask this on every job that failed.
 */
#include "ended.h"

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json.h"
#include "model_util.h"
#include "sprof.h"
#include "units.h"


struct record {
    int rank, pid, is_signal, code, stopped;
};

const char *sp_signal_name(int sig, char *buf, size_t len)
{
    const char *abbrev = sig > 0 ? sigabbrev_np(sig) : NULL;
    if (abbrev)
        snprintf(buf, len, "SIG%s", abbrev);
    else
        snprintf(buf, len, "signal %d", sig);
    return buf;
}

int sp_ended_record(const char *dir, int rank, int pid, int wait_status, int stopped)
{
    char host[256] = "unknown", path[4096];
    if (gethostname(host, sizeof host - 1) != 0)
        strcpy(host, "unknown");
    host[sizeof host - 1] = 0;
    for (char *p = host; *p; p++)
        if (*p == '/')
            *p = '_';
    snprintf(path, sizeof path, "%s/%s.%s", dir, SP_ENDED_FILE, host);
    FILE *f = fopen(path, "a");
    if (!f)
        return -1;
    if (WIFSIGNALED(wait_status))
        fprintf(f, "rank %d pid %d signal %d%s\n", rank, pid, WTERMSIG(wait_status), stopped ? " stopped" : "");
    else if (WIFEXITED(wait_status))
        fprintf(f, "rank %d pid %d exit %d%s\n", rank, pid, WEXITSTATUS(wait_status), stopped ? " stopped" : "");
    return fclose(f) == 0 ? 0 : -1;
}

/* Every line of every launcher's record under dir; *n of them. */
static struct record *read_records(const char *dir, int *n)
{
    struct record *v = NULL;
    int cap = 0;
    *n = 0;
    DIR *d = opendir(dir);
    if (!d)
        return NULL;
    struct dirent *de;
    size_t pl = strlen(SP_ENDED_FILE);
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, SP_ENDED_FILE, pl) || de->d_name[pl] != '.')
            continue;
        char path[4096], line[256], kind[16], extra[16];
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        while (fgets(line, sizeof line, f)) {
            struct record r = {0};
            extra[0] = 0;
            int got = sscanf(line, "rank %d pid %d %15s %d %15s", &r.rank, &r.pid, kind, &r.code, extra);
            if (got < 4 || r.pid <= 0 || (strcmp(kind, "signal") && strcmp(kind, "exit")))
                continue;
            r.is_signal = !strcmp(kind, "signal");
            r.stopped = got == 5 && !strcmp(extra, "stopped");
            if (*n == cap) {
                int nc = cap ? 2 * cap : 16;
                struct record *nv = realloc(v, (size_t)nc * sizeof *nv);
                if (!nv)
                    break;
                v = nv;
                cap = nc;
            }
            v[(*n)++] = r;
        }
        fclose(f);
    }
    closedir(d);
    return v;
}

/* The launcher's records under from copied into to (scaleprof reduce: the
 * summaries' directory then tells how each rank ended, as the traces'
 * does).  Each file is written whole under a temporary name and renamed,
 * so parts copying the same record at once leave one whole copy.
 * Returns the number of files that could not be copied. */
int sp_ended_copy_records(const char *from, const char *to)
{
    DIR *d = opendir(from);
    if (!d)
        return 0;
    int bad = 0;
    size_t pl = strlen(SP_ENDED_FILE);
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, SP_ENDED_FILE, pl) || de->d_name[pl] != '.')
            continue;
        char src[4096], dst[4096], tmp[4200];
        snprintf(src, sizeof src, "%s/%s", from, de->d_name);
        snprintf(dst, sizeof dst, "%s/%s", to, de->d_name);
        snprintf(tmp, sizeof tmp, "%s/.%s.%d", to, de->d_name, (int)getpid());
        FILE *in = fopen(src, "r"), *out = in ? fopen(tmp, "w") : NULL;
        char buf[4096];
        size_t got, total = 0;
        int ok = in && out;
        while (ok && (got = fread(buf, 1, sizeof buf, in)) > 0 && (total += got) <= (1u << 20))
            ok = fwrite(buf, 1, got, out) == got;
        if (total > (1u << 20)) /* not a launcher's record */
            ok = 0;
        if (in)
            fclose(in);
        if (out && fclose(out) != 0)
            ok = 0;
        if (ok && rename(tmp, dst) == 0)
            continue;
        if (out)
            unlink(tmp);
        bad++;
    }
    closedir(d);
    return bad;
}

static const struct record *record_of(const struct record *v, int n, int rank, int pid)
{
    const struct record *found = NULL;
    for (int i = 0; i < n; i++)
        if (v[i].pid == pid && (v[i].rank == rank || v[i].rank < 0))
            found = &v[i]; /* the latest line */
    return found;
}

static void last_activity(const struct sp_model *m, const struct sp_rank *r, int64_t trace_end,
                          char *out, size_t len)
{
    const struct sp_coll_call *last = NULL;
    for (size_t i = 0; i < r->ncalls; i++)
        if (!last || r->calls[i].host_t >= last->host_t)
            last = &r->calls[i];
    int64_t step = -1;
    for (size_t i = 0; i < r->nmarks; i++)
        step = r->marks[i].num >= 0 ? r->marks[i].num : step;
    size_t w = 0;
    out[0] = 0;
    if (last) {
        const char *op = sp_enum_name(SP_EV_NCCL, "op", last->op);
        int done = last->timing == SP_TIMING_GPU && last->end > 0;
        w += (size_t)snprintf(out, len, "%s #%llu on communicator %016llx, entered %.2f s before its trace ends%s",
                              op ? op : "a NCCL call", (unsigned long long)last->seq, (unsigned long long)last->comm,
                              (double)(trace_end - sp_model_global(m, r, last->host_t)) / NS_PER_S,
                              done ? " and completed" : ", its completion not recorded");
    }
    if (step >= 0 && w < len)
        w += (size_t)snprintf(out + w, len - w, "%sin step %lld (its last step marker)", w ? "; " : "",
                              (long long)step);
    if (!w)
        snprintf(out, len, "no NCCL call or step marker recorded");
}

static int cmp_ended(const void *a, const void *b)
{
    const struct sp_ended *x = a, *y = b;
    if (x->stopped != y->stopped)
        return x->stopped - y->stopped;
    if (x->stopped)
        return x->rank - y->rank;
    if (x->before_s != y->before_s)
        return x->before_s < y->before_s ? 1 : -1; /* the one that ended first */
    return x->rank - y->rank;
}

int sp_ended_analyze(const struct sp_model *m, struct sp_ended_set *out)
{
    memset(out, 0, sizeof *out);
    int nrec = 0;
    struct record *rec = read_records(m->dir, &nrec);
    out->recorded = nrec > 0;
    int64_t job_end = INT64_MIN;
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        for (int k = 0; k < r->nfiles; k++) {
            int64_t e = sp_model_global(m, r, r->files[k]->last_t);
            job_end = e > job_end ? e : job_end;
        }
    }
    out->v = calloc((size_t)m->nranks + 1, sizeof *out->v);
    if (!out->v) {
        free(rec);
        return -1;
    }
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!r->nfiles)
            continue;
        const struct sp_file_rec *f = r->files[r->nfiles - 1];
        const struct record *x = record_of(rec, nrec, r->rank, f->pid);
        int closed = (f->flags & SP_FLAG_CLOSED) != 0;
        struct sp_ended e = {.rank = r->rank, .pid = f->pid, .host = f->host, .closed = closed};
        if (x && (x->is_signal || x->code != 0)) {
            e.how = x->is_signal ? SP_ENDED_SIGNAL : SP_ENDED_EXIT;
            e.code = x->code;
            e.stopped = x->stopped;
        } else if (x) {
            continue; /* exited 0 */
        } else if (closed && f->exited && f->exit_status > 0) {
            e.how = SP_ENDED_EXIT;
            e.code = f->exit_status;
        } else if (!closed && !sp_model_file_open(f)) {
            e.how = SP_ENDED_UNCLOSED;
        } else {
            continue;
        }
        int64_t end = sp_model_global(m, r, f->last_t);
        e.before_s = (double)(job_end - end) / NS_PER_S;
        last_activity(m, r, end, e.last, sizeof e.last);
        out->v[out->n++] = e;
    }
    free(rec);
    qsort(out->v, (size_t)out->n, sizeof *out->v, cmp_ended);
    return 0;
}

void sp_ended_free(struct sp_ended_set *s)
{
    free(s->v);
    memset(s, 0, sizeof *s);
}

int sp_ended_failed(const struct sp_ended_set *s, int *out, int max)
{
    int n = 0;
    for (int i = 0; i < s->n && n < max; i++) {
        const struct sp_ended *e = &s->v[i];
        int sent = e->how == SP_ENDED_SIGNAL && (e->code == SIGKILL || e->code == SIGTERM || e->code == SIGINT);
        if (!e->stopped && e->how != SP_ENDED_UNCLOSED && !sent)
            out[n++] = e->rank;
    }
    return n;
}

static int same_end(const struct sp_ended *a, const struct sp_ended *b)
{
    return a->how == b->how && a->code == b->code && a->stopped == b->stopped;
}

void sp_ended_text(const struct sp_ended_set *s, void (*line)(const char *text, void *arg), void *arg)
{
    char text[2 * SP_ENDED_TEXT], how[256], list[400];
    char *grouped = calloc((size_t)s->n + 1, 1);
    if (!grouped)
        return;
    for (int i = 0; i < s->n; i++) {
        const struct sp_ended *e = &s->v[i];
        if (grouped[i] || e->stopped)
            continue;
        sp_ended_how_text(e, how, sizeof how);
        snprintf(text, sizeof text,
                 "rank %d (pid %d on %s) %s; its trace ends %.2f s before the job's traces; its last "
                 "recorded activity: %s",
                 e->rank, (int)e->pid, e->host, how, e->before_s, e->last);
        line(text, arg);
        size_t w = 0;
        int n = 0;
        for (int k = i + 1; k < s->n; k++)
            if (!grouped[k] && same_end(&s->v[k], e) && s->v[k].before_s < SP_ENDED_GROUP_S) {
                grouped[k] = 1;
                if (w < sizeof list)
                    w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", n ? ", " : "", s->v[k].rank);
                n++;
            }
        if (n) {
            snprintf(text, sizeof text, "rank%s %s: %s too, at the end of the traces (within %.0f s)", n == 1 ? "" : "s",
                     list, how, SP_ENDED_GROUP_S);
            line(text, arg);
        }
    }
    size_t w = 0;
    int n = 0;
    for (int k = 0; k < s->n; k++)
        if (s->v[k].stopped) {
            if (w < sizeof list)
                w += (size_t)snprintf(list + w, sizeof list - w, "%s%d", n ? ", " : "", s->v[k].rank);
            n++;
        }
    if (n) {
        snprintf(text, sizeof text, "rank%s %s: stopped by the launcher after that (SIGTERM, then SIGKILL)",
                 n == 1 ? "" : "s", list);
        line(text, arg);
    }
    free(grouped);
}

void sp_ended_how_text(const struct sp_ended *e, char *out, size_t len)
{
    char name[32];
    if (e->how == SP_ENDED_SIGNAL)
        snprintf(out, len, "%s by signal %d (%s)%s", e->stopped ? "stopped" : "killed", e->code,
                 sp_signal_name(e->code, name, sizeof name), e->stopped ? " from the launcher, after another rank failed" : "");
    else if (e->how == SP_ENDED_EXIT)
        snprintf(out, len, "exited with status %d%s", e->code, e->stopped ? " when the launcher stopped it" : "");
    else
        snprintf(out, len, "its trace ended without closing: killed or crashed (no launcher's record says how)");
}

void sp_ended_json(struct sp_json *j, const struct sp_ended_set *s)
{
    char name[32];
    sp_json_open(j, "ended", '[');
    for (int i = 0; i < s->n; i++) {
        const struct sp_ended *e = &s->v[i];
        sp_json_open(j, NULL, '{');
        sp_json_int(j, "rank", e->rank);
        sp_json_int(j, "pid", e->pid);
        sp_json_str(j, "host", e->host);
        sp_json_str(j, "how", e->how == SP_ENDED_SIGNAL ? "signal" : e->how == SP_ENDED_EXIT ? "exit"
                                                                                             : "unclosed");
        if (e->how == SP_ENDED_SIGNAL) {
            sp_json_int(j, "signal", e->code);
            sp_json_str(j, "signal_name", sp_signal_name(e->code, name, sizeof name));
        } else {
            sp_json_null(j, "signal");
            sp_json_null(j, "signal_name");
        }
        if (e->how == SP_ENDED_EXIT)
            sp_json_int(j, "exit_status", e->code);
        else
            sp_json_null(j, "exit_status");
        sp_json_bool(j, "stopped_by_launcher", e->stopped);
        sp_json_bool(j, "trace_closed", e->closed);
        sp_json_num(j, "ended_s_before", e->before_s);
        sp_json_str(j, "last", e->last);
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
}
