#!/usr/bin/env python3
"""tests/export: `scaleprof html` pages checked against report --json and
compare --json: every chart is there and carries the analysis' numbers.

    html_check.py CASE   (environment: SCALEPROF_BIN, GEN_TRACE; the sim
                          case DDP_TRAIN, SCALEPROF_SIM_DIR; the browser
                          case a `chromium` on PATH, else it skips)

The page is parsed with Python's html.parser (no browser needed); the
browser case renders it in headless Chromium and reads the DOM back.
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check import fail, gen, main, run, scaleprof, sim_run, DEMO_FLAGS  # noqa: E402

CATS = ["compute", "memcpy", "collective_transfer", "collective_wait", "idle_input", "idle_host", "idle_other"]
TOL_MS = 0.002


class Page(html.parser.HTMLParser):
    """Every element with its attributes, the chart (svg id) it sits in,
    and the page's text."""

    def __init__(self, text):
        super().__init__(convert_charrefs=True)
        self.elements, self.stack, self.text = [], [], []
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        chart = a.get("id") if tag == "svg" else (self.stack[-1] if self.stack else None)
        self.elements.append((tag, a, chart))
        if tag == "svg":
            self.stack.append(a.get("id"))

    def handle_endtag(self, tag):
        if tag == "svg" and self.stack:
            self.stack.pop()

    def handle_data(self, data):
        self.text.append(data)

    def chart(self, cid, tag=None, cls=None):
        if not any(t == "svg" and a.get("id") == cid for t, a, _ in self.elements):
            fail("no chart %s (charts: %s)" % (cid, [a.get("id") for t, a, _ in self.elements if t == "svg"]))
        return [a for t, a, c in self.elements
                if c == cid and (tag is None or t == tag) and (cls is None or a.get("class") == cls)]


def near(a, b, what, tol=TOL_MS):
    if abs(float(a) - float(b)) > tol + 1e-4 * abs(float(b)):
        fail("%s: page %s, analysis %s" % (what, a, b))


def self_contained(text):
    low = text.lower()
    for bad in ("<script", "src=\"http", "href=\"http", "@import", "url(http", "<link"):
        if bad in low:
            fail("the page is not self-contained: %s" % bad)


MANY = 64      # more ranks: the charts show DETAIL ranks and the mean
DETAIL = 16
HEAT_ROWS, HEAT_COLS = 64, 48   # the most rows (rank groups) and columns (step groups) of a heat map


def shown_ranks(page, rep):
    """The ranks the page draws row by row: all of them up to MANY; past
    that the ranks findings name (those not naming every rank), then the
    slowest of the rest by their own time (step time not spent waiting)."""
    ranks = [pr["rank"] for pr in rep["per_rank"]]
    got = sorted({int(a["data-rank"]) for a in page.chart("chart-breakdown", "rect", "seg")
                  if a["data-rank"] != "mean"})
    if len(ranks) <= MANY:
        if got != sorted(ranks):
            fail("breakdown rows %s, ranks %s" % (got, ranks))
        return got
    if len(got) != DETAIL:
        fail("%d ranks in detail of %d, not %d" % (len(got), len(ranks), DETAIL))
    named = [r for f in rep["findings"] if len(f["ranks"]) < len(ranks) for r in f["ranks"]][:DETAIL]
    if not set(named) <= set(got):
        fail("ranks named in findings %s not all in detail %s" % (named, got))
    own = {pr["rank"]: pr["step_ms"] * (1 - pr["breakdown"]["collective_wait"]) for pr in rep["per_rank"]}
    rest = [r for r in got if r not in named]
    out = [own[r] for r in ranks if r not in got]
    if rest and out and min(own[r] for r in rest) < max(out) - TOL_MS:
        fail("detail ranks %s are not the slowest: rank own times %s, left out up to %.3f ms" %
             (rest, [round(own[r], 3) for r in rest], max(out)))
    return got


