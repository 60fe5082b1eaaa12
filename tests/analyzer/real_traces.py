#!/usr/bin/env python3
"""real_traces.py - the diagnosis on real PyTorch-profiler traces, checked
against sums made here over the raw JSON, independently of the analyzer.

A GPU idle between kernels while the host had not yet launched the next
one waits for the host (HTA calls this host wait): the report counts it as
idle_host from the moment the GPU went idle, and prices it as
host_overhead.  The sums below follow the same definitions on the Kineto
events themselves: step k from ProfilerStep k's start to the next one's,
GPU busy = kernels, copies and memsets, input = DataLoader ranges, host =
runtime calls made while the GPU was idle, stretched back to the start of
that idle gap.

Usage: real_traces.py CASE  (SCALEPROF, DATA in the environment)
"""
import gzip
import json
import os
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)
from intervals import measure, union  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whatif_check  # noqa: E402

SKIP = 3
TOLERANCE = 0.03  # points of step time


def raw_shares(path):
    """idle_input, idle_host, idle_other over the steps after SKIP."""
    ev = json.load(gzip.open(path))["traceEvents"]
    x = [e for e in ev if e.get("ph") == "X"]
    # steps numbered below SKIP are warm-up: the markers' own numbers
    marks = sorted((e["ts"], e["ts"] + e["dur"], int(e["name"].split("#")[1])) for e in x
                   if str(e.get("name", "")).startswith("ProfilerStep#"))
    steps = [(a, b) for a, b, _ in marks]
    first = next((k for k, (_, _, num) in enumerate(marks) if num >= SKIP), len(marks))
    gpu = union([(e["ts"], e["ts"] + e["dur"]) for e in x
                 if str(e.get("cat", "")).lower() in ("kernel", "memcpy", "memset", "gpu_memcpy", "gpu_memset")])
    loader = union([(e["ts"], e["ts"] + e["dur"]) for e in x if "DataLoader" in str(e.get("name", ""))])
    runtime = sorted((e["ts"], e["ts"] + e["dur"]) for e in x
                     if str(e.get("cat", "")).lower() in ("runtime", "cuda_runtime"))
    total = idle = inp = host = 0
    for k in range(first, len(steps)):
        lo = steps[k][0]
        hi = steps[k + 1][0] if k + 1 < len(steps) else steps[k][1]
        busy = [[max(s, lo), min(e, hi)] for s, e in gpu if e > lo and s < hi]
        busy_in = union(busy + [[max(s, lo), min(e, hi)] for s, e in loader if e > lo and s < hi])
        late = []
        for s, e in runtime:
            if not lo <= s < hi:
                continue
            if any(a <= s < b for a, b in busy_in):
                late.append((s, e))
            else:
                late.append((max([b for a, b in busy_in if b <= s] or [lo]), e))
        all_host = union(busy_in + [[max(a, lo), min(b, hi)] for a, b in late])
        total += hi - lo
        idle += (hi - lo) - measure(busy, lo, hi)
        inp += measure(busy_in, lo, hi) - measure(busy, lo, hi)
        host += measure(all_host, lo, hi) - measure(busy_in, lo, hi)
    return inp / total, host / total, (idle - inp - host) / total


def report(path, tmp):
    scaleprof = os.environ["SCALEPROF"]
    out = os.path.join(tmp, "t")
    subprocess.run([scaleprof, "import", "kineto", path, "-o", out], check=True, stdout=subprocess.DEVNULL)
    p = subprocess.run([scaleprof, "report", out, "--json", "--skip", str(SKIP)], check=True,
                       stdout=subprocess.PIPE, text=True)
    rep = json.loads(p.stdout)
    bad = whatif_check.problems(rep)
    if bad:
        fail("%s: the what-if replay fails its check: %s" % (path, "; ".join(bad)))
    return rep


def check_shares(name, expect_first):
    path = os.path.join(os.environ["DATA"], name)
    want = raw_shares(path)
    with tempfile.TemporaryDirectory(prefix="sprof-real-") as tmp:
        rep = report(path, tmp)
    b = rep["breakdown"]
    got = (b["idle_input"], b["idle_host"], b["idle_other"])
    for label, w, g in zip(("idle_input", "idle_host", "idle_other"), want, got):
        print("  %-10s raw JSON %.3f, report %.3f" % (label, w, g))
        if abs(w - g) > TOLERANCE:
            fail("%s %.3f is not within %.2f of the raw JSON's %.3f" % (label, g, TOLERANCE, w))
    findings = [(f["cause"], round(f["gain"], 3)) for f in rep["findings"]]
    print("  findings:", findings)
    if not findings or findings[0][0] != expect_first:
        fail("the first finding should be %s: %s" % (expect_first, findings))
    return rep


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def case_resnet_workers_launch_bound():
    """ResNet-50 with 4 loader workers is not input-bound: a quarter of each
    step the GPU waits for the host to launch, and that is the first
    finding; it and its parts (host_sync, launch_api, ...) together are
    priced near its share."""
    rep = check_shares("resnet50_num_workers_4.pt.trace.json.gz", "host_overhead")
    host = sum(f["gain"] for f in rep["findings"]
               if f["cause"] == "host_overhead" or f.get("part_of") == "host_overhead")
    if abs(host - rep["breakdown"]["idle_host"]) > 0.05 or rep["healthy"]:
        fail("host_overhead's gain with its parts' %.3f should be near idle_host %.3f, and the "
             "job not healthy" % (host, rep["breakdown"]["idle_host"]))


