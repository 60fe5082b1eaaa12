/*
 * html_report.c - the report and the comparison as one HTML page.
 *
 * Self-contained and static: CSS in the page, charts as inline SVG
 * written here (no script, no plotting library, no font to fetch), so the
 * file opens anywhere, offline, with JavaScript off, and can be mailed.
 * Every chart element carries its number twice: in a data-* attribute
 * (what tests and scripts read) and in a <title> (the tooltip a browser
 * shows); the tables beside the charts give the same numbers as text.
 *
 * The numbers are the model's (and compare.c's): this file only draws.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "html_report.h"
#include "json.h"
#include "text.h"
#include "units.h"

#define CHART_W 900         /* px: every chart's width */
#define LABEL_W 150         /* the row labels' column */
#define VALUE_W 110         /* the value column right of bars */
#define ROW_MAX 22          /* px per row with few rows */
#define ROW_MIN 6           /* and with many (64 ranks still fit a screen) */
#define ROWS_TALL 600       /* rows share about this height when many */
#define LINES_RANKS 4       /* more ranks than this: a heat map instead of lines */
#define ALL_RANKS_MAX 64    /* more: detail ranks and the mean, binned heat map */
#define DETAIL_RANKS 16     /* the ranks those charts show */
#define HEAT_ROWS 64        /* at most this many rows (groups of ranks) in the binned heat map */
#define HEAT_COLS 48        /* and columns (steps, or groups of steps) in any */
#define STEP_LABEL_W 32     /* px a step number's label takes, with room either side */
#define STEP_RANGE_H 200    /* the step-time chart above a heat map */
#define STEP_POINTS_MAX 500 /* more steps: that chart's lines without a point per step */
#define BIN_LABEL_W 130     /* the binned heat map's label column: "ranks 65472-65535" */
#define LOST_LABEL_W 80     /* px right of chart-lost for a row's total */
#define ROW_LABEL_H 14      /* px a row label takes, leading included */
#define EFF_PAD 34          /* px between the efficiency chart's axis and its first point */
#define EFF_LABEL_W 52      /* px an efficiency chart's "64 GPUs" label takes */
#define LINE_H 300
#define TOP_COLLECTIVES 8

static const char *const cat_color[SP_CAT_EXCLUSIVE] = {
    "#4c9a2a",
    "#2ab7ca",
    "#3367d6",
    "#d63b3b",
    "#e8a317",
    "#a64ca6",
    "#b0b0b0",
};
static const char *const cat_label[SP_CAT_EXCLUSIVE] = {
    "compute",
    "memory copy",
    "collective transfer",
    "collective wait",
    "idle: input",
    "idle: host",
    "idle: other",
};
/* one colour per rank line, cycled */
static const char *const line_color[] = {
    "#3367d6", "#d63b3b", "#4c9a2a", "#e8a317", "#a64ca6", "#2ab7ca", "#7a5230", "#555555",
    "#e377c2", "#17becf", "#bcbd22", "#8c564b", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd"};
#define NLINE_COLORS (sizeof line_color / sizeof line_color[0])

/* ---- text ---- */

/* What stands for c in HTML text and attribute values; NULL: c itself. */
static const char *html_entity(char c)
{
    switch (c) {
    case '<': return "&lt;";
    case '>': return "&gt;";
    case '&': return "&amp;";
    case '"': return "&quot;";
    default: return NULL;
    }
}

/* s as HTML text, always valid UTF-8: a byte that does not begin a
 * well-formed sequence (a damaged host name, a path from a trace) is
 * written as the character of the same value (&#xNN;), as the JSON
 * writer does (sp_json_put_string). */
static void esc(FILE *out, const char *s)
{
    for (; s && *s; s++) {
        if ((unsigned char)*s >= 0x80) {
            int n = sp_utf8_len((const unsigned char *)s);
            if (n) {
                fwrite(s, 1, (size_t)n, out);
                s += n - 1;
            } else {
                fprintf(out, "&#x%02x;", (unsigned char)*s);
            }
            continue;
        }
        const char *entity = html_entity(*s);
        if (entity)
            fputs(entity, out);
        else
            putc(*s, out);
    }
}

static const char *op_name(uint32_t op)
{
    return sp_text_nccl_op(op);
}

static void page_head(FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>", out);
    esc(out, title);
    fputs("</title>\n<style>\n"
          "body{font-family:system-ui,-apple-system,'Segoe "
          "UI',Helvetica,Arial,sans-serif;margin:24px auto;padding:0 12px;"
          "max-width:960px;color:#222;line-height:1.4}\n"
          /* narrow windows: charts scale down with their text (so labels
           * keep their spacing), wide tables scroll inside their box */
          "svg{max-width:100%;height:auto}.wide{max-width:100%;overflow-x:auto}\n"
          ".finding h3,.finding p{overflow-wrap:anywhere}\n"
          "h1{font-size:1.5em;margin-bottom:0}h2{font-size:1.15em;margin-top:2em;border-bottom:1px "
          "solid #ddd}\n"
          ".sub{color:#666;margin-top:2px}\n"
          "table{border-collapse:collapse;margin:8px 0;font-size:.9em}"
          "td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:right;white-space:nowrap}"
          "#summary-table td{text-align:left;white-space:normal}"
          "td:first-child,th:first-child{text-align:left}\n"
          ".finding{border-left:4px solid #999;padding:4px 12px;margin:10px 0;background:#fafafa}\n"
          ".sev-high{border-color:#d63b3b}.sev-moderate{border-color:#e8a317}.sev-low{border-color:"
          "#4c9a2a}\n"
          ".finding h3{margin:2px 0;font-size:1em}.try{color:#333}.try b{color:#000}\n"
          "figure{margin:12px 0}figcaption{font-weight:600;margin-bottom:4px}\n"
          "svg text{font-family:inherit;font-size:11px;fill:#333}\n"
          ".legend span{display:inline-block;margin-right:14px;font-size:.85em}"
          ".legend "
          "i{display:inline-block;width:11px;height:11px;margin-right:4px;vertical-align:-1px}\n"
          ".warn{color:#8a5a00}.note{color:#666;font-size:.9em}\n"
          "</style>\n</head>\n<body>\n",
          out);
}

static void legend(FILE *out)
{
    fputs("<div class=\"legend\">", out);
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        fprintf(out, "<span><i style=\"background:%s\"></i>%s</span>", cat_color[c], cat_label[c]);
    fputs("</div>\n", out);
}

/* ---- charts ---- */

/* A round axis end and tick step for values up to max. */
static double nice_step(double max, int ticks)
{
    if (max <= 0) return 1;
    double raw = max / ticks, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f <= 1 ? 1 : f <= 2 ? 2
                     : f <= 5   ? 5
                                : 10) *
           p;
}

/* A chart's horizontal grid lines from 0 to end, one every step, each
 * labelled with its value and unit at the left of the plot area
 * (x0, y0, w, h). */
static void y_gridlines(FILE *out, double x0, double w, double y0, double h, double end, double step,
                        const char *unit)
{
    for (double v = 0; v <= end + step / 2; v += step) {
        double y = y0 + h - h * v / end;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#eee\"/><text "
                "x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%g%s</text>\n",
                x0, y, x0 + w, y, x0 - 4, y + 4, v, unit);
    }
}


static int row_height(int n)
{
    int h = n > 0 ? ROWS_TALL / n : ROW_MAX;
    return h > ROW_MAX ? ROW_MAX : h < ROW_MIN ? ROW_MIN
                                               : h;
}

/* Rows of rh px: label every how many, so that labels (ROW_LABEL_H px
 * tall with their line's leading) never overlap. */
static int label_every(int rh)
{
    return rh >= ROW_LABEL_H ? 1 : (ROW_LABEL_H + rh - 1) / rh;
}