def check_bins(page, rep):
    """The binned heat map: every rank-step in exactly one cell, each cell
    the least and the most wait of its rank-steps."""
    detail = rep["steps_detail"]
    wait = {(d["rank"], d["step"]): d["collective_wait"] for d in detail}
    seen = set()
    cells = page.chart("chart-wait-bins", "rect", "bin")
    for a in cells:
        r0, r1 = map(int, a["data-ranks"].split("-"))
        s0, s1 = map(int, a["data-steps"].split("-"))
        keys = [(r, st) for r in range(r0, r1 + 1) for st in range(s0, s1 + 1) if (r, st) in wait]
        if not keys:
            fail("cell ranks %d-%d steps %d-%d holds no rank-step" % (r0, r1, s0, s1))
        mine = [wait[k] for k in keys]
        near(a["data-min-ms"], min(mine), "least wait of ranks %d-%d steps %d-%d" % (r0, r1, s0, s1))
        near(a["data-max-ms"], max(mine), "most wait of ranks %d-%d steps %d-%d" % (r0, r1, s0, s1))
        for k in keys:
            if k in seen:
                fail("rank %d step %d in two cells" % k)
            seen.add(k)
    if seen != set(wait):
        fail("%d rank-steps in no cell" % len(set(wait) - seen))
    if len(cells) > HEAT_ROWS * HEAT_COLS:
        fail("%d cells: more than %d rows of %d" % (len(cells), HEAT_ROWS, HEAT_COLS))
    return len(cells)


