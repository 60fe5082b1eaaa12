#!/usr/bin/env python3
"""check.py - the accuracy suite: one scenario per finding, judged against truth.

A scenario is data (SCENARIOS below): the runs of examples/ddp_train it needs,
each on simulated GPUs under `scaleprof run --sim`, and the checks that a
user would make of the reports.  This file runs them and judges them.

Truth comes from two places the profiler never sees:
  * the simulator's ground truth (SIM_TRUTH=DIR): every kernel, copy and
    collective with its arrival, last arrival and end, per rank;
  * the example's own log (EXAMPLE_TRUTH=FILE): each step's boundaries and
    the intervals the rank waited for its input, on the host clock.
From them the checker computes, independently of the analyzer, the same
exclusive categories per step per rank (compute > memcpy > collective
transfer > collective wait > idle on input > other idle; overlap beside),
then compares the report's numbers with them.  Every scenario prints one
line per run: expected vs measured per category.

Usage: check.py SCENARIO   (or --list)
Environment (meson passes them): SCALEPROF_BIN, DDP_TRAIN, SIM_LIBDIR,
SCENARIO_WORKDIR (where runs are kept for inspection).
Exit status: 0 pass, 1 fail, 77 skipped (said why on stdout).
"""
import glob
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the verdict every script ends with)

SKIP = 77
CATEGORIES = ["compute", "memcpy", "collective_transfer", "collective_wait",
              "idle_input", "idle_host", "idle_other"]
SEVERITY = {"low": 0, "moderate": 1, "high": 2}
STEPS = 10
SKIPPED_STEPS = 3
# Tolerances, in points of step time (fractions): input share as the issue
# asks, the others a little wider since step edges differ by a launch or two.
INPUT_TOLERANCE = 0.02
CATEGORY_TOLERANCE = 0.04
RANK_INPUT_TOLERANCE = 0.03     # one rank's input share: fewer samples, more noise
BUSBW_TOLERANCE = 0.05
OVERLAP_GAIN_TOLERANCE = 0.15   # of the no-overlap exposed transfer
RUN_TIMEOUT_S = 120
SIM_NCCL_LATENCY_NS = 10000     # the sim's default SIM_NCCL_LATENCY_US, per call

# ------------------------------------------------------------- scenarios
#
# A run: name, ranks, nodes, ddp_train flags, extra environment.
# A check: (kind, arguments...), implemented once in CHECKS below.

# ddp_train's GPU work per sample at --layer-kthreads 64 on the sim's
# default 1000 threads per microsecond: 4 forward layers, backward twice
# that, 64k threads each.
EXAMPLE_US_PER_SAMPLE = 64 * 4 * 3
COMMON = ["--steps", str(STEPS), "--layer-kthreads", "64", "--read-kb", "64"]


def run(name, nproc, flags, env=None, nnodes=1):
    return {"name": name, "nproc": nproc, "nnodes": nnodes, "flags": COMMON + flags,
            "env": env or {}}


HEALTHY = ["--batch", "64", "--workers", "2", "--worker-cost-ms", "2",
           "--grad-mb", "16", "--buckets", "4", "--overlap"]
# 37 ms of GPU work per step (batch 48) against 80 ms to prepare a batch:
# one worker starves the GPU; six keep ahead of it with room for the
# scheduling noise of a loaded machine.
INPUT_SLOW = ["--batch", "48", "--workers", "1", "--worker-cost-ms", "80",
              "--grad-mb", "8", "--buckets", "2", "--overlap"]
INPUT_FIXED = ["--batch", "48", "--workers", "6", "--worker-cost-ms", "80",
               "--grad-mb", "8", "--buckets", "2", "--overlap"]
BIG_GRAD = ["--batch", "16", "--workers", "2", "--worker-cost-ms", "1",
            "--grad-mb", "128", "--buckets", "4"]
SLOW_LINK = {"SIM_NVLINK_GBPS": "10"}
SERIES_LINK = {"SIM_NVLINK_GBPS": "20"}
SERIES = ["--workers", "2", "--worker-cost-ms", "1", "--grad-mb", "32", "--buckets", "2"]
STRAGGLE = ["--batch", "16", "--workers", "1", "--grad-mb", "8", "--buckets", "2", "--overlap"]
# 10 ms per batch keeps one worker ahead of a 12 ms step; four times that
# on rank 2 makes it wait for its input about 28 ms per step.
UNEVEN = STRAGGLE + ["--worker-cost-ms", "10", "--uneven-rank", "2", "--uneven-factor", "4"]
SLOW_GPU = STRAGGLE + ["--worker-cost-ms", "4", "--slow-rank", "1", "--slow-factor", "2"]
# Hybrid jobs reduce within the node, then across: the report can set the
# bandwidth of collectives spanning hosts beside the one within a host.
CROSS = ["--batch", "16", "--workers", "2", "--worker-cost-ms", "1",
         "--grad-mb", "64", "--buckets", "4", "--hierarchical"]