/* Where a label of row i of rh px sits (its baseline). */
static double label_y(double y, int rh)
{
    return rh >= ROW_LABEL_H ? y + rh * 0.7 : y + rh / 2.0 + 4;
}

static void svg_open(FILE *out, const char *id, const char *caption, int h)
{
    fprintf(out, "<figure><figcaption>");
    esc(out, caption);
    fprintf(out,
            "</figcaption>\n<svg id=\"%s\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" "
            "viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"",
            id, CHART_W, h, CHART_W, h);
    esc(out, caption);
    fputs("\">\n", out);
}

static void svg_close(FILE *out)
{
    fputs("</svg></figure>\n", out);
}

/* The x axis of a bar chart: ticks from 0 to max over [x0, x0 + w], at y. */
static void x_axis(FILE *out, double max, double x0, double w, double y, const char *unit)
{
    double step = nice_step(max, 5), end = step * ceil(max / step);
    if (end <= 0) end = 1;
    for (double v = 0; v <= end + step / 2; v += step) {
        double x = x0 + w * v / end;
        fprintf(out,
                "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
                "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%g</text>\n",
                x, y - 4, x, y + 2, x, y + 14, v);
    }
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", x0 + w, y + 28,
            unit);
}

static double axis_end(double max)
{
    double step = nice_step(max, 5), end = step * ceil(max / step);
    return end > 0 ? end : 1;
}

/* One horizontal bar per row; attrs[i] is written into the rect. */
struct hbar {
    char label[128];
    double value;
    char attrs[256];
    char tip[256];
};

static void hbar_chart(FILE *out, const char *id, const char *caption, const struct hbar *rows,
                       int n, const char *unit, const char *fill)
{
    int rh = row_height(n), h = 20 + n * rh + 40;
    double max = 0;
    for (int i = 0; i < n; i++)
        max = rows[i].value > max ? rows[i].value : max;
    double end = axis_end(max), w = CHART_W - LABEL_W - VALUE_W;
    svg_open(out, id, caption, h);
    for (int i = 0; i < n; i++) {
        double y = 10 + i * rh, bw = w * (rows[i].value > 0 ? rows[i].value : 0) / end;
        int labelled = i % label_every(rh) == 0;
        if (labelled) {
            fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">", LABEL_W - 6,
                    label_y(y, rh));
            esc(out, rows[i].label);
            fputs("</text>", out);
        }
        fprintf(out,
                "<rect class=\"bar\" x=\"%d\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                "fill=\"%s\" %s><title>",
                LABEL_W, y + 1, bw, rh - 2.0, fill, rows[i].attrs);
        esc(out, rows[i].tip);
        fputs("</title></rect>", out);
        if (labelled)
            fprintf(out,
                    rows[i].value >= 100 ? "<text x=\"%.1f\" y=\"%.1f\">%.0f</text>"
                                         : "<text x=\"%.1f\" y=\"%.1f\">%.3g</text>",
                    LABEL_W + bw + 4, label_y(y, rh), rows[i].value);
        fputs("\n", out);
    }
    x_axis(out, max, LABEL_W, w, 10 + n * rh + 8, unit);
    svg_close(out);
}

/* Stacked bars of the seven categories, one row per rank or run:
 * ms[i][c], ms per step. */
static void stacked_chart(FILE *out, const char *id, const char *caption, char (*labels)[64],
                          double (*ms)[SP_CAT_N], const char *(*row_attr)[1], int n)
{
    int rh = row_height(n), h = 20 + n * rh + 40;
    double max = 0;
    for (int i = 0; i < n; i++) {
        double t = 0;
        for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
            t += ms[i][c];
        max = t > max ? t : max;
    }
    double end = axis_end(max), w = CHART_W - LABEL_W - VALUE_W;
    svg_open(out, id, caption, h);
    for (int i = 0; i < n; i++) {
        double y = 10 + i * rh, x = LABEL_W, total = 0;
        int labelled = i % label_every(rh) == 0;
        if (labelled)
            fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>", LABEL_W - 6,
                    label_y(y, rh), labels[i]);
        for (int c = 0; c < SP_CAT_EXCLUSIVE; c++) {
            double bw = w * (ms[i][c] > 0 ? ms[i][c] : 0) / end;
            fprintf(out,
                    "<rect class=\"seg\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                    "fill=\"%s\" "
                    "%s data-cat=\"%s\" data-ms=\"%.4f\"><title>%s: %s %.3f ms</title></rect>",
                    x, y + 1, bw, rh - 2.0, cat_color[c], row_attr[i][0], sp_model_cat_name(c),
                    ms[i][c], labels[i], cat_label[c], ms[i][c]);
            x += bw;
            total += ms[i][c];
        }
        /* an unlabelled row's total is in its segments' titles */
        if (labelled)
            fprintf(out,
                    "<text class=\"total\" x=\"%.1f\" y=\"%.1f\" %s data-ms=\"%.4f\">%.2f "
                    "ms</text>",
                    x + 4, label_y(y, rh), row_attr[i][0], total, total);
        fputs("\n", out);
    }
    x_axis(out, max, LABEL_W, w, 10 + n * rh + 8, "ms per step");
    svg_close(out);
    legend(out);
}

/* ---- the report ---- */

static int analyzed(const struct sp_rank *r)
{
    return r->cat != NULL;
}

static void summary(FILE *out, const struct sp_model *m)
{
    fputs("<h1>scaleprof report</h1>\n<p class=\"sub\">", out);
    esc(out, m->dir);
    fprintf(out, " &middot; %s &middot; %d rank%s on %d host%s</p>\n",
            !strcmp(m->source, "preload") ? "recorded by "
                                            "libscaleprof.so"
                                          : m->source,
            m->nranks, m->nranks == 1 ? "" : "s", m->nhosts, m->nhosts == 1 ? "" : "s");
    fputs("<h2 id=\"summary\">Summary</h2>\n<table id=\"summary-table\">\n", out);
    fprintf(out, "<tr><td>steps</td><td>%d found (%s); %d-%d analyzed</td></tr>\n", m->steps_total,
            m->detected_by, m->step_lo + m->step_number0, m->step_hi - 1 + m->step_number0);
    fprintf(out,
            "<tr><td>step time</td><td data-ms=\"%.4f\">mean %.2f ms, median %.2f ms</td></tr>\n",
            m->step_mean_ms, m->step_mean_ms, m->step_median_ms);
    if (m->step_mean_ms > 0)
        fprintf(out, "<tr><td>throughput</td><td>%.2f steps/s</td></tr>\n", 1000 / m->step_mean_ms);
    fputs("<tr><td>where the time went</td><td>", out);
    const char *sep = "";
    for (int c = 0; c < SP_CAT_EXCLUSIVE; c++)
        if (m->breakdown[c] >= 0.005) {
            fprintf(out, "%s%s %.0f%%", sep, cat_label[c], 100 * m->breakdown[c]);
            sep = ", ";
        }
    fputs("</td></tr>\n", out);
    if (m->nfindings && m->ideal_step_ms > 0)
        fprintf(
            out,
            "<tr><td>with every finding fixed</td><td>%.2f ms per step (%.0f%% faster)</td></tr>\n",
            m->ideal_step_ms, 100 * (1 - m->ideal_step_ms / m->step_mean_ms));
    fputs("</table>\n", out);
}

static void finding_ranks(FILE *out, const struct sp_model *m, const struct sp_finding *f)
{
    int n = 0;
    for (int i = 0; i < m->nranks; i++)
        n += analyzed(&m->ranks[i]);
    if (f->nranks == n && n > 1) {
        fputs("all ranks", out);
        return;
    }
    fputs(f->nranks == 1 ? "rank " : "ranks ", out);
    for (int i = 0; i < f->nranks && i < 32; i++)
        fprintf(out, "%s%d", i ? "," : "", f->ranks[i]);
    if (f->nranks > 32) fputs(",...", out);
}