def check_report(page, rep):
    """Every chart of the report page against report --json --per-step."""
    nranks = len(rep["per_rank"])
    shown = shown_ranks(page, rep)
    # the stacked bar per rank: seven segments each, the per-rank breakdown in ms
    segs = page.chart("chart-breakdown", "rect", "seg")
    for pr in rep["per_rank"]:
        if pr["rank"] not in shown:
            continue
        mine = {a["data-cat"]: a["data-ms"] for a in segs if a["data-rank"] == str(pr["rank"])}
        if sorted(mine) != sorted(CATS):
            fail("rank %d: breakdown segments %s" % (pr["rank"], sorted(mine)))
        for c in CATS:
            near(mine[c], pr["breakdown"][c] * pr["step_ms"], "rank %d %s ms" % (pr["rank"], c))
    if nranks > MANY:
        mean = {a["data-cat"]: a["data-ms"] for a in segs if a["data-rank"] == "mean"}
        for c in CATS:
            near(mean[c], sum(pr["breakdown"][c] * pr["step_ms"] for pr in rep["per_rank"]) / nranks,
                 "mean %s ms" % c)
    # per step: a line per rank, or the heat map of collective wait (of
    # the detail ranks past MANY, beside the binned one of all)
    detail = rep["steps_detail"]
    if nranks > 4:
        cells = page.chart("chart-wait-heatmap", "rect", "cell")
        mine = [d for d in detail if d["rank"] in shown]
        if any("data-steps" in a for a in cells):
            # more steps than columns: a cell is the mean of its steps
            nsteps = 0
            for a in cells:
                s0, s1 = map(int, a["data-steps"].split("-"))
                w = [d["collective_wait"] for d in mine if d["rank"] == int(a["data-rank"]) and s0 <= d["step"] <= s1]
                if len(w) != s1 - s0 + 1:
                    fail("rank %s steps %d-%d: %d rank-steps" % (a["data-rank"], s0, s1, len(w)))
                near(a["data-ms"], sum(w) / len(w), "wait rank %s steps %d-%d" % (a["data-rank"], s0, s1))
                nsteps += len(w)
            if nsteps != len(mine) or len(cells) > HEAT_COLS * len(shown):
                fail("%d cells cover %d of %d rank-steps" % (len(cells), nsteps, len(mine)))
        else:
            got = {(int(a["data-rank"]), int(a["data-step"])): a["data-ms"] for a in cells}
            for d in mine:
                near(got[(d["rank"], d["step"])], d["collective_wait"], "wait rank %d step %d" % (d["rank"], d["step"]))
            if len(got) != len(mine):
                fail("%d heat map cells, %d rank-steps" % (len(got), len(mine)))
        for a in page.chart("chart-step-range", "circle", "pt"):
            st = [d["step_ms"] for d in detail if d["step"] == int(a["data-step"])]
            near(a["data-max-ms"], max(st), "slowest step %s" % a["data-step"])
            near(a["data-min-ms"], min(st), "fastest step %s" % a["data-step"])
        if len(page.chart("chart-step-range", "circle", "pt")) != len({d["step"] for d in detail}):
            fail("the step-time range has not a point per step")
        if nranks > MANY:
            print("  binned heat map: %d cells" % check_bins(page, rep))
    else:
        pts = page.chart("chart-steps", "circle", "pt")
        got = {(int(a["data-rank"]), int(a["data-step"])): a["data-ms"] for a in pts}
        for d in detail:
            near(got[(d["rank"], d["step"])], d["step_ms"], "step time rank %d step %d" % (d["rank"], d["step"]))
        if len(got) != len(detail):
            fail("%d points, %d rank-steps" % (len(got), len(detail)))
        if len(page.chart("chart-steps", "polyline")) != len(rep["per_rank"]):
            fail("not one line per rank")
    # the input picture
    for cid, metric in (("chart-input-wait", "input_wait_ms"), ("chart-input-cpu", "loader_cpu_cores"),
                        ("chart-input-read", "read_mbps")):
        bars = page.chart(cid, "rect", "bar")
        want = nranks if nranks <= MANY else DETAIL + 1
        if len(bars) != want or any(a["data-metric"] != metric for a in bars):
            fail("%s: %d bars for %d ranks" % (cid, len(bars), nranks))
        if nranks > MANY:
            vals = [float(a["data-value"]) for a in bars if a["data-rank"] != "mean"]
            mean = [float(a["data-value"]) for a in bars if a["data-rank"] == "mean"]
            if vals != sorted(vals, reverse=True) or len(mean) != 1 or mean[0] > vals[0] + TOL_MS:
                fail("%s: not the highest ranks and their mean: %s %s" % (cid, vals, mean))
    wait = {int(a["data-rank"]): float(a["data-value"]) for a in page.chart("chart-input-wait", "rect", "bar")
            if a["data-rank"] != "mean"}
    for pr in rep["per_rank"]:
        if pr["rank"] not in wait:
            continue
        rows = [d for d in detail if d["rank"] == pr["rank"]]
        idle = sum(d["idle_input"] for d in rows) / len(rows)
        if wait[pr["rank"]] > idle + TOL_MS:
            fail("rank %d: input wait at step start %.3f ms above its idle input %.3f" % (pr["rank"],
                                                                                         wait[pr["rank"]], idle))
    # collectives: bus bandwidth of the costliest
    bars = page.chart("chart-collectives", "rect", "bar")
    for a, c in zip(bars, rep["collectives"]):
        if a["data-comm"] != c["comm"] or a["data-op"] != c["op"] or int(a["data-bytes"]) != c["bytes"]:
            fail("collective bar %s is not %s" % (a, c))
        near(a["data-busbw"], c["busbw_gbps"], "bus bandwidth of %s" % c["comm"], tol=0.01)
        near(a["data-transfer-ms"], c["transfer_ms"], "transfer of %s" % c["comm"])
    if len(bars) != min(8, len(rep["collectives"])):
        fail("%d collective bars for %d collectives" % (len(bars), len(rep["collectives"])))
    # findings with evidence, gain and first try
    divs = [a for t, a, _ in page.elements if t == "div" and a.get("class", "").startswith("finding")]
    if [d["data-cause"] for d in divs] != [f["cause"] for f in rep["findings"]]:
        fail("findings on the page %s, report %s" % ([d["data-cause"] for d in divs],
                                                     [f["cause"] for f in rep["findings"]]))
    text = " ".join(page.text)
    for f, d in zip(rep["findings"], divs):
        near(d["data-gain"], f["gain"], "gain of %s" % f["cause"], tol=1e-4)
        if f["evidence"] not in text or f["first_try"] not in text:
            fail("finding %s: evidence or first try missing from the page" % f["cause"])
    print("  %d segments, %d rank-steps, %d collectives, %d findings checked" %
          (len(segs), len(detail), len(bars), len(divs)))