NET_GBPS = 25.0   # the sim's default SIM_NET_GBPS: the link between nodes
MIXED = ["--batch", "16", "--workers", "1", "--worker-cost-ms", "50",
         "--grad-mb", "64", "--buckets", "4"]

SCENARIOS = {
    "example_on_sim": {
        "story": "the example, without the profiler, costs on the simulated GPUs what its "
                 "flags say (this validates the workload and the truth, not the profiler)",
        "profiler": False,
        "runs": [run("model", 4, HEALTHY), run("starved", 4, INPUT_SLOW)],
        "checks": [("truth_compute_ms", "model", 64 * EXAMPLE_US_PER_SAMPLE / 1000.0),
                   ("truth_share_at_least", "starved", "idle_input", 0.4),
                   ("truth_share_at_most", "model", "idle_input", 0.1)],
    },
    "healthy": {
        "story": "a compute-bound job with overlapped gradients has nothing to fix",
        "runs": [run("healthy", 4, HEALTHY)],
        "checks": [("categories", "healthy"),
                   ("no_finding_above", "healthy", "low")],
    },
    "input_pipeline": {
        "story": "one loader worker per rank starves four GPUs; six workers feed them",
        "runs": [run("slow", 4, INPUT_SLOW), run("fixed", 4, INPUT_FIXED)],
        "checks": [("categories", "slow"),
                   ("finding", "slow", "input_pipeline", "moderate"),
                   ("finding_first_try_mentions", "slow", "input_pipeline", "worker"),
                   ("categories", "fixed"),
                   ("no_finding", "fixed", "input_pipeline")],
    },
    "communication": {
        "story": "128 MiB of gradients reduced after the backward pass over a slow link",
        "runs": [run("serial", 4, BIG_GRAD, SLOW_LINK),
                 run("overlap", 4, BIG_GRAD + ["--overlap"], SLOW_LINK)],
        "checks": [("categories", "serial"),
                   ("finding", "serial", "communication", "moderate"),
                   ("busbw", "serial", "allreduce", float(SLOW_LINK["SIM_NVLINK_GBPS"])),
                   ("categories", "overlap"),
                   ("overlap_gain", "serial", "overlap")],
    },
    "small_batch": {
        "story": "a fixed global batch of 64 split over 1, 2, 4, 8 GPUs stops scaling; "
                 "64 per GPU scales again",
        "runs": [run("g1", 1, SERIES + ["--batch", "64"], SERIES_LINK),
                 run("g2", 2, SERIES + ["--batch", "32"], SERIES_LINK),
                 run("g4", 4, SERIES + ["--batch", "16"], SERIES_LINK),
                 run("g8", 8, SERIES + ["--batch", "8"], SERIES_LINK),
                 run("g8big", 8, SERIES + ["--batch", "64"], SERIES_LINK)],
        "checks": [("categories", "g8"),
                   ("compare_finding", ["g1", "g2", "g4", "g8"], "small_batch"),
                   ("efficiency_falls", ["g1", "g2", "g4", "g8"]),
                   ("efficiency_restored", ["g1", "g8"], ["g1", "g8big"], 0.85)],
    },
    "straggler": {
        "story": "rank 2 reads four times more data; in another run rank 1 has a slow GPU",
        "runs": [run("uneven", 4, UNEVEN), run("slowgpu", 4, SLOW_GPU)],
        "checks": [("categories", "uneven"),
                   ("straggler", "uneven", 2, "input"),
                   ("categories", "slowgpu"),
                   ("straggler", "slowgpu", 1, "compute")],
    },
    "cross_node": {
        "story": "the same job on one node and on two nodes of four GPUs",
        "needs_root": True,
        "runs": [run("two_nodes", 8, CROSS, nnodes=2),
                 run("one_node", 8, CROSS)],
        "checks": [("finding", "two_nodes", "cross_node", "low"),
                   ("busbw", "two_nodes", "allreduce", NET_GBPS),
                   ("categories", "two_nodes"),
                   ("no_finding", "one_node", "cross_node")],
    },
    "mixed": {
        "story": "a slow input pipeline and unoverlapped gradients at once, ranked by cost",
        "runs": [run("mixed", 4, MIXED, SLOW_LINK)],
        "checks": [("categories", "mixed"),
                   ("finding", "mixed", "input_pipeline", "moderate"),
                   ("finding", "mixed", "communication", "low"),
                   ("ranked_by_cost", "mixed", {"input_pipeline": ["idle_input"],
                                                "communication": ["collective_transfer"]})],
    },
}


