/*
 * model.c - the analysis pipeline in order: it runs the passes and sums
 * up what they found; the helpers the passes share are model_util.c's.
 *
 * sp_model_analyze runs: load (pass 1, or summaries) -> clocks -> steps
 * -> collectives -> classify (pass 2) -> stragglers -> findings.  Each
 * stage only adds to the model; a stage that finds nothing leaves a
 * warning and the later stages work with what there is.  Nothing in the
 * passes calls back into this file.
 */
#include <stdlib.h>
#include <string.h>

#include "model_int.h"
#include "model_summary.h"
#include "units.h"

#define TAIL_FACTOR 2.0  /* a last step this much longer than any other is the profiler's tail */
#define TAIL_MIN_STEPS 3 /* ... judged only with two others to compare with */

void sp_model_opts_default(struct sp_model_opts *o)
{
    memset(o, 0, sizeof *o);
    o->skip = -1; /* DEFAULT_SKIP, or none in a step window (sp_model_skip) */
    o->step_first = o->step_last = -1;
}

/* Overall breakdown: time-weighted over the ranks; step lengths averaged
 * over the ranks per step (report's --rank narrows what it prints, not
 * the model). */
void sp_model_summarize_steps(struct sp_model *m)
{
    double total = 0;
    int nsteps = m->step_hi - m->step_lo;
    double *len = nsteps > 0 ? calloc((size_t)nsteps, sizeof *len) : NULL;
    int nr = 0;
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        if (!r->cat)
            continue;
        nr++;
        for (int k = m->step_lo; k < m->step_hi && k < r->nsteps; k++) {
            double d = (double)(r->steps[k].end - r->steps[k].start);
            total += d;
            if (len)
                len[k - m->step_lo] += d;
            for (int c = 0; c < SP_CAT_N; c++)
                m->breakdown[c] += r->cat[k][c];
        }
    }
    for (int c = 0; c < SP_CAT_N && total > 0; c++)
        m->breakdown[c] /= total;
    if (len && nr) {
        double sum = 0;
        for (int k = 0; k < nsteps; k++) {
            len[k] /= nr * NS_PER_MS;
            sum += len[k];
        }
        m->step_mean_ms = sum / nsteps;
        m->step_median_ms = sp_median(len, (size_t)nsteps);
    }
    free(len);
}

/* The mean over ranks of step k's length. */
static double step_len(const struct sp_model *m, int k)
{
    double sum = 0;
    int n = 0;
    for (int i = 0; i < m->nranks; i++)
        if (k < m->ranks[i].nsteps) {
            sum += (double)(m->ranks[i].steps[k].end - m->ranks[i].steps[k].start);
            n++;
        }
    return n ? sum / n : 0;
}

/* Whether step hi-1 is far longer than every other step in [lo, hi-1). */
static int last_step_is_tail(const struct sp_model *m, int lo, int hi)
{
    double longest = 0;
    for (int k = lo; k < hi - 1; k++)
        if (step_len(m, k) > longest)
            longest = step_len(m, k);
    return longest > 0 && step_len(m, hi - 1) > TAIL_FACTOR * longest;
}

/* The steps in view, as indices.  The user's numbers (--steps, and the
 * warm-up --skip counts) are the markers' when they carry any: a trace
 * recorded from step 5 on has no warm-up step left in it.  A trace
 * recorded with a step window skips none by default: the window is the
 * user's choice of steps. */
static void choose_view(struct sp_model *m)
{
    int base = m->step_number0;
    int skip = sp_model_skip(m);
    int lo = skip > base ? skip - base : 0, hi = m->steps_total;
    if (m->opts.step_first >= 0)
        lo = m->opts.step_first > base ? m->opts.step_first - base : 0;
    if (m->opts.step_last >= 0 && m->opts.step_last - base < hi)
        hi = m->opts.step_last - base > 0 ? m->opts.step_last - base : 0;
    if (m->opts.step_last < 0 && hi == m->steps_total && hi - lo >= TAIL_MIN_STEPS && last_step_is_tail(m, lo, hi)) {
        hi--;
        sp_model_warn(m, "the last step (%d) is more than %.0fx longer than any other: taken as the profiler's "
                         "shutdown or a trace cut short, and not analyzed (--steps includes it)",
                      hi + base, TAIL_FACTOR);
    }
    if (lo > hi)
        lo = hi;
    if (lo == hi && m->steps_total > 0 && m->opts.step_first < 0) {
        sp_model_warn(m, "only %d step(s) found, all within the %d warm-up steps skipped: "
                         "using them anyway",
                      m->steps_total, skip);
        lo = 0;
    }
    m->step_lo = lo;
    m->step_hi = hi;
}

int sp_model_open(const char *dir, const struct sp_model_opts *o, struct sp_model *m)
{
    memset(m, 0, sizeof *m);
    m->opts = *o;
    m->dir = dir;
    m->detected_by = "none";
    m->causes = sp_cause_table();
    int loaded = sp_summary_is_dir(m->dir) ? sp_summary_load(m) : sp_model_load(m);
    if (loaded < 0 || sp_model_group(m) < 0)
        return -1;
    sp_model_align_clocks(m);
    m->done = SP_STAGE_LOAD;
    return 0;
}

