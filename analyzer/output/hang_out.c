/*
 * hang_out.c - `scaleprof hang`'s post-mortem as text and as JSON
 * (hang_out.h), over a finished hang analysis (analyses/hang.c) and the
 * ranks that did not end well (analyses/ended.c): the communicators, the
 * collective each stopped in with who entered it and who never did, what
 * each rank was doing last, and the desyncs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hang_out.h"
#include "json.h"
#include "text.h"
#include "units.h"

static void rank_list(const int *v, int n, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < n && used + 16 < len; i++) {
        int j = i;
        while (j + 1 < n && v[j + 1] == v[j] + 1)
            j++;
        int w = j > i + 1 ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", v[i], v[j])
                          : snprintf(out + used, len - used, "%s%d", used ? "," : "", v[i]);
        if (j == i + 1) w += snprintf(out + used + (size_t)w, len - used - (size_t)w, ",%d", v[j]);
        used += (size_t)w;
        i = j;
        if (used + 16 >= len && i + 1 < n) snprintf(out + used, len - used, ",...");
    }
}

/* The ranks that did not end well (ended.h), for the call of sp_hang_text
 * or sp_hang_json that is running (set on entry). */
static const struct sp_ended_set *hang_ended;

static void ranks_text(const int *v, int n, char *out, size_t len)
{
    char list[256];
    rank_list(v, n, list, sizeof list);
    snprintf(out, len, "%s %s", n == 1 ? "rank" : "ranks", list);
}

static const char *proc_state(int s)
{
    return s == SP_HANG_CLOSED ? "closed" : s == SP_HANG_OPEN ? "open"
                                                              : "killed";
}

static const char *proc_state_text(int s)
{
    return s == SP_HANG_CLOSED ? "exited: its trace was closed cleanly"
           : s == SP_HANG_OPEN
               ? "still running: a process with its pid on this host has the trace open"
               : "killed or crashed: its trace was never closed";
}

static void text_call(uint32_t op, uint64_t bytes, uint32_t dtype, char *out, size_t len)
{
    char b[32];
    sp_text_bytes(bytes, b, sizeof b);
    snprintf(out, len, "%s %s %s", sp_hang_op_name(op), b, sp_nccl_dtype_name(dtype));
}

static void text_rank(const struct sp_hang *h, const struct sp_hang_rank *x, int full, int cols)
{
    char line[SP_HANG_TEXT + 64];
    snprintf(line, sizeof line, "rank %d [%s] %s", x->rank, x->state, x->doing);
    printf("  ");
    sp_text_wrapped(line, 2, 6, cols);
    for (int p = 0; p < x->nprocs; p++) {
        const struct sp_hang_proc *pr = &x->procs[p];
        if (pr->helper && !full) continue;
        snprintf(line, sizeof line,
                 "%s %d: %s; last event %.2f s before the end of its trace, which ends %.2f s "
                 "before the job's",
                 pr->helper ? "helper process" : "process", (int)pr->pid,
                 proc_state_text(pr->state), (double)(pr->end_t - pr->last_t) / NS_PER_S,
                 (double)(h->end_t - pr->end_t) / NS_PER_S);
        printf("    ");
        sp_text_wrapped(line, 4, 6, cols);
        for (int t = 0; t < pr->nthreads; t++) {
            const struct sp_hang_thread *th = &pr->threads[t];
            if (!full && !th->main) continue;
            printf("      thread %u%s, last events (s before the end):\n", th->tid,
                   th->main ? " (made the NCCL calls)" : "");
            for (int e = full ? 0 : (th->n > 1 ? th->n - 1 : 0); e < th->n; e++)
                printf("        -%.3f  %s\n", (double)(h->end_t - th->ev[e].t) / NS_PER_S,
                       th->ev[e].what);
        }
        if (pr->threads_dropped)
            printf("      (%d more threads not followed)\n", pr->threads_dropped);
        if (!full) break;
    }
}