def case_resnet_no_workers_input_first():
    """With 0 workers the input pipeline comes first; the host's late
    launches are a second, smaller finding."""
    rep = check_shares("resnet50_num_workers_0.pt.trace.json.gz", "input_pipeline")
    causes = [f["cause"] for f in rep["findings"]]
    if "host_overhead" not in causes:
        fail("host_overhead (9%% of the step) missing: %s" % causes)


def case_sampled_ranks_no_false_wait():
    """Two ranks sampled from a 128-rank job, whose NCCL kernels are
    SendRecv (peer unknown): nothing pairs them, so the report draws no
    collective wait, no straggler and no pipeline from them."""
    d = os.environ["DATA"]
    with tempfile.TemporaryDirectory(prefix="sprof-real-") as tmp:
        out = os.path.join(tmp, "t")
        subprocess.run([os.environ["SCALEPROF"], "import", "kineto", os.path.join(d, "sampled128_rank0.json.gz"),
                        os.path.join(d, "sampled128_rank1.json.gz"), "-o", out], check=True, stdout=subprocess.DEVNULL)
        p = subprocess.run([os.environ["SCALEPROF"], "report", out, "--json"], check=True, stdout=subprocess.PIPE,
                           text=True)
    rep = json.loads(p.stdout)
    causes = [f["cause"] for f in rep["findings"]]
    print("  collective_wait %.3f, findings %s, pipeline stages %s" % (
        rep["breakdown"]["collective_wait"], causes, rep["whatif"]["pipeline_stages"]))
    if rep["breakdown"]["collective_wait"] > 0.01 or set(causes) & {"straggler", "imbalance", "pipeline_stage",
                                                                     "pipeline_bubble"}:
        fail("a wait, straggler or pipeline the trace cannot support")


def case_whatif_check_every_trace():
    """Every real trace (each file alone, the two sampled ranks together):
    the replay reproduces the recorded steps, no cause saves more than its
    own time on the critical path, all fixed saves at least the best one."""
    d = os.environ["DATA"]
    sets = [[n] for n in sorted(os.listdir(d)) if n.endswith((".json", ".json.gz"))]
    sets.append(["sampled128_rank0.json.gz", "sampled128_rank1.json.gz"])
    scaleprof = os.environ["SCALEPROF"]
    for names in sets:
        with tempfile.TemporaryDirectory(prefix="sprof-real-") as tmp:
            out = os.path.join(tmp, "t")
            # a damaged trace imports what it can (exit 1) and is reported on all the same
            subprocess.run([scaleprof, "import", "kineto"] + [os.path.join(d, n) for n in names] + ["-o", out],
                           stdout=subprocess.DEVNULL)
            p = subprocess.run([scaleprof, "report", out, "--json"], stdout=subprocess.PIPE, text=True)
        if p.returncode != 0:
            print("  %s: nothing to report (exit %d)" % (" + ".join(names), p.returncode))
            continue
        rep = json.loads(p.stdout)
        if rep.get("kind") == "host":  # no GPU recorded: the host-side view, no replay to check
            print("  %s: no GPU: host-side view, nothing replayed" % " + ".join(names))
            continue
        print("  %s: %s" % (" + ".join(names), whatif_check.summary(rep)))
        bad = whatif_check.problems(rep)
        if bad:
            fail("%s: %s" % (" + ".join(names), "; ".join(bad)))


