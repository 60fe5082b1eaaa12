/*
 * builtin-report.c - `scaleprof report DIR`: one screen that says where each
 * GPU's step time went, which collectives cost what, who straggles, and
 * what to fix first; or the same numbers as JSON (docs/report-json.md).
 *
 * Option parsing and output only: the numbers come from the model.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "json.h"
#include "model.h"
#include "sprof.h"

#define BAR_WIDTH 50
#define TOP_COLLECTIVES 8

static const char usage_text[] =
    "usage: scaleprof report DIR [options]\n"
    "\n"
    "Per-step breakdown per GPU, collectives, stragglers and findings for the\n"
    "traces under DIR (searched recursively).\n"
    "\n"
    "  --json                  print the report as JSON (docs/report-json.md)\n"
    "  --rank R                show only rank R in the per-rank view and breakdown\n"
    "  --steps A:B             analyze steps A to B-1 (absolute; overrides --skip)\n"
    "  --skip N                drop the first N warm-up steps (default 3)\n"
    "  --step-marker RE        step markers are ranges whose name matches RE\n"
    "                          (default: step|iteration|ProfilerStep, any case)\n"
    "  --samples-per-step S    samples per GPU per step, to print samples/s\n"
    "  --no-color              no colour even on a terminal (also NO_COLOR)\n"
    "  -h, --help              this text\n"
    "\n"
    "Exit status: 0 report printed, 1 nothing analyzable, 2 usage.\n";

static const char cat_letter[SP_CAT_EXCLUSIVE] = {'C', 'M', 'T', 'W', 'I', 'H', '.'};
static const char *const cat_color[SP_CAT_EXCLUSIVE] = {
    "\033[42m", "\033[46m", "\033[44m", "\033[41m", "\033[43m", "\033[45m", "\033[47m",
};

static int parse_steps(const char *s, int *a, int *b)
{
    char *end;
    long x = strtol(s, &end, 10);
    if (*end != ':' || x < 0)
        return -1;
    long y = strtol(end + 1, &end, 10);
    if (*end || y <= x)
        return -1;
    *a = (int)x;
    *b = (int)y;
    return 0;
}

static void print_bar(const double *b, int color)
{
    int used = 0;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++) {
        int w = (int)(b[c] * BAR_WIDTH + 0.5);
        if (used + w > BAR_WIDTH || c == SP_CAT_EXCLUSIVE - 1)
            w = BAR_WIDTH - used;
        if (w <= 0)
            continue;
        if (color)
            fputs(cat_color[c], stdout);
        for (int i = 0; i < w; i++)
            putchar(color ? ' ' : cat_letter[c]);
        if (color)
            fputs("\033[0m", stdout);
        used += w;
    }
}

static const char *op_name(uint32_t op)
{
    const char *n = sp_enum_name(SP_EV_NCCL, "op", op);
    return n ? n : "op";
}

static void text_overview(const struct sp_model *m)
{
    printf("scaleprof report: %s (source: %s)\n", m->dir, m->source);
    printf("  ranks %d on %d host(s)", m->nranks, m->nhosts);
    if (m->nhosts > 1)
        printf(", residual clock skew ~%.0f us", m->skew_us);
    printf("\n  steps: %d found by %s, %d skipped as warm-up, %d analyzed (%d..%d)\n",
           m->steps_total, m->detected_by, m->step_lo, m->step_hi - m->step_lo, m->step_lo, m->step_hi - 1);
    printf("  step time: mean %.2f ms, median %.2f ms", m->step_mean_ms, m->step_median_ms);
    if (m->step_mean_ms > 0) {
        printf(" -> %.2f steps/s", 1000 / m->step_mean_ms);
        if (m->opts.samples_per_step > 0)
            printf(", %.0f samples/s", m->opts.samples_per_step * m->nranks * 1000 / m->step_mean_ms);
    }
    printf("\n\n");
}

static void text_breakdown(const struct sp_model *m, int color)
{
    printf("where step time went (C compute, M memcpy, T collective transfer, W collective wait,\n"
           "I idle input, H idle host, . idle other):\n");
    printf("  %-8s |", "all");
    print_bar(m->breakdown, color);
    printf("|");
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        printf(" %c%.0f%%", cat_letter[c], 100 * m->breakdown[c]);
    printf("  overlap %.0f%%\n", 100 * m->breakdown[SP_CAT_OVERLAP]);
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if ((m->opts.rank >= 0 && r->rank != m->opts.rank) || !r->cat)
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, r, b);
        printf("  rank %-3d |", r->rank);
        print_bar(b, color);
        printf("| %.2f ms/step %s\n", sp_model_rank_step_ms(m, r), m->hosts[r->host]);
    }
    printf("\n");
}

/* "all", or the list ("0,3"), shortened with "..." when long. */
static void ranks_text(const struct sp_model *m, const struct sp_finding *f, char *out, size_t len)
{
    int analyzed = 0;
    for (int i = 0; i < m->nranks; i++)
        analyzed += m->ranks[i].cat != NULL;
    if (f->nranks == analyzed && analyzed > 1) {
        snprintf(out, len, "all");
        return;
    }
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < f->nranks; i++) {
        int w = snprintf(out + used, len - used, "%s%d", i ? "," : "", f->ranks[i]);
        if (w < 0 || (size_t)w >= len - used) {
            snprintf(out + (used < len - 4 ? used : len - 4), 4, "...");
            return;
        }
        used += (size_t)w;
    }
}

