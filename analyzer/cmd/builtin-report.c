/*
 * builtin-report.c - `scaleprof report DIR`: one screen that says where each
 * GPU's step time went, which collectives cost what, who straggles, and
 * what to fix first; or the same numbers as JSON (docs/report-json.md).
 *
 * Option parsing and output only: the numbers come from the model.
 *
 * Layout: on a terminal the bars take the width left by the longest rank
 * line, and prose (findings, warnings) is wrapped at word boundaries to the
 * terminal's columns (COLUMNS, else TIOCGWINSZ), so that an 80-column
 * window shows no broken lines.  Into a pipe or a file the layout is fixed
 * (bars of BAR_WIDTH, one line per finding's evidence), so that scripts can
 * grep it.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "builtin.h"
#include "ended.h"
#include "hang.h"
#include "host.h"
#include "host_report.h"
#include "seen.h"
#include "kernels.h"
#include "opt.h"
#include "json.h"
#include "verb_json.h"
#include "text.h"
#include "model.h"
#include "model_summary.h"
#include "sprof.h"

#define VERB "report"
#define BAR_WIDTH 50  /* not a terminal: a fixed layout that scripts can rely on */
#define BAR_MIN 10    /* narrower than this a bar says nothing */
#define BAR_MAX 100   /* wider gains no precision worth reading */
#define RANK_LABEL 12 /* "  rank 123 |" */
#define TOP_COLLECTIVES 8
#define KERNEL_NAME_W 48  /* a kernel's name in the text table; JSON has it whole */
#define SHOWN_SHARE 0.005 /* categories under half a percent are left out of the summary */
/* 2: findings carry gain and step_ms_if_fixed, `whatif`, comm ids padded;
 * 3: `stragglers` are the straggler finding's ranks, the arrival table is
 * `last_arrivals`, `view` says which rank --rank shows */
#define SP_REPORT_SCHEMA_VERSION 3

/* The option table as --help prints it, one line a line. */
// clang-format off
static const char usage_text[] =
    "usage: scaleprof report DIR [options]\n"
    "\n"
    "Per-step breakdown per GPU, collectives, stragglers and findings for the\n"
    "traces under DIR (searched recursively).  First, a hang, and the ranks that\n"
    "did not end well: signal or exit status (scaleprof run's DIR/exit-status.HOST),\n"
    "or a trace that ended without closing, with their last recorded activity.\n"
    "\n"
    "  --json                  print the report as JSON (docs/report-json.md)\n"
    "  --per-step              with --json: each analyzed step of each rank too\n"
    "                          (steps_detail: step time and the seven categories)\n"
    "  --csv                   print that per-step table as CSV instead\n"
    "  --rank R                show only rank R in the per-rank view and breakdown\n"
    "                          (the analysis and its findings stay over all ranks)\n"
    SP_MODEL_OPTIONS_HELP
    "  --samples-per-step S    samples per GPU per step, to print samples/s\n"
    "  --kernels [N]           also the top N kernels by GPU time over the analyzed\n"
    "                          steps (default 10): calls, mean/p50/p99, share, per\n"
    "                          rank, and the rank where each runs slowest\n"
    SP_COLOR_HELP
    "  -h, --help              this text\n"
    "\n"
    "On a terminal the bars and text fit its width (COLUMNS, else the window\n"
    "size); into a pipe or file the layout is fixed (bars of 50 characters).\n"
    "\n"
    "Exit status: 0 report printed, 1 nothing analyzable, 2 usage.\n";
// clang-format on

/* The options the text above describes (the model's are added by sp_opts_model). */
static const struct option report_options[] = {
    SP_OPT_JSON,
    {"rank", required_argument, NULL, 'r'},
    {"per-step", no_argument, NULL, 'P'},
    {"csv", no_argument, NULL, 'V'},
    SP_OPT_SAMPLES_PER_STEP,
    SP_OPT_KERNELS,
    SP_OPT_HELP_END,
};

static const char cat_letter[SP_CAT_EXCLUSIVE] = {'C', 'M', 'T', 'W', 'I', 'H', '.'};
/* A black letter on a coloured cell (white on the dark blue and red), so
 * that the bars keep their letters on a terminal and when copied out. */
static const char *const cat_color[SP_CAT_EXCLUSIVE] = {
    "\033[30;42m", "\033[30;46m", "\033[97;44m", "\033[97;41m", "\033[30;43m", "\033[30;45m", "\033[30;47m"};

/* The rank --rank shows, -1 all.  It narrows what is printed per rank,
 * never what is analyzed: the model always sees every rank, so findings,
 * gains and the "all" line are those of the whole job. */
static int view_rank = -1;

static int has_rank(const struct sp_model *m, int rank)
{
    for (int i = 0; i < m->nranks; i++)
        if (m->ranks[i].rank == rank)
            return 1;
    return 0;
}

