/*
 * report_text.c - `scaleprof report`'s screen (report_out.h): the
 * overview, a bar per rank of where its step time went, the findings with
 * their evidence, the collectives, the kernels (--kernels) and warnings;
 * before them the lines of a hang and of ranks that did not end well.
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

#include "report_out.h"
#include "text.h"

#define BAR_WIDTH 50  /* not a terminal: a fixed layout that scripts can rely on */
#define BAR_MIN 10    /* narrower than this a bar says nothing */
#define BAR_MAX 100   /* wider gains no precision worth reading */
#define RANK_LABEL 12 /* "  rank 123 |" */
#define TOP_COLLECTIVES 8
#define KERNEL_NAME_W 48  /* a kernel's name in the text table; JSON has it whole */
#define SHOWN_SHARE 0.005 /* categories under half a percent are left out of the summary */

static const char cat_letter[SP_CAT_EXCLUSIVE] = {'C', 'M', 'T', 'W', 'I', 'H', '.'};
/* A black letter on a coloured cell (white on the dark blue and red), so
 * that the bars keep their letters on a terminal and when copied out. */
static const char *const cat_color[SP_CAT_EXCLUSIVE] = {
    "\033[30;42m", "\033[30;46m", "\033[97;44m", "\033[97;41m", "\033[30;43m", "\033[30;45m", "\033[30;47m"};

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
    if (!strcmp(how, "given"))
        return "as given with the model's ops";
    return "none found: the whole trace is taken as one step";
}

/* The first lines of a report on a job that hung or desynced: what and
 * where, and the verb that says why. */
void sp_report_text_hang(const struct sp_model *m, const struct sp_hang *h, int cols)
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
                         sp_text_nccl_op(x->op), (unsigned long long)x->seq, (unsigned long long)x->comm);
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
                 (unsigned long long)d->seq, (unsigned long long)d->comm, a, sp_text_nccl_op(d->a.op), b,
                 sp_text_nccl_op(d->b.op), m->dir);
        sp_text_wrapped(line, 0, 2, cols);
    }
    if (h->nhung || h->ndesyncs)
        printf("\n");
}
static void ended_line(const char *text, void *arg)
{
    char line[2 * SP_ENDED_TEXT + 16];
    snprintf(line, sizeof line, "ENDED: %s", text);
    sp_text_wrapped(line, 0, 2, *(int *)arg);
}

/* The first lines of a report on a job whose ranks did not all end well:
 * each rank that failed (signal, exit status or an unclosed trace), with
 * its last activity, the first to end first. */
void sp_report_text_ended(const struct sp_ended_set *s, int cols)
{
    sp_ended_text(s, ended_line, &cols);
    if (s->n)
        printf("\n");
}
static void text_overview(const struct sp_model *m, int view_rank)
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

static void text_breakdown(const struct sp_model *m, int view_rank, int color, int cols)
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
        if (!sp_report_shown(view_rank, r))
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

static void text_findings(const struct sp_model *m, int view_rank, int cols)
{
    if (sp_report_healthy(m))
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
        if (w > 0 && (size_t)w < sizeof head && view_rank >= 0 && sp_finding_names(f, view_rank))
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
        printf("  %-17s %-13s %9s %6llu %9s %8s %8s\n", comm, sp_text_nccl_op(c->op), size,
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

void sp_report_text(const struct sp_model *m, int view_rank, int color, const struct sp_kernels *kernels,
                    int top_kernels)
{
    int cols = sp_text_columns();
    text_overview(m, view_rank);
    text_breakdown(m, view_rank, color, cols);
    text_findings(m, view_rank, cols);
    text_collectives(m, cols);
    if (top_kernels)
        text_kernels(m, kernels, top_kernels, cols);
    text_warnings(m, cols);
}