def html_of(d, out, *more):
    scaleprof("html", d, *more, "-o", out)
    with open(out, encoding="utf-8") as f:
        text = f.read()
    self_contained(text)
    return text


def case_report_generated():
    """A 4-rank job with a straggler and slow input: the page's charts carry
    the report's numbers, rank by rank and step by step."""
    tmp = tempfile.mkdtemp(prefix="html-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "14", "--kernels", "4", "--input-ms", "3",
                "--helper", "--markers", "--slow-rank", "3", "--slow-compute-ms", "3")
        rep = json.loads(scaleprof("report", d, "--json", "--per-step").stdout)
        check_report(Page(html_of(d, os.path.join(tmp, "r.html"))), rep)
    finally:
        shutil.rmtree(tmp)


def case_report_many_ranks():
    """40 ranks: the per-step chart is a rank x step heat map of collective
    wait, each cell the report's number."""
    tmp = tempfile.mkdtemp(prefix="html-many-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "40", "--steps", "10", "--kernels", "2", "--slow-rank", "7",
                "--slow-compute-ms", "2")
        rep = json.loads(scaleprof("report", d, "--json", "--per-step").stdout)
        check_report(Page(html_of(d, os.path.join(tmp, "r.html"))), rep)
    finally:
        shutil.rmtree(tmp)


def case_report_eight_ranks():
    """8 ranks, one of them slow to read its input: past 4 ranks the
    per-step view is the heat map of collective wait with the step-time
    range above it; 8 ranks over 130 steps: columns of 3 steps, each cell
    its steps' mean."""
    tmp = tempfile.mkdtemp(prefix="html-eight-")
    try:
        for steps in ("12", "130"):
            d = gen(os.path.join(tmp, "t" + steps), "--ranks", "8", "--hosts", "2", "--steps", steps,
                    "--kernels", "2", "--slow-rank", "6", "--slow-input-ms", "3", "--helper")
            rep = json.loads(scaleprof("report", d, "--json", "--per-step").stdout)
            page = Page(html_of(d, os.path.join(tmp, "r.html")))
            if any(t == "svg" and a.get("id") == "chart-steps" for t, a, _ in page.elements):
                fail("8 ranks drawn as lines")
            check_report(page, rep)
    finally:
        shutil.rmtree(tmp)


PAGE_BOUND = 1 << 20   # bytes: the page of 1024 ranks stays under this