/* "0-3", "0,2,5", shortened with "..." */
static void rank_list(const struct sp_model *m, char *out, size_t len)
{
    size_t used = 0;
    out[0] = 0;
    for (int i = 0; i < m->nranks && used + 16 < len; i++) {
        int j = i;
        while (j + 1 < m->nranks && m->ranks[j + 1].rank == m->ranks[j].rank + 1)
            j++;
        int w = j > i ? snprintf(out + used, len - used, "%s%d-%d", used ? "," : "", m->ranks[i].rank, m->ranks[j].rank)
                      : snprintf(out + used, len - used, "%s%d", used ? "," : "", m->ranks[i].rank);
        used += (size_t)w;
        i = j;
        if (used + 16 >= len && i + 1 < m->nranks)
            snprintf(out + used, len - used, ",...");
    }
}

static void print_bar(const double *b, int width, int color)
{
    int used = 0;
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++) {
        int w = (int)(b[c] * width + 0.5);
        if (used + w > width || c == SP_CAT_EXCLUSIVE - 1)
            w = width - used;
        if (w <= 0)
            continue;
        if (color)
            fputs(cat_color[c], stdout);
        for (int i = 0; i < w; i++)
            putchar(cat_letter[c]);
        if (color)
            fputs("\033[0m", stdout);
        used += w;
    }
}

static const char *op_name(uint32_t op)
{
    return sp_text_nccl_op(op);
}

/* "rank 2", "ranks 0,1,3" */
static void rank_ints(const int *v, int n, char *out, size_t len)
{
    int w = snprintf(out, len, "%s", n == 1 ? "rank " : "ranks ");
    size_t used = w > 0 ? (size_t)w : 0;
    for (int i = 0; i < n && used + 16 < len; i++)
        used += (size_t)snprintf(out + used, len - used, "%s%d", i ? "," : "", v[i]);
}

static const char *detected_by_text(const char *how)
{
    if (!strcmp(how, "markers"))
        return "from step markers (NVTX ranges)";
    if (!strcmp(how, "collectives"))
        return "from the repeating pattern of collectives";
    if (!strcmp(how, "kernels"))
        return "from the repeating sequence of GPU kernels";
    return "none found: the whole trace is taken as one step";
}

/* The first lines of a report on a job that hung or desynced: what and
 * where, and the verb that says why. */
static void text_hang(const struct sp_model *m, const struct sp_hang *h, int cols)
{
    char line[1024], a[300], b[300], c[300];
    for (int i = 0; i < h->ninsts; i++) {
        const struct sp_hang_inst *x = &h->insts[i];
        if (!x->hung)
            continue;
        rank_ints(x->entered, x->nentered, a, sizeof a);
        rank_ints(x->missing, x->nmissing, b, sizeof b);
        rank_ints(x->absent, x->nabsent, c, sizeof c);
        int w = snprintf(line, sizeof line, "HUNG: the job appears hung in %s #%llu on communicator %016llx: ",
                         op_name(x->op), (unsigned long long)x->seq, (unsigned long long)x->comm);
        if (w > 0 && (size_t)w < sizeof line && x->stalled_rank >= 0)
            w += snprintf(line + w, sizeof line - (size_t)w,
                          "rank %d stopped making progress first (its trace ends "
                          "%.2f s before any other member's: stopped, frozen or died) and the others wait for it; ",
                          x->stalled_rank, x->stalled_s);
        if (w > 0 && (size_t)w < sizeof line && x->inside)
            w += snprintf(line + w, sizeof line - (size_t)w, "every rank entered it and none completed it");
        else if (w > 0 && (size_t)w < sizeof line)
            w += snprintf(line + w, sizeof line - (size_t)w, "%s entered it, %s%s%s%s", x->nentered ? a : "no rank",
                          x->nmissing ? b : "", x->nmissing ? " never did" : "", x->nmissing && x->nabsent ? ", " : "",
                          x->nabsent ? c : "");
        if (w > 0 && (size_t)w < sizeof line && x->nabsent)
            w += snprintf(line + w, sizeof line - (size_t)w, " left no trace");
        if (w > 0 && (size_t)w < sizeof line)
            snprintf(line + w, sizeof line - (size_t)w,
                     "; hung for %.2f s at the end of the traces. See what each rank was doing: scaleprof hang %s",
                     x->hung_s, m->dir);
        sp_text_wrapped(line, 0, 2, cols);
    }
    for (int i = 0; i < h->ndesyncs; i++) {
        const struct sp_hang_desync *d = &h->desyncs[i];
        rank_ints(d->a.ranks, d->a.nranks, a, sizeof a);
        rank_ints(d->b.ranks, d->b.nranks, b, sizeof b);
        snprintf(line, sizeof line,
                 "DESYNC: at #%llu on communicator %016llx %s called %s, %s called %s. See: scaleprof hang %s",
                 (unsigned long long)d->seq, (unsigned long long)d->comm, a, op_name(d->a.op), b,
                 op_name(d->b.op), m->dir);
        sp_text_wrapped(line, 0, 2, cols);
    }
    if (h->nhung || h->ndesyncs)
        printf("\n");
}