static void text_inst(const struct sp_model *m, const struct sp_hang *h,
                      const struct sp_hang_inst *x, int cols)
{
    char call[96], list[300], line[1024];
    text_call(x->op, x->bytes, x->dtype, call, sizeof call);
    if (x->stranded)
        printf("HUNG in %s #%llu on communicator %016llx (%u ranks): it can never complete, a "
               "member exited before entering it\n",
               sp_hang_op_name(x->op), (unsigned long long)x->seq, (unsigned long long)x->comm,
               x->nranks);
    else
        printf("HUNG in %s #%llu on communicator %016llx (%u ranks), for %.2f s\n",
               sp_hang_op_name(x->op), (unsigned long long)x->seq, (unsigned long long)x->comm,
               x->nranks, x->hung_s);
    if (x->stalled_rank >= 0) {
        const struct sp_ended *e = NULL;
        char how[256] = "";
        for (int i = 0; i < hang_ended->n; i++)
            if (hang_ended->v[i].rank == x->stalled_rank && !hang_ended->v[i].stopped)
                e = &hang_ended->v[i];
        if (e && e->how != SP_ENDED_UNCLOSED) {
            size_t w = (size_t)snprintf(how, sizeof how, " (its process: ");
            sp_ended_how_text(e, how + w, sizeof how - w);
            w = strlen(how);
            snprintf(how + w, sizeof how - w, ", the launcher recorded)");
        }
        snprintf(line, sizeof line,
                 "stopped making progress first: rank %d, whose trace (CPU samples included) ends %.2f s "
                 "before any other member's%s; its process was stopped (SIGSTOP), frozen or died there, "
                 "and the others wait for it: look at it before the network or NCCL",
                 x->stalled_rank, x->stalled_s, how);
        printf("  ");
        sp_text_wrapped(line, 2, 4, cols);
    }
    if (x->nentered) {
        ranks_text(x->entered, x->nentered, list, sizeof list);
        printf("  entered it, never completed: %s (%s)\n", list, call);
    }
    if (x->nmissing) {
        ranks_text(x->missing, x->nmissing, list, sizeof list);
        printf("  never entered it:            %s\n", list);
        for (int k = 0; k < x->nmissing; k++)
            for (int i = 0; i < hang_ended->n; i++) {
                const struct sp_ended *e = &hang_ended->v[i];
                char how[256];
                if (e->rank != x->missing[k] || e->stopped) continue;
                sp_ended_how_text(e, how, sizeof how);
                snprintf(line, sizeof line, "rank %d %s, its trace ending %.2f s before the job's", e->rank, how,
                         e->before_s);
                printf("    ");
                sp_text_wrapped(line, 4, 6, cols);
            }
    }
    if (x->nabsent) {
        ranks_text(x->absent, x->nabsent, list, sizeof list);
        printf("  left no trace:               %s (a crashed node or a lost file: named from the "
               "world size %d)\n",
               list, m->world_size);
    }
    if (x->absent_unnamed)
        printf("  left no trace:               %d member%s of the communicator (ranks unknown)\n",
               x->absent_unnamed, x->absent_unnamed == 1 ? "" : "s");
    if (x->inside && x->stalled_rank >= 0)
        printf("  every rank entered it: stuck inside the collective, waiting for rank %d (above)\n",
               x->stalled_rank);
    else if (x->inside)
        printf("  every rank entered it: stuck inside the collective (a peer's GPU, the network, "
               "or NCCL itself)\n");
    if (x->stranded)
        snprintf(line, sizeof line,
                 "a rank that never entered it had exited (below): it could never complete, "
                 "however short the others waited (%.2f s before the traces end; they were stopped, "
                 "or killed, while waiting)",
                 x->pending_s);
    else if (x->last_done)
        snprintf(line, sizeof line,
                 "last completed: #%llu, %.2f s before the end of the traces; no call entered "
                 "the communicator in its last %.2f s (a hang needs %.2f s)",
                 (unsigned long long)x->last_done, x->hung_s, x->pending_s, x->bar_s);
    else
        snprintf(line, sizeof line,
                 "no instance of the communicator is recorded complete: hung since its first "
                 "entry, %.2f s before the end; no call entered it in the last %.2f s (a hang "
                 "needs %.2f s)",
                 x->hung_s, x->pending_s, x->bar_s);
    printf("  ");
    sp_text_wrapped(line, 2, 4, cols);
    if (x->unconfirmed_lo) {
        char range[64];
        if (x->unconfirmed_hi > x->unconfirmed_lo)
            snprintf(range, sizeof range, "#%llu-#%llu", (unsigned long long)x->unconfirmed_lo,
                     (unsigned long long)x->unconfirmed_hi);
        else
            snprintf(range, sizeof range, "#%llu", (unsigned long long)x->unconfirmed_lo);
        snprintf(line, sizeof line,
                 "unconfirmed: %s entered by every rank with a trace, completion not recorded "
                 "(CUPTI records not yet flushed when a process is killed are lost)",
                 range);
        printf("  ");
        sp_text_wrapped(line, 2, 4, cols);
    }
    printf("\nwhat the ranks were doing when the traces end:\n");
    for (int i = 0; i < x->nmissing; i++) {
        const struct sp_hang_rank *r = sp_hang_rank_of(h, x->missing[i]);
        if (r) text_rank(h, r, 1, cols);
    }
    for (int i = 0; i < x->nabsent; i++)
        printf("  rank %d [no_trace] left no trace: nothing is known of it\n", x->absent[i]);
    for (int i = 0; i < x->nentered; i++) {
        const struct sp_hang_rank *r = sp_hang_rank_of(h, x->entered[i]);
        if (r) text_rank(h, r, 0, cols);
    }
    printf("\n");
}