def case_report_scale():
    """128 and 1024 ranks, a straggler among them: the page shows 16 ranks
    in detail (the straggler first) beside the mean, the wait heat map of
    all ranks in groups, each cell the least and most wait of its
    rank-steps; 8 times the ranks makes the page less than 1.5 times as
    large, and 1024 ranks stay under 1 MiB."""
    tmp = tempfile.mkdtemp(prefix="html-scale-")
    try:
        size = {}
        for n, slow in ((128, "77"), (1024, "300")):
            d = gen(os.path.join(tmp, "t%d" % n), "--ranks", str(n), "--hosts", str(n // 8), "--steps", "12",
                    "--kernels", "2", "--slow-rank", slow, "--slow-compute-ms", "2")
            rep = json.loads(scaleprof("report", d, "--json", "--per-step").stdout)
            if not any(f["ranks"] == [int(slow)] for f in rep["findings"]):
                fail("%d ranks: no finding names rank %s alone: %s" % (n, slow, [(f["cause"], f["ranks"][:4]) for f in rep["findings"]]))
            page = os.path.join(tmp, "r%d.html" % n)
            check_report(Page(html_of(d, page)), rep)
            size[n] = os.path.getsize(page)
            print("  %d ranks: %d bytes" % (n, size[n]))
        if size[1024] > 1.5 * size[128]:
            fail("8 times the ranks, %.2f times the page" % (size[1024] / size[128]))
        if size[1024] > PAGE_BOUND:
            fail("the page of 1024 ranks is %d bytes, over %d" % (size[1024], PAGE_BOUND))
    finally:
        shutil.rmtree(tmp)


def check_compare(page, cmp):
    pts = page.chart("chart-efficiency", "circle", "pt")
    if len(pts) != len(cmp["runs"]):
        fail("%d efficiency points for %d runs" % (len(pts), len(cmp["runs"])))
    for a in pts:
        r = cmp["runs"][int(a["data-run"])]
        near(a["data-eff"], r["efficiency"], "efficiency of %s" % r["dir"], tol=1e-4)
        if int(a["data-gpus"]) != r["gpus"]:
            fail("efficiency point of %s at %s GPUs" % (r["dir"], a["data-gpus"]))
    if [int(a["data-gpus"]) for a in pts] != sorted(int(a["data-gpus"]) for a in pts):
        fail("the efficiency points are not in GPU order")
    segs = page.chart("chart-lost", "rect", "seg")
    for a in segs:
        r = cmp["runs"][int(a["data-run"])]
        near(a["data-ms"], r["lost_ms"][a["data-cat"]], "lost %s of %s" % (a["data-cat"], r["dir"]))
    if len(segs) != 7 * (len(cmp["runs"]) - 1):
        fail("%d lost-time segments" % len(segs))
    bars = page.chart("chart-cost", "rect", "bar")
    for a in bars:
        r = cmp["runs"][int(a["data-run"])]
        if a["data-unit"] == "per_1k_samples":
            near(a["data-cost"], r["cost_per_1k_samples"], "cost of %s" % r["dir"], tol=1e-6)
    if len(bars) != len(cmp["runs"]):
        fail("%d cost bars" % len(bars))
    runs = page.chart("chart-runs", "rect", "seg")
    if len(runs) != 7 * len(cmp["runs"]):
        fail("%d run segments" % len(runs))
    divs = [a for t, a, _ in page.elements if t == "div" and a.get("class", "").startswith("finding")]
    if [d["data-cause"] for d in divs] != [f["cause"] for f in cmp["findings"]]:
        fail("compare findings %s vs %s" % ([d["data-cause"] for d in divs], [f["cause"] for f in cmp["findings"]]))
    print("  %d runs: efficiency %s, %d lost-time segments, %d cost bars, findings %s" %
          (len(pts), [round(float(a["data-eff"]), 3) for a in pts], len(segs), len(bars),
           [d["data-cause"] for d in divs]))


def case_compare_generated():
    """1, 2 and 4 GPUs, the larger ones losing time in collectives: the
    efficiency, lost time and cost charts are compare's numbers."""
    tmp = tempfile.mkdtemp(prefix="html-cmp-")
    try:
        dirs = []
        for n, tr in ((1, "0"), (2, "2"), (4, "4")):
            flags = ["--ranks", str(n), "--steps", "12", "--kernels", "4", "--transfer-ms", tr]
            if n == 1:
                flags += ["--no-nccl"]
            dirs.append(gen(os.path.join(tmp, "r%d" % n), *flags))
        opts = ["--samples-per-step", "32", "--price-per-gpu-hour", "2.5"]
        cmp = json.loads(scaleprof("compare", *dirs, "--json", *opts).stdout)
        check_compare(Page(html_of(dirs[0], os.path.join(tmp, "c.html"), *dirs[1:], *opts)), cmp)
    finally:
        shutil.rmtree(tmp)


def case_bad_input():
    """No -o, nothing to analyze, a run of a comparison missing: a clear
    message each."""
    tmp = tempfile.mkdtemp(prefix="html-bad-")
    try:
        os.mkdir(os.path.join(tmp, "empty"))
        p = scaleprof("html", os.path.join(tmp, "empty"), "-o", os.path.join(tmp, "x.html"), ok=(1,))
        if "nothing to analyze" not in p.stderr:
            fail(p.stderr)
        p = scaleprof("html", os.path.join(tmp, "empty"), ok=(2,))
        if "-o FILE" not in p.stderr:
            fail(p.stderr)
        d = gen(os.path.join(tmp, "t"), "--ranks", "2", "--steps", "8")
        p = scaleprof("html", d, os.path.join(tmp, "empty"), "-o", os.path.join(tmp, "x.html"), ok=(1,))
        if "nothing to analyze" not in p.stderr or os.path.exists(os.path.join(tmp, "x.html")):
            fail("compare with an empty run: %s" % p.stderr)
    finally:
        shutil.rmtree(tmp)


CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome")


def chromium():
    for n in CHROMIUM_NAMES:
        p = shutil.which(n)
        if p:
            return p
    print("skip: no chromium on PATH (Debian: apt-get install -y chromium)")
    sys.exit(77)


def browser(exe, page, *args):
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--user-data-dir=" + os.path.join(os.path.dirname(page), "profile"), *args, "file://" + page]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        fail("chromium exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    return p.stdout


def layout(exe, page, width):
    """The page laid out by Chromium in a window WIDTH px wide: how far it
    overflows, the charts past the edge, the labels that overlap
    (layout.js, injected into a copy of the page)."""
    with open(page, encoding="utf-8") as f:
        text = f.read()
    with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "layout.js")) as f:
        js = f.read()
    probe = page + ".layout.html"
    with open(probe, "w", encoding="utf-8") as f:
        f.write(text.replace("</body>", "<script>" + js + "</script></body>"))
    dom = browser(exe, probe, "--window-size=%d,1200" % width, "--dump-dom")
    start = dom.rfind('<pre id="layout-result">')
    if start < 0:
        fail("layout.js left no result in %s at %d px" % (page, width))
    import html as htmlmod
    res = json.loads(htmlmod.unescape(dom[start + len('<pre id="layout-result">'):dom.index("</pre>", start)]))
    if res["width"] != width:
        fail("the window is %d px wide, not %d" % (res["width"], width))
    return res