static void findings(FILE *out, const struct sp_model *m)
{
    fputs("<h2 id=\"findings\">Findings</h2>\n", out);
    int healthy = !m->check.withheld; /* a withheld gain is unknown, not small */
    for (int i = 0; i < m->nfindings; i++)
        healthy &= m->findings[i].severity <= SP_SEV_LOW;
    if (healthy)
        fputs("<p id=\"healthy\">Healthy: no finding would save 5% or more of the step.</p>\n",
              out);
    if (m->check.done && !m->check.ok)
        fputs("<p id=\"check\">The what-if replay fails its check (see the warnings): the gains it cannot "
              "back are withheld.</p>\n",
              out);
    for (int i = 0; i < m->nfindings; i++) {
        const struct sp_finding *f = &m->findings[i];
        const struct sp_cause_info *ci = sp_cause_info(f->cause);
        const char *sev = sp_model_severity_name(f->severity);
        fprintf(out,
                "<div class=\"finding sev-%s\" data-cause=\"%s\" data-gain=\"%.4f\" "
                "data-severity=\"%s\">"
                "<h3>%d. %s [%s] &middot; ",
                sev, ci->name, f->gain, sev, i + 1, ci->name, sev);
        finding_ranks(out, m, f);
        fprintf(out, ", steps %d-%d &middot; saves %.0f%% (%.2f &rarr; %.2f ms per step)</h3>\n<p>",
                f->step_first, f->step_last, 100 * f->gain, m->step_mean_ms, f->step_ms_if_fixed);
        esc(out, f->evidence);
        fputs(".</p>\n<p class=\"try\"><b>First try:</b> ", out);
        esc(out, sp_finding_first_try(f));
        fputs("</p></div>\n", out);
    }
}

/* ---- which ranks a chart shows ----
 *
 * Up to ALL_RANKS_MAX ranks every chart has a row per rank.  Past that a
 * row per rank makes the page grow with the job (85 MB at 4096 ranks) and
 * no reader looks at 4096 rows: the charts show the DETAIL_RANKS ranks a
 * reader needs, those the findings name and then the slowest (the most
 * step time of their own, not waiting for peers), beside the mean of all,
 * and the per-step view is a heat map over groups of ranks, so the page
 * stays about the same size at any scale. */

struct rank_view {
    int n;      /* analyzed ranks */
    int *all;   /* their indices into m->ranks, in m->ranks' order */
    int many;   /* n > ALL_RANKS_MAX: detail ranks and bins */
    int nshown; /* the ranks drawn row by row: all, or the detail ranks */
    int *shown;
    int named; /* of those, how many a finding names */
};

/* Steps analyzed on rank r: [lo, hi). */
static int rank_hi(const struct sp_model *m, const struct sp_rank *r)
{
    return m->step_hi < r->nsteps ? m->step_hi : r->nsteps;
}

static double step_len_ms(const struct sp_rank *r, int k)
{
    return (double)(r->steps[k].end - r->steps[k].start) / NS_PER_MS;
}

/* Mean step time a rank spent on anything but waiting for its peers. */
static double own_ms(const struct sp_model *m, const struct sp_rank *r)
{
    double sum = 0;
    int n = 0;
    for (int k = m->step_lo; k < rank_hi(m, r); k++, n++)
        sum += step_len_ms(r, k) - r->cat[k][SP_CAT_COLL_WAIT] / NS_PER_MS;
    return n ? sum / n : 0;
}

static int in_list(const int *v, int n, int x)
{
    for (int i = 0; i < n; i++)
        if (v[i] == x) return 1;
    return 0;
}

static void view_free(struct rank_view *v)
{
    free(v->all);
    free(v->shown);
}

static int view_make(struct rank_view *v, const struct sp_model *m)
{
    memset(v, 0, sizeof *v);
    v->all = calloc((size_t)m->nranks + 1, sizeof *v->all);
    v->shown = calloc((size_t)m->nranks + 1, sizeof *v->shown);
    if (!v->all || !v->shown) return -1;
    for (int i = 0; i < m->nranks; i++)
        if (analyzed(&m->ranks[i])) v->all[v->n++] = i;
    v->many = v->n > ALL_RANKS_MAX;
    if (!v->many) {
        memcpy(v->shown, v->all, (size_t)v->n * sizeof *v->all);
        v->nshown = v->n;
        return 0;
    }
    /* the ranks findings name (not those naming every rank: they single
     * out nobody), in the findings' order */
    for (int f = 0; f < m->nfindings && v->nshown < DETAIL_RANKS; f++) {
        const struct sp_finding *fd = &m->findings[f];
        if (fd->nranks >= v->n) continue;
        for (int j = 0; j < fd->nranks && v->nshown < DETAIL_RANKS; j++)
            for (int a = 0; a < v->n; a++) {
                int i = v->all[a];
                if (m->ranks[i].rank == fd->ranks[j] && !in_list(v->shown, v->nshown, i)) {
                    v->shown[v->nshown++] = i;
                    break;
                }
            }
    }
    v->named = v->nshown;
    /* then the slowest of the rest */
    double *own = calloc((size_t)v->n, sizeof *own);
    if (!own) return -1;
    for (int a = 0; a < v->n; a++)
        own[a] = own_ms(m, &m->ranks[v->all[a]]);
    while (v->nshown < DETAIL_RANKS) {
        int best = -1;
        for (int a = 0; a < v->n; a++)
            if (!in_list(v->shown, v->nshown, v->all[a]) && (best < 0 || own[a] > own[best]))
                best = a;
        if (best < 0) break;
        v->shown[v->nshown++] = v->all[best];
    }
    free(own);
    /* drawn in rank order */
    for (int i = 1; i < v->nshown; i++)
        for (int j = i; j > 0 && v->shown[j - 1] > v->shown[j]; j--) {
            int t = v->shown[j];
            v->shown[j] = v->shown[j - 1];
            v->shown[j - 1] = t;
        }
    return 0;
}

/* What a chart of the detail ranks says about which they are. */
static void view_note(FILE *out, const struct rank_view *v)
{
    if (!v->many) return;
    fprintf(out,
            "<p class=\"note\">%d ranks: the charts show %d of them, %d named in the findings and "
            "the %d slowest of the rest (most step time of their own, not waiting for peers), "
            "beside the mean of all %d.</p>\n",
            v->n, v->nshown, v->named, v->nshown - v->named, v->n);
}

static void breakdown_chart(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    int n = 0, rows = v->nshown + v->many;
    char(*labels)[64] = calloc((size_t)rows + 1, sizeof *labels);
    double(*ms)[SP_CAT_N] = calloc((size_t)rows + 1, sizeof *ms);
    const char *(*attrs)[1] = calloc((size_t)rows + 1, sizeof *attrs);
    char(*abuf)[32] = calloc((size_t)rows + 1, sizeof *abuf);
    if (labels && ms && attrs && abuf) {
        for (int s = 0; s < v->nshown; s++, n++) {
            const struct sp_rank *r = &m->ranks[v->shown[s]];
            double b[SP_CAT_N], t = sp_model_rank_step_ms(m, r);
            sp_model_rank_breakdown(m, r, b);
            snprintf(labels[n], sizeof labels[n], "rank %d", r->rank);
            for (int c = 0; c < SP_CAT_N; c++)
                ms[n][c] = b[c] * t;
            snprintf(abuf[n], sizeof abuf[n], "data-rank=\"%d\"", r->rank);
            attrs[n][0] = abuf[n];
        }
        if (v->many) {
            for (int a = 0; a < v->n; a++) {
                const struct sp_rank *r = &m->ranks[v->all[a]];
                double b[SP_CAT_N], t = sp_model_rank_step_ms(m, r);
                sp_model_rank_breakdown(m, r, b);
                for (int c = 0; c < SP_CAT_N; c++)
                    ms[n][c] += b[c] * t / v->n;
            }
            snprintf(labels[n], sizeof labels[n], "mean of %d", v->n);
            snprintf(abuf[n], sizeof abuf[n], "data-rank=\"mean\"");
            attrs[n][0] = abuf[n];
            n++;
        }
        fputs("<h2 id=\"breakdown\">Step time per rank, by category</h2>\n", out);
        view_note(out, v);
        stacked_chart(out, "chart-breakdown",
                      "Mean step time of each rank split into the seven categories (ms)", labels,
                      ms, attrs, n);
    }
    free(labels);
    free(ms);
    free(attrs);
    free(abuf);
}