class Failure(Exception):
    pass


class Skip(Exception):
    pass


class Disturbed(Exception):
    """The truth shows the run did not have the property the scenario set up
    (a loaded machine delayed a rank or a worker): not the profiler's fault,
    so the scenario is run again."""


# A "no finding" check is only fair when the truth agrees that the cause
# is absent: the category each cause is measured by, and the truth's share
# above which the run is judged disturbed rather than the report wrong.
ABSENCE_PREMISE = {"input_pipeline": ("idle_input", 0.04),
                   "straggler": ("collective_wait", 0.04),
                   "communication": ("collective_transfer", 0.08)}
ATTEMPTS = 3


# -------------------------------------------------------------- intervals

def union(intervals):
    out = []
    for s, e in sorted(i for i in intervals if i[1] > i[0]):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out


def intersect(a, b):
    out, i, j = [], 0, 0
    while i < len(a) and j < len(b):
        s, e = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if e > s:
            out.append([s, e])
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def subtract(a, b):
    out = []
    for s, e in a:
        cur = s
        for bs, be in b:
            if be <= cur or bs >= e:
                continue
            if bs > cur:
                out.append([cur, bs])
            cur = max(cur, be)
        if cur < e:
            out.append([cur, e])
    return out


def length(intervals):
    return sum(e - s for s, e in intervals)


def clip(intervals, lo, hi):
    return intersect(union(intervals), [[lo, hi]])


# ------------------------------------------------------------------ truth

def read_jsonl(path):
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line:
                yield json.loads(line)


def load_sim_truth(directory):
    """Per rank: kernels (non-NCCL), copies, collective (wait, transfer)."""
    ranks = {}
    for path in glob.glob(os.path.join(directory, "truth-*.jsonl")):
        rank, gpu = None, {"compute": [], "memcpy": [], "wait": [], "transfer": [],
                           "collectives": []}
        for ev in read_jsonl(path):
            t = ev.get("type")
            if t == "process":
                rank = ev.get("rank")
            elif t == "kernel" and not ev["name"].lower().startswith("nccl"):
                gpu["compute"].append([ev["start_ns"], ev["end_ns"]])
            elif t in ("memcpy", "memset"):
                gpu["memcpy"].append([ev["start_ns"], ev["end_ns"]])
            elif t == "collective":
                gpu["wait"].append([ev["arrive_ns"], ev["last_arrive_ns"]])
                gpu["transfer"].append([ev["last_arrive_ns"], ev["end_ns"]])
                gpu["collectives"].append(ev)
        if rank is None:
            continue
        merged = ranks.setdefault(rank, {k: [] for k in gpu})
        for k, v in gpu.items():
            merged[k].extend(v)
    return ranks


def load_example_truth(path):
    """Per rank: {step: (start, end)} and input-wait intervals."""
    steps, waits = {}, {}
    for ev in read_jsonl(path):
        r = ev["rank"]
        if ev["type"] == "step":
            steps.setdefault(r, {})[ev["step"]] = (ev["start_ns"], ev["end_ns"])
        elif ev["type"] == "input_wait":
            waits.setdefault(r, []).append([ev["start_ns"], ev["end_ns"]])
    return steps, waits


def classify_step(gpu, waits, lo, hi):
    """Exclusive categories of one step window on one GPU, in ns."""
    compute = clip(gpu["compute"], lo, hi)
    memcpy = subtract(clip(gpu["memcpy"], lo, hi), compute)
    busy = union(compute + memcpy)
    transfer = subtract(clip(gpu["transfer"], lo, hi), busy)
    busy = union(busy + transfer)
    wait = subtract(clip(gpu["wait"], lo, hi), busy)
    busy = union(busy + wait)
    idle = subtract([[lo, hi]], busy)
    idle_input = intersect(idle, clip(waits, lo, hi))
    comm = union(clip(gpu["transfer"], lo, hi) + clip(gpu["wait"], lo, hi))
    return {"compute": length(compute), "memcpy": length(memcpy),
            "collective_transfer": length(transfer), "collective_wait": length(wait),
            "idle_input": length(idle_input),
            "idle_rest": length(idle) - length(idle_input),
            "overlap": length(intersect(comm, compute)), "step": hi - lo}


