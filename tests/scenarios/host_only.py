#!/usr/bin/env python3
"""Jobs without a GPU, as a user without one runs them under `scaleprof run`:
a PyTorch CPU loop with a DataLoader of 0, 2 and 4 workers (cpu_loop.py:
its dataset reads a file and sleeps per sample, the loop times its own
next(iterator)), the same without workers whose samples are 8 MB reads
only, and a CPU-only gloo DDP job of 2 processes
(examples/pytorch/train_ddp.py --cpu).

For each: run suggests only verbs that work; report shows the host-side
view and makes no GPU claim, nor do html (which refuses) and export; the
loop's report names its input wait with its share of each iteration,
against the share the loop measured itself; without workers, the iterations
from the bursts of the dataset's reads and the wait as a lower bound
(the reads' span), never above the share measured.

usage: host_only.py CASE (loop | ddp), with SCALEPROF_BIN, CPU_LOOP,
TRAIN_DDP, PYTHON and SCENARIO_WORKDIR in the environment.  Exits 77 when
PYTHON has no torch."""
import json
import os
import re
import shutil
import subprocess
import sys

SCALEPROF = os.environ["SCALEPROF_BIN"]
PY = os.environ.get("PYTHON", "/usr/bin/python3")
WORK = os.path.join(os.environ.get("SCENARIO_WORKDIR", "."), "host_only")
SLEEP_MS, COMPUTE_MS, ITERS = 40, 40, 12
SHARE_TOL = 0.12     # a busy 2-core machine stalls the loop inside next() beyond its pipe waits
ITER_TOL = 0.20      # relative


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def sp(*args, rc=None):
    p = subprocess.run([SCALEPROF, *map(str, args)], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        fail(f"scaleprof {' '.join(map(str, args))}: exit {p.returncode}, wanted {rc}\n{p.stdout}\n{p.stderr}")
    return p


def run_job(name, cmd, nproc=0):
    out = os.path.join(WORK, name)
    shutil.rmtree(out, ignore_errors=True)
    extra = ["--nproc", str(nproc)] if nproc else []
    env = dict(os.environ, OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    p = subprocess.run([SCALEPROF, "run", "-o", out, *extra, "--", *cmd], capture_output=True, text=True,
                       timeout=120, env=env)
    if p.returncode != 0:
        fail(f"{name}: the job failed under scaleprof run ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    nxt = [l for l in p.stderr.splitlines() if "next:" in l]
    print(f"  {name}: {nxt[0] if nxt else '(no next step)'}")
    if not nxt or re.search(r"scaleprof (html|compare)", nxt[0]) or "scaleprof report" not in nxt[0]:
        fail(f"{name}: run should suggest report's host-side view and nothing that refuses: {p.stderr}")
    return out, p.stdout


def no_gpu_claims(name, d):
    """report (text, JSON), html and export of d make no GPU claim."""
    text = sp("report", d, rc=0)
    claims = [l for l in text.stdout.splitlines() if "GPU" in l and "no GPU" not in l]
    if not text.stdout.startswith("Host-side report") or claims:
        fail(f"{name}: report should be the host-side view, with no GPU claim: {claims or text.stdout[:300]}")
    if "no GPU activity was recorded" not in text.stderr:
        fail(f"{name}: report should say why it shows the host side only: {text.stderr}")
    rep = json.loads(sp("report", d, "--json", rc=0).stdout)
    if rep.get("kind") != "host" or rep.get("gpu") is not False or "breakdown" in rep or "steps" in rep:
        fail(f"{name}: report --json should be the host-side view: {sorted(rep)}")
    page = os.path.join(WORK, name + ".html")
    html = sp("html", d, "-o", page)
    if html.returncode != 1 or os.path.exists(page) or "no GPU activity was recorded" not in html.stderr:
        fail(f"{name}: html should refuse, with report's words, and write no page: {html.stderr}")
    tl = os.path.join(WORK, name + ".json")
    sp("export", d, "-o", tl, rc=0)
    with open(tl) as f:
        evs = json.load(f)["traceEvents"]
    bad = [e for e in evs if e.get("cat") == "finding" or "GPU" in e.get("name", "") or
           any(k.startswith("idle_") or k in ("compute", "breakdown") for k in e.get("args", {}))]
    if bad:
        fail(f"{name}: export claims GPU time: {bad[:2]}")
    print(f"  {name}: report, report --json, html (refused), export ({len(evs)} events): no GPU claim")
    return rep


def truth_of(stdout):
    m = re.search(r"truth: iterations (\d+) iter_ms ([\d.]+) wait_ms ([\d.]+) wait_share ([\d.]+)", stdout)
    if not m:
        fail("the loop printed no truth line:\n" + stdout)
    return {"iterations": int(m[1]), "iter_ms": float(m[2]), "wait_ms": float(m[3]), "share": float(m[4])}


LOWER_TOL = 0.03     # the reads' span against the loop's own next(): clocks agree, the span lies inside it
READ_CLOSE = 0.7     # a dataset that only reads: the span is most of next() (a loaded host
                     # stalls the loop after a batch's last read: 0.76 of it at worst seen)


def case_loop():
    data = os.path.join(WORK, "data")
    # (name, workers, sleep ms, compute ms, MB read per sample): loop0read's
    # samples are 8 MB reads and nothing else, the others read 64 kB and sleep
    case_loop0_random()
    for name, workers, sleep_ms, compute_ms, read_mb in (("loop0", 0, SLEEP_MS, COMPUTE_MS, 0),
                                                        ("loop0read", 0, 0, 20, 8),
                                                        ("loop2", 2, SLEEP_MS, COMPUTE_MS, 0),
                                                        ("loop4", 4, SLEEP_MS, COMPUTE_MS, 0)):
        cmd = [PY, os.environ["CPU_LOOP"], data + ("big" if read_mb else ""), workers, ITERS, sleep_ms,
               compute_ms, read_mb]
        d, out = run_job(name, list(map(str, cmd)))
        truth = truth_of(out)
        rep = no_gpu_claims(name, d)
        r = rep["per_rank"][0]
        got = (f"{r['iterations']} iterations (from the {r['iterations_from']}) of {r['iteration_ms']:.1f} ms, "
               f"input wait {r['input_wait_share']:.3f} of each" if r["iterations"] else "no iteration")
        print(f"  {name}: report {got}; the loop measured {truth['iterations']} of {truth['iter_ms']:.1f} ms, "
              f"{truth['share']:.3f}")
        if r["loader_workers"] != workers:
            fail(f"{name}: {r['loader_workers']} loader workers found, the loop has {workers}")
        finding = [f for f in rep["findings"] if f["cause"] == "input_pipeline"]
        if abs(r["iterations"] - truth["iterations"]) > 2:
            fail(f"{name}: {r['iterations']} iterations found, the loop ran {truth['iterations']} after warm-up")
        if abs(r["iteration_ms"] - truth["iter_ms"]) > ITER_TOL * truth["iter_ms"]:
            fail(f"{name}: iteration {r['iteration_ms']:.1f} ms, the loop measured {truth['iter_ms']:.1f}")
        if workers == 0:
            # the input is read inside next() by the loop itself: iterations
            # from the bursts of reads, the wait their span, a lower bound
            if r["iterations_from"] != "file reads" or r.get("input_wait_lower_bound") is not True:
                fail(f"{name}: without workers the iterations should come from the file reads, the wait "
                     f"said to be a lower bound: {r}")
            if r["input_wait_share"] > truth["share"] + LOWER_TOL:
                fail(f"{name}: input wait {r['input_wait_share']:.3f} claimed, more than the "
                     f"{truth['share']:.3f} the loop measured")
            if read_mb and r["input_wait_share"] < READ_CLOSE * truth["share"]:
                fail(f"{name}: a dataset that only reads: {r['input_wait_share']:.3f} should be close to the "
                     f"{truth['share']:.3f} measured")
            said = re.search(r"waits for input at least (\d+)% of each iteration", finding[0]["evidence"]) \
                if finding else None
            if not said or "not recorded" not in finding[0]["evidence"] or \
                    int(said[1]) > 100 * truth["share"] + 100 * LOWER_TOL:
                fail(f"{name}: input_pipeline should name the wait as at least its share: {rep['findings']}")
            text = sp("report", d, rc=0).stdout
            if "at least" not in text or "(from the file reads)" not in text:
                fail(f"{name}: the text report should say where its iterations come from and that the wait "
                     f"is a lower bound:\n{text}")
            print(f"  {name}: {finding[0]['evidence'][:150]}...")
            continue
        if r["iterations_from"] != "loader pipe":
            fail(f"{name}: the iterations should be found from the loader's pipe, about {truth['iterations']}")
        if r.get("input_wait_lower_bound") is not False:
            fail(f"{name}: the pipe's wait is the wait itself, not a lower bound: {r}")
        if abs(r["input_wait_share"] - truth["share"]) > SHARE_TOL:
            fail(f"{name}: input wait {r['input_wait_share']:.3f} of each iteration, the loop measured "
                 f"{truth['share']:.3f}")
        if workers == 2:
            # two workers cannot keep up: the wait is a large part of each iteration, and said so
            said = re.search(r"waits for input (\d+)% of each iteration", finding[0]["evidence"]) if finding else None
            if not said or abs(int(said[1]) / 100 - truth["share"]) > SHARE_TOL:
                fail(f"{name}: input_pipeline should name the wait's share of each iteration: {rep['findings']}")
            print(f"  {name}: {finding[0]['evidence'][:110]}...")


# reads of a data directory at random times, no loop: no period, so no
# iteration and no share may be claimed
RANDOM_READS = """
import os, random, sys, time
root = sys.argv[1]
os.makedirs(root, exist_ok=True)
rng = random.Random(7)
for i in range(48):
    p = os.path.join(root, f"r{i % 8}.bin")
    if not os.path.exists(p):
        with open(p, "wb") as f:
            f.write(os.urandom(65536))
    with open(p, "rb") as f:
        f.read()
    time.sleep(rng.uniform(0.002, 0.030))
print("random reads done")
"""


def case_loop0_random():
    d, _ = run_job("random", [PY, "-c", RANDOM_READS, os.path.join(WORK, "randomdata")])
    rep = json.loads(sp("report", d, "--json", rc=0).stdout)
    r = rep["per_rank"][0]
    print(f"  random: report {r['iterations']} iterations, from {r['iterations_from']}")
    if r["iterations"] or r["input_wait_share"] is not None or rep["findings"]:
        fail(f"random: reads at random times hold no iteration: {r}")
    if "iterations not found" not in sp("report", d, rc=0).stdout:
        fail("random: the text report should say the iterations were not found")


def case_ddp():
    cmd = [PY, os.environ["TRAIN_DDP"], "--cpu", "--steps", 8, "--width", 128, "--layers", 2, "--files", 4,
           "--batch", 16, "--workers", 1, "--worker-cost-ms", 10, "--data", os.path.join(WORK, "ddpdata")]
    d, out = run_job("ddp", list(map(str, cmd)), nproc=2)
    m = re.search(r"train_ddp: 2 ranks.*?: ([\d.]+) ms/step", out)
    if not m:
        fail("train_ddp printed no step time:\n" + out)
    rep = no_gpu_claims("ddp", d)
    ranks = [r["rank"] for r in rep["per_rank"]]
    if ranks != [0, 1]:
        fail(f"the report should hold ranks 0 and 1: {ranks}")
    for r in rep["per_rank"]:
        print(f"  ddp rank {r['rank']}: {r['iterations']} iterations of {r['iteration_ms']:.1f} ms "
              f"(train_ddp: {m[1]} ms/step), input wait {r['input_wait_share']:.3f}, "
              f"{r['loader_workers']} worker")
        if r["loader_workers"] != 1 or not r["iterations"]:
            fail(f"rank {r['rank']}: its loader worker and iterations should be found: {r}")
        if abs(r["iteration_ms"] - float(m[1])) > 0.3 * float(m[1]):
            fail(f"rank {r['rank']}: iteration {r['iteration_ms']:.1f} ms, train_ddp measured {m[1]} ms/step")


if __name__ == "__main__":
    if subprocess.run([PY, "-c", "import torch"], capture_output=True).returncode != 0:
        print(f"SKIP: {PY} has no torch module (Debian: apt-get install python3-torch)")
        sys.exit(77)
    os.makedirs(WORK, exist_ok=True)
    fn = globals().get("case_" + sys.argv[1]) if len(sys.argv) > 1 else None
    if not fn:
        fail("usage: host_only.py loop|ddp")
    print(__doc__.strip().split("\n\n")[0])
    fn()
    print("ok")