/* x of analyzed step j of ns on a plot [x0, x0 + w]. */
static double step_x(int j, int ns, double x0, double w)
{
    return x0 + (ns > 1 ? w * j / (ns - 1) : w / 2);
}

/* Step numbers under a plot, as many as fit without touching (a label
 * is about STEP_LABEL_W wide). */
static void step_labels(FILE *out, const struct sp_model *m, int ns, double x0, double w, double y,
                        int centred_cells)
{
    double gap = centred_cells ? w / (ns > 0 ? ns : 1) : ns > 1 ? w / (ns - 1)
                                                                : w;
    int every = gap >= STEP_LABEL_W ? 1 : (int)ceil(STEP_LABEL_W / gap);
    for (int k = 0; k < ns; k += every) {
        double x = centred_cells ? x0 + (k + 0.5) * w / ns : step_x(k, ns, x0, w);
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d</text>", x, y,
                k + m->step_lo + m->step_number0);
    }
    fputs("\n", out);
}

static void step_lines(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    int ns = m->step_hi - m->step_lo;
    double max = 0;
    for (int a = 0; a < v->n; a++) {
        const struct sp_rank *r = &m->ranks[v->all[a]];
        for (int k = m->step_lo; k < rank_hi(m, r); k++)
            max = step_len_ms(r, k) > max ? step_len_ms(r, k) : max;
    }
    double end = axis_end(max), x0 = 60, w = CHART_W - x0 - 20, y0 = 10, h = LINE_H - 50;
    svg_open(out, "chart-steps", "Step time of every analyzed step, one line per rank (ms)",
             LINE_H);
    y_gridlines(out, x0, w, y0, h, end, nice_step(max, 5), "");
    step_labels(out, m, ns, x0, w, y0 + h + 16, 0);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">step</text>\n", x0 + w,
            y0 + h + 32);
    for (int a = 0; a < v->n; a++) {
        const struct sp_rank *r = &m->ranks[v->all[a]];
        const char *col = line_color[a % NLINE_COLORS];
        fprintf(out,
                "<polyline class=\"rank-line\" data-rank=\"%d\" fill=\"none\" stroke=\"%s\" "
                "stroke-width=\"1.5\" "
                "points=\"",
                r->rank, col);
        for (int k = m->step_lo; k < rank_hi(m, r); k++)
            fprintf(out, "%.1f,%.1f ", step_x(k - m->step_lo, ns, x0, w),
                    y0 + h - h * step_len_ms(r, k) / end);
        fputs("\"/>\n", out);
        for (int k = m->step_lo; k < rank_hi(m, r); k++) {
            double ms = step_len_ms(r, k);
            fprintf(out,
                    "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\" "
                    "data-rank=\"%d\" "
                    "data-step=\"%d\" data-ms=\"%.4f\"><title>rank %d step %d: %.3f "
                    "ms</title></circle>",
                    step_x(k - m->step_lo, ns, x0, w), y0 + h - h * ms / end, col, r->rank,
                    k + m->step_number0, ms, r->rank, k + m->step_number0, ms);
        }
        fputs("\n", out);
    }
    svg_close(out);
    fputs("<div class=\"legend\">", out);
    for (int a = 0; a < v->n; a++)
        fprintf(out, "<span><i style=\"background:%s\"></i>rank %d</span>",
                line_color[a % NLINE_COLORS], m->ranks[v->all[a]].rank);
    fputs("</div>\n", out);
}

/* With a heat map: the job's step time per step, the slowest and the
 * fastest rank's (in a synchronous job they are nearly one line). */
static void step_range(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    int ns = m->step_hi - m->step_lo;
    double *lo = calloc((size_t)ns + 1, sizeof *lo), *hi = calloc((size_t)ns + 1, sizeof *hi);
    int *who = calloc((size_t)ns + 1, sizeof *who);
    if (!lo || !hi || !who) goto done;
    for (int j = 0; j < ns; j++)
        lo[j] = -1, who[j] = -1;
    double max = 0;
    for (int a = 0; a < v->n; a++) {
        const struct sp_rank *r = &m->ranks[v->all[a]];
        for (int k = m->step_lo; k < rank_hi(m, r); k++) {
            int j = k - m->step_lo;
            double ms = step_len_ms(r, k);
            if (lo[j] < 0 || ms < lo[j]) lo[j] = ms;
            if (who[j] < 0 || ms > hi[j]) hi[j] = ms, who[j] = r->rank;
            max = ms > max ? ms : max;
        }
    }
    double end = axis_end(max), x0 = 60, w = CHART_W - x0 - 20, y0 = 10, h = STEP_RANGE_H - 50;
    svg_open(out, "chart-step-range",
             "Step time per step (ms): the slowest rank's (line) and the fastest rank's (dashed)",
             STEP_RANGE_H);
    y_gridlines(out, x0, w, y0, h, end, nice_step(max, 4), "");
    step_labels(out, m, ns, x0, w, y0 + h + 16, 0);
    fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">step</text>\n", x0 + w,
            y0 + h + 32);
    for (int line = 0; line < 2; line++) {
        fprintf(out, "<polyline fill=\"none\" stroke=\"#3367d6\" stroke-width=\"1.5\"%s points=\"",
                line ? " stroke-dasharray=\"4 3\"" : "");
        for (int j = 0; j < ns; j++)
            if (who[j] >= 0)
                fprintf(out, "%.1f,%.1f ", step_x(j, ns, x0, w),
                        y0 + h - h * (line ? lo[j] : hi[j]) / end);
        fputs("\"/>\n", out);
    }
    for (int j = 0; j < ns && ns <= STEP_POINTS_MAX; j++)
        if (who[j] >= 0)
            fprintf(out,
                    "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"2\" fill=\"#3367d6\" "
                    "data-step=\"%d\" data-max-ms=\"%.4f\" data-min-ms=\"%.4f\" "
                    "data-rank=\"%d\"><title>step %d: %.3f ms on rank %d, fastest %.3f "
                    "ms</title></circle>",
                    step_x(j, ns, x0, w), y0 + h - h * hi[j] / end, j + m->step_lo + m->step_number0,
                    hi[j], lo[j], who[j], j + m->step_lo + m->step_number0, hi[j], who[j], lo[j]);
    fputs("\n", out);
    svg_close(out);
done:
    free(lo);
    free(hi);
    free(who);
}

/* A heat map's cell colour: white for no wait to dark red at max. */
static void heat_fill(char *buf, size_t len, double v, double max)
{
    double s = max > 0 ? v / max : 0;
    int shade = (int)(255 - 200 * (s < 0 ? 0 : s > 1 ? 1
                                                     : s));
    snprintf(buf, len, "#ff%02x%02x", shade, shade);
}

/* Rank x step, each cell's colour the collective wait: one row per rank
 * of list[0..n), the steps in columns of `every` steps (one when they fit;
 * a wider column's value is its steps' mean). */