def raw_kernels(path, first, last):
    """Per kernel name over steps first..last (the markers' numbers): calls
    and the durations of the kernels starting in them, step k running from
    ProfilerStep#k's start to the next one's (ns, exact decimals)."""
    import decimal
    ev = json.load(gzip.open(path, "rt"), parse_float=decimal.Decimal)
    rank = (ev.get("distributedInfo") or {}).get("rank", 0)
    x = [e for e in ev["traceEvents"] if e.get("ph") == "X" and "ts" in e]
    marks = sorted((e["ts"], e["ts"] + e.get("dur", 0), int(e["name"].split("#")[1])) for e in x
                   if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation")
    nums = [m[2] for m in marks]
    k0, k1 = nums.index(first), nums.index(last)
    lo = marks[k0][0]
    hi = marks[k1 + 1][0] if k1 + 1 < len(marks) else marks[k1][1]
    out = {}
    for e in x:
        if str(e.get("cat", "")).lower() == "kernel" and lo <= e["ts"] < hi:
            out.setdefault(e["name"], []).append(int(e.get("dur", 0) * 1000))
    return rank, out


def nearest_rank(v, q):
    v = sorted(v)
    import math
    return v[max(0, math.ceil(q * len(v)) - 1)]


def case_kernels_match_raw_json():
    """report --kernels on the shipped real traces: per kernel name, calls,
    total time, mean, p50 and p99 (nearest rank) over the analyzed steps
    are the raw JSON's, per rank and in all; the shares add up; with two
    ranks the slowest one per name is the one whose mean is highest."""
    d = os.environ["DATA"]
    scaleprof = os.environ["SCALEPROF"]
    for names in (["resnet50_num_workers_0.pt.trace.json.gz"], ["ddp2_rank0_nccl.json.gz"],
                  ["sampled128_rank0.json.gz", "sampled128_rank1.json.gz"]):
        with tempfile.TemporaryDirectory(prefix="sprof-real-") as tmp:
            out = os.path.join(tmp, "t")
            subprocess.run([scaleprof, "import", "kineto"] + [os.path.join(d, n) for n in names] + ["-o", out],
                           check=True, stdout=subprocess.DEVNULL)
            rep = json.loads(subprocess.run([scaleprof, "report", out, "--json", "--kernels", "100000"],
                                            check=True, stdout=subprocess.PIPE, text=True).stdout)
            text = subprocess.run([scaleprof, "report", out, "--kernels", "5"], check=True,
                                  stdout=subprocess.PIPE, text=True).stdout
        st = rep["steps"]
        raw = dict(raw_kernels(os.path.join(d, n), st["analyzed_first"], st["analyzed_last"]) for n in names)
        want = {}
        for rank, per in raw.items():
            for name, durs in per.items():
                want.setdefault(name, {})[rank] = durs
        got = {k["name"]: k for k in rep["kernels"]["top"]}
        if set(got) != set(want):
            fail("%s: kernel names differ: %d reported, %d in the JSON; e.g. %s" % (
                names, len(got), len(want), sorted(set(got) ^ set(want))[:3]))
        total = sum(sum(sum(v) for v in r.values()) for r in want.values())
        worst = 0.0
        for name, ranks in want.items():
            k = got[name]
            durs = [x for v in ranks.values() for x in v]
            if k["calls"] != len(durs):
                fail("%s: %d calls, the JSON has %d" % (name[:60], k["calls"], len(durs)))
            for what, g, w in (("total_ms", k["total_ms"], sum(durs) / 1e6),
                               ("mean_us", k["mean_us"], sum(durs) / len(durs) / 1e3),
                               ("p50_us", k["p50_us"], nearest_rank(durs, 0.5) / 1e3),
                               ("p99_us", k["p99_us"], nearest_rank(durs, 0.99) / 1e3),
                               ("share", k["share"], sum(durs) / total)):
                err = abs(g - w) / (abs(w) or 1)
                worst = max(worst, err)
                if err > 1e-5:  # the JSON prints 6 significant digits
                    fail("%s: %s %s, the JSON's %s" % (name[:60], what, g, w))
            for pr in k["per_rank"]:
                v = ranks.get(pr["rank"], [])
                if pr["calls"] != len(v) or abs(pr["total_ms"] - sum(v) / 1e6) > 1e-5 * max(1, sum(v) / 1e6):
                    fail("%s rank %d: %d calls %.6f ms, the JSON %d, %.6f" % (
                        name[:60], pr["rank"], pr["calls"], pr["total_ms"], len(v), sum(v) / 1e6))
            if len(ranks) > 1:
                means = {r: sum(v) / len(v) for r, v in ranks.items() if v}
                if k["slowest_rank"] != max(means, key=means.get):
                    fail("%s: slowest rank %s, the JSON's means %s" % (name[:60], k["slowest_rank"], means))
        shares = sum(k["share"] for k in rep["kernels"]["top"])
        print("  %s: %d kernel names, %d calls, %.2f ms over steps %d-%d; largest relative error %.1e; "
              "shares sum %.6f" % (" + ".join(names), len(want), sum(k["calls"] for k in got.values()),
                                   total / 1e6, st["analyzed_first"], st["analyzed_last"], worst, shares))
        if abs(shares - 1) > 1e-4:
            fail("the shares of every kernel should sum to 1")
        lines = [l for l in text.splitlines() if l.startswith("top ") or l.startswith("  ")]
        head = next((i for i, l in enumerate(text.splitlines()) if l.startswith("top 5 kernels")), None)
        if head is None:
            fail("the text report has no 'top 5 kernels' section:\n" + text)
        print("  " + "\n  ".join(text.splitlines()[head:head + 4]))


if __name__ == "__main__":
    testmain.run(globals())
