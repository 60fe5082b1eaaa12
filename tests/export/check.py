#!/usr/bin/env python3
"""tests/export: `scaleprof export` and `scaleprof html` against what the
traces hold, counted independently from `scaleprof dump --json` and from
`scaleprof report --json` / `compare --json`.

    check.py CASE        (environment: SCALEPROF_BIN, GEN_TRACE; for the
                          sim cases DDP_TRAIN and SCALEPROF_SIM_DIR)

The timeline is checked as a viewer reads it: the JSON parses, every
event sits on a named track of a named rank group, each track holds as
many slices as the trace has events of its kind, every NCCL op is a wait
and a transfer that add up to the op, and the arrows link the ranks of
each collective instance from the last one to arrive.
"""
import collections
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)

SCALEPROF = os.environ.get("SCALEPROF_BIN", "scaleprof")
GEN_TRACE = os.environ.get("GEN_TRACE", "gen_trace")


class Failure(Exception):
    pass


def fail(msg):
    raise Failure(msg)


def run(*args, ok=(0,), env=None):
    p = subprocess.run(list(args), capture_output=True, text=True, env=env, timeout=600)
    if p.returncode not in ok:
        fail("%s exited %d\nstdout: %s\nstderr: %s" % (" ".join(args), p.returncode, p.stdout[-2000:],
                                                       p.stderr[-2000:]))
    return p


def scaleprof(*args, ok=(0,)):
    return run(SCALEPROF, *args, ok=ok)


def gen(d, *flags):
    run(GEN_TRACE, d, *flags)
    return d


def export(d, out, *flags):
    scaleprof("export", d, "-o", out, *flags)
    opener = gzip.open if out.endswith(".gz") else open
    with opener(out, "rt") as f:
        return json.load(f)


# ---- what the traces hold (dump --json) ----

def dump_files(d):
    """{path: (header, [events])} of every trace under d."""
    files = {}
    for root, _, names in os.walk(d):
        for n in sorted(names):
            if not n.endswith(".sprof"):
                continue
            path = os.path.join(root, n)
            out = scaleprof("dump", "--json", path).stdout
            lines = [json.loads(l) for l in out.splitlines() if l.strip()]
            files[path] = (lines[0], lines[1:])
    return files


def rank_of_files(files):
    """pid -> rank, helpers through their parent's pid."""
    by_pid = {h["pid"]: h for h, _ in files.values()}
    ranks = {}
    for pid, h in by_pid.items():
        p, hops = h, 0
        while p is not None and p.get("rank", -1) < 0 and hops < 8:
            p = by_pid.get(p["ppid"])
            hops += 1
        if p is not None and p.get("rank", -1) >= 0:
            ranks[pid] = p["rank"]
    return ranks


# ---- what the timeline holds ----

class Timeline:
    def __init__(self, doc):
        if "traceEvents" not in doc:
            fail("no traceEvents array")
        self.doc = doc
        self.ev = doc["traceEvents"]
        self.proc = {}
        self.thread = {}
        for e in self.ev:
            for k in ("ph", "pid"):
                if k not in e:
                    fail("event without %s: %r" % (k, e))
            if e["ph"] == "M" and e["name"] == "process_name":
                self.proc[e["pid"]] = e["args"]["name"]
            if e["ph"] == "M" and e["name"] == "thread_name":
                self.thread[(e["pid"], e["tid"])] = e["args"]["name"]
        for e in self.ev:
            if e["ph"] in ("X", "B", "E", "i", "s", "f"):
                if e["pid"] not in self.proc:
                    fail("event on a process without a name: %r" % e)
                if (e["pid"], e["tid"]) not in self.thread:
                    fail("event on a track without a name: %r" % e)
                if not isinstance(e["ts"], (int, float)):
                    fail("ts not a number: %r" % e)
            if e["ph"] == "X" and (not isinstance(e.get("dur"), (int, float)) or e["dur"] < 0):
                fail("slice without a duration: %r" % e)

    def rank_pid(self, rank):
        for pid, name in self.proc.items():
            if name.startswith("rank %d (" % rank):
                return pid
        fail("no process group for rank %d (groups: %s)" % (rank, sorted(self.proc.values())))

    def slices(self, pid, track_pred=None, cat=None, ph="X"):
        out = []
        for e in self.ev:
            if e["ph"] != ph or e["pid"] != pid:
                continue
            if cat is not None and e.get("cat") not in (cat if isinstance(cat, tuple) else (cat,)):
                continue
            if track_pred and not track_pred(self.thread[(pid, e["tid"])]):
                continue
            out.append(e)
        return out