/* The first lines of a report on a job whose ranks did not all end well:
 * each rank that failed (signal, exit status or an unclosed trace), with
 * its last activity; the ranks the launcher stopped after it, in one line. */
static struct sp_ended_set ended; /* the ranks that did not end well (ended.h) */

static void ended_line(const char *text, void *arg)
{
    char line[2 * SP_ENDED_TEXT + 16];
    snprintf(line, sizeof line, "ENDED: %s", text);
    sp_text_wrapped(line, 0, 2, *(int *)arg);
}

/* The first lines of a report on a job whose ranks did not all end well:
 * each rank that failed (signal, exit status or an unclosed trace), with
 * its last activity, the first to end first. */
static void text_ended(const struct sp_ended_set *s, int cols)
{
    sp_ended_text(s, ended_line, &cols);
    if (s->n)
        printf("\n");
}

static void json_hang(struct sp_json *j, const struct sp_model *m, const struct sp_hang *h)
{
    char see[4200];
    sp_json_open(j, "hang", '{');
    sp_json_bool(j, "hung", h->nhung > 0);
    sp_verb_json_num_if(j, "hung_s", h->nhung, h->hung_s);
    sp_json_open(j, "instances", '[');
    for (int i = 0; i < h->ninsts; i++) {
        const struct sp_hang_inst *x = &h->insts[i];
        if (!x->hung)
            continue;
        sp_json_open(j, NULL, '{');
        sp_json_comm(j, "comm", x->comm);
        sp_json_int(j, "seq", (long long)x->seq);
        sp_json_str(j, "op", op_name(x->op));
        sp_json_int(j, "bytes", (long long)x->bytes);
        sp_verb_json_ints(j, "entered", x->entered, x->nentered);
        sp_verb_json_ints(j, "missing", x->missing, x->nmissing);
        sp_verb_json_ints(j, "absent", x->absent, x->nabsent);
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

static void text_overview(const struct sp_model *m)
{
    printf("scaleprof report: %s\n", m->dir);
    if (!strcmp(m->source, "preload"))
        printf("  recorded by libscaleprof.so");
    else
        printf("  imported (%s)", m->source);
    char layout[128];
    sp_model_layout_text(m, layout, sizeof layout);
    printf(": %s on %d host%s", layout, m->nhosts, m->nhosts == 1 ? "" : "s");
    if (m->nhosts > 1)
        printf("\n  host clocks aligned to within ~%.0f us", m->skew_us);
    int base = m->step_number0;
    if (base)
        printf("\n  steps: %d (%d-%d, numbered as their markers), %s\n", m->steps_total, base,
               base + m->steps_total - 1, detected_by_text(m->detected_by));
    else
        printf("\n  steps: %d, %s\n", m->steps_total, detected_by_text(m->detected_by));
    if (m->steps_set_aside > 0)
        printf("  %d passes between steps set aside (collectives of their own, none of a step's: "
               "evaluation?), in no step's time\n",
               m->steps_set_aside);
    if (m->step_hi > m->step_lo)
        printf("  analyzed: steps %d-%d (%d); %d skipped as warm-up\n", m->step_lo + base, m->step_hi - 1 + base,
               m->step_hi - m->step_lo, m->step_lo);
    if (view_rank >= 0)
        printf("  view: rank %d shown; the \"all\" line, findings and collectives are over all %d ranks\n",
               view_rank, m->nranks);
    printf("  step time: mean %.2f ms, median %.2f ms", m->step_mean_ms, m->step_median_ms);
    if (m->step_mean_ms > 0) {
        printf(" = %.2f steps/s", 1000 / m->step_mean_ms);
        if (m->opts.samples_per_step > 0)
            printf(", %.0f samples/s over all GPUs",
                   m->opts.samples_per_step * m->nranks * 1000 / m->step_mean_ms);
    }
    printf("\n\n");
}

static int shown(const struct sp_model *m, const struct sp_rank *r)
{
    (void)m;
    return (view_rank < 0 || r->rank == view_rank) && r->cat;
}

/* What follows a rank's bar: step time, host, helper processes. */
static int rank_suffix(const struct sp_model *m, const struct sp_rank *r, int host_w, char *out, size_t len)
{
    int w = snprintf(out, len, " %7.2f ms/step  host %-*s", sp_model_rank_step_ms(m, r), host_w,
                     m->hosts[r->host]);
    if (r->shared > 1 && w > 0 && (size_t)w < len) /* one of several GPUs of its process */
        w += snprintf(out + w, len - (size_t)w, "  GPU %d", r->device);
    if (r->nhelpers > 0 && w > 0 && (size_t)w < len)
        w += snprintf(out + w, len - (size_t)w, "  %d loader proc%s", r->nhelpers, r->nhelpers == 1 ? "" : "s");
    while (w > 0 && out[w - 1] == ' ')
        out[--w] = 0; /* the host column's padding, when nothing follows it */
    return w;
}

static int bar_width(const struct sp_model *m, int cols)
{
    if (cols <= 0)
        return BAR_WIDTH;
    int host_w = 0, suffix = 0;
    char buf[512];
    for (int i = 0; i < m->nranks; i++) {
        int l = (int)strlen(m->hosts[m->ranks[i].host]);
        host_w = l > host_w ? l : host_w;
    }
    for (int i = 0; i < m->nranks; i++) {
        int l = rank_suffix(m, &m->ranks[i], host_w, buf, sizeof buf);
        suffix = l > suffix ? l : suffix;
    }
    int w = cols - RANK_LABEL - 1 - suffix - 1; /* -1: a line that fills the last column wraps on some terminals */
    return w < BAR_MIN ? BAR_MIN : (w > BAR_MAX ? BAR_MAX : w);
}

static void legend_item(int cat, const char *text, int color)
{
    if (color)
        printf("  %s%c\033[0m %-29s", cat_color[cat], cat_letter[cat], text);
    else
        printf("  %c %-29s", cat_letter[cat], text);
}

static void text_legend(int color)
{
    printf("where each GPU's step time went (share of the step; each moment counted once):\n");
    // clang-format off
    static const struct { int left, right; const char *l, *r; } rows[] = {
        {SP_CAT_COMPUTE, SP_CAT_IDLE_INPUT, "compute", "idle, waiting for input (data loader, reads)"},
        {SP_CAT_MEMCPY, SP_CAT_IDLE_HOST, "memory copy", "idle, host busy in a CUDA sync or launching"},
        {SP_CAT_COLL_TRANSFER, SP_CAT_IDLE_OTHER, "collective transfer (data)", "idle, nothing on the host explains it"},
        {SP_CAT_COLL_WAIT, -1, "collective wait (late rank)", NULL},
    };
    // clang-format on
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].right < 0) {
            if (color)
                printf("  %s%c\033[0m %s\n", cat_color[rows[i].left], cat_letter[rows[i].left], rows[i].l);
            else
                printf("  %c %s\n", cat_letter[rows[i].left], rows[i].l);
            continue;
        }
        legend_item(rows[i].left, rows[i].l, color);
        {
            if (color)
                printf("%s%c\033[0m %s", cat_color[rows[i].right], cat_letter[rows[i].right], rows[i].r);
            else
                printf("%c %s", cat_letter[rows[i].right], rows[i].r);
        }
        printf("\n");
    }
}

