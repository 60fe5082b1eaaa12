/*
 * report_json.c - `scaleprof report --json` (the document of
 * docs/report-json.md) and `--csv` (the per-step table), over a finished
 * model (report_out.h).  Every number is the model's or an analysis's
 * (hang, ended, kernels): nothing is computed here that the text screen
 * could say otherwise.
 */
#include <stdio.h>
#include <string.h>

#include "finding_json.h"
#include "json.h"
#include "model_summary.h"
#include "report_out.h"
#include "sprof.h"
#include "text.h"

static void json_hang(struct sp_json *j, const struct sp_model *m, const struct sp_hang *h)
{
    char see[4200];
    sp_json_open(j, "hang", '{');
    sp_json_bool(j, "hung", h->nhung > 0);
    sp_json_num_if(j, "hung_s", h->nhung, h->hung_s);
    sp_json_open(j, "instances", '[');
    for (int i = 0; i < h->ninsts; i++) {
        const struct sp_hang_inst *x = &h->insts[i];
        if (!x->hung)
            continue;
        sp_json_open(j, NULL, '{');
        sp_json_comm(j, "comm", x->comm);
        sp_json_int(j, "seq", (long long)x->seq);
        sp_json_str(j, "op", sp_text_nccl_op(x->op));
        sp_json_int(j, "bytes", (long long)x->bytes);
        sp_json_int_list(j, "entered", x->entered, x->nentered);
        sp_json_int_list(j, "missing", x->missing, x->nmissing);
        sp_json_int_list(j, "absent", x->absent, x->nabsent);
        if (x->stalled_rank >= 0)
            sp_json_int(j, "stalled_rank", x->stalled_rank);
        else
            sp_json_null(j, "stalled_rank");
        sp_json_num(j, "hung_s", x->hung_s);
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
    sp_json_int(j, "desync", h->ndesyncs);
    snprintf(see, sizeof see, "scaleprof hang %s", m->dir);
    sp_json_str(j, "see", h->nhung || h->ndesyncs ? see : "");
    sp_json_close(j, '}');
}

static void json_breakdown(struct sp_json *j, const char *key, const double *b)
{
    sp_json_open(j, key, '{');
    for (int c = 0; c < SP_CAT_N; c++)
        sp_json_num(j, sp_model_cat_name(c), b[c]);
    sp_json_close(j, '}');
}

static void json_unknown(struct sp_json *j, const struct sp_model *m)
{
    sp_json_open(j, "unknown", '[');
    if (m->flags_any & SP_FLAG_NO_FILE_IO)
        sp_json_str(j, NULL, "file_io");
    if (m->flags_any & SP_FLAG_NO_CPU)
        sp_json_str(j, NULL, "cpu");
    sp_json_close(j, ']');
}

/* Each analyzed step of each shown rank: its number, time and the seven
 * categories in ms (the table --per-step and --csv print). */
typedef void (*step_row_fn)(void *arg, const struct sp_model *m, const struct sp_rank *r, int k);

static void each_step_row(const struct sp_model *m, int view_rank, step_row_fn fn, void *arg)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!sp_report_shown(view_rank, r))
            continue;
        for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++)
            fn(arg, m, r, k);
    }
}

static void json_step_row(void *arg, const struct sp_model *m, const struct sp_rank *r, int k)
{
    struct sp_json *j = arg;
    sp_json_open(j, NULL, '{');
    sp_json_int(j, "rank", r->rank);
    sp_json_int(j, "step", k + m->step_number0);
    sp_json_num(j, "step_ms", (double)(r->steps[k].end - r->steps[k].start) / 1e6);
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        sp_json_num(j, sp_model_cat_name(c), r->cat[k][c] / 1e6);
    sp_json_close(j, '}');
}

static void csv_step_row(void *arg, const struct sp_model *m, const struct sp_rank *r, int k)
{
    (void)arg;
    printf("%d,%d,%.6f", r->rank, k + m->step_number0, (double)(r->steps[k].end - r->steps[k].start) / 1e6);
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        printf(",%.6f", r->cat[k][c] / 1e6);
    printf("\n");
}

void sp_report_csv(const struct sp_model *m, int view_rank)
{
    printf("rank,step,step_ms");
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        printf(",%s_ms", sp_model_cat_name(c));
    printf("\n");
    each_step_row(m, view_rank, csv_step_row, NULL);
}