def ns(us):
    return int(round(us * 1000))


def check_counts(tl, files):
    """Per rank and track: slices == the trace's events of that kind."""
    ranks = rank_of_files(files)
    checked = collections.Counter()
    for path, (h, evs) in files.items():
        pid = h["pid"]
        if pid not in ranks:
            continue
        rank = ranks[pid]
        gp = tl.rank_pid(rank)
        helper = h.get("rank", -1) < 0 or h["rank"] != rank or any(
            fh["pid"] == h["ppid"] and fh.get("rank", -1) == rank for fh, _ in files.values())
        prefix = "loader pid %d: " % pid if helper else ""
        own = (lambda name, p=prefix: name.startswith(p)) if prefix else (lambda name: not name.startswith("loader pid"))
        # GPU streams: one track each, every kernel, copy and memset
        streams = collections.Counter((e["device"], e["stream"]) for e in evs if e["type"] == "gpu")
        for (dev, stream), n in streams.items():
            name = "%sGPU %d stream %d" % (prefix, dev, stream)
            got = len(tl.slices(gp, lambda t, nm=name: t == nm))
            if got != n:
                fail("rank %d pid %d: track '%s' has %d slices, the trace %d GPU events" % (rank, pid, name, got, n))
            checked["gpu"] += n
        # host threads: CUDA calls, NCCL calls, complete marker ranges
        for typ, cat in (("cuda", "cuda"), ("nccl", "nccl_call")):
            n = sum(1 for e in evs if e["type"] == typ)
            got = len(tl.slices(gp, lambda t: own(t) and "thread" in t and "I/O" not in t, cat=cat))
            if got != n:
                fail("rank %d pid %d: %d %s slices on its threads, the trace has %d" % (rank, pid, got, typ, n))
            checked[typ] += n
        pushes = sum(1 for e in evs if e["type"] == "marker" and e["kind_name"] == "push")
        got = len(tl.slices(gp, lambda t: own(t), cat="marker", ph="B"))
        if got != pushes:
            fail("rank %d pid %d: %d marker begins, the trace has %d pushes" % (rank, pid, got, pushes))
        # file I/O and waits
        for typ, cat in (("io", "io"), ("wait", "wait")):
            n = sum(1 for e in evs if e["type"] == typ)
            got = len(tl.slices(gp, lambda t: own(t) and "file I/O" in t, cat=cat))
            if got != n:
                fail("rank %d pid %d: %d %s slices on its I/O tracks, the trace has %d" % (rank, pid, got, typ, n))
            checked[typ] += n
        reads = sum(1 for e in evs if e["type"] == "io" and e.get("op_name") in ("read", "pread", "readv", "fread"))
        got = sum(1 for e in tl.slices(gp, lambda t: own(t), cat="io") if e["args"]["op"] in
                  ("read", "pread", "readv", "fread"))
        if got != reads:
            fail("rank %d pid %d: %d read slices, the trace has %d reads" % (rank, pid, got, reads))
        checked["reads"] += reads
        # NCCL ops: a wait and a transfer per collective call of the rank's own process
        if not helper:
            calls = [e for e in evs if e["type"] == "nccl" and e["op_name"] not in ("group_start", "group_end")]
            waits = tl.slices(gp, lambda t: t.startswith("NCCL comm"), cat="nccl_wait")
            transfers = tl.slices(gp, lambda t: t.startswith("NCCL comm"), cat="nccl_transfer")
            if len(waits) != len(calls) or len(transfers) != len(waits):
                fail("rank %d: %d calls in the trace, %d wait and %d transfer slices" % (rank, len(calls),
                                                                                          len(waits), len(transfers)))
            checked["nccl_ops"] += len(calls)
    return checked


