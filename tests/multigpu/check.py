#!/usr/bin/env python3
"""check.py - one process driving several GPUs, judged against the sim's truth.

Each scenario runs examples/multigpu (4 simulated GPUs in one process, or
2 in each of 2 processes, one GPU slowed) under `scaleprof run --sim`, then
checks the report as a user would:
  * the recording: each collective call (several inside one group in the
    -g pattern) is one nccl event carrying its communicator rank and the
    device the truth ran it on, and every GPU record carries its device;
  * the layout: 4 ranks in 1 process (4 GPUs) (or in 2 processes), each
    process named as one that holds several ranks;
  * every rank's device is the one the truth's collectives ran on (ranks
    need not drive the GPU of their own number: --device-offset);
  * every collective was matched on all 4 ranks, and its mean wait is the
    truth's (arrive_ns to last_arrive_ns, averaged over ranks and calls);
  * each rank's compute per step is its own device's kernel time in the
    truth (GPU events went to the rank of their device, not to the process);
  * the straggler finding names the rank of the slowed device, the rank the
    truth shows arriving last.

Usage: check.py SCENARIO  (or --list)
Environment (meson passes them): SCALEPROF_BIN, MULTIGPU_BIN, SIM_LIBDIR,
MULTIGPU_WORKDIR (where runs are kept for inspection).
Exit status: 0 pass, 1 fail.
"""
import collections
import glob
import json
import os
import shutil
import subprocess
import sys
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the verdict every script ends with)

GPUS = 4
STEPS = 12
SKIPPED_STEPS = 3          # the report's default warm-up
CALLS_PER_STEP = 2         # the example's two gradient buckets
SLOW_FACTOR = "1.5"
RUN_TIMEOUT_S = 120
WAIT_TOLERANCE = 0.10      # of the truth's mean wait, plus the floor below
WAIT_FLOOR_MS = 0.2
COMPUTE_TOLERANCE = 0.05   # of the truth's compute per step

# name: (processes, example flags); the slowed GPU is --slow-device's (or
# --slow-rank's).
SCENARIOS = {
    # nccl-tests -g 4 with ncclCommInitAll
    "group_init_all": (1, ["--pattern", "group", "--init", "all", "--slow-device", "2"]),
    # nccl-tests -g 4 with ncclGroupStart + ncclCommInitRank per device;
    # rank r on device (r + 2) % 4
    "group_init_rank": (1, ["--pattern", "group", "--init", "group", "--device-offset", "2",
                            "--slow-device", "1"]),
    # nccl-tests -t 4: a thread per device; rank r on device (r + 1) % 4
    "threads": (1, ["--pattern", "threads", "--device-offset", "1", "--slow-device", "2"]),
    # nccl-tests -g 2 under a launcher: 2 processes of 2 GPUs, ranks 0-1 and
    # 2-3 (the processes' RANK is 0 and 1)
    "two_procs": (2, ["--pattern", "group", "--init", "group", "--slow-rank", "3"]),
}


class Failure(Exception):
    pass


