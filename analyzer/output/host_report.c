/*
 * host_report.c - `report` of a job that used no GPU: the host-side view
 * (analyses/host.c) as text or JSON, labelled as such in its first line
 * and its "view" field, so that nobody reads a GPU claim into it.
 */
#include <stdio.h>

#include "host_report.h"
#include "json.h"
#include "seen.h"
#include "text.h"

#define MIB 1e6

static void text_rank(const struct sp_model *m, const struct sp_host_rank *hr, int cols)
{
    char line[SP_MODEL_TEXT];
    int used = snprintf(line, sizeof line, "rank %d: %d loader worker%s", hr->rank, hr->workers,
                        hr->workers == 1 ? "" : "s");
    if (hr->iterations) {
        used += snprintf(line + used, sizeof line - (size_t)used, "; %d iterations (from the %s) of %.1f ms mean",
                         hr->iterations, hr->iter_from, hr->iter_ms);
        if (hr->iter_median_ms > 0 && used < (int)sizeof line)
            used += snprintf(line + used, sizeof line - (size_t)used, ", %.1f ms median", hr->iter_median_ms);
        if (used < (int)sizeof line && hr->wait_lower_bound)
            used += snprintf(line + used, sizeof line - (size_t)used,
                             "; input at least %.1f ms of each (%.0f%%): the span of each batch's %d file reads "
                             "(the reads the trace holds; work in __getitem__ before a batch's first read and "
                             "after its last is not recorded)",
                             hr->wait_ms, hr->iter_ms > 0 ? 100 * hr->wait_ms / hr->iter_ms : 0, hr->reads_per_iter);
        else if (used < (int)sizeof line)
            used += snprintf(line + used, sizeof line - (size_t)used,
                             "; blocked on the loader's pipe %.1f ms of each (%.0f%%)", hr->wait_ms,
                             hr->iter_ms > 0 ? 100 * hr->wait_ms / hr->iter_ms : 0);
    } else if (hr->workers)
        used += snprintf(line + used, sizeof line - (size_t)used,
                         "; no repeating fetch from the loader found (blocked on its pipe %.1f ms in all)",
                         hr->wait_total_ms);
    else
        used += snprintf(line + used, sizeof line - (size_t)used,
                         "; iterations not found: without workers or step markers the loop's input is "
                         "prepared in its own code, and its file reads repeat in no pattern the trace shows");
    if (hr->main_cpu >= 0 && used < (int)sizeof line)
        used += snprintf(line + used, sizeof line - (size_t)used, "; training process %.0f%% of a core",
                         100 * hr->main_cpu);
    if (hr->worker_cpu >= 0 && used < (int)sizeof line)
        used += snprintf(line + used, sizeof line - (size_t)used, ", each worker %.0f%%", 100 * hr->worker_cpu);
    if (m->flags_any & SP_FLAG_NO_FILE_IO) {
        if (used < (int)sizeof line)
            snprintf(line + used, sizeof line - (size_t)used, "; file reads unknown");
    } else if (used < (int)sizeof line) {
        snprintf(line + used, sizeof line - (size_t)used, "; file reads %.1f MB (%.1f MB/s over the run)",
                 (double)hr->read_bytes / MIB, hr->span_s > 0 ? (double)hr->read_bytes / MIB / hr->span_s : 0);
    }
    fputs("  ", stdout);
    sp_text_wrapped(line, 2, 4, cols);
}

void sp_host_text(const struct sp_model *m, const struct sp_host *h, int cols)
{
    char why[512];
    sp_seen_no_gpu_text(m, why, sizeof why);
    printf("Host-side report of %s (no GPU claims):\n", m->dir);
    fputs("  ", stdout);
    sp_text_wrapped(why, 2, 4, cols);
    printf("  %d rank(s) on %d host(s)\n\n", m->nranks, m->nhosts);
    for (int i = 0; i < h->nranks; i++)
        text_rank(m, &h->r[i], cols);
    for (int i = 0; i < h->ncpu; i++) {
        const struct sp_host_cpu *c = &h->cpu[i];
        printf("  %s: the job's processes keep %.1f CPU cores busy", m->hosts[c->host], c->job_cores);
        if (c->ncores)
            printf(" of %d (%.0f%%)", c->ncores, 100 * c->job_cores / c->ncores);
        if (c->host_busy >= 0)
            printf("; the host as a whole, every user's processes: %.0f%% busy", 100 * c->host_busy);
        printf("\n");
    }
    size_t calls = 0;
    for (int i = 0; i < m->nranks; i++)
        calls += m->ranks[i].ncalls;
    if (m->nranks > 1 && !calls)
        printf("  the ranks' communication (gloo, MPI) is not recorded: its time is inside the iterations, "
               "unnamed\n");
    printf("\nFindings (host side):\n");
    if (h->input_finding) {
        char line[2 * SP_MODEL_TEXT];
        snprintf(line, sizeof line, "input_pipeline (%s): %s. First try: %s",
                 sp_model_severity_name(sp_severity_of_gain(h->input_share)), h->evidence,
                 sp_cause_info(SP_CAUSE_INPUT)->first_try);
        fputs("  ", stdout);
        sp_text_wrapped(line, 2, 4, cols);
    } else {
        int found = 0;
        for (int i = 0; i < h->nranks; i++)
            found += h->r[i].iterations > 0;
        printf("  %s\n", found ? "none: the loop waits for input less than 5% of each iteration"
                               : "none can be priced: no iteration was found");
    }
    for (int i = 0; i < m->nwarnings; i++) {
        fputs("  warning: ", stdout);
        sp_text_wrapped(m->warnings[i], 11, 4, cols);
    }
}