def check_collectives(tl, files):
    """wait + transfer == the op (the NCCL kernel's duration); arrows from
    the last rank to arrive to every other participant of the instance."""
    ranks = rank_of_files(files)
    kernels = collections.defaultdict(list)
    for path, (h, evs) in files.items():
        if h.get("rank", -1) >= 0:
            kernels[h["rank"]] += [e["dur"] for e in evs if e["type"] == "gpu" and e["kind_name"] == "nccl_kernel"]
    inst = collections.defaultdict(dict)  # instance -> rank -> (wait, transfer)
    for rank in sorted(set(ranks.values())):
        gp = tl.rank_pid(rank)
        waits = {(e["args"]["comm"], e["args"]["seq"]): e for e in tl.slices(gp, cat="nccl_wait")}
        ops = []
        for t in tl.slices(gp, cat="nccl_transfer"):
            w = waits.get((t["args"]["comm"], t["args"]["seq"]))
            if w is None:
                fail("rank %d: transfer without its wait: %r" % (rank, t))
            if abs(ns(w["ts"]) + ns(w["dur"]) - ns(t["ts"])) > 1:
                fail("rank %d: the transfer does not start where the wait ends: %r %r" % (rank, w, t))
            total = ns(w["dur"]) + ns(t["dur"])
            if abs(total - ns(t["args"]["op_ms"] * 1000)) > 200:
                fail("rank %d: wait + transfer %d ns, the op %s ms" % (rank, total, t["args"]["op_ms"]))
            ops.append(total)
            inst[t["args"]["instance"]][rank] = (w, t)
        if kernels[rank] and sorted(ops) != sorted(kernels[rank]):
            fail("rank %d: wait + transfer durations differ from the NCCL kernels' (first %s vs %s)" %
                 (rank, sorted(ops)[:3], sorted(kernels[rank])[:3]))
    flows = collections.defaultdict(dict)
    for e in tl.ev:
        if e["ph"] in ("s", "f"):
            if e["id"] in flows and e["ph"] in flows[e["id"]]:
                fail("flow %s has two %s ends" % (e["id"], e["ph"]))
            flows[e["id"]][e["ph"]] = e
    pid_rank = {tl.rank_pid(r): r for r in set(ranks.values())}
    linked = 0
    for i, parts in inst.items():
        if len(parts) < 2:
            continue
        last = {t["args"]["last_rank"] for w, t in parts.values()}
        if len(last) != 1:
            fail("instance %s: the ranks disagree on who was last: %s" % (i, last))
        last = last.pop()
        if ns(parts[last][0]["dur"]) != 0:
            fail("instance %s: the last rank %d waited %s us" % (i, last, parts[last][0]["dur"]))
        for rank, (w, t) in parts.items():
            if rank == last:
                continue
            ends = [f for f in flows.values() if "f" in f and f["f"]["pid"] == tl.rank_pid(rank) and
                    "s" in f and f["s"]["pid"] == tl.rank_pid(last) and
                    t["ts"] <= f["f"]["ts"] <= t["ts"] + t["dur"] and f["f"]["tid"] == t["tid"]]
            if len(ends) != 1:
                fail("instance %s: rank %d has %d arrows from the last rank %d" % (i, rank, len(ends), last))
            s = ends[0]["s"]
            lt = parts[last][1]
            if not (lt["ts"] <= s["ts"] <= lt["ts"] + lt["dur"] and s["tid"] == lt["tid"]):
                fail("instance %s: the arrow does not start in the last rank's transfer" % i)
            linked += 1
    for fid, f in flows.items():
        if set(f) != {"s", "f"}:
            fail("flow %s has only %s" % (fid, list(f)))
        if pid_rank.get(f["s"]["pid"]) == pid_rank.get(f["f"]["pid"]):
            fail("flow %s links a rank to itself" % fid)
    return linked