static void text_findings(const struct sp_model *m)
{
    int serious = 0;
    for (int i = 0; i < m->nfindings; i++)
        serious |= m->findings[i].severity > SP_SEV_LOW;
    if (!serious)
        printf("healthy: no finding above low severity.\n");
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        char ranks[64];
        ranks_text(m, f, ranks, sizeof ranks);
        printf("%d. %s [%s] ranks %s, steps %d-%d\n   %s.\n   first try: %s\n", i + 1, f->cause,
               sp_model_severity_name(f->severity), ranks, f->step_first, f->step_last, f->evidence,
               f->first_try);
    }
    printf("\n");
}

static void text_collectives(const struct sp_model *m)
{
    if (!m->ncolls)
        return;
    printf("top collectives:\n  %-16s %-13s %12s %7s %11s %9s %10s\n", "comm", "op", "bytes", "calls",
           "transfer_ms", "wait_ms", "busbw_GB/s");
    for (size_t i = 0; i < m->ncolls && i < TOP_COLLECTIVES; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        printf("  %-16llx %-13s %12llu %7llu %11.3f %9.3f %10.1f%s\n", (unsigned long long)c->comm,
               op_name(c->op), (unsigned long long)c->bytes, (unsigned long long)c->calls, c->transfer_ms,
               c->wait_ms, c->busbw_gbps, c->spans_hosts ? "  (spans hosts)" : "");
    }
    printf("\n");
}