def truth_breakdown(run_dir, skipped):
    """Fractions of step time over kept steps and all ranks, plus ms/step."""
    gpus = load_sim_truth(os.path.join(run_dir, "truth"))
    steps, waits = load_example_truth(os.path.join(run_dir, "example.jsonl"))
    if not gpus or not steps:
        raise Failure("%s: no ground truth (sim truth ranks %s, example ranks %s)"
                      % (run_dir, sorted(gpus), sorted(steps)))
    total, per_rank = {}, {}
    for rank, windows in steps.items():
        if rank not in gpus:
            raise Failure("%s: no sim truth for rank %d" % (run_dir, rank))
        acc = per_rank.setdefault(rank, {})
        for step, (lo, hi) in windows.items():
            if step < skipped:
                continue
            for k, v in classify_step(gpus[rank], waits.get(rank, []), lo, hi).items():
                acc[k] = acc.get(k, 0) + v
                total[k] = total.get(k, 0) + v
    frac = {k: v / total["step"] for k, v in total.items() if k != "step"}
    frac["idle_host+idle_other"] = frac.pop("idle_rest")
    nsteps = sum(1 for w in steps.values() for s in w if s >= skipped)
    frac["step_ms"] = total["step"] / nsteps / 1e6
    colls = [c for g in gpus.values() for c in g["collectives"]]
    return frac, per_rank, colls


# ------------------------------------------------------------------- runs

class Env:
    def __init__(self):
        missing = []
        self.scaleprof = os.environ.get("SCALEPROF_BIN", "")
        self.ddp_train = os.environ.get("DDP_TRAIN", "")
        self.sim_libdir = os.environ.get("SIM_LIBDIR", "")
        for what, path in (("scaleprof (SCALEPROF_BIN)", self.scaleprof),
                           ("examples/ddp_train (DDP_TRAIN)", self.ddp_train),
                           ("sim/libcudart.so.13 (SIM_LIBDIR)",
                            os.path.join(self.sim_libdir, "libcudart.so.13"))):
            if not path or not os.path.exists(path):
                missing.append(what)
        if missing:
            raise Failure("not built: " + ", ".join(missing))
        self.workdir = os.environ.get("SCENARIO_WORKDIR") or os.path.abspath("scenario-runs")