def story(d, *flags, sim=False):
    tmp = tempfile.mkdtemp(prefix="export-")
    try:
        out = os.path.join(tmp, "t.json")
        tl = Timeline(export(d, out, *flags))
        files = dump_files(d)
        counts = check_counts(tl, files)
        linked = check_collectives(tl, files)
        print("  %s" % ", ".join("%s %d" % kv for kv in sorted(counts.items())))
        print("  %d arrows checked from the last rank to its peers" % linked)
        if not counts["gpu"] or not counts["nccl_ops"]:
            fail("nothing checked: %s" % counts)
        if not linked:
            fail("no arrow checked")
        return tl, files
    finally:
        shutil.rmtree(tmp)


def check_straggler_story(tl, rep, slow_rank):
    """What a timeline of a straggler job shows, in either format: the slow
    rank last at the collectives, one step slice per step of the report,
    each finding an instant with its evidence on each rank it names."""
    lasts = collections.Counter(e["args"]["last_rank"] for e in tl.ev if e.get("cat") == "nccl_transfer")
    if lasts.most_common(1)[0][0] != slow_rank:
        fail("the slow rank is not the last to arrive: %s" % lasts)
    steps = tl.slices(tl.rank_pid(0), lambda t: t == "steps", cat="step")
    if len(steps) != rep["steps"]["count"]:
        fail("%d step slices, the report found %d steps" % (len(steps), rep["steps"]["count"]))
    for f in rep["findings"]:
        for r in f["ranks"]:
            marks = [e for e in tl.slices(tl.rank_pid(r), cat="finding", ph="i") if e["args"]["cause"] == f["cause"]]
            if len(marks) != 1 or marks[0]["args"]["evidence"] != f["evidence"]:
                fail("rank %d: finding %s not annotated once with its evidence" % (r, f["cause"]))


def main(cases):
    """Runs the case named on the command line (case_NAME in cases)."""
    testmain.run(cases, failure=Failure)


def case_counts_generated():
    """A 4-rank job on 2 hosts with loader helpers, a slow rank and step
    markers: every event of the traces is on its rank's track, every NCCL op
    is a wait and a transfer adding up to its kernel, and arrows go from the
    slow rank (last to arrive) to the others."""
    tmp = tempfile.mkdtemp(prefix="export-gen-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--hosts", "2", "--steps", "12", "--kernels", "6",
                "--input-ms", "2", "--helper", "--markers", "--slow-rank", "2", "--slow-compute-ms", "3",
                "--clock-error-us", "300")
        tl, files = story(d)
        rep = json.loads(scaleprof("report", d, "--json").stdout)
        for rank in range(4):
            name = tl.proc[tl.rank_pid(rank)]
            if "host" not in name or "pid" not in name:
                fail("rank group name %r" % name)
        check_straggler_story(tl, rep, slow_rank=2)
        # times: the common axis puts the ranks' collective ends together despite the clock error
        for i in {e["args"]["instance"] for e in tl.ev if e.get("cat") == "nccl_transfer"}:
            ends = [e["ts"] + e["dur"] for e in tl.ev if e.get("cat") == "nccl_transfer" and e["args"]["instance"] == i]
            if max(ends) - min(ends) > 50:
                fail("instance %d: ranks leave %f us apart on the common axis" % (i, max(ends) - min(ends)))
    finally:
        shutil.rmtree(tmp)


def sim_env():
    ddp, simdir = os.environ.get("DDP_TRAIN"), os.environ.get("SCALEPROF_SIM_DIR")
    if not ddp or not simdir:
        print("skip: DDP_TRAIN and SCALEPROF_SIM_DIR not set")
        sys.exit(77)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = simdir + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    return ddp, env


def sim_run(tmp, nproc, *flags):
    ddp, env = sim_env()
    trace, data = os.path.join(tmp, "trace-%d" % nproc), os.path.join(tmp, "data")
    run(SCALEPROF, "run", "--sim", "-o", trace, "--nproc", str(nproc), "--", ddp, "--data", data, *flags, env=env)
    return trace


DEMO_FLAGS = ("--steps", "12", "--batch", "16", "--workers", "1", "--worker-cost-ms", "30", "--read-kb", "256",
              "--grad-mb", "16", "--buckets", "4", "--overlap")