/* "compute 40%, collective wait 14%, ...; overlap": the bar in words. */
static void text_shares(const struct sp_model *m, int cols)
{
    char line[1024];
    int w = snprintf(line, sizeof line, "all ranks:");
    const char *sep = " ";
    for (int c = 0; c < SP_CAT_EXCLUSIVE && w > 0 && (size_t)w < sizeof line; c++) {
        if (m->breakdown[c] < SHOWN_SHARE)
            continue;
        char name[64];
        snprintf(name, sizeof name, "%s", sp_model_cat_name(c));
        for (char *p = name; *p; p++)
            *p = *p == '_' ? ' ' : *p;
        w += snprintf(line + w, sizeof line - (size_t)w, "%s%s %.0f%%", sep, name, 100 * m->breakdown[c]);
        sep = ", ";
    }
    if (w > 0 && (size_t)w < sizeof line && m->breakdown[SP_CAT_OVERLAP] >= SHOWN_SHARE)
        snprintf(line + w, sizeof line - (size_t)w, "; besides, collectives ran %.0f%% of the step hidden "
                                                    "under compute (overlap, not a cost)",
                 100 * m->breakdown[SP_CAT_OVERLAP]);
    printf("  ");
    sp_text_wrapped(line, 2, 4, cols);
}

static void text_breakdown(const struct sp_model *m, int color, int cols)
{
    int width = bar_width(m, cols), host_w = 0, helpers = 0;
    text_legend(color);
    for (int i = 0; i < m->nranks; i++) {
        int l = (int)strlen(m->hosts[m->ranks[i].host]);
        host_w = l > host_w ? l : host_w;
    }
    printf("  %-8s |", "all");
    print_bar(m->breakdown, width, color);
    printf("| %7.2f ms/step (mean)\n", m->step_mean_ms);
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!shown(m, r))
            continue;
        double b[SP_CAT_N];
        char suffix[512];
        sp_model_rank_breakdown(m, r, b);
        rank_suffix(m, r, host_w, suffix, sizeof suffix);
        printf("  rank %-3d |", r->rank);
        print_bar(b, width, color);
        printf("|%s\n", suffix);
        helpers += r->nhelpers;
    }
    text_shares(m, cols);
    if (helpers)
        printf("  loader procs: a rank's child processes, e.g. DataLoader workers\n");
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