static void text_warnings(const struct sp_model *m)
{
    for (int i = 0; i < m->nwarnings; i++)
        printf("warning: %s\n", m->warnings[i]);
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

static void json_report(const struct sp_model *m)
{
    struct sp_json j;
    sp_json_init(&j, stdout);
    sp_json_open(&j, NULL, '{');
    sp_json_str(&j, "dir", m->dir);
    sp_json_str(&j, "source", m->source);
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_int(&j, "world_size", m->world_size);
    sp_json_open(&j, "hosts", '[');
    for (int h = 0; h < m->nhosts; h++)
        sp_json_str(&j, NULL, m->hosts[h]);
    sp_json_close(&j, ']');
    sp_json_open(&j, "missing_ranks", '[');
    for (int i = 0; i < m->nmissing; i++)
        sp_json_int(&j, NULL, m->missing_ranks[i]);
    sp_json_close(&j, ']');
    sp_json_open(&j, "steps", '{');
    sp_json_str(&j, "detected_by", m->detected_by);
    sp_json_int(&j, "count", m->steps_total);
    sp_json_int(&j, "skipped", m->step_lo);
    sp_json_int(&j, "analyzed", m->step_hi - m->step_lo);
    sp_json_num(&j, "mean_ms", m->step_mean_ms);
    sp_json_num(&j, "median_ms", m->step_median_ms);
    sp_json_close(&j, '}');
    sp_json_open(&j, "throughput", '{');
    sp_json_num(&j, "steps_per_s", m->step_mean_ms > 0 ? 1000 / m->step_mean_ms : 0);
    if (m->opts.samples_per_step > 0 && m->step_mean_ms > 0)
        sp_json_num(&j, "samples_per_s", m->opts.samples_per_step * m->nranks * 1000 / m->step_mean_ms);
    else
        sp_json_null(&j, "samples_per_s");
    sp_json_close(&j, '}');
    json_breakdown(&j, "breakdown", m->breakdown);
    json_unknown(&j, m);
    sp_json_open(&j, "per_rank", '[');
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if ((m->opts.rank >= 0 && r->rank != m->opts.rank) || !r->cat)
            continue;
        double b[SP_CAT_N];
        sp_model_rank_breakdown(m, r, b);
        sp_json_open(&j, NULL, '{');
        sp_json_int(&j, "rank", r->rank);
        sp_json_str(&j, "host", m->hosts[r->host]);
        sp_json_num(&j, "step_ms", sp_model_rank_step_ms(m, r));
        sp_json_int(&j, "helper_processes", r->nhelpers);
        json_breakdown(&j, "breakdown", b);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_open(&j, "collectives", '[');
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        char comm[32];
        snprintf(comm, sizeof comm, "%llx", (unsigned long long)c->comm);
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "comm", comm);
        sp_json_str(&j, "op", op_name(c->op));
        sp_json_int(&j, "bytes", (long long)c->bytes);
        sp_json_int(&j, "nranks", c->nranks);
        sp_json_int(&j, "calls", (long long)c->calls);
        sp_json_num(&j, "transfer_ms", c->transfer_ms);
        sp_json_num(&j, "wait_ms", c->wait_ms);
        sp_json_num(&j, "busbw_gbps", c->busbw_gbps);
        sp_json_bool(&j, "spans_hosts", c->spans_hosts);
        sp_json_int(&j, "incomplete", (long long)c->missing);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_open(&j, "stragglers", '[');
    for (int i = 0; i < m->nstragglers; i++) {
        sp_json_open(&j, NULL, '{');
        sp_json_int(&j, "rank", m->stragglers[i].rank);
        sp_json_num(&j, "last_arrival_fraction", m->stragglers[i].last_fraction);
        sp_json_num(&j, "mean_wait_ms", m->stragglers[i].mean_wait_ms);
        sp_json_str(&j, "cause", m->stragglers[i].cause);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    int serious = 0;
    sp_json_open(&j, "findings", '[');
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        serious |= f->severity > SP_SEV_LOW;
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "cause", f->cause);
        sp_json_str(&j, "severity", sp_model_severity_name(f->severity));
        sp_json_num(&j, "cost", f->cost);
        sp_json_open(&j, "ranks", '[');
        for (int x = 0; x < f->nranks; x++)
            sp_json_int(&j, NULL, f->ranks[x]);
        sp_json_close(&j, ']');
        sp_json_open(&j, "steps", '{');
        sp_json_int(&j, "first", f->step_first);
        sp_json_int(&j, "last", f->step_last);
        sp_json_close(&j, '}');
        sp_json_str(&j, "evidence", f->evidence);
        sp_json_str(&j, "first_try", f->first_try);
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_bool(&j, "healthy", !serious);
    sp_json_open(&j, "warnings", '[');
    for (int i = 0; i < m->nwarnings; i++)
        sp_json_str(&j, NULL, m->warnings[i]);
    sp_json_close(&j, ']');
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

int cmd_report(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'J'},          {"rank", required_argument, NULL, 'r'},
        {"steps", required_argument, NULL, 's'},   {"skip", required_argument, NULL, 'k'},
        {"step-marker", required_argument, NULL, 'm'},
        {"samples-per-step", required_argument, NULL, 'S'},
        {"no-color", no_argument, NULL, 'C'},      {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    struct sp_model_opts o;
    sp_model_opts_default(&o);
    o.progress = 1;
    int json = 0, color = isatty(STDOUT_FILENO) && !getenv("NO_COLOR"), c;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'J': json = 1; break;
        case 'r': o.rank = atoi(optarg); break;
        case 's':
            if (parse_steps(optarg, &o.step_first, &o.step_last) < 0) {
                fprintf(stderr, "scaleprof report: --steps wants A:B with 0 <= A < B\n");
                return 2;
            }
            break;
        case 'k': o.skip = atoi(optarg); break;
        case 'm': o.step_marker = optarg; break;
        case 'S': o.samples_per_step = atof(optarg); break;
        case 'C': color = 0; break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: fputs(usage_text, stderr); return 2;
        }
    }
    if (optind != argc - 1 || o.skip < 0) {
        fputs(usage_text, stderr);
        return 2;
    }
    struct sp_model m;
    int rc = sp_model_analyze(argv[optind], &o, &m);
    if (rc < 0) {
        for (int i = 0; i < m.nwarnings; i++)
            fprintf(stderr, "scaleprof report: %s\n", m.warnings[i]);
        fprintf(stderr, "scaleprof report: nothing to analyze in %s\n", argv[optind]);
        sp_model_free(&m);
        return 1;
    }
    if (json) {
        json_report(&m);
    } else {
        text_overview(&m);
        text_breakdown(&m, color);
        text_findings(&m);
        text_collectives(&m);
        text_warnings(&m);
    }
    sp_model_free(&m);
    return 0;
}
