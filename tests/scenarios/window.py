#!/usr/bin/env python3
"""window.py - SCALEPROF_STEPS capture windows against a whole recording.

The README's demo job (examples/ddp_train, 4 simulated GPUs, a slow loader)
runs once recorded whole and once per window.  CUPTI's records reach the
recorder late (the sim delivers them at its flush, after the window has
closed), so a window must keep GPU activity by when the GPU ran it:

  5:8   the report is of steps 5-8 (the markers' numbers, no warm-up skipped)
        with GPU activity on every rank, and each GPU category (compute,
        memory copy, collective transfer) costs what it cost in steps 5-8 of
        the whole run, within 1 point of the step;
  0:11  every step of the job: 12 steps, GPU activity on every rank;
  3:    steps 3-11, numbered from 3, none skipped.

And a job whose GPU records are all lost (SCALEPROF_CUPTI=0 on a job without
collectives) is not called a CPU-only job: the report says the CUDA calls
were seen.

Environment (meson sets it): SCALEPROF_BIN, DDP_TRAIN, SHAPES_BIN,
SIM_LIBDIR, SCENARIO_WORKDIR.
"""
import json
import os
import shutil
import subprocess
import sys

FLAGS = ["--steps", "12", "--batch", "16", "--workers", "1", "--worker-cost-ms", "30",
         "--read-kb", "256", "--grad-mb", "16", "--buckets", "4", "--overlap"]
GPU_CATEGORIES = ("compute", "memcpy", "collective_transfer")
failures = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        failures.append(what)
    return ok


def env_for(extra):
    env = dict(os.environ)
    lib = os.environ["SIM_LIBDIR"]
    env["LD_LIBRARY_PATH"] = lib + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    env.pop("SCALEPROF_STEPS", None)
    env.update(extra)
    return env


def record(work, name, cmd, nproc, extra):
    trace = os.path.join(work, name)
    shutil.rmtree(trace, ignore_errors=True)
    p = subprocess.run([os.environ["SCALEPROF_BIN"], "run", "--sim", "-o", trace, "--nproc", str(nproc),
                        "--"] + cmd, env=env_for(extra), capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print(p.stdout[-2000:], p.stderr[-2000:])
    check(p.returncode == 0, f"{name}: the job runs under the profiler")
    return trace


def report(trace, *args):
    p = subprocess.run([os.environ["SCALEPROF_BIN"], "report", trace, "--json"] + list(args),
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print(p.stderr[-2000:])
        return None, p.stderr
    return json.loads(p.stdout), p.stderr


def ddp(work, name, steps):
    data = os.path.join(work, "data")
    extra = {"SCALEPROF_STEPS": steps} if steps else {}
    return record(work, name, [os.environ["DDP_TRAIN"], "--data", data] + FLAGS, 4, extra)


def steps_of(rep):
    s = rep["steps"]
    return s["analyzed_first"], s["analyzed_last"], s["skipped"]


def gpu_on_every_rank(rep, name):
    ranks = rep.get("per_rank") or []
    busy = [r["rank"] for r in ranks if sum(r["breakdown"].get(c, 0) for c in GPU_CATEGORIES) > 0]
    check(len(ranks) == 4 and len(busy) == 4, f"{name}: GPU activity on all 4 ranks (ranks with some: {busy})")


def main():
    work = os.path.join(os.environ.get("SCENARIO_WORKDIR", "."), "window")
    os.makedirs(work, exist_ok=True)

    full = ddp(work, "full", None)
    w58 = ddp(work, "w5_8", "5:8")
    whole = ddp(work, "w0_11", "0:11")
    tail = ddp(work, "w3_", "3:")

    ref, _ = report(full, "--steps", "5:8")
    win, err = report(w58)
    if not check(ref is not None and win is not None, f"both reports of steps 5-8 are made: {err.strip()}"):
        return
    check(steps_of(win) == (5, 8, 0), f"5:8: the report is of steps 5-8, none skipped: {steps_of(win)}")
    gpu_on_every_rank(win, "5:8")
    # The loader's share moves from run to run (a loaded machine), so the
    # GPU's categories are compared as time: ms per step, against the whole
    # run's step.
    step_ref, step_win = ref["steps"]["mean_ms"], win["steps"]["mean_ms"]
    for c in GPU_CATEGORIES:
        a = ref["breakdown"][c] * step_ref
        b = win["breakdown"][c] * step_win
        check(abs(a - b) <= 0.01 * step_ref,
              f"5:8: {c} {b:.3f} ms per step, the whole run's steps 5-8 {a:.3f} ms (within 1 point of "
              f"its {step_ref:.2f} ms step)")

    rep, err = report(whole)
    if check(rep is not None, f"0:11: a report is made: {err.strip()}"):
        check(rep["steps"]["count"] == 12 and rep["steps"]["first_number"] == 0,
              f"0:11: all 12 steps, from step 0: {rep['steps']}")
        gpu_on_every_rank(rep, "0:11")

    rep, err = report(tail)
    if check(rep is not None, f"3: a report is made: {err.strip()}"):
        check(steps_of(rep) == (3, 11, 0), f"3: steps 3-11, numbered as their markers, none skipped: "
                                           f"{steps_of(rep)}")
        gpu_on_every_rank(rep, "3:")

    lost = record(work, "no_cupti", [os.environ["SHAPES_BIN"], "--shape", "dp", "--no-nccl", "--steps", "4",
                                     "--work-ms", "2"], 1, {"SCALEPROF_CUPTI": "0"})
    rep, err = report(lost)
    # the report says the calls were seen, and what follows (the host-side
    # view) claims no GPU time
    check((rep is None or rep.get("gpu") is False) and "CUDA and NCCL call" in err and "CPUs only" not in err,
          f"no GPU record but CUDA calls: the report says the calls were seen, not CPU-only: {err.strip()}")


if __name__ == "__main__":
    main()
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    print("PASS")
