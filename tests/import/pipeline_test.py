#!/usr/bin/env python3
"""A user brings the torch.profiler traces of a pipeline-parallel job.

Run as `pipeline_test.py SHAPE[:WHERE]` (meson registers one test per
shape; WHERE is where the traces name a send's or recv's peer, pipegen's
--peer-args: kernel, the default, or cpu_op, or none: then the report must
say that the sends and recvs are paired with nothing), or
`pipeline_test.py --show [SHAPE...]` to print what the report says.  Each
shape is a data-parallel x pipeline-parallel job with one injected fault,
written by pipegen.py (its own schedule simulation, one Kineto JSON file
per worker).  The traces are imported with `scaleprof import kineto` and
`scaleprof report --json` must put the injected cause first, with its
ranks, priced within max(0.05, 15% of it) of the gain pipegen measures by
simulating the job again without the fault; no other finding that was
not injected may be high.

Environment: SCALEPROF (the scaleprof binary).
"""
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import pipegen  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "analyzer"))
import whatif_check  # noqa: E402  (the replay's check of itself)

SCALEPROF = os.environ.get("SCALEPROF", "scaleprof")
HIGH = 0.20
# what each fault is, as the report names it
CAUSE = {"slow_rank": "straggler", "slow_stage": "pipeline_stage", "moving": "imbalance"}


class Failed(Exception):
    pass


def run(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise Failed("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(args[:3]), p.returncode, p.stdout, p.stderr))
    return p.stdout


def report(s, tmp, peer_args="kernel"):
    paths, _ = pipegen.write_job(s, os.path.join(tmp, "kineto"), peer_args=peer_args)
    out = os.path.join(tmp, "run")
    run([SCALEPROF, "import", "kineto", *paths, "-o", out, "--quiet"])
    return json.loads(run([SCALEPROF, "report", out, "--json", "--skip", str(s["warmup"])]))


def expected_ranks(s):
    if s["fault"] == "slow_rank":
        return [s["who"]]
    if s["fault"] == "slow_stage":
        return [s["who"] * s["dp"] + d for d in range(s["dp"])]
    return list(range(s["dp"] * s["pp"]))  # imbalance: every rank


def spans(ranks):
    """[0, 1, 2, 5] -> "0-2,5"."""
    out, i = [], 0
    while i < len(ranks):
        j = i
        while j + 1 < len(ranks) and ranks[j + 1] == ranks[j] + 1:
            j += 1
        out.append("%d-%d" % (ranks[i], ranks[j]) if j > i else "%d" % ranks[i])
        i = j + 1
    return ",".join(out)


def summary(rep):
    return "; ".join("%s %.3f ranks %s" % (f["cause"], f["gain"], spans(f["ranks"])) for f in rep["findings"][:4])


def check_unpaired(name):
    """Sends and recvs whose peer the trace does not name: the report says so."""
    s = pipegen.shape(name)
    with tempfile.TemporaryDirectory() as tmp:
        rep = report(s, tmp, "none")
    said = [w for w in rep["warnings"] if "send/recv calls name no peer" in w]
    if not said or not said[0].startswith("%d of %d " % (p2p_calls(s), p2p_calls(s))):
        raise Failed("no warning that every send/recv (%d) names no peer: %s" % (p2p_calls(s), rep["warnings"]))
    print("ok: %s without peers: %s" % (name, said[0]))


def p2p_calls(s):
    runs, _ = pipegen.simulate(s)
    return sum(1 for per in runs for r in per if r["kind"] in ("send", "recv"))


def check_shape(name, peer_args="kernel"):
    s = pipegen.shape(name)
    gain = pipegen.measured_gain(s)
    with tempfile.TemporaryDirectory() as tmp:
        rep = report(s, tmp, peer_args)
    fs = rep["findings"]
    unpaired = [w for w in rep["warnings"] if "name no peer" in w or "paired wrongly" in w]
    if unpaired:
        raise Failed("%s: sends and recvs not all paired: %s" % (name, unpaired))
    what = "%s (measured gain %.3f): %s; warnings %s" % (name, gain, summary(rep), rep["warnings"][:3])
    bad = whatif_check.problems(rep)
    if bad:
        raise Failed("the replay fails its check (%s): %s" % ("; ".join(bad), what))
    if not fs:
        raise Failed("no finding: " + what)
    first = fs[0]
    want = CAUSE[s["fault"]]
    if first["cause"] != want:
        raise Failed("first finding is %s, not %s: %s" % (first["cause"], want, what))
    if first["ranks"] != expected_ranks(s):
        raise Failed("ranks %s, not %s: %s" % (first["ranks"], expected_ranks(s), what))
    tol = max(0.05, 0.15 * gain)
    if abs(first["gain"] - gain) > tol:
        raise Failed("gain %.3f, measured %.3f (tolerance %.3f): %s" % (first["gain"], gain, tol, what))
    for f in fs[1:]:
        if f["gain"] >= HIGH and f["cause"] != want:
            raise Failed("a high %s finding that was not injected: %s" % (f["cause"], what))
    print("ok: " + what)


def show(names):
    for name in names:
        s = pipegen.shape(name)
        gain = pipegen.measured_gain(s)
        with tempfile.TemporaryDirectory() as tmp:
            rep = report(s, tmp)
        print("%s: measured %.3f | %s | %s | warnings: %s" % (name, gain, summary(rep), whatif_check.summary(rep),
                                                               rep["warnings"]))


def main():
    if sys.argv[1:2] == ["--show"]:
        show(sys.argv[2:] or sorted(pipegen.SHAPES))
        return 0
    name, _, peer_args = sys.argv[1].partition(":")
    try:
        if peer_args == "none":
            check_unpaired(name)
        else:
            check_shape(name, peer_args or "kernel")
    except Failed as e:
        print("FAIL: %s" % e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