/* Healthy: no finding would save 5% or more of the step (never said when
 * the replay's check withheld a gain: what it would save is unknown). */
static int is_healthy(const struct sp_model *m)
{
    if (m->check.withheld)
        return 0;
    for (int i = 0; i < m->nfindings; i++)
        if (m->findings[i].severity > SP_SEV_LOW)
            return 0;
    return 1;
}

static int finding_names(const struct sp_finding *f, int rank)
{
    for (int x = 0; x < f->nranks; x++)
        if (f->ranks[x] == rank)
            return 1;
    return 0;
}

static void text_findings(const struct sp_model *m, int cols)
{
    if (is_healthy(m))
        printf("healthy: no finding would save 5%% or more of the step.\n");
    else if (!m->nfindings)
        printf("no finding listed: the what-if replay cannot back their gains.\n");
    else
        printf("findings, by the step time fixing each alone would save (severity in brackets):\n");
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        char ranks[64], evidence[SP_MODEL_TEXT + 2];
        ranks_text(m, f, ranks, sizeof ranks);
        int all = !strcmp(ranks, "all");
        char head[256];
        const char *part_of = sp_cause_part_of(f->cause);
        int w = snprintf(head, sizeof head, "%d. %s%s%s%s [%s] %s%s, steps %d-%d:", i + 1, ci->name,
                         part_of ? " (part of " : "", part_of ? part_of : "", part_of ? ")" : "",
                         sp_model_severity_name(f->severity), all ? "" : (f->nranks == 1 ? "rank " : "ranks "),
                         all ? "all ranks" : ranks, f->step_first, f->step_last);
        if (w > 0 && (size_t)w < sizeof head)
            w += snprintf(head + w, sizeof head - (size_t)w, " saves %.0f%% (%.2f -> %.2f ms per step)",
                          100 * f->gain, m->step_mean_ms, f->step_ms_if_fixed);
        if (w > 0 && (size_t)w < sizeof head && view_rank >= 0 && finding_names(f, view_rank))
            snprintf(head + w, sizeof head - (size_t)w, "; concerns rank %d (shown)", view_rank);
        sp_text_wrapped(head, 0, 3, cols);
        printf("   ");
        snprintf(evidence, sizeof evidence, "%s.", f->evidence);
        sp_text_wrapped(evidence, 3, 3, cols);
        printf("   first try: ");
        sp_text_wrapped(sp_finding_first_try(f), 14, 5, cols);
    }
    if (m->nfindings > 1 && m->ideal_step_ms > 0)
        printf("with all of these fixed: %.2f ms per step (%.0f%% faster than now)\n", m->ideal_step_ms,
               100 * (1 - m->ideal_step_ms / m->step_mean_ms));
    if (m->check.done && !m->check.ok)
        printf("the what-if replay fails its check (see the warnings): the gains it cannot back are withheld\n");
    printf("\n");
}

static void text_collectives(const struct sp_model *m, int cols)
{
    if (!m->ncolls)
        return;
    int spans = 0;
    printf("top collectives (per call, mean over the analyzed steps):\n"
           "  %-17s %-13s %9s %6s %9s %8s %8s\n",
           "communicator", "operation", "size", "calls",
           "transfer", "wait", "bus");
    printf("  %-17s %-13s %9s %6s %9s %8s %8s\n", "", "", "", "", "ms", "ms", "GB/s");
    for (size_t i = 0; i < m->ncolls && i < TOP_COLLECTIVES; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        char size[32], comm[32], tr[16], wait[16], bus[16];
        /* what the trace cannot say is printed as unknown, not as 0: a size
         * not recorded, an instance some peer never reached (no last
         * arrival, so no wait or transfer), hence no bandwidth */
        int whole = c->missing < c->calls;
        if (c->bytes)
            sp_text_bytes(c->bytes, size, sizeof size);
        else
            snprintf(size, sizeof size, "?");
        /* with a peer missing, the kernel's time is an upper bound of the
         * transfer (>= bandwidth), and the wait unknown */
        snprintf(tr, sizeof tr, whole ? "%.3f" : "<%.3f", c->transfer_ms);
        snprintf(wait, sizeof wait, whole ? "%.3f" : "?", c->wait_ms);
        snprintf(bus, sizeof bus, !c->bytes || c->busbw_gbps <= 0 ? "?" : (whole ? "%.1f" : ">%.1f"), c->busbw_gbps);
        snprintf(comm, sizeof comm, "%016llx%s", (unsigned long long)c->comm, c->spans_hosts ? "*" : "");
        spans |= c->spans_hosts;
        printf("  %-17s %-13s %9s %6llu %9s %8s %8s\n", comm, op_name(c->op), size,
               (unsigned long long)c->calls, tr, wait, bus);
    }
    printf("  ");
    sp_text_wrapped("transfer: data moving once the last rank arrived; wait: time a rank waited for "
                    "late peers; bus: bus bandwidth as nccl-tests counts it; ?: unknown (size not recorded, "
                    "or the wait where a peer's trace is missing); < and >: bounds, with a peer missing",
                    2, 2, cols);
    if (spans)
        printf("  * the communicator spans hosts\n");
    printf("\n");
}