def run_job(name, nproc, flags):
    scaleprof = os.environ["SCALEPROF_BIN"]
    workdir = os.environ.get("MULTIGPU_WORKDIR") or os.path.abspath("multigpu-runs")
    base = os.path.join(workdir, name)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "truth"))
    trace = os.path.join(base, "trace")
    cmd = [scaleprof, "run", "--sim", "-o", trace] + (["--nproc", str(nproc)] if nproc > 1 else [])
    cmd += ["--", os.environ["MULTIGPU_BIN"], "--gpus", str(GPUS // nproc), "--steps", str(STEPS),
            "--slow-factor", SLOW_FACTOR] + flags
    env = dict(os.environ)
    env["SIM_TRUTH"] = os.path.join(base, "truth")
    with open(os.path.join(base, "run.log"), "w") as log:
        try:
            rc = subprocess.call(cmd, env=env, stdout=log, stderr=subprocess.STDOUT,
                                 timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure("%s: the job hung (killed after %d s)" % (name, RUN_TIMEOUT_S))
    if rc != 0:
        with open(os.path.join(base, "run.log")) as f:
            raise Failure("%s: `%s` exited %d:\n%s" % (name, " ".join(cmd), rc, f.read()[-3000:]))
    p = subprocess.run([scaleprof, "report", "--json", trace], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        raise Failure("scaleprof report exited %d: %s" % (p.returncode, p.stderr[-2000:]))
    text = subprocess.run([scaleprof, "report", trace], stdout=subprocess.PIPE, text=True,
                          timeout=RUN_TIMEOUT_S).stdout
    return base, json.loads(p.stdout), text


def load_truth(base, nproc):
    """Every truth line, each tagged with its process's pid (`pid`): device
    numbers are per process."""
    lines = []
    paths = glob.glob(os.path.join(base, "truth", "*.jsonl"))
    for path in paths:
        with open(path) as f:
            mine = [json.loads(l) for l in f if l.strip()]
        pid = [l["pid"] for l in mine if l["type"] == "process"][0]
        for l in mine:
            l["pid"] = pid
        lines += mine
    if len(paths) != nproc:
        raise Failure("truth: %d processes, expected %d" % (len(paths), nproc))
    return lines


def check_recording(base, colls):
    """The trace's nccl events per (rank, device) and GPU records per
    device equal the truth's."""
    paths = glob.glob(os.path.join(base, "trace", "**", "*.sprof"), recursive=True)
    p = subprocess.run([os.environ["SCALEPROF_BIN"], "dump", "--json"] + paths,
                       stdout=subprocess.PIPE, text=True, timeout=RUN_TIMEOUT_S)
    events = [json.loads(l) for l in p.stdout.splitlines() if l.startswith("{")]
    calls = collections.Counter((e["rank"], e["device"]) for e in events
                                if e.get("type") == "nccl" and e.get("op_name") == "allreduce")
    want = collections.Counter((c["rank"], c["device"]) for c in colls)
    print("  nccl events per (rank, device): %s (truth %s)" % (dict(sorted(calls.items())),
                                                               dict(sorted(want.items()))))
    if calls != want:
        raise Failure("nccl events per (rank, device) %s, truth %s" % (dict(calls), dict(want)))
    gpu = collections.Counter(e["device"] for e in events if e.get("type") == "gpu")
    if sorted(gpu) != sorted({c["device"] for c in colls}):
        raise Failure("GPU records on devices %s" % dict(gpu))


def analyzed(seq):
    """Collective number SEQ (from 0) lies in an analyzed step."""
    return SKIPPED_STEPS <= seq // CALLS_PER_STEP < STEPS


def check(name, nproc, flags):
    base, rep, text = run_job(name, nproc, flags)
    truth = load_truth(base, nproc)
    colls = [l for l in truth if l["type"] == "collective"]
    device_of, where = {}, {}
    for c in colls:
        if where.setdefault(c["rank"], (c["pid"], c["device"])) != (c["pid"], c["device"]):
            raise Failure("truth: rank %d ran collectives on two devices" % c["rank"])
        device_of[c["rank"]] = c["device"]
    if "--slow-device" in flags:
        slow_rank = None
        slow = int(flags[flags.index("--slow-device") + 1])
    else:
        slow_rank = int(flags[flags.index("--slow-rank") + 1])
        slow = device_of[slow_rank]
    check_recording(base, colls)
    overview = [l for l in text.splitlines() if "recorded by" in l]
    print("  %s" % (overview[0].strip() if overview else "(no overview line)"))

    lay = rep.get("layout", {})
    if (rep["ranks"], lay.get("processes"), lay.get("gpus"), lay.get("multi_rank_processes")) != (GPUS, nproc, GPUS, nproc):
        raise Failure("layout: %d ranks, %s; expected %d ranks in %d process(es) (%d GPUs)"
                      % (rep["ranks"], lay, GPUS, nproc, GPUS))
    want_text = "%d ranks in %d process%s (%d GPUs)" % (GPUS, nproc, "" if nproc == 1 else "es", GPUS)
    if lay.get("text") != want_text:
        raise Failure("layout text %r, expected %r" % (lay.get("text"), want_text))
    if not any("holds %d ranks" % (GPUS // nproc) in w for w in rep["warnings"]):
        raise Failure("no warning that the process's host-side events are shared: %s" % rep["warnings"])

    per_rank = {r["rank"]: r for r in rep["per_rank"]}
    for rank, dev in sorted(device_of.items()):
        got = per_rank.get(rank, {}).get("device")
        print("  rank %d: truth device %d, report device %s" % (rank, dev, got))
        if got != dev:
            raise Failure("rank %d: report says device %s, truth %d" % (rank, got, dev))

    # every collective found on all ranks, its wait as in the truth
    waits = collections.defaultdict(list)
    for c in colls:
        if analyzed(c["seq"]):
            waits[c["bytes"]].append((c["last_arrive_ns"] - c["arrive_ns"]) / 1e6)
    if len(rep["collectives"]) != CALLS_PER_STEP:
        raise Failure("%d collective kinds reported, expected %d" % (len(rep["collectives"]), CALLS_PER_STEP))
    steps = rep["steps"]["analyzed"]
    for c in rep["collectives"]:
        want = sum(waits[c["bytes"]]) / len(waits[c["bytes"]])
        print("  allreduce %8d B: nranks %d, calls %d, incomplete %d, wait %.3f ms (truth %.3f)"
              % (c["bytes"], c["nranks"], c["calls"], c["incomplete"], c["wait_ms"], want))
        if c["nranks"] != GPUS or c["incomplete"] or c["calls"] != steps:
            raise Failure("collective of %d bytes not matched on every rank: %s" % (c["bytes"], c))
        if abs(c["wait_ms"] - want) > WAIT_TOLERANCE * want + WAIT_FLOOR_MS:
            raise Failure("collective of %d bytes: wait %.3f ms, truth %.3f" % (c["bytes"], c["wait_ms"], want))

    # each rank's compute is its own device's kernels
    first_t = min(c["arrive_ns"] for c in colls if c["seq"] == SKIPPED_STEPS * CALLS_PER_STEP - 1)
    last_t = max(c["end_ns"] for c in colls if c["seq"] == STEPS * CALLS_PER_STEP - 1)
    kern = collections.defaultdict(float)
    for k in truth:
        if (k["type"] == "kernel" and not k["name"].startswith("ncclDevKernel")
                and k["start_ns"] >= first_t and k["end_ns"] <= last_t):
            kern[(k["pid"], k["device"])] += (k["end_ns"] - k["start_ns"]) / 1e6
    for rank, dev in sorted(device_of.items()):
        want = kern[where[rank]] / steps
        r = per_rank[rank]
        got = r["breakdown"]["compute"] * r["step_ms"]
        print("  rank %d (GPU %d): compute %.3f ms/step, truth %.3f" % (rank, dev, got, want))
        if abs(got - want) > COMPUTE_TOLERANCE * want:
            raise Failure("rank %d: compute %.3f ms/step, truth %.3f" % (rank, got, want))

    # the straggler: the rank that arrives last in the truth, on the slow device
    last = collections.Counter()
    for seq in {c["seq"] for c in colls if analyzed(c["seq"])}:
        inst = [c for c in colls if c["seq"] == seq]
        if max(c["last_arrive_ns"] - c["arrive_ns"] for c in inst) > 0:
            last[max(inst, key=lambda c: c["arrive_ns"])["rank"]] += 1
    truth_rank = last.most_common(1)[0][0]
    if device_of[truth_rank] != slow or slow_rank not in (None, truth_rank):
        raise Failure("truth: rank %d arrives last, on device %d, not the slowed one"
                      % (truth_rank, device_of[truth_rank]))
    fs = [f for f in rep["findings"] if f["cause"] == "straggler"]
    if fs:
        print("  finding: straggler [%s] ranks %s: %s" % (fs[0]["severity"], fs[0]["ranks"], fs[0]["evidence"]))
    if not fs or fs[0]["ranks"] != [truth_rank]:
        raise Failure("no straggler finding naming rank %d (GPU %d): %s"
                      % (truth_rank, slow, [(f["cause"], f["ranks"]) for f in rep["findings"]]))
    if "GPU %d" % slow not in fs[0]["evidence"]:
        raise Failure("the straggler finding does not name GPU %d: %s" % (slow, fs[0]["evidence"]))
    print("  straggler: truth rank %d on GPU %d, report rank %s" % (truth_rank, slow, fs[0]["ranks"]))


def main():
    if len(sys.argv) != 2 or (sys.argv[1] not in SCENARIOS and sys.argv[1] != "--list"):
        print("usage: check.py SCENARIO|--list (%s)" % ", ".join(SCENARIOS))
        return 2
    if sys.argv[1] == "--list":
        print("\n".join(SCENARIOS))
        return 0
    return testmain.verdict(sys.argv[1], lambda name: check(name, *SCENARIOS[name]), Failure, passed="ok")


if __name__ == "__main__":
    sys.exit(main())