def case_counts_sim():
    """The demo's job (4 ranks, a slow loader worker each, real file reads)
    on the simulated GPUs: every kernel, NCCL op and read of the traces is
    on its track, loader workers under their rank, ops split in wait and
    transfer, arrows from the last rank."""
    tmp = tempfile.mkdtemp(prefix="export-sim-")
    try:
        d = sim_run(tmp, 4, *DEMO_FLAGS)
        tl, files = story(d)
        loaders = {n for n in tl.thread.values() if n.startswith("loader pid")}
        if not loaders:
            fail("no loader worker track")
    finally:
        shutil.rmtree(tmp)


def case_window():
    """--steps and --ranks keep it small: only those ranks' groups, only the
    steps asked for, and arrows only between the ranks kept."""
    tmp = tempfile.mkdtemp(prefix="export-win-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "20", "--kernels", "4", "--markers")
        full = Timeline(export(d, os.path.join(tmp, "a.json")))
        tl = Timeline(export(d, os.path.join(tmp, "b.json"), "--steps", "5:7", "--ranks", "1,3"))
        groups = sorted(tl.proc.values())
        if len(groups) != 2 or not groups[0].startswith("rank 1 (") or not groups[1].startswith("rank 3 ("):
            fail("groups %s, expected ranks 1 and 3" % groups)
        for r in (1, 3):
            steps = sorted(e["args"]["step"] for e in tl.slices(tl.rank_pid(r), cat="step"))
            if steps != [5, 6, 7]:
                fail("rank %d: steps %s, expected 5-7" % (r, steps))
            win = [e for e in full.slices(full.rank_pid(r), cat="step") if 5 <= e["args"]["step"] <= 7]
            t0, t1 = min(ns(e["ts"]) for e in win), max(ns(e["ts"]) + ns(e["dur"]) for e in win)
            kernels = [e for e in full.slices(full.rank_pid(r), cat="kernel")
                       if ns(e["ts"]) < t1 and (ns(e["ts"]) >= t0 or ns(e["ts"]) + ns(e["dur"]) > t0)]
            got = tl.slices(tl.rank_pid(r), cat="kernel")
            if len(got) != len(kernels):
                fail("rank %d: %d kernels in the window, the full timeline has %d there" % (r, len(got), len(kernels)))
        flows = [e for e in tl.ev if e["ph"] in ("s", "f")]
        if any(e["pid"] not in (tl.rank_pid(1), tl.rank_pid(3)) for e in flows):
            fail("an arrow to a rank left out")
        print("  %d events, %d in the full timeline" % (len(tl.ev), len(full.ev)))
        p = scaleprof("export", d, "-o", os.path.join(tmp, "c.json"), "--steps", "50:60", ok=(2,))
        if "has steps" not in p.stderr:
            fail("--steps past the end: %s" % p.stderr)
        p = scaleprof("export", d, "-o", os.path.join(tmp, "c.json"), "--ranks", "9", ok=(2,))
        if "none of these ranks" not in p.stderr:
            fail("--ranks 9: %s" % p.stderr)
        p = scaleprof("export", d, "-o", os.path.join(tmp, "c.json"), "--ranks", "x", ok=(2,))
    finally:
        shutil.rmtree(tmp)


def case_gzip():
    """FILE.gz is gzip'd and holds the same timeline."""
    tmp = tempfile.mkdtemp(prefix="export-gz-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "2", "--steps", "10", "--kernels", "4")
        a = export(d, os.path.join(tmp, "a.json"))
        b = export(d, os.path.join(tmp, "b.json.gz"))
        with open(os.path.join(tmp, "b.json.gz"), "rb") as f:
            if f.read(2) != b"\x1f\x8b":
                fail("not gzip")
        if a != b:
            fail("the gzip'd timeline differs from the plain one")
        print("  %d bytes plain, %d gzip'd" % (os.path.getsize(os.path.join(tmp, "a.json")),
                                                os.path.getsize(os.path.join(tmp, "b.json.gz"))))
    finally:
        shutil.rmtree(tmp)


def case_whatif():
    """--whatif straggler: beside each rank its replayed timeline with the
    straggler fixed, whose mean step is what the finding promised, and
    whose collectives no longer wait for the slow rank."""
    tmp = tempfile.mkdtemp(prefix="export-whatif-")
    try:
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "14", "--kernels", "4", "--slow-rank", "1",
                "--slow-compute-ms", "4", "--markers")
        rep = json.loads(scaleprof("report", d, "--json").stdout)
        f = [x for x in rep["findings"] if x["cause"] == "straggler"]
        if not f:
            fail("no straggler finding to replay: %s" % [x["cause"] for x in rep["findings"]])
        tl = Timeline(export(d, os.path.join(tmp, "w.json"), "--whatif", "straggler"))
        steps = []
        for r in range(4):
            pid = [p for p, n in tl.proc.items() if n == "rank %d what-if: straggler" % r]
            if len(pid) != 1:
                fail("no what-if group for rank %d: %s" % (r, sorted(tl.proc.values())))
            s = tl.slices(pid[0], cat="step")
            if len(s) != rep["steps"]["analyzed"]:
                fail("rank %d what-if: %d steps, %d analyzed" % (r, len(s), rep["steps"]["analyzed"]))
            steps += [e["args"]["step_ms"] for e in s]
            recorded = tl.slices(tl.rank_pid(r), cat="nccl_wait")
            replayed = tl.slices(pid[0], cat="nccl_wait")
            if len(replayed) == 0:
                fail("rank %d what-if: no collective" % r)
        mean = sum(steps) / len(steps)
        if abs(mean - f[0]["step_ms_if_fixed"]) > 0.01 * f[0]["step_ms_if_fixed"]:
            fail("what-if mean step %.3f ms, the finding says %.3f" % (mean, f[0]["step_ms_if_fixed"]))
        wait_rec = sum(e["dur"] for e in tl.ev if e.get("cat") == "nccl_wait" and e["pid"] < 1000000)
        wait_rep = sum(e["dur"] for e in tl.ev if e.get("cat") == "nccl_wait" and e["pid"] >= 1000000)
        print("  replayed mean step %.3f ms (finding: %.3f); collective wait %.1f -> %.1f ms" %
              (mean, f[0]["step_ms_if_fixed"], wait_rec / 1000, wait_rep / 1000))
        if wait_rep >= wait_rec / 2:
            fail("the replay still waits for the straggler")
        p = scaleprof("export", d, "-o", os.path.join(tmp, "x.json"), "--whatif", "bogus", ok=(2,))
        if "input_pipeline" not in p.stderr:
            fail("--whatif bogus should list the causes: %s" % p.stderr)
    finally:
        shutil.rmtree(tmp)


def case_bad_input():
    """Nothing to export, a damaged trace, an unwritable output: a clear
    message, and the rest exported."""
    tmp = tempfile.mkdtemp(prefix="export-bad-")
    try:
        os.mkdir(os.path.join(tmp, "empty"))
        p = scaleprof("export", os.path.join(tmp, "empty"), "-o", os.path.join(tmp, "e.json"), ok=(1,))
        if "nothing to export" not in p.stderr:
            fail("empty dir: %s" % p.stderr)
        d = gen(os.path.join(tmp, "t"), "--ranks", "4", "--steps", "12", "--kernels", "4", "--truncate-rank", "2")
        tl = Timeline(export(d, os.path.join(tmp, "t.json")))
        if len([n for n in tl.proc.values() if n.startswith("rank ")]) != 4:
            fail("a truncated rank lost its group: %s" % sorted(tl.proc.values()))
        p = scaleprof("export", d, "-o", os.path.join(tmp, "no", "such", "dir.json"), ok=(1,))
        if "No such file" not in p.stderr:
            fail("unwritable output: %s" % p.stderr)
        p = scaleprof("export", d, ok=(2,))
        if "-o FILE" not in p.stderr:
            fail("no -o: %s" % p.stderr)
    finally:
        shutil.rmtree(tmp)


if __name__ == "__main__":
    main(globals())