static void wait_heatmap(FILE *out, const struct sp_model *m, const char *id, const char *caption,
                         const int *list, int n)
{
    int ns = m->step_hi - m->step_lo, every = ns > HEAT_COLS ? (ns + HEAT_COLS - 1) / HEAT_COLS : 1;
    int ncol = (ns + every - 1) / every;
    double max = 0;
    for (int a = 0; a < n; a++) {
        const struct sp_rank *r = &m->ranks[list[a]];
        for (int k = m->step_lo; k < rank_hi(m, r); k++)
            max = r->cat[k][SP_CAT_COLL_WAIT] / NS_PER_MS > max ? r->cat[k][SP_CAT_COLL_WAIT] / NS_PER_MS
                                                                : max;
    }
    int rh = row_height(n), h = 20 + n * rh + 50, every_label = label_every(rh);
    double x0 = 70, w = CHART_W - x0 - 20, cw = ncol > 0 ? w / ncol : w;
    svg_open(out, id, caption, h);
    for (int a = 0; a < n; a++) {
        const struct sp_rank *r = &m->ranks[list[a]];
        double y = 10 + a * rh;
        if (a % every_label == 0)
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">rank %d</text>", x0 - 4,
                    label_y(y, rh), r->rank);
        for (int c = 0; c < ncol; c++) {
            int k0 = m->step_lo + c * every, k1 = k0 + every, cnt = 0;
            double sum = 0;
            for (int k = k0; k < k1 && k < rank_hi(m, r); k++, cnt++)
                sum += r->cat[k][SP_CAT_COLL_WAIT] / NS_PER_MS;
            if (!cnt) continue;
            double v = sum / cnt;
            char fill[8], steps[32];
            heat_fill(fill, sizeof fill, v, max);
            if (every == 1)
                snprintf(steps, sizeof steps, "%d", k0 + m->step_number0);
            else
                snprintf(steps, sizeof steps, "%d-%d", k0 + m->step_number0,
                         k0 + cnt - 1 + m->step_number0);
            fprintf(out,
                    "<rect class=\"cell\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\" data-rank=\"%d\" data-step%s=\"%s\" data-ms=\"%.4f\"><title>rank %d "
                    "step%s %s: wait %.3f ms</title></rect>",
                    x0 + c * cw, y, cw, rh, fill, r->rank, every > 1 ? "s" : "", steps, v, r->rank,
                    every > 1 ? "s" : "", steps, v);
        }
        fputs("\n", out);
    }
    step_labels(out, m, ns, x0, w, 10 + n * rh + 16, 1);
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\">step (darkest %.3f ms)</text>\n",
            x0 + w, 10 + n * rh + 32, max);
    svg_close(out);
}

/* Many ranks: groups of consecutive ranks x groups of steps; a cell
 * gives the least and the most wait of its rank-steps, coloured by the
 * least (the group's latest rank to arrive: a group holding a straggler
 * shows light in a dark column). */
static void wait_bins(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    int ns = m->step_hi - m->step_lo, every = ns > HEAT_COLS ? (ns + HEAT_COLS - 1) / HEAT_COLS : 1;
    int ncol = (ns + every - 1) / every, per = (v->n + HEAT_ROWS - 1) / HEAT_ROWS;
    int nrow = (v->n + per - 1) / per;
    double *lo = calloc((size_t)nrow * ncol + 1, sizeof *lo);
    double *hi = calloc((size_t)nrow * ncol + 1, sizeof *hi);
    if (!lo || !hi) goto done;
    double max = 0;
    for (int i = 0; i < nrow * ncol; i++)
        lo[i] = -1;
    for (int a = 0; a < v->n; a++) {
        const struct sp_rank *r = &m->ranks[v->all[a]];
        for (int k = m->step_lo; k < rank_hi(m, r); k++) {
            double x = r->cat[k][SP_CAT_COLL_WAIT] / NS_PER_MS;
            int cell = a / per * ncol + (k - m->step_lo) / every;
            if (lo[cell] < 0 || x < lo[cell]) lo[cell] = x;
            if (x > hi[cell]) hi[cell] = x;
            max = x > max ? x : max;
        }
    }
    int rh = row_height(nrow), h = 20 + nrow * rh + 50, every_label = label_every(rh);
    double x0 = BIN_LABEL_W, w = CHART_W - x0 - 20, cw = ncol > 0 ? w / ncol : w;
    char caption[160];
    snprintf(caption, sizeof caption,
             "Collective wait of all %d ranks, %d ranks to a row (ms: each cell the least of its "
             "rank-steps; darker is longer)",
             v->n, per);
    svg_open(out, "chart-wait-bins", caption, h);
    for (int row = 0; row < nrow; row++) {
        int a0 = row * per, a1 = a0 + per < v->n ? a0 + per - 1 : v->n - 1;
        int r0 = m->ranks[v->all[a0]].rank, r1 = m->ranks[v->all[a1]].rank;
        double y = 10 + row * rh;
        if (row % every_label == 0)
            fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">ranks %d-%d</text>",
                    x0 - 4, label_y(y, rh), r0, r1);
        for (int c = 0; c < ncol; c++) {
            int cell = row * ncol + c, s0 = m->step_lo + c * every + m->step_number0;
            int s1 = (c + 1) * every < ns ? s0 + every - 1 : m->step_hi - 1 + m->step_number0;
            if (lo[cell] < 0) continue;
            char fill[8];
            heat_fill(fill, sizeof fill, lo[cell], max);
            fprintf(out,
                    "<rect class=\"bin\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\" data-ranks=\"%d-%d\" data-steps=\"%d-%d\" data-min-ms=\"%.4f\" "
                    "data-max-ms=\"%.4f\"><title>ranks %d-%d, steps %d-%d: wait %.3f-%.3f "
                    "ms</title></rect>",
                    x0 + c * cw, y, cw, rh, fill, r0, r1, s0, s1, lo[cell], hi[cell], r0, r1, s0,
                    s1, lo[cell], hi[cell]);
        }
        fputs("\n", out);
    }
    step_labels(out, m, ns, x0, w, 10 + nrow * rh + 16, 1);
    fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"end\">step (darkest %.3f ms)</text>\n",
            x0 + w, 10 + nrow * rh + 32, max);
    svg_close(out);
done:
    free(lo);
    free(hi);
}

static void step_series(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    fputs("<h2 id=\"per-step\">Step time per step</h2>\n", out);
    if (m->step_hi <= m->step_lo) {
        fputs("<p>No analyzed step.</p>\n", out);
        return;
    }
    if (v->n <= LINES_RANKS) {
        step_lines(out, m, v);
        return;
    }
    step_range(out, m, v);
    if (!v->many) {
        wait_heatmap(out, m, "chart-wait-heatmap",
                     "Collective wait per rank and step (ms; darker is longer)", v->all, v->n);
        return;
    }
    wait_bins(out, m, v);
    wait_heatmap(out, m, "chart-wait-heatmap",
                 "Collective wait per step of the ranks in detail (ms; darker is longer)", v->shown,
                 v->nshown);
}

static double input_wait_ms(const struct sp_model *m, const struct sp_rank *r)
{
    double sum = 0;
    int n = 0;
    for (int k = m->step_lo; r->input_head && k < rank_hi(m, r); k++, n++)
        sum += r->input_head[k];
    return n ? sum / n / NS_PER_MS : 0;
}

static double read_mbps(const struct sp_rank *r)
{
    return r->read_ns > 0 ? (double)r->read_bytes / 1e6 / ((double)r->read_ns / 1e9) : 0;
}

static const struct input_panel {
    const char *id, *caption, *metric, *unit, *fill;
} input_panel[] = {
    {"chart-input-wait", "Wait for input at step start, before the first kernel (ms per step)",
     "input_wait_ms", "ms per step", "#e8a317"},
    {"chart-input-cpu", "Loader workers' CPU use (cores, summed over the rank's workers)",
     "loader_cpu_cores", "cores", "#a64ca6"},
    {"chart-input-read", "File read throughput while reading (MB/s)", "read_mbps", "MB/s",
     "#2ab7ca"},
};

static double input_value(const struct sp_model *m, const struct sp_rank *r, size_t p)
{
    return p == 0 ? input_wait_ms(m, r) : p == 1 ? r->helper_cpu
                                                 : read_mbps(r);
}