/* whatif.check: the replay's check of itself (docs/report-json.md). */
static void json_check(struct sp_json *j, const struct sp_model *m)
{
    const struct sp_whatif_check *ck = &m->check;
    sp_json_open(j, "check", '{');
    if (!ck->done) {
        sp_json_null(j, "ok");
        sp_json_close(j, '}');
        return;
    }
    sp_json_bool(j, "ok", ck->ok);
    sp_json_bool(j, "replay_ok", ck->replay_ok);
    sp_json_num(j, "replay_error_pct", ck->replay_error_pct);
    sp_json_num(j, "step_error_pct", ck->step_error_pct);
    sp_json_int(j, "unplaced_nodes", ck->unplaced);
    sp_json_open(j, "causes", '[');
    for (int c = 0; c < SP_CAUSE_N; c++) {
        if (ck->bound_ms[c] < 0)
            continue;
        sp_json_open(j, NULL, '{');
        sp_json_str(j, "cause", sp_cause_info(c)->name);
        sp_json_num(j, "saved_ms", ck->saved_ms[c]);
        sp_json_num(j, "critical_path_ms", ck->bound_ms[c]);
        sp_json_bool(j, "ok", ck->bound_ok[c]);
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
    if (ck->ideal_ms > 0) {
        sp_json_num(j, "ideal_ms", ck->ideal_ms);
        sp_json_num(j, "best_single_ms", ck->best_ms);
        sp_json_bool(j, "ideal_ok", ck->ideal_ok);
    } else {
        sp_json_null(j, "ideal_ms");
        sp_json_null(j, "best_single_ms");
        sp_json_null(j, "ideal_ok");
    }
    sp_json_open(j, "withheld", '[');
    for (int c = 0; c < SP_CAUSE_N; c++)
        if (ck->withheld & (1u << c))
            sp_json_str(j, NULL, sp_cause_info(c)->name);
    sp_json_close(j, ']');
    sp_json_close(j, '}');
}

static void json_kernels(struct sp_json *j, const struct sp_model *m, const struct sp_kernels *k, int top)
{
    size_t n = (size_t)top < k->n ? (size_t)top : k->n;
    sp_json_open(j, "kernels", '{');
    sp_json_int(j, "first_step", m->step_lo + m->step_number0);
    sp_json_int(j, "last_step", m->step_hi - 1 + m->step_number0);
    sp_json_num(j, "total_ms", k->ns / 1e6);
    sp_json_int(j, "names", (long long)k->n);
    sp_json_open(j, "top", '[');
    for (size_t i = 0; i < n; i++) {
        const struct sp_kernel_stat *s = &k->k[i];
        sp_json_open(j, NULL, '{');
        sp_json_str(j, "name", s->name);
        sp_json_bool(j, "nccl", s->nccl);
        sp_json_int(j, "calls", (long long)s->calls);
        sp_json_num(j, "total_ms", s->ns / 1e6);
        sp_json_num(j, "share", k->ns > 0 ? s->ns / k->ns : 0);
        sp_json_num(j, "mean_us", s->mean_ns / 1e3);
        sp_json_num(j, "p50_us", s->p50_ns / 1e3);
        sp_json_num(j, "p99_us", s->p99_ns / 1e3);
        if (s->slowest >= 0) {
            sp_json_int(j, "slowest_rank", m->ranks[s->slowest].rank);
            sp_json_num(j, "slowest_x_median", s->slowest_x);
        } else {
            sp_json_null(j, "slowest_rank");
            sp_json_null(j, "slowest_x_median");
        }
        sp_json_open(j, "per_rank", '[');
        for (int r = 0; r < m->nranks; r++) {
            if (!s->ranks[r].calls)
                continue;
            sp_json_open(j, NULL, '{');
            sp_json_int(j, "rank", m->ranks[r].rank);
            sp_json_int(j, "calls", (long long)s->ranks[r].calls);
            sp_json_num(j, "total_ms", s->ranks[r].ns / 1e6);
            sp_json_num(j, "mean_us", s->ranks[r].ns / (double)s->ranks[r].calls / 1e3);
            sp_json_num(j, "share", k->rank_ns[r] > 0 ? s->ranks[r].ns / k->rank_ns[r] : 0);
            sp_json_close(j, '}');
        }
        sp_json_close(j, ']');
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
    sp_json_close(j, '}');
}

/* `stragglers`: the ranks the straggler finding names (none without
 * one), each with its arrivals and the component of its excess: the one
 * answer the findings give, where the arrival table (`last_arrivals`)
 * can list a rank late at half the collectives that the replay does not
 * find costly, or miss a set of ranks that take turns arriving last. */
static void json_stragglers(struct sp_json *j, const struct sp_model *m)
{
    const struct sp_finding *f = NULL;
    for (int i = 0; i < m->nfindings; i++)
        if (m->findings[i].cause == SP_CAUSE_STRAGGLER)
            f = &m->findings[i];
    sp_json_open(j, "stragglers", '[');
    for (int i = 0; f && i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!sp_finding_names(f, r->rank))
            continue;
        sp_json_open(j, NULL, '{');
        sp_json_int(j, "rank", r->rank);
        if (r->coll_present) {
            sp_json_num(j, "last_arrival_fraction", (double)r->coll_last / (double)r->coll_present);
            sp_json_num(j, "mean_wait_ms", r->coll_wait_ns / (double)r->coll_present / 1e6);
        } else {
            sp_json_null(j, "last_arrival_fraction");
            sp_json_null(j, "mean_wait_ms");
        }
        sp_json_str(j, "cause", sp_model_straggler_cause(m, i));
        sp_json_close(j, '}');
    }
    sp_json_close(j, ']');
}

void sp_report_json(const struct sp_model *m, int view_rank, int per_step, const struct sp_hang *h,
                    const struct sp_ended_set *ended, const struct sp_kernels *kernels, int top_kernels)
{
    struct sp_json j;
    sp_json_begin(&j, stdout);
    sp_json_int(&j, "schema_version", SP_REPORT_SCHEMA_VERSION);
    sp_json_str(&j, "version", SCALEPROF_VERSION);
    sp_json_str(&j, "dir", m->dir);
    sp_json_str_or_null(&j, "run", m->run[0] ? m->run : NULL);
    sp_json_str(&j, "source", m->source);
    sp_json_open(&j, "view", '{');
    if (view_rank >= 0)
        sp_json_int(&j, "rank", view_rank);
    else
        sp_json_null(&j, "rank");
    sp_json_close(&j, '}');
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_int(&j, "world_size", m->world_size);
    sp_json_str_rows(&j, "hosts", m->hosts[0], sizeof m->hosts[0], m->nhosts);
    char layout[128];
    sp_model_layout_text(m, layout, sizeof layout);
    sp_json_open(&j, "layout", '{');
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_int(&j, "processes", m->rank_procs);
    sp_json_int(&j, "gpus", m->gpus);
    sp_json_int(&j, "multi_rank_processes", m->multi_rank_procs);
    sp_json_str(&j, "text", layout);
    sp_json_close(&j, '}');
    sp_json_int_list(&j, "missing_ranks", m->missing_ranks, m->nmissing);
    sp_json_open(&j, "steps", '{');
    sp_json_str(&j, "detected_by", m->detected_by);
    sp_json_int(&j, "count", m->steps_total);
    sp_json_int(&j, "set_aside", m->steps_set_aside);
    sp_json_int(&j, "skipped", m->step_lo);
    sp_json_int(&j, "first_number", m->step_number0);
    sp_json_int(&j, "analyzed_first", m->step_lo + m->step_number0);
    sp_json_int(&j, "analyzed_last", m->step_hi - 1 + m->step_number0);
    sp_json_int(&j, "analyzed", m->step_hi - m->step_lo);
    sp_json_num(&j, "mean_ms", m->step_mean_ms);
    sp_json_num(&j, "median_ms", m->step_median_ms);
    sp_json_close(&j, '}');
    sp_json_open(&j, "throughput", '{');
    sp_json_num(&j, "steps_per_s", m->step_mean_ms > 0 ? 1000 / m->step_mean_ms : 0);
    sp_json_num_if(&j, "samples_per_s", m->opts.samples_per_step > 0 && m->step_mean_ms > 0, m->opts.samples_per_step * m->nranks * 1000 / m->step_mean_ms);
    sp_json_close(&j, '}');
    json_breakdown(&j, "breakdown", m->breakdown);
    json_unknown(&j, m);
    sp_json_open(&j, "per_rank", '[');
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!sp_report_shown(view_rank, r))
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, r, b);
        sp_json_open(&j, NULL, '{');
        sp_json_int(&j, "rank", r->rank);
        sp_json_str(&j, "host", m->hosts[r->host]);
        sp_json_num(&j, "step_ms", sp_model_rank_step_ms(m, r));
        sp_json_int(&j, "helper_processes", r->nhelpers);
        if (r->shared > 1)
            sp_json_int(&j, "device", r->device);
        else
            sp_json_null(&j, "device");
        sp_json_int(&j, "ranks_in_process", r->shared);
        json_breakdown(&j, "breakdown", b);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    if (per_step) {
        sp_json_open(&j, "steps_detail", '[');
        each_step_row(m, view_rank, json_step_row, &j);
        sp_json_close(&j, ']');
    }
    sp_json_open(&j, "collectives", '[');
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        sp_json_open(&j, NULL, '{');
        sp_json_comm(&j, "comm", c->comm);
        sp_json_str(&j, "op", sp_text_nccl_op(c->op));
        int whole = c->missing < c->calls; /* else no instance had all its peers */
        if (c->bytes)
            sp_json_int(&j, "bytes", (long long)c->bytes);
        else
            sp_json_null(&j, "bytes");
        sp_json_int(&j, "nranks", c->nranks);
        sp_json_int(&j, "calls", (long long)c->calls);
        sp_json_num(&j, "transfer_ms", c->transfer_ms);
        sp_json_num_if(&j, "wait_ms", whole, c->wait_ms);
        sp_json_num_if(&j, "busbw_gbps", c->bytes && c->busbw_gbps > 0, c->busbw_gbps);
        sp_json_bool(&j, "bounds", !whole);
        sp_json_bool(&j, "spans_hosts", c->spans_hosts);
        sp_json_int(&j, "incomplete", (long long)c->missing);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    json_stragglers(&j, m);
    sp_json_open(&j, "last_arrivals", '[');
    for (int i = 0; i < m->nstragglers; i++) {
        sp_json_open(&j, NULL, '{');
        sp_json_int(&j, "rank", m->stragglers[i].rank);
        sp_json_num(&j, "last_arrival_fraction", m->stragglers[i].last_fraction);
        sp_json_num(&j, "mean_wait_ms", m->stragglers[i].mean_wait_ms);
        sp_json_str(&j, "cause", m->stragglers[i].cause);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_open(&j, "findings", '[');
    for (int i = 0; i < m->nfindings; i++)
        sp_json_finding(&j, &m->findings[i], 0);
    sp_json_close(&j, ']');
    sp_json_bool(&j, "healthy", sp_report_healthy(m));
    json_hang(&j, m, h);
    sp_ended_json(&j, ended);
    sp_json_open(&j, "whatif", '{');
    sp_json_num(&j, "replayed_step_ms", m->replay_step_ms);
    sp_json_num_if(&j, "ideal_step_ms", m->ideal_step_ms > 0, m->ideal_step_ms);
    sp_json_int(&j, "pipeline_stages", m->pipeline_stages);
    sp_json_int(&j, "micro_batches", m->micro_batches);
    if (m->pipeline_schedule)
        sp_json_str(&j, "pipeline_schedule", m->pipeline_schedule);
    else
        sp_json_null(&j, "pipeline_schedule");
    json_check(&j, m);
    sp_json_close(&j, '}');
    if (kernels)
        json_kernels(&j, m, kernels, top_kernels);
    sp_json_str_list(&j, "warnings", m->warnings, m->nwarnings);
    sp_json_open(&j, "clock", '{');
    sp_json_num(&j, "skew_us", m->skew_us);
    sp_json_close(&j, '}');
    sp_json_open(&j, "events", '{');
    sp_json_int(&j, "read", (long long)m->events);
    sp_json_int(&j, "dropped", (long long)m->dropped);
    sp_json_int(&j, "files", m->nfrecs);
    sp_json_int(&j, "files_damaged", m->files_bad);
    sp_json_close(&j, '}');
    sp_json_close(&j, '}');
}