static void text_pending(const struct sp_hang_inst *x, const struct sp_hang *h, int cols)
{
    char line[1024], list[300], miss[300] = "";
    ranks_text(x->entered, x->nentered, list, sizeof list);
    if (x->nmissing) ranks_text(x->missing, x->nmissing, miss, sizeof miss);
    snprintf(line, sizeof line,
             "no hang on %016llx: %s #%llu was pending when the traces end (entered by %s%s%s), "
             "but a call entered the communicator %.3f s before the end (a hang needs %.2f s): the "
             "job was stopped "
             "while running%s",
             (unsigned long long)x->comm, sp_hang_op_name(x->op), (unsigned long long)x->seq, list,
             x->nmissing ? ", not by " : "", miss, x->pending_s, x->bar_s,
             h->cpu_sampled
                 ? ""
                 : ". The traces carry no CPU samples, so each ends at its process's last call: "
                   "time spent hung after that is not recorded");
    sp_text_wrapped(line, 0, 2, cols);
}

static void text_desync(const struct sp_hang_desync *d, int cols)
{
    char a[96], b[96], ra[300], rb[300], line[1024];
    text_call(d->a.op, d->a.bytes, d->a.dtype, a, sizeof a);
    text_call(d->b.op, d->b.bytes, d->b.dtype, b, sizeof b);
    ranks_text(d->a.ranks, d->a.nranks, ra, sizeof ra);
    ranks_text(d->b.ranks, d->b.nranks, rb, sizeof rb);
    int w = snprintf(line, sizeof line,
                     "DESYNC on communicator %016llx at #%llu: %s called %s, %s called %s",
                     (unsigned long long)d->comm, (unsigned long long)d->seq, ra, a, rb, b);
    if (d->kinds > 2 && w > 0 && (size_t)w < sizeof line)
        w += snprintf(line + w, sizeof line - (size_t)w, " (%d different calls in all)", d->kinds);
    if (d->later && w > 0 && (size_t)w < sizeof line)
        snprintf(line + w, sizeof line - (size_t)w, "; %llu later sequence number%s mismatch too",
                 (unsigned long long)d->later, d->later == 1 ? "" : "s");
    sp_text_wrapped(line, 0, 2, cols);
}