static void put_num_or_null(struct sp_json *j, const char *key, double v, int known)
{
    if (known)
        sp_json_num(j, key, v);
    else
        sp_json_null(j, key);
}

/* One rank's object of per_rank. */
static void rank_json(struct sp_json *j, const struct sp_host_rank *hr)
{
    sp_json_open(j, NULL, '{');
    sp_json_int(j, "rank", hr->rank);
    sp_json_int(j, "loader_workers", hr->workers);
    sp_json_str_or_null(j, "iterations_from", hr->iter_from);
    sp_json_int(j, "iterations", hr->iterations);
    put_num_or_null(j, "iteration_ms", hr->iter_ms, hr->iterations);
    sp_json_num_if(j, "iteration_median_ms", hr->iter_median_ms > 0, hr->iter_median_ms);
    put_num_or_null(j, "input_wait_ms", hr->wait_ms, hr->iterations);
    put_num_or_null(j, "input_wait_share", hr->iter_ms > 0 ? hr->wait_ms / hr->iter_ms : 0,
                    hr->iterations && hr->iter_ms > 0);
    sp_json_bool(j, "input_wait_lower_bound", hr->wait_lower_bound);
    if (hr->reads_per_iter)
        sp_json_int(j, "reads_per_iteration", hr->reads_per_iter);
    else
        sp_json_null(j, "reads_per_iteration");
    sp_json_num(j, "input_wait_total_ms", hr->wait_total_ms);
    sp_json_num_if(j, "main_cpu_cores", hr->main_cpu >= 0, hr->main_cpu);
    sp_json_num_if(j, "worker_cpu_cores", hr->worker_cpu >= 0, hr->worker_cpu);
    sp_json_num(j, "read_mb", (double)hr->read_bytes / MIB);
    sp_json_num(j, "read_mb_per_s", hr->span_s > 0 ? (double)hr->read_bytes / MIB / hr->span_s : 0);
    sp_json_close(j, '}');
}

void sp_host_json(const struct sp_model *m, const struct sp_host *h, int schema_version, const char *version)
{
    struct sp_json j;
    sp_json_begin(&j, stdout);
    sp_json_int(&j, "schema_version", schema_version);
    sp_json_str(&j, "version", version);
    sp_json_str(&j, "kind", "host");
    sp_json_bool(&j, "gpu", 0);
    char why[512];
    sp_seen_no_gpu_text(m, why, sizeof why);
    sp_json_str(&j, "why", why);
    sp_json_str(&j, "dir", m->dir);
    sp_json_str_or_null(&j, "run", m->run[0] ? m->run : NULL);
    sp_json_str(&j, "source", m->source);
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_str_rows(&j, "hosts", m->hosts[0], sizeof m->hosts[0], m->nhosts);
    sp_json_open(&j, "per_rank", '[');
    for (int i = 0; i < h->nranks; i++)
        rank_json(&j, &h->r[i]);
    sp_json_close(&j, ']');
    sp_json_open(&j, "cpu", '[');
    for (int i = 0; i < h->ncpu; i++) {
        const struct sp_host_cpu *c = &h->cpu[i];
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "host", m->hosts[c->host]);
        sp_json_int(&j, "cores", c->ncores);
        sp_json_num(&j, "job_cores_busy", c->job_cores);
        sp_json_num_if(&j, "host_busy", c->host_busy >= 0, c->host_busy);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_open(&j, "findings", '[');
    if (h->input_finding) {
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "cause", sp_cause_info(SP_CAUSE_INPUT)->name);
        sp_json_str(&j, "severity", sp_model_severity_name(sp_severity_of_gain(h->input_share)));
        sp_json_num(&j, "iteration_share", h->input_share);
        sp_json_bool(&j, "lower_bound", h->input_lower_bound);
        sp_json_str(&j, "evidence", h->evidence);
        sp_json_str(&j, "first_try", sp_cause_info(SP_CAUSE_INPUT)->first_try);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_str_list(&j, "warnings", m->warnings, m->nwarnings);
    sp_json_close(&j, '}');
    fputc('\n', stdout);
}