def run_job(env, scenario, spec, profiled):
    """Runs ddp_train on simulated GPUs, under the profiler when PROFILED;
    returns the run's directory."""
    base = os.path.join(env.workdir, scenario, spec["name"])
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "truth"))
    data = os.path.join(env.workdir, scenario, "data")
    trace = os.path.join(base, "trace")
    if profiled:
        cmd = [env.scaleprof, "run", "--sim", "-o", trace, "--nproc", str(spec["nproc"])]
        if spec["nnodes"] > 1:
            cmd += ["--nnodes", str(spec["nnodes"])]
    else:
        cmd = [os.path.join(env.sim_libdir, "simrun"), "--nproc", str(spec["nproc"])]
    cmd += ["--", env.ddp_train, "--data", data] + spec["flags"]
    job_env = dict(os.environ)
    job_env.update(spec["env"])
    job_env["SIM_TRUTH"] = os.path.join(base, "truth")
    job_env["EXAMPLE_TRUTH"] = os.path.join(base, "example.jsonl")
    job_env["LD_LIBRARY_PATH"] = env.sim_libdir + (
        ":" + job_env["LD_LIBRARY_PATH"] if job_env.get("LD_LIBRARY_PATH") else "")
    with open(os.path.join(base, "command.txt"), "w") as f:
        f.write(" ".join("%s=%s" % kv for kv in spec["env"].items()) + " " + " ".join(cmd) + "\n")
    with open(os.path.join(base, "run.log"), "w") as log:
        try:
            rc = subprocess.call(cmd, env=job_env, stdout=log, stderr=subprocess.STDOUT,
                                 timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure("%s: job timed out after %d s" % (spec["name"], RUN_TIMEOUT_S))
    if rc != 0:
        with open(os.path.join(base, "run.log")) as f:
            tail = f.read()[-3000:]
        raise Failure("%s: `%s` exited %d:\n%s" % (spec["name"], " ".join(cmd), rc, tail))
    return base


def scaleprof_json(env, args):
    p = subprocess.run([env.scaleprof] + args + ["--json"], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        raise Failure("scaleprof %s exited %d: %s" % (" ".join(args), p.returncode,
                                                       p.stderr.strip()[-2000:]))
    try:
        return json.loads(p.stdout)
    except ValueError as e:
        raise Failure("scaleprof %s --json printed no JSON (%s): %s"
                      % (" ".join(args), e, p.stdout[:500]))


class Scenario:
    def __init__(self, env, name):
        self.env, self.name = env, name
        self.dirs, self.reports, self.truth = {}, {}, {}
        self.profiled = SCENARIOS[name].get("profiler", True)

    def report(self, run_name):
        if run_name not in self.reports:
            self.reports[run_name] = scaleprof_json(
                self.env, ["report", os.path.join(self.dirs[run_name], "trace")])
        return self.reports[run_name]

    def truth_of(self, run_name):
        if run_name not in self.truth:
            skipped = SKIPPED_STEPS
            if self.profiled:
                skipped = self.report(run_name).get("steps", {}).get("skipped", SKIPPED_STEPS)
            self.truth[run_name] = truth_breakdown(self.dirs[run_name], skipped)
        return self.truth[run_name]

    def step_ms(self, run_name):
        return float(self.report(run_name)["steps"]["mean_ms"])

    def findings(self, run_name):
        return self.report(run_name).get("findings", [])


# ----------------------------------------------------------------- checks

def fmt_pct(x):
    return "%5.1f%%" % (100.0 * x)


def check_categories(sc, run_name):
    """Each category's share of step time matches the truth."""
    frac, _, _ = sc.truth_of(run_name)
    got = sc.report(run_name)["breakdown"]
    got = dict(got, **{"idle_host+idle_other": got.get("idle_host", 0) + got.get("idle_other", 0)})
    cols, bad = [], []
    for k in ["compute", "memcpy", "collective_transfer", "collective_wait", "idle_input",
              "idle_host+idle_other", "overlap"]:
        tol = INPUT_TOLERANCE if k == "idle_input" else CATEGORY_TOLERANCE
        exp, mes = frac.get(k, 0.0), float(got.get(k, 0.0))
        ok = abs(exp - mes) <= tol
        cols.append("%s %s/%s%s" % (k, fmt_pct(exp), fmt_pct(mes), "" if ok else " !"))
        if not ok:
            bad.append("%s: truth %s, report %s (tolerance %s)" % (k, fmt_pct(exp), fmt_pct(mes),
                                                                    fmt_pct(tol)))
    print("  %-10s expected/measured: step %.1f/%.1f ms; %s"
          % (run_name, frac["step_ms"], sc.step_ms(run_name), "; ".join(cols)))
    if bad:
        raise Failure("%s: categories off the truth: %s" % (run_name, "; ".join(bad)))
    check_rank_categories(sc, run_name)


def check_rank_categories(sc, run_name):
    """The same, rank by rank: a straggler's own step differs from the
    others', and an average could hide a rank classified wrongly."""
    _, per_rank, _ = sc.truth_of(run_name)
    rows = {int(r["rank"]): r for r in sc.report(run_name).get("per_rank", [])}
    worst = (0.0, None, None, 0.0, 0.0)
    for rank, acc in sorted(per_rank.items()):
        if rank not in rows:
            raise Failure("%s: report has no rank %d" % (run_name, rank))
        got = rows[rank]["breakdown"]
        for k in ["compute", "collective_transfer", "collective_wait", "idle_input"]:
            exp, mes = acc.get(k, 0) / acc["step"], float(got.get(k, 0))
            if abs(exp - mes) > worst[0]:
                worst = (abs(exp - mes), rank, k, exp, mes)
    dev, rank, k, exp, mes = worst
    print("  %-10s per rank: largest difference %.1f points (rank %s %s: truth %s, report %s)"
          % (run_name, 100 * dev, rank, k, fmt_pct(exp), fmt_pct(mes)))
    tol = RANK_INPUT_TOLERANCE if k == "idle_input" else CATEGORY_TOLERANCE
    if dev > tol:
        raise Failure("%s: rank %s %s: truth %s, report %s" % (run_name, rank, k, fmt_pct(exp),
                                                             fmt_pct(mes)))


def find(sc, run_name, cause):
    return [f for f in sc.findings(run_name) if f.get("cause") == cause]


def describe_findings(findings):
    return ", ".join("%s(%s)" % (f.get("cause"), f.get("severity")) for f in findings) or "none"


def check_finding(sc, run_name, cause, min_severity):
    """The report names CAUSE, at least MIN_SEVERITY."""
    hits = [f for f in find(sc, run_name, cause)
            if SEVERITY.get(f.get("severity"), -1) >= SEVERITY[min_severity]]
    print("  %-10s finding %s >= %s: got %s" % (run_name, cause, min_severity,
                                               describe_findings(sc.findings(run_name))))
    if not hits:
        raise Failure("%s: no %s finding of severity >= %s (findings: %s)"
                      % (run_name, cause, min_severity, describe_findings(sc.findings(run_name))))


def judge_unexpected(sc, run_name, hits):
    """Unexpected findings fail the profiler, unless the truth shows the
    cause really was there (then the run was disturbed)."""
    frac = sc.truth_of(run_name)[0]
    for f in hits:
        premise = ABSENCE_PREMISE.get(f.get("cause"))
        if premise and frac.get(premise[0], 0) >= premise[1]:
            raise Disturbed("%s: the truth itself shows %s at %s of step time"
                            % (run_name, premise[0], fmt_pct(frac[premise[0]])))
    if hits:
        raise Failure("%s: unexpected findings: %s" % (run_name, hits))


def check_no_finding(sc, run_name, cause):
    """The report does not name CAUSE at all, beyond a low note."""
    hits = [f for f in find(sc, run_name, cause) if SEVERITY.get(f.get("severity"), 2) > 0]
    print("  %-10s no %s finding above low: got %s" % (run_name, cause,
                                                       describe_findings(sc.findings(run_name))))
    judge_unexpected(sc, run_name, hits)


def check_no_finding_above(sc, run_name, severity):
    hits = [f for f in sc.findings(run_name)
            if SEVERITY.get(f.get("severity"), 2) > SEVERITY[severity]]
    print("  %-10s no finding above %s: got %s" % (run_name, severity,
                                                   describe_findings(sc.findings(run_name))))
    judge_unexpected(sc, run_name, hits)


def check_finding_first_try_mentions(sc, run_name, cause, word):
    tries = " ".join(str(f.get("first_try", "")) for f in find(sc, run_name, cause))
    if word not in tries.lower():
        raise Failure("%s: %s finding's first thing to try does not mention %r: %r"
                      % (run_name, cause, word, tries))


def model_busbw(op, nbytes, nranks, link_gbps):
    """What the sim's link model gives one call: bus bytes over latency plus
    bus bytes at link speed (docs/sim.md; nccl-tests' bus factors)."""
    factor = {"allreduce": 2.0 * (nranks - 1) / nranks,
              "allgather": (nranks - 1) / nranks,
              "reducescatter": (nranks - 1) / nranks}.get(op, 1.0)
    bus = nbytes * factor
    return bus / (SIM_NCCL_LATENCY_NS + bus / link_gbps)


def check_busbw(sc, run_name, op, link_gbps):
    """Achieved bus bandwidth of OP matches the truth and the link model."""
    _, _, colls = sc.truth_of(run_name)
    calls = [c for c in colls if c["op"] == op and c["busbw_gbps"] > 0]
    if not calls:
        raise Failure("%s: no %s in the truth" % (run_name, op))
    truth_bw = sorted(c["busbw_gbps"] for c in calls)[len(calls) // 2]
    big = max(calls, key=lambda c: c["bytes"])
    model_bw = model_busbw(op, big["bytes"], big["nranks"], link_gbps)
    rows = [c for c in sc.report(run_name).get("collectives", [])
            if str(c.get("op", "")).lower() == op]
    if not rows:
        raise Failure("%s: report lists no %s collective" % (run_name, op))
    got = max(rows, key=lambda c: c.get("bytes", 0) * c.get("calls", 1))["busbw_gbps"]
    print("  %-10s %s bus bandwidth: link %.2f, model with latency %.2f, truth %.2f, "
          "measured %.2f GB/s" % (run_name, op, link_gbps, model_bw, truth_bw, got))
    for ref, what in ((truth_bw, "truth"), (model_bw, "link model")):
        if abs(got - ref) > BUSBW_TOLERANCE * ref:
            raise Failure("%s: busbw %.2f GB/s is not within %d%% of the %s's %.2f"
                          % (run_name, got, 100 * BUSBW_TOLERANCE, what, ref))


def exposed_transfer_ms(sc, run_name, truth):
    if truth:
        frac = sc.truth_of(run_name)[0]
        return frac["collective_transfer"] * frac["step_ms"]
    return float(sc.report(run_name)["breakdown"]["collective_transfer"]) * sc.step_ms(run_name)


def check_overlap_gain(sc, before, after):
    """Overlap shrinks exposed transfer by what the truth says it does."""
    tb, ta = exposed_transfer_ms(sc, before, True), exposed_transfer_ms(sc, after, True)
    mb, ma = exposed_transfer_ms(sc, before, False), exposed_transfer_ms(sc, after, False)
    print("  %-10s exposed transfer per step %s -> %s: truth %.2f -> %.2f ms (-%.2f), "
          "measured %.2f -> %.2f ms (-%.2f)" % ("overlap", before, after, tb, ta, tb - ta,
                                                 mb, ma, mb - ma))
    if tb - ta <= 0:
        raise Failure("truth shows no gain from overlap: the scenario is mis-sized")
    if abs((mb - ma) - (tb - ta)) > OVERLAP_GAIN_TOLERANCE * tb:
        raise Failure("overlap gain measured %.2f ms, truth %.2f ms" % (mb - ma, tb - ta))


def compare_json(sc, runs):
    return scaleprof_json(sc.env, ["compare"] + [os.path.join(sc.dirs[r], "trace") for r in runs])


def compare_rows(sc, runs):
    cmp = compare_json(sc, runs)
    rows = {os.path.normpath(r["dir"]): r for r in cmp.get("runs", [])}
    out = []
    for r in runs:
        row = rows.get(os.path.normpath(os.path.join(sc.dirs[r], "trace")))
        if row is None:
            raise Failure("compare lists no run for %s (runs: %s)" % (r, sorted(rows)))
        out.append(row)
    return cmp, out


def fixed_global_efficiencies(sc, runs):
    """Speedup over the first run divided by the GPU ratio, for runs that
    split one global batch: with the work per step fixed, throughput is
    1 / step time.  (compare's own efficiency assumes a fixed per-GPU
    batch, so it is not the number for this series.)"""
    _, rows = compare_rows(sc, runs)
    base = rows[0]
    return [float(base["step_ms"]) / float(r["step_ms"]) / (float(r["gpus"]) / float(base["gpus"]))
            for r in rows]


def check_compare_finding(sc, runs, cause):
    cmp, rows = compare_rows(sc, runs)
    print("  compare    %s: step %s ms; findings %s"
          % ("/".join(runs), " ".join("%.1f" % float(r["step_ms"]) for r in rows),
             describe_findings(cmp.get("findings", []))))
    if not any(f.get("cause") == cause for f in cmp.get("findings", [])):
        raise Failure("compare does not name %s (findings: %s)"
                      % (cause, describe_findings(cmp.get("findings", []))))


def check_efficiency_falls(sc, runs):
    """At a fixed global batch, each doubling of GPUs helps less."""
    eff = fixed_global_efficiencies(sc, runs)
    print("  compare    fixed global batch, efficiency %s: %s"
          % ("/".join(runs), " ".join("%.2f" % e for e in eff)))
    if not eff[-1] < eff[1] - 0.05:
        raise Failure("efficiency does not fall as the per-GPU batch shrinks: %s" % eff)


def check_efficiency_restored(sc, small, big, floor):
    """Raising the global batch (same per-GPU batch as the 1-GPU run)
    brings efficiency back; here compare's own efficiency applies."""
    es = fixed_global_efficiencies(sc, small)[-1]
    _, rows = compare_rows(sc, big)
    eb = float(rows[-1]["efficiency"])
    print("  compare    %s GPUs: efficiency %.2f at the small per-GPU batch, %.2f at the "
          "large one" % (rows[-1]["gpus"], es, eb))
    if not (eb >= floor and eb > es + 0.05):
        raise Failure("raising the batch did not restore efficiency: %.2f -> %.2f (floor %.2f)"
                      % (es, eb, floor))


def truth_last_arrivals(colls):
    """Fraction of collectives each rank arrived last at, from the truth."""
    by_key = {}
    for c in colls:
        by_key.setdefault((c["comm"], c["seq"]), []).append(c)
    counts, total = {}, 0
    for group in by_key.values():
        if len(group) < 2:
            continue
        last = max(group, key=lambda c: c["arrive_ns"])
        counts[last["rank"]] = counts.get(last["rank"], 0) + 1
        total += 1
    return {r: n / total for r, n in counts.items()} if total else {}


def parse_ranks(value):
    """A finding's ranks: a list of numbers, or text such as "2", "1,3",
    "0-3" or "all"."""
    if isinstance(value, list):
        return set(int(v) for v in value)
    text = str(value).strip()
    if text == "all":
        return {"all"}
    out = set()
    for part in filter(None, (p.strip() for p in text.split(","))):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return out


def check_straggler(sc, run_name, rank, cause):
    _, _, colls = sc.truth_of(run_name)
    truth = truth_last_arrivals(colls)
    rows = sc.report(run_name).get("stragglers", [])
    fs = find(sc, run_name, "straggler")
    print("  %-10s straggler: truth rank %d last at %s of collectives, cause %s; report %s; "
          "findings %s" % (run_name, rank, fmt_pct(truth.get(rank, 0)), cause,
                           ", ".join("rank %s %s %s" % (s.get("rank"), s.get("cause"),
                                                        fmt_pct(float(s.get("last_arrival_fraction", 0))))
                                     for s in rows) or "none",
                           describe_findings(sc.findings(run_name))))
    if not any(rank in parse_ranks(f.get("ranks", [])) and SEVERITY.get(f.get("severity"), -1) >= 1
               for f in fs):
        raise Failure("%s: no straggler finding naming rank %d" % (run_name, rank))
    named = [s for s in rows if s.get("rank") == rank]
    if not named or named[0].get("cause") != cause:
        raise Failure("%s: rank %d not named straggler with cause %s: %s"
                      % (run_name, rank, cause, rows))
    got = float(named[0].get("last_arrival_fraction", 0))
    if abs(got - truth.get(rank, 0)) > 0.15:
        raise Failure("%s: last-arrival fraction %.2f, truth %.2f" % (run_name, got,
                                                                     truth.get(rank, 0)))


def check_ranked_by_cost(sc, run_name, costs):
    """Findings come in the order of the time they cost, per the truth."""
    frac = sc.truth_of(run_name)[0]
    truth_cost = {c: sum(frac.get(k, 0) for k in ks) for c, ks in costs.items()}
    expected = sorted(costs, key=lambda c: -truth_cost[c])
    order = [f.get("cause") for f in sc.findings(run_name) if f.get("cause") in costs]
    print("  %-10s ranking: truth %s; report %s" % (
        run_name, ", ".join("%s %s" % (c, fmt_pct(truth_cost[c])) for c in expected),
        ", ".join(order)))
    if order[:len(expected)] != expected:
        raise Failure("%s: findings ranked %s, truth says %s" % (run_name, order, expected))


def print_truth(run_name, frac):
    print("  %-10s truth: step %.1f ms; %s" % (
        run_name, frac["step_ms"],
        "; ".join("%s %s" % (k, fmt_pct(v)) for k, v in frac.items() if k != "step_ms")))


def check_truth_compute_ms(sc, run_name, expected_ms):
    """The sim ran the example's kernels for as long as its flags ask."""
    frac = sc.truth_of(run_name)[0]
    print_truth(run_name, frac)
    got = frac["compute"] * frac["step_ms"]
    print("  %-10s compute per step: example's model %.2f ms, sim truth %.2f ms"
          % (run_name, expected_ms, got))
    if abs(got - expected_ms) > 0.05 * expected_ms:
        raise Failure("%s: compute %.2f ms per step, the example asks for %.2f"
                      % (run_name, got, expected_ms))


def check_truth_share_at_least(sc, run_name, category, floor):
    frac = sc.truth_of(run_name)[0]
    print_truth(run_name, frac)
    print("  %-10s %s share in truth: %s (at least %s)"
          % (run_name, category, fmt_pct(frac[category]), fmt_pct(floor)))
    if frac[category] < floor:
        raise Failure("%s: %s is %s of step time, expected at least %s"
                      % (run_name, category, fmt_pct(frac[category]), fmt_pct(floor)))


def check_truth_share_at_most(sc, run_name, category, ceiling):
    frac = sc.truth_of(run_name)[0]
    print("  %-10s %s share in truth: %s (at most %s)"
          % (run_name, category, fmt_pct(frac[category]), fmt_pct(ceiling)))
    if frac[category] > ceiling:
        raise Failure("%s: %s is %s of step time, expected at most %s"
                      % (run_name, category, fmt_pct(frac[category]), fmt_pct(ceiling)))


CHECKS = {
    "truth_compute_ms": check_truth_compute_ms,
    "truth_share_at_least": check_truth_share_at_least,
    "truth_share_at_most": check_truth_share_at_most,
    "categories": check_categories,
    "finding": check_finding,
    "no_finding": check_no_finding,
    "no_finding_above": check_no_finding_above,
    "finding_first_try_mentions": check_finding_first_try_mentions,
    "busbw": check_busbw,
    "overlap_gain": check_overlap_gain,
    "compare_finding": check_compare_finding,
    "efficiency_falls": check_efficiency_falls,
    "efficiency_restored": check_efficiency_restored,
    "straggler": check_straggler,
    "ranked_by_cost": check_ranked_by_cost,
}


def can_make_nodes():
    if os.geteuid() != 0:
        return "simulating two nodes needs root (UTS namespaces); running as uid %d" % os.geteuid()
    if subprocess.call(["unshare", "--uts", "true"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL) != 0:
        return "unshare --uts fails here: no UTS namespaces"
    return None


def run_scenario(name):
    spec = SCENARIOS[name]
    print("scenario %s: %s" % (name, spec["story"]))
    if spec.get("needs_root"):
        why = can_make_nodes()
        if why:
            raise Skip(why)
    env = Env()
    for attempt in range(1, ATTEMPTS + 1):
        sc = Scenario(env, name)
        try:
            for r in spec["runs"]:
                sc.dirs[r["name"]] = run_job(env, name, r, spec.get("profiler", True))
            for kind, *args in spec["checks"]:
                CHECKS[kind](sc, *args)
            return
        except Disturbed as e:
            print("  disturbed (attempt %d of %d): %s" % (attempt, ATTEMPTS, e))
    raise Failure("every attempt was disturbed: the machine is too loaded to judge")


def main(argv):
    if len(argv) != 2 or (argv[1] not in SCENARIOS and argv[1] != "--list"):
        sys.stderr.write("usage: check.py SCENARIO|--list\nscenarios: %s\n"
                         % " ".join(SCENARIOS))
        return 2
    if argv[1] == "--list":
        print("\n".join(SCENARIOS))
        return 0
    return testmain.verdict(argv[1], run_scenario, Failure, Skip, skip_status=SKIP)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