/* Per communicator, its ranks grouped by (entered, completed). */
static void text_comms(const struct sp_hang *h, int cols)
{
    if (!h->ncomms) return;
    printf("last collective entered / completed, per communicator and rank:\n");
    for (int i = 0; i < h->ncomms; i++) {
        const struct sp_hang_comm *c = &h->comms[i];
        char line[2048], list[300];
        int w = snprintf(line, sizeof line, "%016llx (%u ranks):", (unsigned long long)c->comm,
                         c->nranks);
        char *done = calloc((size_t)c->nmembers + 1, 1);
        int *group = malloc(((size_t)c->nmembers + 1) * sizeof *group);
        for (int a = 0; done && group && a < c->nmembers; a++) {
            if (done[a]) continue;
            int n = 0;
            for (int b = a; b < c->nmembers; b++)
                if (!done[b] && c->members[b].entered == c->members[a].entered &&
                    c->members[b].completed == c->members[a].completed) {
                    done[b] = 1;
                    group[n++] = c->members[b].rank;
                }
            ranks_text(group, n, list, sizeof list);
            if (w > 0 && (size_t)w < sizeof line)
                w += snprintf(line + w, sizeof line - (size_t)w, "%s %s #%llu / #%llu",
                              a ? ";" : "", list, (unsigned long long)c->members[a].entered,
                              (unsigned long long)c->members[a].completed);
        }
        free(done);
        free(group);
        printf("  ");
        sp_text_wrapped(line, 2, 4, cols);
    }
    printf("\n");
}

void sp_hang_text(const struct sp_model *m, const struct sp_hang *h, const struct sp_ended_set *ended, int cols)
{
    hang_ended = ended;
    printf("scaleprof hang: %s\n  %d rank%s with traces (world size %d), %d communicator%s%s\n\n",
           m->dir, m->nranks, m->nranks == 1 ? "" : "s", m->world_size, h->ncomms,
           h->ncomms == 1 ? "" : "s",
           h->cpu_sampled ? "" : "; no CPU samples: each trace ends at its process's last call");
    text_comms(h, cols);
    for (int i = 0; i < h->ninsts; i++)
        if (h->insts[i].hung) text_inst(m, h, &h->insts[i], cols);
    for (int i = 0; i < h->ninsts; i++)
        if (!h->insts[i].hung) text_pending(&h->insts[i], h, cols);
    for (int i = 0; i < h->ndesyncs; i++)
        text_desync(&h->desyncs[i], cols);
    if (h->nhung)
        printf("the job was hung for %.2f s: from the last completed collective to the end of the "
               "traces\n",
               h->hung_s);
    else if (!h->ncomms)
        printf("no collective recorded: the traces cannot say whether the job hung\n");
    else if (!h->ninsts)
        printf("nothing hung: every collective entered was completed\n");
    else
        printf("nothing hung\n");
    if (!h->nhung && strcmp(m->source, "preload"))
        printf("note: the traces were imported (%s): their NCCL calls come from completed kernels "
               "only, so a "
               "collective ranks were stuck in is not in them; the desync check is complete\n",
               m->source);
    for (int i = 0; i < m->nwarnings; i++) {
        printf("warning: ");
        sp_text_wrapped(m->warnings[i], 9, 2, cols);
    }
}