def check_layout(exe, page, what, widths=(700,), shot=False):
    """At each of WIDTHS px: nothing wider than the window, no chart label
    on another or cut off; with SHOT a screenshot at 700 px is a
    700-pixel-wide picture."""
    for width in widths:
        res = layout(exe, page, width)
        if res["overflow"] > 0 or res["wide"]:
            fail("%s at %d px: the page is %d px too wide (charts past the edge: %s)" %
                 (what, width, res["overflow"], res["wide"]))
        if res["collisions"]:
            fail("%s at %d px: labels collide: %s" % (what, width, res["collisions"][:8]))
        if res["clipped"]:
            fail("%s at %d px: labels cut off at their chart's edge: %s" % (what, width, res["clipped"][:8]))
        if res["texts"] < 20:
            fail("%s at %d px: only %d chart labels measured" % (what, width, res["texts"]))
    if shot:
        png = page + ".png"
        browser(exe, page, "--window-size=700,2400", "--screenshot=" + png)
        with open(png, "rb") as f:
            head = f.read(24)
        if head[:8] != b"\x89PNG\r\n\x1a\n" or int.from_bytes(head[16:20], "big") != 700:
            fail("%s: the 700 px screenshot is not a 700-pixel-wide PNG" % what)
    print("  %s: fits %s px, %d labels, none on another" % (what, " and ".join(map(str, widths)), res["texts"]))