/* One panel of the input picture: every rank, or with many the
 * DETAIL_RANKS highest and the mean of all. */
static void input_panel_chart(FILE *out, const struct sp_model *m, const struct rank_view *v,
                              size_t p, struct hbar *rows, double *val, int *pick)
{
    const struct input_panel *ip = &input_panel[p];
    int n = 0, npick = 0;
    double mean = 0;
    for (int a = 0; a < v->n; a++) {
        val[a] = input_value(m, &m->ranks[v->all[a]], p);
        mean += val[a] / v->n;
    }
    if (!v->many)
        for (int a = 0; a < v->n; a++)
            pick[npick++] = a;
    else
        while (npick < DETAIL_RANKS && npick < v->n) {
            int best = -1;
            for (int a = 0; a < v->n; a++)
                if (!in_list(pick, npick, a) && (best < 0 || val[a] > val[best])) best = a;
            pick[npick++] = best;
        }
    for (int s = 0; s < npick; s++, n++) {
        const struct sp_rank *r = &m->ranks[v->all[pick[s]]];
        snprintf(rows[n].label, sizeof rows[n].label, "rank %d", r->rank);
        rows[n].value = val[pick[s]];
        snprintf(rows[n].attrs, sizeof rows[n].attrs,
                 "data-rank=\"%d\" data-metric=\"%s\" data-value=\"%.4f\"", r->rank, ip->metric,
                 val[pick[s]]);
        snprintf(rows[n].tip, sizeof rows[n].tip, "rank %d: %.3f %s", r->rank, val[pick[s]],
                 ip->unit);
    }
    char caption[200];
    if (v->many) {
        snprintf(rows[n].label, sizeof rows[n].label, "mean of %d", v->n);
        rows[n].value = mean;
        snprintf(rows[n].attrs, sizeof rows[n].attrs,
                 "data-rank=\"mean\" data-metric=\"%s\" data-value=\"%.4f\"", ip->metric, mean);
        snprintf(rows[n].tip, sizeof rows[n].tip, "mean of %d ranks: %.3f %s", v->n, mean, ip->unit);
        n++;
        snprintf(caption, sizeof caption, "%s: the %d highest of %d ranks", ip->caption, npick,
                 v->n);
    } else
        snprintf(caption, sizeof caption, "%s", ip->caption);
    hbar_chart(out, ip->id, caption, rows, n, ip->unit, ip->fill);
}

static void input_picture(FILE *out, const struct sp_model *m, const struct rank_view *v)
{
    fputs("<h2 id=\"input\">The input pipeline</h2>\n", out);
    struct hbar *rows = calloc((size_t)DETAIL_RANKS + ALL_RANKS_MAX + 2, sizeof *rows);
    double *val = calloc((size_t)v->n + 1, sizeof *val);
    int *pick = calloc((size_t)v->n + 1, sizeof *pick);
    if (rows && val && pick)
        for (size_t p = 0; p < sizeof input_panel / sizeof input_panel[0]; p++)
            input_panel_chart(out, m, v, p, rows, val, pick);
    free(rows);
    free(val);
    free(pick);
    fputs("<div class=\"wide\"><table id=\"input-table\"><tr><th>rank</th><th>loader "
          "workers</th><th>workers' CPU (cores)</th>"
          "<th>read</th><th>MB/s while reading</th><th>input wait at step start (ms)</th><th>idle: "
          "input</th></tr>\n",
          out);
    for (int s = 0; s < v->nshown; s++) {
        const struct sp_rank *r = &m->ranks[v->shown[s]];
        double b[SP_CAT_N];
        char rd[32];
        sp_model_rank_breakdown(m, r, b);
        sp_text_bytes(r->read_bytes, rd, sizeof rd);
        fprintf(out,
                "<tr><td>%d</td><td>%d</td><td>%.2f</td><td>%s</td><td>%.1f</td><td>%.3f</"
                "td><td>%.1f%%</td></tr>\n",
                r->rank, r->nhelpers, r->helper_cpu, rd, read_mbps(r), input_wait_ms(m, r),
                100 * b[SP_CAT_IDLE_INPUT]);
    }
    fputs("</table></div>\n", out);
    if (v->many)
        fprintf(out, "<p class=\"note\">The table: the %d ranks in detail of %d.</p>\n", v->nshown,
                v->n);
    if (m->flags_any & SP_FLAG_NO_FILE_IO)
        fputs("<p class=\"note\">This source recorded no file I/O: read figures are unknown.</p>\n",
              out);
}

static void collectives(FILE *out, const struct sp_model *m)
{
    fputs("<h2 id=\"collectives\">Top collectives</h2>\n", out);
    if (!m->ncolls) {
        fputs("<p>No collective in the analyzed steps.</p>\n", out);
        return;
    }
    struct hbar rows[TOP_COLLECTIVES];
    int n = 0;
    for (size_t i = 0; i < m->ncolls && n < TOP_COLLECTIVES; i++, n++) {
        const struct sp_coll_summary *c = &m->colls[i];
        char size[32];
        sp_text_bytes(c->bytes, size, sizeof size);
        snprintf(rows[n].label, sizeof rows[n].label, "%s %s", op_name(c->op), size);
        rows[n].value = c->busbw_gbps;
        snprintf(rows[n].attrs, sizeof rows[n].attrs,
                 "data-comm=\"%016" PRIx64 "\" data-op=\"%s\" data-bytes=\"%" PRIu64
                 "\" data-busbw=\"%.4f\" "
                 "data-transfer-ms=\"%.4f\" data-wait-ms=\"%.4f\" data-calls=\"%" PRIu64 "\"",
                 c->comm, op_name(c->op), c->bytes, c->busbw_gbps, c->transfer_ms, c->wait_ms,
                 c->calls);
        snprintf(rows[n].tip, sizeof rows[n].tip,
                 "%s %s on %016" PRIx64 ": %.1f GB/s bus bandwidth", op_name(c->op), size, c->comm,
                 c->busbw_gbps);
    }
    hbar_chart(out, "chart-collectives",
               "Bus bandwidth of the costliest collectives (GB/s, as nccl-tests counts it)", rows,
               n, "GB/s", "#3367d6");
    fputs("<div class=\"wide\"><table "
          "id=\"collectives-table\"><tr><th>communicator</th><th>operation</th><th>size</"
          "th><th>ranks</th>"
          "<th>calls</th><th>transfer ms</th><th>wait ms</th><th>bus GB/s</th></tr>\n",
          out);
    for (size_t i = 0; i < m->ncolls && (int)i < TOP_COLLECTIVES; i++) {
        const struct sp_coll_summary *c = &m->colls[i];
        char size[32];
        sp_text_bytes(c->bytes, size, sizeof size);
        fprintf(out,
                "<tr><td>%016" PRIx64 "%s</td><td>%s</td><td>%s</td><td>%u</td><td>%" PRIu64
                "</td><td>%.3f</td>"
                "<td>%.3f</td><td>%.1f</td></tr>\n",
                c->comm, c->spans_hosts ? " (across hosts)" : "", op_name(c->op), size, c->nranks,
                c->calls, c->transfer_ms, c->wait_ms, c->busbw_gbps);
    }
    fputs("</table></div>\n<p class=\"note\">transfer: data moving once the last rank arrived; wait: "
          "time a rank waited "
          "for late peers (means per call).</p>\n",
          out);
}

/* The kernel view (report --kernels): one row per kernel, its numbers in
 * data- attributes as report --json gives them. */