/* A thread of a rank's process and its last events, before the end. */
static void json_thread(struct sp_json *j, const struct sp_hang *h, const struct sp_hang_thread *th)
{
    sp_json_open(j, NULL, '{');
    sp_json_int(j, "tid", th->tid);
    sp_json_bool(j, "main", th->main);
    sp_json_open(j, "last", '[');
    for (int e = 0; e < th->n; e++) {
        sp_json_open(j, NULL, '{');
        sp_json_num(j, "before_end_s", (double)(h->end_t - th->ev[e].t) / NS_PER_S);
        sp_json_str(j, "what", th->ev[e].what);
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
    sp_json_close(j, '}');
}

static void json_rank(struct sp_json *j, const struct sp_hang *h, const struct sp_hang_rank *x)
{
    char key[16];
    snprintf(key, sizeof key, "%d", x->rank);
    sp_json_open(j, key, '{');
    sp_json_str(j, "state", x->state);
    sp_json_str(j, "doing", x->doing);
    const struct sp_hang_proc *p = x->nprocs ? &x->procs[0] : NULL;
    if (p) {
        sp_json_int(j, "pid", p->pid);
        sp_json_str(j, "process", proc_state(p->state));
        sp_json_num(j, "silent_s", (double)(p->end_t - p->last_t) / NS_PER_S);
        sp_json_num(j, "trace_ends_before_job_s", (double)(h->end_t - p->end_t) / NS_PER_S);
        sp_json_num_if(j, "cpu_cores", p->cpu_share >= 0, p->cpu_share);
    }
    sp_json_open(j, "processes", '[');
    for (int i = 0; i < x->nprocs; i++) {
        const struct sp_hang_proc *pr = &x->procs[i];
        sp_json_open(j, NULL, '{');
        sp_json_int(j, "pid", pr->pid);
        sp_json_bool(j, "helper", pr->helper);
        sp_json_str(j, "process", proc_state(pr->state));
        sp_json_str(j, "path", pr->path);
        sp_json_int(j, "launches", (long long)pr->launches);
        sp_json_int(j, "kernels", (long long)pr->kernels);
        sp_json_open(j, "threads", '[');
        for (int t = 0; t < pr->nthreads; t++)
            json_thread(j, h, &pr->threads[t]);
        sp_json_close(j, ']');
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
    sp_json_close(j, '}');
}

static void json_inst(struct sp_json *j, const struct sp_hang *h, const struct sp_hang_inst *x)
{
    sp_json_open(j, NULL, '{');
    sp_json_comm(j, "comm", x->comm);
    sp_json_int(j, "seq", (long long)x->seq);
    sp_json_str(j, "op", sp_hang_op_name(x->op));
    sp_json_int(j, "bytes", (long long)x->bytes);
    sp_json_str(j, "dtype", sp_nccl_dtype_name(x->dtype));
    sp_json_int(j, "nranks", x->nranks);
    sp_json_bool(j, "inside", x->inside);
    sp_json_int_list(j, "entered", x->entered, x->nentered);
    sp_json_int_list(j, "missing", x->missing, x->nmissing);
    sp_json_int_list(j, "absent", x->absent, x->nabsent);
    sp_json_int(j, "absent_unnamed", x->absent_unnamed);
    if (x->last_done)
        sp_json_int(j, "last_completed", (long long)x->last_done);
    else
        sp_json_null(j, "last_completed");
    sp_json_open(j, "unconfirmed", '[');
    for (uint64_t s = x->unconfirmed_lo; s && s <= x->unconfirmed_hi && s < x->unconfirmed_lo + 64;
         s++)
        sp_json_int(j, NULL, (long long)s);
    sp_json_close(j, ']');
    sp_json_num(j, "pending_s", x->pending_s);
    sp_json_bool(j, "stranded", x->stranded);
    if (x->stalled_rank >= 0) {
        sp_json_int(j, "stalled_rank", x->stalled_rank);
        sp_json_num(j, "stalled_s", x->stalled_s);
    } else {
        sp_json_null(j, "stalled_rank");
        sp_json_null(j, "stalled_s");
    }
    sp_json_num(j, "bar_s", x->bar_s);
    sp_json_num(j, "hung_s", x->hung_s);
    sp_json_open(j, "last", '{');
    for (int i = 0; i < h->nranks; i++) {
        const struct sp_hang_rank *r = &h->ranks[i];
        for (int k = 0; k < x->nentered + x->nmissing; k++)
            if ((k < x->nentered ? x->entered[k] : x->missing[k - x->nentered]) == r->rank) {
                json_rank(j, h, r);
                break;
            }
    }
    for (int i = 0; i < x->nabsent; i++) {
        char key[16];
        snprintf(key, sizeof key, "%d", x->absent[i]);
        sp_json_open(j, key, '{');
        sp_json_str(j, "state", "no_trace");
        sp_json_str(j, "doing", "left no trace: nothing is known of it");
        sp_json_close(j, '}');
    }
    sp_json_close(j, '}');
    sp_json_close(j, '}');
}

static void json_call(struct sp_json *j, const struct sp_hang_call *c)
{
    sp_json_open(j, NULL, '{');
    sp_json_str(j, "op", sp_hang_op_name(c->op));
    sp_json_int(j, "bytes", (long long)c->bytes);
    sp_json_str(j, "dtype", sp_nccl_dtype_name(c->dtype));
    sp_json_int_list(j, "ranks", c->ranks, c->nranks);
    sp_json_close(j, '}');
}

static void json_desync(struct sp_json *j, const struct sp_hang_desync *d)
{
    sp_json_open(j, NULL, '{');
    sp_json_comm(j, "comm", d->comm);
    sp_json_int(j, "seq", (long long)d->seq);
    sp_json_open(j, "calls", '[');
    json_call(j, &d->a);
    json_call(j, &d->b);
    sp_json_close(j, ']');
    sp_json_int(j, "kinds", d->kinds);
    sp_json_int(j, "later", (long long)d->later);
    sp_json_close(j, '}');
}

void sp_hang_json(const struct sp_model *m, const struct sp_hang *h, const struct sp_ended_set *ended)
{
    hang_ended = ended;
    struct sp_json j;
    sp_json_begin(&j, stdout);
    sp_json_str(&j, "dir", m->dir);
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_int(&j, "world_size", m->world_size);
    sp_json_open(&j, "communicators", '[');
    for (int i = 0; i < h->ncomms; i++) {
        const struct sp_hang_comm *c = &h->comms[i];
        sp_json_open(&j, NULL, '{');
        sp_json_comm(&j, "comm", c->comm);
        sp_json_int(&j, "nranks", c->nranks);
        sp_json_int(&j, "last_completed", (long long)c->last_completed);
        sp_json_open(&j, "ranks", '[');
        for (int k = 0; k < c->nmembers; k++) {
            sp_json_open(&j, NULL, '{');
            sp_json_int(&j, "rank", c->members[k].rank);
            sp_json_int(&j, "entered", (long long)c->members[k].entered);
            sp_json_int(&j, "completed", (long long)c->members[k].completed);
            sp_json_close(&j, '}');
        }
        sp_json_close(&j, ']');
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_bool(&j, "cpu_sampled", h->cpu_sampled);
    sp_ended_json(&j, hang_ended);
    sp_json_open(&j, "hung", '[');
    for (int i = 0; i < h->ninsts; i++)
        if (h->insts[i].hung) json_inst(&j, h, &h->insts[i]);
    sp_json_close(&j, ']');
    sp_json_open(&j, "pending", '[');
    for (int i = 0; i < h->ninsts; i++)
        if (!h->insts[i].hung) json_inst(&j, h, &h->insts[i]);
    sp_json_close(&j, ']');
    sp_json_open(&j, "desync", '[');
    for (int i = 0; i < h->ndesyncs; i++)
        json_desync(&j, &h->desyncs[i]);
    sp_json_close(&j, ']');
    sp_json_num_if(&j, "hung_s", h->nhung, h->hung_s);
    sp_json_int_list(&j, "missing_ranks", m->missing_ranks, m->nmissing);
    sp_json_str_list(&j, "warnings", m->warnings, m->nwarnings);
    sp_json_close(&j, '}');
}