static void text_warnings(const struct sp_model *m, int cols)
{
    for (int i = 0; i < m->nwarnings; i++) {
        printf("warning: ");
        sp_text_wrapped(m->warnings[i], 9, 2, cols);
    }
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

static void each_step_row(const struct sp_model *m, step_row_fn fn, void *arg)
{
    for (int i = 0; i < m->nranks; i++) {
        const struct sp_rank *r = &m->ranks[i];
        if (!shown(m, r))
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

static void csv_steps(const struct sp_model *m)
{
    printf("rank,step,step_ms");
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        printf(",%s_ms", sp_model_cat_name(c));
    printf("\n");
    each_step_row(m, csv_step_row, NULL);
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

/* The kernel view's text: one line per kernel, the slowest rank with its
 * mean against the median rank's. */
static void text_kernels(const struct sp_model *m, const struct sp_kernels *k, int top, int cols)
{
    size_t n = (size_t)top < k->n ? (size_t)top : k->n;
    printf("top %zu kernels by GPU time over steps %d-%d (%zu kernel names, %.2f ms on %d rank%s):\n", n,
           m->step_lo + m->step_number0, m->step_hi - 1 + m->step_number0, k->n, k->ns / 1e6, m->nranks,
           m->nranks == 1 ? "" : "s");
    printf("  %6s %10s %7s %9s %9s %9s  %-17s %s\n", "share", "total ms", "calls", "mean us", "p50 us", "p99 us",
           "slowest rank", "kernel");
    for (size_t i = 0; i < n; i++) {
        const struct sp_kernel_stat *s = &k->k[i];
        char slow[32] = "-";
        if (s->slowest >= 0)
            snprintf(slow, sizeof slow, "%d (%.2fx)", m->ranks[s->slowest].rank, s->slowest_x);
        printf("  %5.1f%% %10.3f %7llu %9.1f %9.1f %9.1f  %-17s %.*s%s%s\n", k->ns > 0 ? 100 * s->ns / k->ns : 0,
               s->ns / 1e6, (unsigned long long)s->calls, s->mean_ns / 1e3, s->p50_ns / 1e3, s->p99_ns / 1e3, slow,
               KERNEL_NAME_W, s->name, strlen(s->name) > KERNEL_NAME_W ? "..." : "", s->nccl ? " [nccl]" : "");
    }
    printf("  ");
    sp_text_wrapped("share: of all kernel time on all ranks; slowest rank: the rank whose calls of that kernel "
                    "take longest on average, against the median rank's mean (--json: every rank's calls, "
                    "time and share, and whole names)",
                    2, 2, cols);
    printf("\n");
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
        if (!finding_names(f, r->rank))
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

/* A job with no GPU record: the host-side view (analyses/host.c) in
 * place of the GPU breakdown, labelled as such. */
static int host_report(struct sp_model *m, int json, int csv)
{
    if (csv) {
        sp_seen_no_gpu(VERB, m, "the per-step table is per GPU, so there is none; without --csv the "
                                "report shows the host-side view");
        return 1;
    }
    sp_seen_no_gpu(VERB, m, "what follows is the host-side view (iterations, input wait, loader workers, "
                            "reads), with no GPU claim");
    struct sp_host h;
    if (sp_host_analyze(m, &h) < 0) {
        fprintf(stderr, "scaleprof report: the host-side view ran out of memory\n");
        sp_host_free(&h);
        return 1;
    }
    if (json)
        sp_host_json(m, &h, SP_REPORT_SCHEMA_VERSION, SCALEPROF_VERSION);
    else
        sp_host_text(m, &h, sp_text_columns());
    sp_host_free(&h);
    return 0;
}

static void json_report(const struct sp_model *m, int per_step, const struct sp_hang *h,
                        const struct sp_kernels *kernels, int top_kernels)
{
    struct sp_json j;
    sp_json_init(&j, stdout);
    sp_json_open(&j, NULL, '{');
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
    sp_json_open(&j, "hosts", '[');
    for (int k = 0; k < m->nhosts; k++)
        sp_json_str(&j, NULL, m->hosts[k]);
    sp_json_close(&j, ']');
    char layout[128];
    sp_model_layout_text(m, layout, sizeof layout);
    sp_json_open(&j, "layout", '{');
    sp_json_int(&j, "ranks", m->nranks);
    sp_json_int(&j, "processes", m->rank_procs);
    sp_json_int(&j, "gpus", m->gpus);
    sp_json_int(&j, "multi_rank_processes", m->multi_rank_procs);
    sp_json_str(&j, "text", layout);
    sp_json_close(&j, '}');
    sp_json_open(&j, "missing_ranks", '[');
    for (int i = 0; i < m->nmissing; i++)
        sp_json_int(&j, NULL, m->missing_ranks[i]);
    sp_json_close(&j, ']');
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
        if (!shown(m, r))
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
        each_step_row(m, json_step_row, &j);
        sp_json_close(&j, ']');
    }
    sp_json_open(&j, "collectives", '[');
    for (size_t i = 0; i < m->ncolls; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        sp_json_open(&j, NULL, '{');
        sp_json_comm(&j, "comm", c->comm);
        sp_json_str(&j, "op", op_name(c->op));
        int whole = c->missing < c->calls; /* else no instance had all its peers */
        if (c->bytes)
            sp_json_int(&j, "bytes", (long long)c->bytes);
        else
            sp_json_null(&j, "bytes");
        sp_json_int(&j, "nranks", c->nranks);
        sp_json_int(&j, "calls", (long long)c->calls);
        sp_json_num(&j, "transfer_ms", c->transfer_ms);
        if (whole)
            sp_json_num(&j, "wait_ms", c->wait_ms);
        else
            sp_json_null(&j, "wait_ms");
        if (c->bytes && c->busbw_gbps > 0)
            sp_json_num(&j, "busbw_gbps", c->busbw_gbps);
        else
            sp_json_null(&j, "busbw_gbps");
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
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        sp_json_open(&j, NULL, '{');
        sp_json_str(&j, "cause", ci->name);
        sp_json_str(&j, "severity", sp_model_severity_name(f->severity));
        sp_json_num(&j, "gain", f->gain);
        sp_json_num(&j, "step_ms_if_fixed", f->step_ms_if_fixed);
        sp_json_num(&j, "cost", f->gain);
        sp_verb_json_ints(&j, "ranks", f->ranks, f->nranks);
        if (f->rank_gains) {
            sp_json_open(&j, "rank_gains", '[');
            for (int x = 0; x < f->nranks; x++) {
                sp_json_open(&j, NULL, '{');
                sp_json_int(&j, "rank", f->ranks[x]);
                sp_json_num(&j, "gain", f->rank_gains[x]);
                sp_json_close(&j, '}');
            }
            sp_json_close(&j, ']');
        }
        sp_json_open(&j, "steps", '{');
        sp_json_int(&j, "first", f->step_first);
        sp_json_int(&j, "last", f->step_last);
        sp_json_close(&j, '}');
        sp_json_str(&j, "evidence", f->evidence);
        sp_json_str(&j, "first_try", sp_finding_first_try(f));
        sp_json_str(&j, "docs", ci->anchor);
        if (sp_cause_part_of(f->cause))
            sp_json_str(&j, "part_of", sp_cause_part_of(f->cause));
        sp_json_close(&j, '}');
    }
    sp_json_close(&j, ']');
    sp_json_bool(&j, "healthy", is_healthy(m));
    json_hang(&j, m, h);
    sp_ended_json(&j, &ended);
    sp_json_open(&j, "whatif", '{');
    sp_json_num(&j, "replayed_step_ms", m->replay_step_ms);
    if (m->ideal_step_ms > 0)
        sp_json_num(&j, "ideal_step_ms", m->ideal_step_ms);
    else
        sp_json_null(&j, "ideal_step_ms");
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

/* cmd_report's end once the model is open: m, hang and the ranks that
 * ended (ended) freed, rc returned. */
static int report_end(struct sp_model *m, struct sp_hang *hang, int rc)
{
    sp_hang_free(hang);
    sp_ended_free(&ended);
    sp_model_free(m);
    return rc;
}

int cmd_report(int argc, char **argv)
{
    struct sp_model_opts o;
    char kernels_arg[64];
    argc = sp_opt_join_number(argc, argv, "--kernels", kernels_arg, sizeof kernels_arg);
    int json = 0, per_step = 0, csv = 0, color = sp_color_on(stdout), c;
    struct sp_opts p = sp_opts_model(VERB, report_options, &o);
    while ((c = sp_opts_next(&p, argc, argv, "h")) != -1) {
        switch (c) {
        case 'J': json = 1; break;
        case 'P': per_step = 1; break;
        case 'V': csv = 1; break;
        case 'r':
            if (sp_opt_int(VERB, "--rank", optarg, 0, INT32_MAX, &view_rank) < 0)
                return SP_EXIT_USAGE;
            break;
        case 'h': fputs(usage_text, stdout); return 0;
        default: return SP_EXIT_USAGE; /* said by sp_opts_next */
        }
    }
    if (optind == argc)
        return sp_usage_error(VERB, "no trace directory given (scaleprof report DIR)");
    if (csv && json)
        return sp_usage_error(VERB, "--csv and --json are two formats; give one");
    if (per_step && !json && !csv)
        return sp_usage_error(VERB, "--per-step goes with --json (or use --csv for the same table)");
    if (optind != argc - 1)
        return sp_usage_error(VERB, "one trace directory expected, got %d (%s, %s%s); "
                                    "scaleprof compare takes several",
                              argc - optind, argv[optind],
                              argv[optind + 1], argc - optind > 2 ? ", ..." : "");
    const char *dir = argv[optind];
    int top_kernels = p.shared.top_kernels;
    struct sp_model m;
    int rc = sp_model_open(dir, &o, &m);
    if (rc == 0 && view_rank >= 0 && !has_rank(&m, view_rank)) {
        char list[256];
        rank_list(&m, list, sizeof list);
        fprintf(stderr, "scaleprof report: --rank %d: no such rank in %s (its traces hold rank%s %s)\n", view_rank,
                dir, m.nranks == 1 ? "" : "s", list);
        sp_model_free(&m);
        return SP_EXIT_USAGE;
    }
    /* a hang is looked for before the steps: it is what the report says first */
    struct sp_hang hang;
    struct sp_hang_opts ho;
    sp_hang_opts_default(&ho);
    memset(&hang, 0, sizeof hang);
    memset(&ended, 0, sizeof ended);
    if (rc == 0)
        sp_ended_analyze(&m, &ended);
    if (rc == 0) {
        int failed[64];
        sp_hang_analyze(&m, &ho, &hang);
        sp_hang_mark_failed(&hang, failed, sp_ended_failed(&ended, failed, 64));
    }
    if (rc == 0 && !json && !csv)
        text_hang(&m, &hang, sp_text_columns());
    if (rc == 0 && !json && !csv)
        text_ended(&ended, sp_text_columns());
    /* a CPU-only job, or one whose GPU work was not seen: every number
     * below is about GPUs, so none is printed */
    if (rc == 0 && !sp_seen_gpu(&m)) {
        int hrc = host_report(&m, json, csv);
        return report_end(&m, &hang, hrc);
    }
    if (rc == 0)
        rc = sp_model_run(&m, SP_STAGE_STEPS);
    if (rc == 0 && sp_opt_steps_missing(VERB, &m)) {
        return report_end(&m, &hang, SP_EXIT_USAGE);
    }
    if (rc == 0)
        rc = sp_model_run(&m, SP_STAGE_FINDINGS);
    if (rc == 0 && m.step_mean_ms <= 0) {
        fprintf(stderr, "scaleprof report: %s: no step time was measured (the traces end before a step "
                        "completes: a job that crashed at start?)%s\n",
                dir,
                hang.nhung ? "; it appears hung: scaleprof hang DIR says where" : "");
        return report_end(&m, &hang, 1);
    }
    if (rc < 0) {
        sp_opt_nothing_to_analyze(VERB, &m, dir);
        return report_end(&m, &hang, 1);
    }
    struct sp_kernels kernels;
    memset(&kernels, 0, sizeof kernels);
    if (top_kernels && sp_model_from_summaries(&m)) {
        sp_opt_kernels_need_traces(VERB);
        return report_end(&m, &hang, 1);
    }
    if (top_kernels && !csv && sp_kernels_analyze(&m, &kernels) < 0) {
        fprintf(stderr, "scaleprof report: the kernel view ran out of memory\n");
        sp_kernels_free(&kernels);
        return report_end(&m, &hang, 1);
    }
    if (csv) {
        csv_steps(&m);
    } else if (json) {
        json_report(&m, per_step, &hang, top_kernels ? &kernels : NULL, top_kernels);
    } else {
        int cols = sp_text_columns();
        text_overview(&m);
        text_breakdown(&m, color, cols);
        text_findings(&m, cols);
        text_collectives(&m, cols);
        if (top_kernels)
            text_kernels(&m, &kernels, top_kernels, cols);
        text_warnings(&m, cols);
    }
    sp_kernels_free(&kernels);
    return report_end(&m, &hang, 0);
}