/* scaleprof reduce's model: pass 1 over one host's traces (sp_summary_scan),
 * then, over the file records of every host's summary, what sp_model_open
 * does after loading (sp_summary_open). */
int sp_summary_scan(struct sp_model *m, char **paths, int n)
{
    return sp_model_scan(m, paths, n);
}

int sp_summary_open(struct sp_model *m)
{
    m->causes = sp_cause_table();
    if (sp_model_group(m) < 0)
        return -1;
    sp_model_align_clocks(m);
    m->done = SP_STAGE_LOAD;
    return 0;
}

void sp_model_keep_whatif(struct sp_model *m, int cause)
{
    m->whatif.asked = 1;
    m->whatif.cause = cause;
}

static void whatif_free(struct sp_whatif_nodes *w, int nranks)
{
    for (int i = 0; w->arr && w->end && i < nranks; i++) {
        free(w->arr[i]);
        free(w->end[i]);
    }
    free(w->arr);
    free(w->end);
    w->arr = w->end = NULL;
    w->ok = 0;
}

static void whatif_node(void *arg, int rank, size_t node, int64_t a, int64_t e)
{
    struct sp_whatif_nodes *w = arg;
    w->arr[rank][node] = a;
    w->end[rank][node] = e;
}

/* The counterfactual asked for, replayed as its finding priced it (the
 * choices m->replay kept) and kept node by node; none when the replay
 * cannot remove that cause in this run. */
static void keep_whatif(struct sp_model *m)
{
    struct sp_whatif_nodes *w = &m->whatif;
    size_t nr = (size_t)m->nranks;
    w->arr = calloc(nr + 1, sizeof *w->arr);
    w->end = calloc(nr + 1, sizeof *w->end);
    int rc = w->arr && w->end && m->replay ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < nr; i++) {
        size_t n = m->ranks[i].nnodes + 1;
        w->arr[i] = malloc(n * sizeof **w->arr);
        w->end[i] = malloc(n * sizeof **w->end);
        if (!w->arr[i] || !w->end[i]) {
            rc = -1;
            break;
        }
        for (size_t j = 0; j < n; j++)
            w->arr[i][j] = w->end[i][j] = INT64_MIN;
    }
    if (rc == 0)
        rc = sp_model_replay_nodes(m, m->replay, w->cause, whatif_node, w);
    if (rc < 0)
        whatif_free(w, m->nranks);
    else
        w->ok = 1;
}

/* One pass; 0, or -1 when it found nothing to work on. */
static int run_stage(struct sp_model *m, enum sp_stage s)
{
    switch (s) {
    case SP_STAGE_STEPS:
        sp_model_find_steps(m);
        choose_view(m);
        return 0;
    case SP_STAGE_COLLECTIVES:
        sp_model_match_collectives(m);
        return 0;
    case SP_STAGE_CLASSIFY:
        if (sp_model_classify(m) < 0)
            return -1;
        sp_model_summarize_steps(m);
        return 0;
    case SP_STAGE_FINDINGS:
        sp_model_stragglers(m);
        sp_model_findings(m);
        if (m->whatif.asked)
            keep_whatif(m);
        return 0;
    default:
        return 0;
    }
}

int sp_model_run(struct sp_model *m, enum sp_stage until)
{
    if (m->done < SP_STAGE_LOAD)
        return -1;
    while (m->done < until) {
        enum sp_stage next = (enum sp_stage)(m->done + 1);
        if (run_stage(m, next) < 0)
            return -1;
        m->done = next;
    }
    return 0;
}

int sp_model_analyze(const char *dir, const struct sp_model_opts *o, struct sp_model *m)
{
    if (sp_model_open(dir, o, m) < 0)
        return -1;
    return sp_model_run(m, SP_STAGE_FINDINGS);
}

void sp_model_free(struct sp_model *m)
{
    for (int i = 0; i < m->nranks; i++) {
        struct sp_rank *r = &m->ranks[i];
        free(r->files);
        free(r->calls);
        free(r->marks);
        free(r->steps);
        free(r->cat);
        free(r->input_head);
        free(r->write_idle);
        free(r->sync_idle);
        free(r->launch_idle);
        free(r->nodes);
        r->nodes = NULL;
    }
    for (int i = 0; i < m->nfindings; i++) {
        free(m->findings[i].ranks);
        free(m->findings[i].rank_gains);
    }
    for (int i = 0; i < m->nfrecs; i++)
        sp_file_rec_free(&m->frecs[i]);
    sp_model_warnings_free(m);
    if (m->replay)
        sp_model_replay_free(m->replay);
    free(m->replay);
    whatif_free(&m->whatif, m->nranks);
    sp_summary_free(m);
    free(m->frecs);
    free(m->ranks);
    free(m->hosts);
    free(m->host_offset);
    free(m->colls);
    free(m->stragglers);
    free(m->missing_ranks);
    memset(m, 0, sizeof *m);
}