def case_layout():
    """Pages of 4, 8, 48 and 1024 ranks and a comparison of five runs, laid out
    by headless Chromium at 700 px (4 ranks and the comparison at 1000 px
    too, and a screenshot at 700 px): nothing overflows the window
    and no label of a chart overlaps another (an efficiency label the axis,
    step numbers each other); the 8-rank page's per-step view is the heat
    map, the 1024-rank page's the binned one (labels "ranks 960-1023"
    inside the chart)."""
    exe = chromium()
    tmp = tempfile.mkdtemp(prefix="html-layout-")
    try:
        for n, flags in ((4, ["--input-ms", "3", "--helper", "--markers"]),
                         (8, ["--slow-rank", "5", "--slow-compute-ms", "2"]),
                         (48, ["--hosts", "6", "--helper"]),
                         (1024, ["--hosts", "128", "--slow-rank", "1023", "--slow-compute-ms", "2"])):
            d = gen(os.path.join(tmp, "t%d" % n), "--ranks", str(n), "--steps", "40" if n < 1024 else "8",
                    "--kernels", "2", *flags)
            page = os.path.join(tmp, "r%d.html" % n)
            html_of(d, page)
            want = "chart-steps" if n <= 4 else "chart-wait-bins" if n > 64 else "chart-wait-heatmap"
            Page(open(page, encoding="utf-8").read()).chart(want)
            check_layout(exe, page, "%d ranks" % n, *(((1000, 700), True) if n == 4 else ()))
        dirs = []
        for n in (1, 2, 4, 8, 16):
            flags = ["--ranks", str(n), "--steps", "10", "--kernels", "2", "--transfer-ms", str(n / 4)]
            dirs.append(gen(os.path.join(tmp, "c%d" % n), *(flags + (["--no-nccl"] if n == 1 else []))))
        page = os.path.join(tmp, "compare.html")
        html_of(dirs[0], page, *dirs[1:], "--samples-per-step", "8")
        check_layout(exe, page, "compare of 5 runs", (1000, 700))
    finally:
        shutil.rmtree(tmp)


def case_browser():
    """The demo's run and a compare series rendered by headless Chromium:
    every chart is in the DOM it builds, with its numbers, and the
    screenshot is a picture of the page (SHOT_DIR keeps them)."""
    exe = chromium()
    tmp = tempfile.mkdtemp(prefix="html-browser-")
    keep = os.environ.get("SHOT_DIR")
    try:
        if os.environ.get("DDP_TRAIN") and os.environ.get("SCALEPROF_SIM_DIR"):
            d = sim_run(tmp, 4, *DEMO_FLAGS)
        else:
            d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "14", "--kernels", "4", "--input-ms", "8",
                    "--helper", "--markers")
        rep = json.loads(scaleprof("report", d, "--json", "--per-step").stdout)
        page = os.path.join(tmp, "report.html")
        html_of(d, page)
        dom = browser(exe, page, "--dump-dom")
        check_report(Page(dom), rep)
        shot = os.path.join(tmp, "report.png")
        browser(exe, page, "--window-size=1000,2900", "--screenshot=" + shot)
        with open(shot, "rb") as f:
            head = f.read(24)
        if head[:8] != b"\x89PNG\r\n\x1a\n" or int.from_bytes(head[16:20], "big") != 1000:
            fail("the screenshot is not a 1000-pixel-wide PNG")
        print("  screenshot %d bytes" % os.path.getsize(shot))
        dirs = []
        for n in (1, 2, 4):
            flags = ["--ranks", str(n), "--steps", "12", "--kernels", "4", "--transfer-ms", str(n)]
            dirs.append(gen(os.path.join(tmp, "r%d" % n), *(flags + (["--no-nccl"] if n == 1 else []))))
        cmp = json.loads(scaleprof("compare", *dirs, "--json").stdout)
        cpage = os.path.join(tmp, "compare.html")
        html_of(dirs[0], cpage, *dirs[1:])
        check_compare(Page(browser(exe, cpage, "--dump-dom")), cmp)
        browser(exe, cpage, "--window-size=1000,1900", "--screenshot=" + os.path.join(tmp, "compare.png"))
        if keep:
            os.makedirs(keep, exist_ok=True)
            for n in ("report.png", "compare.png", "report.html", "compare.html"):
                shutil.copy(os.path.join(tmp, n), os.path.join(keep, n))
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main(globals())