static void kernels(FILE *out, const struct sp_model *m, const struct sp_kernels *k, int top)
{
    size_t n = (size_t)top < k->n ? (size_t)top : k->n;
    fprintf(out,
            "<h2 id=\"kernels\">Top kernels</h2>\n<p>The %zu kernels that take the most GPU time over "
            "steps %d-%d, of %zu kernel names (%.2f ms on %d rank%s).</p>\n",
            n, m->step_lo + m->step_number0, m->step_hi - 1 + m->step_number0, k->n, k->ns / 1e6,
            m->nranks, m->nranks == 1 ? "" : "s");
    fputs("<div class=\"wide\"><table id=\"kernels-table\"><tr><th>share</th><th>total ms</th><th>calls</th>"
          "<th>mean us</th><th>p50 us</th><th>p99 us</th><th>slowest rank</th><th>kernel</th></tr>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        const struct sp_kernel_stat *s = &k->k[i];
        int slow = s->slowest >= 0 ? m->ranks[s->slowest].rank : -1;
        fputs("<tr class=\"kernel\" data-name=\"", out);
        esc(out, s->name);
        fprintf(out,
                "\" data-calls=\"%" PRIu64 "\" data-total-ms=\"%.6f\" data-slowest-rank=\"%d\">"
                "<td>%.1f%%</td><td>%.3f</td><td>%" PRIu64 "</td><td>%.1f</td><td>%.1f</td><td>%.1f</td>",
                s->calls, s->ns / 1e6, slow, k->ns > 0 ? 100 * s->ns / k->ns : 0, s->ns / 1e6, s->calls,
                s->mean_ns / 1e3, s->p50_ns / 1e3, s->p99_ns / 1e3);
        if (slow >= 0)
            fprintf(out, "<td>%d (%.2fx)</td><td>", slow, s->slowest_x);
        else
            fputs("<td>-</td><td>", out);
        esc(out, s->name);
        fputs(s->nccl ? " [nccl]</td></tr>\n" : "</td></tr>\n", out);
    }
    fputs("</table></div>\n<p class=\"note\">share: of all kernel time on all ranks; slowest rank: the "
          "rank whose calls of that kernel take longest on average, against the median rank's "
          "mean.</p>\n",
          out);
}

static void warnings(FILE *out, const struct sp_model *m)
{
    if (!m->nwarnings) return;
    fputs("<h2 id=\"warnings\">Warnings</h2>\n<ul>\n", out);
    for (int i = 0; i < m->nwarnings; i++) {
        fputs("<li class=\"warn\">", out);
        esc(out, m->warnings[i]);
        fputs("</li>\n", out);
    }
    fputs("</ul>\n", out);
}

static void page_foot(FILE *out)
{
    fprintf(out,
            "<p class=\"note\">scaleprof %s &middot; categories, findings and thresholds: "
            "docs/analysis.md</p>\n"
            "</body>\n</html>\n",
            SCALEPROF_VERSION);
}

int sp_html_report(FILE *out, const struct sp_model *m, const struct sp_kernels *k, int top_kernels)
{
    char title[512];
    snprintf(title, sizeof title, "scaleprof report: %s", m->dir);
    page_head(out, title);
    struct rank_view v;
    if (view_make(&v, m)) {
        view_free(&v);
        return -1;
    }
    summary(out, m);
    findings(out, m);
    breakdown_chart(out, m, &v);
    step_series(out, m, &v);
    input_picture(out, m, &v);
    collectives(out, m);
    if (k) kernels(out, m, k, top_kernels);
    warnings(out, m);
    page_foot(out);
    view_free(&v);
    return ferror(out) ? -1 : 0;
}

/* ---- the comparison ---- */

static int has_samples(const struct sp_cmp *c)
{
    return c->batch.per_gpu > 0 || c->batch.global > 0;
}

static void cmp_table(FILE *out, const struct sp_cmp *c, double price)
{
    fprintf(out,
            "<h2 id=\"runs\">Runs</h2>\n<div class=\"wide\"><table "
            "id=\"runs-table\"><tr><th>run</th><th>GPUs</th><th>hosts</th>"
            "<th>ms/step</th><th>%s</th><th>efficiency</th><th>cost per sample</th></tr>\n",
            has_samples(c) ? "samples/s" : "speedup");
    for (int i = 0; i < c->n; i++) {
        const struct sp_cmp_run *r = &c->runs[i];
        fputs("<tr><td>", out);
        esc(out, r->dir);
        fprintf(out,
                has_samples(c)
                    ? "%s</td><td>%d</td><td>%d</td><td>%.2f</td><td>%.1f</td><td>%.0f%%</td><td>%.2fx"
                    : "%s</td><td>%d</td><td>%d</td><td>%.2f</td><td>%.2fx</td><td>%.0f%%</td><td>%.2fx",
                i == c->base                      ? " (baseline)"
                : r->scaling == SP_SCALING_STRONG ? " (fixed global batch)"
                : r->scaling == SP_SCALING_AB     ? " (same GPUs: A/B)"
                                                  : "",
                r->m.nranks, r->m.nhosts, r->m.step_mean_ms, has_samples(c) ? r->thr : r->speedup,
                100 * r->eff, r->cost_x);
        if (price > 0 && has_samples(c))
            fprintf(out, " (%.3g per 1k samples)", sp_cmp_cost_per_1k(r, price));
        fputs("</td></tr>\n", out);
    }
    fputs("</table></div>\n", out);
}

/* x of run i of k on the efficiency chart: inset from the axis by
 * EFF_PAD, so a point's label never reaches the axis' labels. */
static double eff_x(int i, int k, double x0, double w)
{
    return x0 + EFF_PAD + (k > 1 ? (w - 2 * EFF_PAD) * i / (k - 1) : (w - 2 * EFF_PAD) / 2);
}

static void efficiency_chart(FILE *out, const struct sp_cmp *c)
{
    int n = c->n;
    int order[64], k = 0;
    for (int i = 0; i < n && k < 64; i++)
        order[k++] = i;
    for (int i = 1; i < k; i++) /* by GPU count */
        for (int j = i; j > 0 && c->runs[order[j - 1]].m.nranks > c->runs[order[j]].m.nranks; j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    double max = 1;
    for (int i = 0; i < k; i++)
        max = c->runs[order[i]].eff > max ? c->runs[order[i]].eff : max;
    double end = axis_end(max * 100), x0 = 60, w = CHART_W - x0 - 40, y0 = 24, h = LINE_H - 64;
    /* labels of neighbouring runs must not meet: every how many fits */
    double gap = k > 1 ? (w - 2 * EFF_PAD) / (k - 1) : w;
    int every = gap >= EFF_LABEL_W ? 1 : (int)ceil(EFF_LABEL_W / gap);
    svg_open(out, "chart-efficiency",
             "Scaling efficiency against GPU count (%; 100% is N times the throughput)", LINE_H);
    y_gridlines(out, x0, w, y0, h, end, nice_step(end, 5), "%");
    double y100 = y0 + h - h * 100 / end;
    fprintf(
        out,
        "<line class=\"ideal\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#4c9a2a\" "
        "stroke-dasharray=\"6 4\"/>\n",
        x0, y100, x0 + w, y100);
    fputs("<polyline fill=\"none\" stroke=\"#3367d6\" stroke-width=\"2\" points=\"", out);
    for (int i = 0; i < k; i++)
        fprintf(out, "%.1f,%.1f ", eff_x(i, k, x0, w), y0 + h - h * 100 * c->runs[order[i]].eff / end);
    fputs("\"/>\n", out);
    for (int i = 0; i < k; i++) {
        const struct sp_cmp_run *r = &c->runs[order[i]];
        double x = eff_x(i, k, x0, w), y = y0 + h - h * 100 * r->eff / end;
        fprintf(
            out,
            "<circle class=\"pt\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#3367d6\" data-run=\"%d\" "
            "data-gpus=\"%d\" data-eff=\"%.4f\"><title>%d GPUs: %.0f%%</title></circle>",
            x, y, order[i], r->m.nranks, r->eff, r->m.nranks, 100 * r->eff);
        if (i % every == 0)
            /* above the point; below it when the plot's top is near */
            fprintf(out,
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f%%</text>"
                    "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%d GPU%s</text>",
                    x, y - 9 < 14 ? y + 18 : y - 9, 100 * r->eff, x, y0 + h + 16, r->m.nranks,
                    r->m.nranks == 1 ? "" : "s");
        fputs("\n", out);
    }
    svg_close(out);
}

static void lost_chart(FILE *out, const struct sp_cmp *c)
{
    const struct sp_cmp_run *b = &c->runs[c->base];
    int n = c->n - 1, rh = ROW_MAX + 6, h = 20 + (n > 0 ? n : 1) * rh + 40;
    double max = 0;
    for (int i = 0; i < c->n; i++) {
        double pos = 0, neg = 0;
        for (int k = 0; k < SP_CAT_EXCLUSIVE; k++) {
            double d = c->runs[i].cat_ms[k] - b->cat_ms[k];
            if (d > 0)
                pos += d;
            else
                neg -= d;
        }
        max = pos > max ? pos : max;
        max = neg > max ? neg : max;
    }
    /* room right of the longest bar for its "+12.34 ms" */
    double end = axis_end(max), w = (CHART_W - LABEL_W - LOST_LABEL_W) / 2.0, zero = LABEL_W + w;
    svg_open(out, "chart-lost",
             "Where the step time went against the baseline (ms per step, by category; "
             "right: more, left: less)",
             h);
    fprintf(out, "<line x1=\"%.1f\" y1=\"6\" x2=\"%.1f\" y2=\"%d\" stroke=\"#999\"/>\n", zero, zero,
            10 + n * rh);
    int row = 0;
    for (int i = 0; i < c->n; i++) {
        if (i == c->base) continue;
        const struct sp_cmp_run *r = &c->runs[i];
        double y = 10 + row * rh, xp = zero, xn = zero;
        fprintf(out, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%d GPU%s</text>", LABEL_W - 6,
                y + rh * 0.6, r->m.nranks, r->m.nranks == 1 ? "" : "s");
        for (int k = 0; k < SP_CAT_EXCLUSIVE; k++) {
            double d = r->cat_ms[k] - b->cat_ms[k], bw = w * fabs(d) / end, x;
            if (d >= 0) {
                x = xp;
                xp += bw;
            } else {
                xn -= bw;
                x = xn;
            }
            fprintf(out,
                    "<rect class=\"seg\" x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%d\" "
                    "fill=\"%s\" "
                    "data-run=\"%d\" data-cat=\"%s\" data-ms=\"%.4f\"><title>%d GPUs: %s %+.3f "
                    "ms</title></rect>",
                    x, y + 2, bw, rh - 4, cat_color[k], i, sp_model_cat_name(k), d, r->m.nranks,
                    cat_label[k], d);
        }
        fprintf(out, "<text x=\"%.1f\" y=\"%.1f\">%+.2f ms</text>\n", xp + 4, y + rh * 0.6,
                (r->step_s - b->step_s) * 1e3);
        row++;
    }
    double step = nice_step(end, 3);
    for (double v = 0; v <= end + step / 2; v += step) {
        fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>",
                zero + w * v / end, 10 + n * rh + 16, v);
        if (v > 0)
            fprintf(out, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%g</text>",
                    zero - w * v / end, 10 + n * rh + 16, -v);
    }
    fputs("\n", out);
    svg_close(out);
    legend(out);
}

static void cost_chart(FILE *out, const struct sp_cmp *c, double price)
{
    struct hbar rows[64];
    int n = 0, abs_cost = price > 0 && has_samples(c);
    for (int i = 0; i < c->n && n < 64; i++, n++) {
        const struct sp_cmp_run *r = &c->runs[i];
        double v = abs_cost ? sp_cmp_cost_per_1k(r, price) : r->cost_x;
        snprintf(rows[n].label, sizeof rows[n].label, "%d GPU%s%s", r->m.nranks,
                 r->m.nranks == 1 ? "" : "s", i == c->base ? " (base)" : "");
        rows[n].value = v;
        snprintf(rows[n].attrs, sizeof rows[n].attrs,
                 "data-run=\"%d\" data-gpus=\"%d\" data-cost=\"%.6f\" "
                 "data-unit=\"%s\"",
                 i, r->m.nranks, v, abs_cost ? "per_1k_samples" : "x_baseline");
        snprintf(rows[n].tip, sizeof rows[n].tip,
                 abs_cost ? "%d GPUs: %.4g per 1k samples"
                          : "%d GPUs: %.2fx the "
                            "baseline's cost per sample",
                 r->m.nranks, v);
    }
    hbar_chart(out, "chart-cost",
               abs_cost ? "Cost per 1000 samples (in the unit of the price per GPU hour)"
                        : "Cost per sample against the baseline (1 = the same)",
               rows, n, abs_cost ? "per 1k samples" : "x baseline", "#7a5230");
}

static void runs_chart(FILE *out, const struct sp_cmp *c)
{
    char labels[64][64];
    double ms[64][SP_CAT_N];
    const char *attrs[64][1];
    char abuf[64][48];
    int n = 0;
    for (int i = 0; i < c->n && n < 64; i++, n++) {
        snprintf(labels[n], sizeof labels[n], "%d GPU%s", c->runs[i].m.nranks,
                 c->runs[i].m.nranks == 1 ? "" : "s");
        memcpy(ms[n], c->runs[i].cat_ms, sizeof ms[n]);
        snprintf(abuf[n], sizeof abuf[n], "data-run=\"%d\" data-gpus=\"%d\"", i,
                 c->runs[i].m.nranks);
        attrs[n][0] = abuf[n];
    }
    stacked_chart(out, "chart-runs", "Mean step time of each run by category (ms)", labels, ms,
                  attrs, n);
}

int sp_html_compare(FILE *out, const struct sp_cmp *c, double price)
{
    page_head(out, "scaleprof compare");
    fprintf(out, "<h1>scaleprof compare</h1>\n<p class=\"sub\">%d runs, baseline ", c->n);
    esc(out, c->runs[c->base].dir);
    fputs("</p>\n", out);
    cmp_table(out, c, price);
    fputs("<h2 id=\"findings\">Findings</h2>\n", out);
    if (!c->nf) fputs("<p id=\"healthy\">No finding across these runs.</p>\n", out);
    for (int i = 0; i < c->nf; i++) {
        const struct sp_cause_info *ci = sp_cause_info(c->f[i].cause);
        const char *sev = sp_model_severity_name(sp_severity_of_gain(c->f[i].gain));
        fprintf(out,
                "<div class=\"finding sev-%s\" data-cause=\"%s\" data-gain=\"%.4f\"><h3>%d. %s "
                "[%s] &middot; "
                "saves %.0f%% of the time per sample</h3>\n<p>",
                sev, ci->name, c->f[i].gain, i + 1, ci->name, sev, 100 * c->f[i].gain);
        esc(out, c->f[i].evidence);
        fputs(".</p>\n<p class=\"try\"><b>First try:</b> ", out);
        esc(out, ci->first_try);
        fputs("</p></div>\n", out);
    }
    fputs("<h2 id=\"efficiency\">Efficiency against GPU count</h2>\n", out);
    efficiency_chart(out, c);
    fputs("<h2 id=\"lost\">Where the lost time went</h2>\n", out);
    runs_chart(out, c);
    lost_chart(out, c);
    fputs("<h2 id=\"cost\">Cost per sample</h2>\n", out);
    cost_chart(out, c, price);
    for (int i = 0; i < c->n; i++) {
        if (!c->runs[i].m.nfindings) continue;
        const struct sp_finding *f = &c->runs[i].m.findings[0];
        fputs("<p class=\"note\">", out);
        esc(out, c->runs[i].dir);
        fprintf(out,
                ": first finding %s (saves %.0f%%); scaleprof html on that run alone shows its "
                "report.</p>\n",
                sp_cause_info(f->cause)->name, 100 * f->gain);
    }
    page_foot(out);
    return ferror(out) ? -1 : 0;
}
