#!/usr/bin/env python3
"""The analyzer's user stories, checked against synthetic traces whose
breakdown is known by construction (gen_trace writes both).

usage: check.py CASE   with SCALEPROF_BIN and GEN_TRACE in the environment.
Each case prints what it checks and exits 1 on the first mismatch."""
import json, os, re, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import whatif_check  # noqa: E402

SCALEPROF = os.environ["SCALEPROF_BIN"]
GEN = os.environ["GEN_TRACE"]
CATS = ["compute", "memcpy", "collective_transfer", "collective_wait",
        "idle_input", "idle_host", "idle_other"]
TMP = tempfile.mkdtemp(prefix="sprof-analyzer-")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def gen(name, *args):
    out, truth = os.path.join(TMP, name), os.path.join(TMP, name + ".json")
    subprocess.run([GEN, out, "--truth", truth, *map(str, args)], check=True)
    with open(truth) as f:
        return out, json.load(f)


def scaleprof(*args, rc=0):
    p = subprocess.run([SCALEPROF, *map(str, args)], capture_output=True, text=True)
    if p.returncode != rc:
        fail(f"scaleprof {' '.join(map(str, args))}: exit {p.returncode}, wanted {rc}\n{p.stdout}\n{p.stderr}")
    return p


def report(d, *args):
    """The JSON report; every one must pass the replay's check of itself."""
    rep = json.loads(scaleprof("report", d, "--json", *args).stdout)
    bad = whatif_check.problems(rep)
    if bad:
        fail(f"{d}: the what-if replay fails its check: {'; '.join(bad)}")
    return rep


def near(what, got, want, tol):
    print(f"  {what}: got {got:.4f}, truth {want:.4f} (tolerance {tol:.4f})")
    if abs(got - want) > tol:
        fail(f"{what} off by {abs(got - want):.4f}")


def check_breakdown(rep, truth):
    bd = rep["breakdown"]
    if abs(sum(bd[c] for c in CATS) - 1) > 1e-3:
        fail(f"the seven categories sum to {sum(bd[c] for c in CATS)}, not 1")
    for c in CATS:
        near(c, bd[c], truth["breakdown"][c], 0.02)


def findings(rep):
    return {f["cause"]: f for f in rep["findings"]}


def case_breakdown():
    """Two hosts with clocks 300 us apart: every category within 2 points,
    and each collective's transfer and wait within 5%."""
    d, truth = gen("bd", "--ranks", 4, "--hosts", 2, "--markers", "--input-ms", 3, "--sync-ms", 1,
                   "--memcpy-ms", 0.5, "--jitter", 0.2, "--clock-error-us", 300, "--intra-coll")
    rep = report(d)
    check_breakdown(rep, truth)
    for tc in truth["collectives"]:
        got = [c for c in rep["collectives"] if int(c["comm"], 16) == int(tc["comm"], 16) and c["bytes"] == tc["bytes"]]
        if not got:
            fail(f"collective {tc['comm']} {tc['bytes']} not reported")
        near(f"comm {tc['comm']} {tc['bytes']}B transfer_ms", got[0]["transfer_ms"], tc["transfer_ms"],
             0.05 * tc["transfer_ms"])
        near(f"comm {tc['comm']} {tc['bytes']}B wait_ms", got[0]["wait_ms"], tc["wait_ms"],
             max(0.05 * tc["wait_ms"], 0.005))


def case_many_communicators():
    """A communicator per host over 40 hosts (123 kinds of collective): each
    is reported once, with its calls and its transfer, none merged with
    another nor split in two."""
    d, truth = gen("manycomm", "--ranks", 80, "--hosts", 40, "--intra-coll", "--colls", 3, "--steps", 12)
    rep = report(d)
    seen = {}
    for c in rep["collectives"]:
        key = (int(c["comm"], 16), c["op"], c["bytes"])
        if key in seen:
            fail(f"collective {c['comm']} {c['op']} {c['bytes']}B reported twice")
        seen[key] = c
    print(f"  {len(seen)} collectives reported, {len(truth['collectives'])} made")
    if len(seen) != len(truth["collectives"]):
        fail(f"{len(seen)} collectives reported, {len(truth['collectives'])} made")
    for tc in truth["collectives"]:
        got = [c for k, c in seen.items() if k[0] == int(tc["comm"], 16) and k[2] == tc["bytes"]]
        if len(got) != 1:
            fail(f"collective {tc['comm']} {tc['bytes']}B reported {len(got)} times")
        if got[0]["nranks"] != tc["nranks"]:
            fail(f"collective {tc['comm']} {tc['bytes']}B over {got[0]['nranks']} ranks, made over {tc['nranks']}")
        near(f"comm {tc['comm']} {tc['bytes']}B transfer_ms", got[0]["transfer_ms"], tc["transfer_ms"],
             0.05 * tc["transfer_ms"])


def check_steps_found(d, truth, by, why, label=""):
    """The report of d finds truth's steps, by `by` when given (why: the
    failure's words), their mean within 2%; returns the report."""
    rep = report(d)
    st = rep["steps"]
    print(f"  {label}detected_by {st['detected_by']}, count {st['count']}, truth {truth['steps']}; "
          f"mean {st['mean_ms']:.3f} ms, truth {truth['step_ms']:.3f} ms")
    if (by and st["detected_by"] != by) or st["count"] != truth["steps"]:
        fail(why)
    near("step_ms", st["mean_ms"], truth["step_ms"], 0.02 * truth["step_ms"])
    return rep


def case_autodetect():
    """Without markers the steps come from the repeating collectives."""
    d, truth = gen("auto", "--ranks", 4, "--colls", 3, "--input-ms", 2)
    rep = check_steps_found(d, truth, "collectives", "automatic step detection missed the true step count")
    check_breakdown(rep, truth)


def case_markers():
    """NVTX step markers are used when present."""
    d, truth = gen("marks", "--ranks", 2, "--markers", "--steps", 12)
    rep = report(d)
    print(f"  detected_by {rep['steps']['detected_by']}, count {rep['steps']['count']}")
    if rep["steps"]["detected_by"] != "markers" or rep["steps"]["count"] != 12:
        fail("markers not used")
    if rep["steps"]["skipped"] != 3:
        fail("three warm-up steps should be skipped by default")


def case_straggler():
    """A rank with extra compute is named as the straggler, with compute as
    its cause; one with slow input is named with input as its cause."""
    for extra, cause in (("--slow-compute-ms", "compute"), ("--slow-input-ms", "input")):
        d, truth = gen("strag" + cause, "--ranks", 4, "--markers", "--slow-rank", 2, extra, 4, "--jitter", 0.05)
        rep = report(d)
        s = rep["stragglers"]
        print(f"  {extra}: stragglers {s}")
        if not s or s[0]["rank"] != 2 or s[0]["cause"] != cause:
            fail(f"rank 2 should be the straggler with cause {cause}")
        f = findings(rep).get("straggler")
        if not f or f["ranks"] != [2] or f["severity"] == "low":
            fail(f"no straggler finding for rank 2: {rep['findings']}")
        check_breakdown(rep, truth)


def case_input_high():
    """GPUs idle 20% or more waiting for input: input_pipeline is high."""
    d, truth = gen("input", "--ranks", 4, "--markers", "--input-ms", 6, "--helper")
    rep = report(d)
    near("idle_input", rep["breakdown"]["idle_input"], truth["breakdown"]["idle_input"], 0.02)
    f = findings(rep).get("input_pipeline")
    if truth["breakdown"]["idle_input"] < 0.2 or not f or f["severity"] != "high":
        fail(f"input_pipeline should be high: {rep['findings']}")
    if rep["findings"][0]["cause"] != "input_pipeline":
        fail("the costliest finding should come first")
    if any(r["helper_processes"] != 1 for r in rep["per_rank"]):
        fail("each rank's loader worker should be attached to it through its parent")


def case_healthy():
    """A compute-bound run says it is healthy."""
    d, _ = gen("healthy", "--ranks", 4, "--markers", "--compute-ms", 30, "--transfer-ms", 0.5,
               "--tail-ms", 0.1, "--jitter", 0.01)
    rep = report(d)
    bad = [f for f in rep["findings"] if f["severity"] != "low"]
    print(f"  findings {[(f['cause'], f['severity']) for f in rep['findings']]}, healthy {rep['healthy']}")
    if bad or not rep["healthy"]:
        fail("healthy run has findings above low")
    if "healthy" not in scaleprof("report", d, "--no-color").stdout:
        fail("text report does not say healthy")


def case_missing_rank():
    """One rank's file is missing: the report still comes, naming the rank."""
    d, _ = gen("missing", "--ranks", 4, "--markers", "--missing-rank", 3)
    rep = report(d)
    print(f"  missing_ranks {rep['missing_ranks']}, warnings {len(rep['warnings'])}")
    if rep["missing_ranks"] != [3] or not any("rank 3" in w for w in rep["warnings"]):
        fail("rank 3 not named as missing")
    if rep["ranks"] != 3:
        fail("the three present ranks should be analyzed")


def case_truncated():
    """A truncated file still gives a report, with a warning."""
    d, _ = gen("trunc", "--ranks", 4, "--markers", "--truncate-rank", 1, "--steps", 40, "--kernels", 50)
    rep = report(d)
    print(f"  ranks {rep['ranks']}, steps {rep['steps']['count']}, warnings {rep['warnings'][:2]}")
    if not rep["warnings"] or rep["steps"]["count"] < 4:
        fail("a truncated file should warn and still report")
    # without markers, a rank whose recording stopped halfway has half the
    # steps of the others: the report says it is unsure of the count
    # instead of passing it off
    d, _ = gen("short_nomark", "--ranks", 4, "--short-rank", 1, "--steps", 40, "--kernels", 50)
    rep = report(d)
    unsure = [w for w in rep["warnings"] if "step count unsure" in w]
    print(f"  no markers: steps {rep['steps']['count']}, {unsure[:1]}")
    if not unsure:
        fail("ranks that disagree on the step count should make the report say it is unsure")


def case_duplicate_rank():
    """Two jobs' traces copied into one directory, both claiming ranks 0 and
    1 at the same time: the report says so, naming both processes, rather
    than analyzing two processes as one rank in silence."""
    d = os.path.join(TMP, "dup")
    os.makedirs(d, exist_ok=True)
    gen(os.path.join("dup", "a"), "--ranks", 2, "--steps", 10)
    gen(os.path.join("dup", "b"), "--ranks", 2, "--steps", 10, "--pid-base", 3000)
    rep = json.loads(scaleprof("report", d, "--json").stdout)
    claims = [w for w in rep["warnings"] if "claimed by two processes" in w]
    print(f"  {claims[:1]}")
    if not claims or "pid 1000" not in claims[0] or "pid 3000" not in claims[0]:
        fail(f"a rank claimed by two processes at once should be a warning naming both: {rep['warnings']}")
    # one job alone: no such warning
    rep = json.loads(scaleprof("report", os.path.join(d, "a"), "--json").stdout)
    if any("claimed by two processes" in w for w in rep["warnings"]):
        fail(f"one job's traces claim no rank twice: {rep['warnings']}")


def case_slow_host():
    """Four hosts whose neighbours all-reduce in pairs, host 2's links four
    times slower: cross_node names host 2 and its ranks.  With every host
    as fast, no host is named; with one communicator over every host the
    report says the slow link cannot be told apart."""
    d, _ = gen("slowhost", "--ranks", 8, "--hosts", 4, "--steps", 12, "--pair-colls", "--slow-host", 2,
               "--inter-transfer-ms", 4)
    f = findings(report(d)).get("cross_node")
    print(f"  slow host 2: {f and (f['ranks'], f['evidence'][-140:])}")
    if not f or f["ranks"] != [4, 5] or "host host2's" not in f["evidence"]:
        fail(f"cross_node should name host2 (ranks 4, 5): {f}")
    d, _ = gen("evenhosts", "--ranks", 8, "--hosts", 4, "--steps", 12, "--pair-colls", "--inter-transfer-ms", 4)
    f = findings(report(d)).get("cross_node")
    if f and "the slow links are host" in f["evidence"]:
        fail(f"no host is slower than the others: {f['evidence']}")
    d, _ = gen("onecomm", "--ranks", 8, "--hosts", 4, "--steps", 12, "--inter-transfer-ms", 4)
    f = findings(report(d)).get("cross_node")
    if not f or "cannot be told" not in f["evidence"]:
        fail(f"one communicator over every host cannot tell which link is slow, and should say so: {f}")


def crc32c(data, crc=0):
    """CRC-32C (Castagnoli), as format/crc32c.c computes it."""
    crc ^= 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def renumbered_frame(frame, chunk_id):
    """A frame with another chunk id (bytes 16-24 of its 32-byte header)
    and its header CRC (bytes 28-32, over the first 28) made again."""
    head = frame[:16] + chunk_id.to_bytes(8, "little") + frame[24:28]
    return head + crc32c(head).to_bytes(4, "little") + frame[32:]


def frame_ends(path):
    """The offsets where each frame of a trace ends (frames_offset at byte
    56 of the header; a frame is 32 header bytes and csize at byte 4)."""
    with open(path, "rb") as f:
        data = f.read()
    at, ends = int.from_bytes(data[56:64], "little"), []
    while at + 32 <= len(data) and data[at:at + 4] == b"SPFR":
        at += 32 + int.from_bytes(data[at + 4:at + 8], "little")
        ends.append(at)
    return ends


def timed(*args, limit):
    """scaleprof ARGS, which must exit 0 within `limit` seconds."""
    import time
    t0 = time.time()
    try:
        p = subprocess.run([SCALEPROF, *map(str, args)], capture_output=True, text=True, timeout=limit * 3)
    except subprocess.TimeoutExpired:
        fail(f"scaleprof {' '.join(map(str, args))}: still running after {limit * 3} s")
    took = time.time() - t0
    print(f"  scaleprof {args[0]} {os.path.basename(str(args[-1]))}: exit {p.returncode} in {took:.2f} s")
    if p.returncode != 0 or took > limit:
        fail(f"wanted exit 0 within {limit} s:\n{p.stderr}")
    return p


def same_report(got, want):
    """Every figure of the report but its directory, its warnings and the
    count of files they call damaged."""
    strip = lambda r: {**{k: v for k, v in r.items() if k not in ("dir", "warnings")},
                       "events": {**r["events"], "files_damaged": 0}}
    if strip(got) != strip(want):
        fail("the report's figures differ from the intact trace set's")


def dumped_events(path, limit):
    p = timed("dump", "--json", path, limit=limit)
    return [json.loads(l) for l in p.stdout.splitlines()[1:]], p.stderr


def case_compacted_close():
    """A trace closed cleanly is as small as its content (no 25 MiB
    reservation left as holes for tar, scp or an object store to copy), and
    a close cut short between its last steps never shows an event twice:
    the old copy of the frames, still after the moved ones, is read once;
    before the header names the moved copy, the old one is read."""
    d, _ = gen("compacted", "--ranks", 1, "--markers", "--steps", 6, "--kernels", 20)
    path = os.path.join(d, "host0", "1000.sprof")
    with open(path, "rb") as f:
        data = f.read()
    frames_offset = int.from_bytes(data[56:64], "little")
    slot_count = int.from_bytes(data[52:56], "little")
    ends = frame_ends(path)
    print(f"  {path}: {len(data)} bytes, {len(ends)} frames from {frames_offset}, {slot_count} slots")
    if len(data) > 256 * 1024 or slot_count != 0 or not ends or ends[-1] != len(data):
        fail("a closed trace should end with its last frame, with no slots and no reserved space")
    want, _ = dumped_events(path, 20)
    if not want:
        fail("the compacted trace reads back no event")
    copy = os.path.join(TMP, "compacted-cut")
    os.makedirs(copy, exist_ok=True)
    old_at = len(data) + 3 * 4096  # where the frames were before (holes between)
    frames = data[frames_offset:]
    states = {
        # the header names the moved frames; the file not cut yet: the old copy follows
        "cut before the file was cut": data + bytes(old_at - len(data)) + frames,
        # the header still names the old frames (at old_at), the moved copy sits before them
        "cut before the header named the copy": data[:56] + old_at.to_bytes(8, "little") + data[64:] +
                                                bytes(old_at - len(data)) + frames,
    }
    for what, content in states.items():
        p = os.path.join(copy, "1000.sprof")
        with open(p, "wb") as f:
            f.write(content)
        got, err = dumped_events(p, 20)
        print(f"  {what}: {len(got)} events (intact {len(want)}) {err.strip()[:160]}")
        if got != want:
            fail(f"{what}: {len(got)} events read, not the intact trace's {len(want)} once each")


def case_sparse_tail():
    """A trace extended to 100 GiB by a hole (os.truncate), and one with a
    100 GiB hole between two frames: report and dump never read the holes
    (they end within 5 s, where they took minutes), exit 0, and give every
    event and every figure of the intact traces; a warning names each file
    and the offset where its hole starts."""
    d, _ = gen("sparse", "--ranks", 2, "--markers", "--steps", 40, "--kernels", 50)
    want = report(d)
    names = ("1000.sprof", "1001.sprof")  # the first gets a hole at its end, the second between frames
    want_events = {n: dumped_events(os.path.join(d, "host0", n), 20)[0] for n in names}
    hole = 100 * 2**30
    sparse = os.path.join(TMP, "sparse-holes")
    shutil.copytree(d, sparse)
    try:
        tail, mid = (os.path.join(sparse, "host0", n) for n in names)
        ends = frame_ends(mid)
        if len(ends) < 2:
            fail(f"{mid}: {len(ends)} frame(s), two wanted to put a hole between")
        hole_at = {tail: os.path.getsize(tail), mid: ends[0]}
        os.truncate(tail, hole)
        with open(mid, "rb") as f:
            data = f.read()
        with open(mid, "wb") as f:
            f.write(data[:ends[0]])
            f.seek(ends[0] + hole)
            f.write(data[ends[0]:])
        for p in (tail, mid):
            st = os.stat(p)
            print(f"  {p}: {st.st_size} bytes, {st.st_blocks * 512} allocated")
            if st.st_blocks * 512 > 2**30:
                print("SKIP: this file system does not keep holes")
                sys.exit(77)
        rep = json.loads(timed("report", sparse, "--json", limit=5).stdout)
        same_report(rep, want)
        # one warning, the second damaged file counted into it ("and 1 more like it")
        said = [w for w in rep["warnings"] if f"{tail}: frame at offset {hole_at[tail]}:" in w and
                "holes, not read" in w and "1 more" in w]
        print(f"  report warns: {said[0].strip() if said else rep['warnings']}")
        if not said:
            fail(f"no warning names {tail} and its offset {hole_at[tail]}")
        for p in (tail, mid):
            at = hole_at[p]
            events, err = dumped_events(p, 5)
            if events != want_events[os.path.basename(p)]:
                fail(f"dump {p}: {len(events)} events, not the intact trace's {len(want_events[os.path.basename(p)])}")
            print(f"    {err.strip()}")
            if f"{p}: frame at offset {at}:" not in err or "holes, not read" not in err:
                fail(f"dump {p}: the hole at {at} is not said")
        print(f"  every event and figure as intact: {rep['events']}")
    finally:
        shutil.rmtree(sparse)


def case_garbage_tail():
    """A trace followed by 80 MiB of random bytes, then one of its own
    frames again: the reader looks for the next frame through at most
    64 MiB of data, then stops with a warning naming the file, the offset
    where the garbage starts and the bytes skipped; every event before it
    is kept, and the report's figures are the intact trace's (the frame
    past the bound is not read).  The same frame after 8 MiB of garbage is
    still found."""
    d, _ = gen("garbage", "--ranks", 2, "--markers", "--steps", 40, "--kernels", 50)
    want = report(d)
    name = os.path.join("host0", "1001.sprof")
    with open(os.path.join(d, name), "rb") as f:
        data = f.read()
    ends = frame_ends(os.path.join(d, name))
    # the trace's first frame again, as a new chunk (a copy of a chunk the
    # reader has read is a close's old copy, skipped: case compacted_close)
    first_frame = renumbered_frame(data[int.from_bytes(data[56:64], "little"):ends[0]], 1 << 40)
    want_events = dumped_events(os.path.join(d, name), 20)[0]
    for mib in (8, 80):
        bad = os.path.join(TMP, f"garbage-{mib}")
        shutil.copytree(d, bad)
        try:
            p = os.path.join(bad, name)
            with open(p, "ab") as f:
                f.write(os.urandom(mib * 2**20))
                f.write(first_frame)
            text = timed("dump", p, limit=10)
            summary = [l for l in text.stdout.splitlines() if l.startswith("# ") and " events from " in l]
            print(f"  {mib} MiB: {summary[0] if summary else None}")
            print(f"    {text.stderr.strip()}")
            if mib == 8:
                if not summary or f" from {len(ends) + 1} frames" not in summary[0]:
                    fail(f"the frame after {mib} MiB of garbage was not found")
                continue
            skipped = os.path.getsize(p) - len(data)
            if (f"{p}: frame at offset {len(data)}: bad header, and no frame in the " not in text.stderr
                    or f" {skipped} bytes to the end of the file skipped" not in text.stderr):
                fail("dump does not say where it stopped and what it skipped")
            if not summary or f" from {len(ends)} frames" not in summary[0]:
                fail("the frame past the bound was read")
            events, _ = dumped_events(p, 10)
            if events != want_events:
                fail(f"{len(events)} events kept, not the intact trace's {len(want_events)}")
            rep = json.loads(timed("report", bad, "--json", limit=10).stdout)
            said = [w for w in rep["warnings"] if f"{p}: frame at offset {len(data)}:" in w and "no frame in the" in w]
            print(f"  report warns: {said[0].strip() if said else rep['warnings']}")
            if not said:
                fail("the report does not warn where the file was given up")
            same_report(rep, want)
        finally:
            shutil.rmtree(bad)


def case_absurd_time():
    """One event of rank 0 at 9e18 ns, far outside its trace's own span
    (damage: a flipped high bit, a writer's bug): it reached the model,
    which took it as a step that never ended (a warning about a last step
    "more than 2x longer", or absurd steps/s).  Now it is left out as
    damage, with a warning naming the trace, in report and dump, and the
    figures are the job's."""
    d, truth = gen("absurd", "--ranks", 2, "--markers", "--steps", 20, "--bad-time", 0)
    rep = report(d)
    path = os.path.join(d, "host0", "1000.sprof")
    said = [w for w in rep["warnings"] if path in w and "outside the trace's own span" in w]
    print(f"  steps {rep['steps']['count']}, mean {rep['steps']['mean_ms']:.3f} ms (truth {truth['step_ms']:.3f}); "
          f"warns: {said[0].strip() if said else rep['warnings']}")
    if not said:
        fail("no warning names the trace with the absurd time")
    if any("more than 2x longer" in w for w in rep["warnings"]):
        fail("the absurd time still reaches the steps")
    near("step_ms", rep["steps"]["mean_ms"], truth["step_ms"], 0.02 * truth["step_ms"])
    events, err = dumped_events(path, 20)
    if any(e.get("t", 0) >= 9 * 10**18 for e in events) or "outside the trace's own span" not in err:
        fail(f"dump shows the absurd event, or says nothing of it ({err.strip()[:200]!r})")


def case_far_seq():
    """Rank 1 numbers its collectives from near 2**64 (a damaged sequence
    counter), the others from 1: hang answers at once, sees nothing hung,
    pending or out of step, and still gives the other ranks' last
    collective as made (every one entered and completed)."""
    d, truth = gen("farseq", "--ranks", 4, "--steps", 8, "--far-seq", 1)
    try:
        p = subprocess.run([SCALEPROF, "hang", d, "--json"], capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        fail("hang did not finish in 30 s on a rank's far sequence numbers")
    if p.returncode != 1:
        fail(f"hang exit {p.returncode}, wanted 1 (nothing hung)\n{p.stderr}")
    h = json.loads(p.stdout)
    if h["hung"] or h["pending"] or h["desync"]:
        fail(f"a hang, pending or desync found: {h['hung']} {h['pending']} {h['desync']}")
    comms = h["communicators"]
    others = [r for c in comms for r in c["ranks"] if r["rank"] != 1]
    print(f"  {len(comms)} communicator(s); ranks 0, 2, 3 last entered/completed "
          f"{sorted({(r['entered'], r['completed']) for r in others})}")
    if len(others) != 3 or len({(r["entered"], r["completed"]) for r in others}) != 1 or \
            others[0]["entered"] < 1 or others[0]["completed"] != others[0]["entered"]:
        fail(f"the other ranks' last collectives are not the same, entered and completed: {others}")


def case_bad_input():
    """No traces, foreign files, bad usage: clear messages, right exit codes."""
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty)
    p = scaleprof("report", empty, rc=1)
    if "no *.sprof" not in p.stderr:
        fail("empty directory not explained: " + p.stderr)
    foreign = os.path.join(TMP, "foreign")
    os.makedirs(foreign)
    with open(os.path.join(foreign, "x.sprof"), "w") as f:
        f.write("not a trace\n" * 100)
    p = scaleprof("report", foreign, rc=1)
    if "not readable as a trace" not in p.stderr:
        fail("foreign file not explained: " + p.stderr)
    scaleprof("report", rc=2)
    scaleprof("report", empty, "--steps", "5:2", rc=2)
    scaleprof("compare", empty, rc=2)
    scaleprof("compare", empty, foreign, rc=1)


def case_messages_name_what_went_wrong():
    """Every mistake a user makes gets a message that names the bad path or
    value and what would be valid (exit 2 for usage, 1 for nothing to
    analyze), never a 0.00 ms step and "healthy"."""
    d, _ = gen("msgs", "--ranks", 2, "--markers", "--steps", 12)
    one_file = os.path.join(d, "host0", "1000.sprof")
    cases = [
        (("report", "/nonexistent/dir"), 1, "no such file or directory"),
        (("report", one_file), 1, "not a directory"),
        (("dump", d), 1, "is a directory"),
        (("report", d, "--steps", "20:30"), 2, "has steps 0-11 only"),
        (("report", d, "--rank", "7"), 2, "its traces hold ranks 0-1"),
        (("report", d, "--rank", "abc"), 2, '"abc" is not an integer'),
        (("report", d, "--skip", "-1"), 2, '"-1" is out of range'),
        (("report", d, "--step-marker", "("), 2, "not an extended regular expression"),
        (("report", d, d), 2, "one trace directory expected, got 2"),
        (("compare", d), 2, "needs at least two runs"),
        (("-V",), 0, "scaleprof "),
        (("help", "report"), 0, "usage: scaleprof report"),
    ]
    for args, rc, says in cases:
        p = subprocess.run([SCALEPROF, *args], capture_output=True, text=True, timeout=60)
        out = p.stdout + p.stderr
        print(f"  scaleprof {' '.join(args)[:60]}: exit {p.returncode}: {out.strip().splitlines()[0][:110] if out.strip() else ''}")
        if p.returncode != rc or says not in out:
            fail(f"scaleprof {' '.join(args)}: wanted exit {rc} saying {says!r}, got {p.returncode}: {out[:300]}")


def case_compare():
    """1/2/4/8 GPUs at a fixed per-GPU batch: efficiencies match the
    generator's throughputs within 2%."""
    dirs, truths = [], []
    for n in (1, 2, 4, 8):
        d, t = gen(f"cmp{n}", "--ranks", n, "--hosts", 1 if n < 8 else 2, "--markers",
                   "--transfer-ms", 0.5 * n, "--input-ms", 1)
        dirs.append(d)
        truths.append(t)
    out = json.loads(scaleprof("compare", *dirs, "--json", "--samples-per-step", 32,
                               "--price-per-gpu-hour", 2).stdout)
    base = truths[0]["steps_per_s"] * truths[0]["ranks"]
    for run, t in zip(out["runs"], truths):
        want = t["steps_per_s"] * t["ranks"] / base / (t["ranks"] / truths[0]["ranks"])
        near(f"{t['ranks']} GPUs efficiency", run["efficiency"], want, 0.02 * want)
    if out["lost"]["collective_transfer"] <= 0:
        fail("lost time should show collective_transfer growth")
    text = scaleprof("compare", *dirs, "--price-per-gpu-hour", 2, "--samples-per-step", 32).stdout
    if not re.search(r"8 GPUs: .*x the speed at 8x the price per hour: each sample costs", text):
        fail("cost line missing:\n" + text)


def cost_series(name, computes, transfers):
    """1, 2 and 4 GPUs with no jitter: a step is compute + 2 x transfer +
    0.3 ms of tail (gen_trace's layout), so every number is known."""
    dirs = []
    for n, c, t in zip((1, 2, 4), computes, transfers):
        d, _ = gen(f"{name}{n}", "--ranks", n, "--markers", "--compute-ms", c, "--transfer-ms", t, "--jitter", 0)
        dirs.append(d)
    return dirs


def check_cost(out, text, want):
    """want: per GPU count (step ms, samples/s, speedup, cost x, cost per 1k)."""
    for run in out["runs"]:
        step, sps, speed, cost_x, per_1k = want[run["gpus"]]
        print(f"  {run['gpus']} GPUs: step {run['step_ms']:.3f} (hand {step}), samples/s {run['throughput']:.1f} "
              f"(hand {sps:.1f}), speedup {run['speedup']:.4f} (hand {speed:.4f}), cost per sample "
              f"{run['cost_per_sample_x']:.4f}x (hand {cost_x:.4f}), per 1k {run['cost_per_1k_samples']:.6g} "
              f"(hand {per_1k:.6g})")
        for what, got, hand in (("step_ms", run["step_ms"], step), ("samples/s", run["throughput"], sps),
                                ("speedup", run["speedup"], speed), ("cost x", run["cost_per_sample_x"], cost_x),
                                ("cost per 1k", run["cost_per_1k_samples"], per_1k)):
            if abs(got - hand) > 0.01 * hand:
                fail(f"{run['gpus']} GPUs: {what} {got}, by hand {hand}")
    if out["throughput_unit"] != "samples/s":
        fail(f"throughput_unit {out['throughput_unit']!r}")
    step, sps, speed, cost_x, per_1k = want[4]
    line = (f"4 GPUs: {per_1k:.3g} per 1k samples; {speed:.2f}x the speed at 4x the price per hour: "
            f"each sample costs {cost_x:.2f}x")
    print(f"  text: {line}")
    if line not in text:
        fail(f"text should say {line!r}:\n{text}")


def case_compare_cost_global_batch():
    """A fixed global batch of 64 samples on 1, 2 and 4 GPUs (compute 24,
    12, 6 ms, transfers 0.5 ms): steps 25.3, 13.3, 7.3 ms by hand, so 4
    GPUs give 25.3/7.3 = 3.47x the samples/s at 4x the price: each sample
    costs 4/3.47 = 1.15x the baseline's (not 0.29x, the per-GPU reading)."""
    dirs = cost_series("gb", (24, 12, 6), (0.5, 0.5, 0.5))
    price, batch = 2.5, 64
    want = {}
    for n, step in ((1, 25.3), (2, 13.3), (4, 7.3)):
        sps = batch / (step / 1e3)
        speed = 25.3 / step
        want[n] = (step, sps, speed, n / speed, price * n / 3600 / sps * 1000)
    args = ("--global-batch", batch, "--price-per-gpu-hour", price)
    out = json.loads(scaleprof("compare", *dirs, "--json", *args).stdout)
    check_cost(out, scaleprof("compare", *dirs, *args).stdout, want)
    for run in out["runs"][1:]:
        if run["scaling"] != "strong":
            fail(f"{run['gpus']} GPUs: a fixed global batch is strong scaling, got {run['scaling']}")
    near("4 GPUs efficiency", out["runs"][2]["efficiency"], 25.3 / 7.3 / 4, 0.005)
    text = scaleprof("compare", *dirs, "--samples-per-step", batch).stdout
    note = next((l for l in text.splitlines() if l.startswith("note:")), "")
    print(f"  the same series with --samples-per-step {batch}: {note}")
    if "give --global-batch" not in note:
        fail("a per-GPU batch given for a series whose compute per GPU shrank as 1/N should be noted")
    p = scaleprof("compare", *dirs, "--global-batch", 64, "--samples-per-step", 16, rc=2)
    if "one of" not in p.stderr:
        fail("--global-batch with --samples-per-step should be refused: say one of them")


def case_compare_cost_per_gpu_batch():
    """A fixed per-GPU batch of 32 samples (compute 10 ms on every GPU,
    transfers 0.5, 1 and 2 ms): steps 11.3, 12.3, 14.3 ms; 4 GPUs process
    128 samples per 14.3 ms, 4 x 11.3/14.3 = 3.16x the baseline's samples/s
    at 4x the price: each sample costs 1.27x."""
    dirs = cost_series("pg", (10, 10, 10), (0.5, 1, 2))
    price, per_gpu = 2.5, 32
    want = {}
    for n, step in ((1, 11.3), (2, 12.3), (4, 14.3)):
        sps = per_gpu * n / (step / 1e3)
        speed = sps / (per_gpu / 0.0113)
        want[n] = (step, sps, speed, n / speed, price * n / 3600 / sps * 1000)
    args = ("--samples-per-step", per_gpu, "--price-per-gpu-hour", price)
    out = json.loads(scaleprof("compare", *dirs, "--json", *args).stdout)
    check_cost(out, scaleprof("compare", *dirs, *args).stdout, want)


def case_compare_columns_documented():
    """Every column compare prints is named in the man page's list of
    columns, and the throughput column without a batch is the speedup."""
    dirs = cost_series("cols", (24, 12, 6), (0.5, 0.5, 0.5))
    with open(os.path.join(os.environ["MAN_DIR"], "scaleprof-compare.1")) as f:
        man = f.read().replace("\\-", "-")
    for args in ((), ("--global-batch", 64)):
        header = scaleprof("compare", *dirs, *args).stdout.splitlines()[0].split()
        print(f"  compare {' '.join(map(str, args))}: columns {header}")
        for col in header:
            if f".B {col}" not in man and f'.B "{col}"' not in man:
                fail(f"column {col!r} is not documented in scaleprof-compare.1 (COLUMNS)")
        if "GPU-steps/s" in header:
            fail("GPU-steps/s is no unit anyone documents")


def case_compare_small_batch():
    """Fixed global batch: per-GPU compute shrinks while collectives stay,
    and compare names small_batch."""
    dirs = []
    for n in (1, 2, 4, 8):
        d, _ = gen(f"sb{n}", "--ranks", n, "--markers", "--compute-ms", 16 / n, "--transfer-ms", 3)
        dirs.append(d)
    out = json.loads(scaleprof("compare", *dirs, "--json").stdout)
    causes = [f["cause"] for f in out["findings"]]
    print(f"  findings {causes}")
    if "small_batch" not in causes:
        fail("small_batch not named")


def case_late_gpu_records():
    """GPU records written by a separate thread six steps late, grouped by
    stream as a CUPTI buffer delivers them: no event is left out, and the
    breakdown matches the truth."""
    d, truth = gen("lag", "--ranks", 2, "--markers", "--memcpy-ms", 0.5, "--sync-ms", 1, "--input-ms", 2,
                   "--gpu-thread-lag", 6, "--kernels", 1000, "--steps", 30)
    rep = report(d)
    late = [w for w in rep["warnings"] if "arrived after" in w]
    print(f"  warnings about late events: {late}")
    if late:
        fail("events were left out: " + late[0])
    check_breakdown(rep, truth)
    near("memcpy (every copy counted)", rep["breakdown"]["memcpy"], truth["breakdown"]["memcpy"], 0.0005)


def case_memcpy_finding():
    """Each step copies 8 MiB from pageable memory for 2 ms while no kernel
    runs, on every rank alike: memcpy is named with the copies' share as its
    gain, and its evidence gives the direction, the memory kind, the bytes,
    the bandwidth (8 MiB / 2 ms) and no overlap; from pinned memory the
    first try is not to pin it."""
    for pinned in (False, True):
        d, truth = gen("memcpy" + ("_pinned" if pinned else ""), "--ranks", 2, "--markers", "--memcpy-ms", 2,
                       "--copy-bytes", 8 << 20, *(["--copy-pinned"] if pinned else []))
        rep = report(d)
        f = findings(rep).get("memcpy")
        share = truth["breakdown"]["memcpy"]
        print(f"  pinned={pinned}: memcpy truth {share:.3f}, finding {f and (f['gain'], f['evidence'], f['first_try'])}")
        if not f:
            fail("memcpy not named")
        near("memcpy gain", f["gain"], share, 0.01)
        if f["ranks"] != [0, 1]:
            fail(f"memcpy names ranks {f['ranks']}, both copy alike")
        kind = "pinned" if pinned else "pageable"
        want = ["host to device from %s memory" % kind, "8.0 MiB per step per rank in 1 copy",
                "%.2f GB/s" % ((8 << 20) / 2e6), "0% of copy time overlapped"]
        for w in want:
            if w not in f["evidence"]:
                fail(f"memcpy evidence lacks {w!r}: {f['evidence']}")
        if pinned == ("pin" in f["first_try"].lower()):
            fail(f"first try for {kind} copies: {f['first_try']}")


def case_loader_workers():
    """Two forked loader workers per rank, whose headers inherit the rank,
    are attached to it as helpers, not analyzed as the rank; the input
    finding quotes the workers, their CPU use, the read throughput and the
    dips at step start."""
    d, truth = gen("workers", "--ranks", 4, "--markers", "--input-ms", 6, "--helpers", 2)
    rep = report(d)
    helpers = [r["helper_processes"] for r in rep["per_rank"]]
    print(f"  helper_processes per rank {helpers}, ranks {rep['ranks']}")
    if helpers != [2, 2, 2, 2] or rep["ranks"] != 4:
        fail("each rank should have its two workers attached")
    check_breakdown(rep, truth)
    f = findings(rep).get("input_pipeline")
    if not f:
        fail("no input_pipeline finding")
    ev = f["evidence"]
    print(f"  evidence: {ev}")
    # the CPU the job's own processes use (8 workers at half a core each,
    # of the host's 8 cores), told apart from the host's whole load (95%,
    # other users' processes included)
    for want in ("2 loader worker processes per rank", "50% of a CPU core",
                 "the job's processes keep 4.0 of the host's 8 CPU cores busy (50%)",
                 "the host as a whole is 95% busy (saturated: other processes hold the rest)",
                 "MB/s", "periodic dips at step start"):
        if want not in ev:
            fail(f"input_pipeline evidence lacks {want!r}")
    if f["ranks"] != [0, 1, 2, 3] or f["steps"] != {"first": 3, "last": 19}:
        fail(f"ranks should list all four ranks and steps 3..19: {f['ranks']} {f['steps']}")


def case_findings_shape():
    """Every finding names its ranks as a non-empty list of integers and its
    steps as {first, last}."""
    d, _ = gen("shape", "--ranks", 4, "--markers", "--input-ms", 4, "--slow-rank", 1, "--slow-compute-ms", 3)
    rep = report(d)
    for f in rep["findings"]:
        print(f"  {f['cause']}: ranks {f['ranks']}, steps {f['steps']}")
        if not isinstance(f["ranks"], list) or not f["ranks"] or not all(type(x) is int for x in f["ranks"]):
            fail(f"ranks of {f['cause']} is not a non-empty list of integers")
        st = f["steps"]
        if not isinstance(st, dict) or not (type(st.get("first")) is int and type(st.get("last")) is int):
            fail(f"steps of {f['cause']} is not {{first, last}}")
    if len(rep["findings"]) < 2:
        fail("the scenario should give at least two findings")


def straggler_ranks(rep):
    """The ranks of the straggler finding, [] without one."""
    f = findings(rep).get("straggler")
    return f["ranks"] if f else []


def case_rank_narrows_view():
    """--rank R narrows the view, never the analysis: on 8 ranks whose
    straggler is rank 5, `report --rank 5` keeps the straggler finding and
    every other finding of the whole report, with the same gains; only
    per_rank and steps_detail keep rank 5 alone, and the text says which
    rank is shown and marks the findings that concern it."""
    d, _ = gen("viewrank", "--ranks", 8, "--markers", "--slow-rank", 5, "--slow-compute-ms", 4, "--jitter", 0.05)
    whole = report(d)
    for r in (5, 0):
        view = report(d, "--rank", r, "--per-step")
        got = [(f["cause"], f["ranks"], round(f["gain"], 4)) for f in view["findings"]]
        want = [(f["cause"], f["ranks"], round(f["gain"], 4)) for f in whole["findings"]]
        print(f"  --rank {r}: findings {got}; whole {want}; stragglers {view['stragglers']}")
        if got != want:
            fail(f"--rank {r} changed the findings")
        if straggler_ranks(view) != [5] or [s["rank"] for s in view["stragglers"]] != [5]:
            fail(f"--rank {r}: the straggler (rank 5) is lost")
        if abs(view["steps"]["mean_ms"] - whole["steps"]["mean_ms"]) > 1e-6 or view["breakdown"] != whole["breakdown"]:
            fail(f"--rank {r} changed the step time or the breakdown of all ranks")
        if [x["rank"] for x in view["per_rank"]] != [r] or {x["rank"] for x in view["steps_detail"]} != {r}:
            fail(f"--rank {r}: per_rank/steps_detail should hold rank {r} alone")
        if view.get("view", {}).get("rank") != r:
            fail(f"--rank {r}: the JSON does not say which rank is shown: {view.get('view')}")
    text = scaleprof("report", d, "--rank", 5).stdout
    line = next((l for l in text.splitlines() if ". straggler" in l), "")
    print(f"  text: {line.strip()}")
    if "rank 5 shown" not in text or "concerns rank 5" not in line:
        fail("the text report should say rank 5 is shown and mark the straggler finding as concerning it")


def case_kernels_slowest_rank():
    """The kernel view of a straggler: rank 2 computes 14 ms a step where
    the others compute 10 (no jitter), so each of its compute kernels runs
    1.4x the median rank's, and the view names rank 2 for every one; each
    name has one call per analyzed step per rank; NCCL kernels are marked."""
    d, _ = gen("kslow", "--ranks", 4, "--markers", "--slow-rank", 2, "--slow-compute-ms", 4, "--jitter", 0)
    rep = report(d, "--kernels", "1000")
    ks = rep["kernels"]["top"]
    compute = [k for k in ks if not k["nccl"]]
    nccl = [k for k in ks if k["nccl"]]
    steps = rep["steps"]["analyzed"]
    print(f"  {len(compute)} compute kernel names, {len(nccl)} NCCL; slowest ranks "
          f"{sorted({k['slowest_rank'] for k in compute})}, x {sorted({round(k['slowest_x_median'], 3) for k in compute})}; "
          f"calls {sorted({k['calls'] for k in ks})} for {steps} steps x 4 ranks")
    if not compute or not nccl:
        fail("compute and NCCL kernels should both be listed")
    for k in compute:
        if k["slowest_rank"] != 2 or abs(k["slowest_x_median"] - 1.4) > 0.01:
            fail(f"{k['name']}: slowest rank {k['slowest_rank']} at {k['slowest_x_median']}x, want rank 2 at 1.4x")
        if k["calls"] != steps * 4 or len(k["per_rank"]) != 4:
            fail(f"{k['name']}: {k['calls']} calls, want {steps} steps x 4 ranks")
    text = scaleprof("report", d, "--kernels").stdout
    if "top 9 kernels by GPU time" not in text or "2 (1.40x)" not in text:
        fail("the text should list the 9 kernels (fewer than 10), rank 2 slowest at 1.40x:\n" + text)


def case_html_kernels():
    """html --kernels N: the page holds the kernel view, one row per kernel
    with the numbers of report --json --kernels N (names, calls, total,
    slowest rank); without --kernels the page has none."""
    import html as htmllib
    d, _ = gen("hkern", "--ranks", 4, "--markers", "--slow-rank", 1, "--slow-compute-ms", 4, "--jitter", 0)
    page = os.path.join(TMP, "hkern.html")
    scaleprof("html", d, "-o", page, "--kernels", 5)
    text = open(page).read()
    rows = re.findall(r'<tr class="kernel" data-name="([^"]*)" data-calls="(\d+)" data-total-ms="([\d.]+)" '
                      r'data-slowest-rank="(-?\d+)"', text)
    want = report(d, "--kernels", 5)["kernels"]["top"]
    print(f"  page rows {[(htmllib.unescape(n)[:24], c, t, s) for n, c, t, s in rows]}")
    if len(rows) != len(want) or len(rows) != 5:
        fail(f"{len(rows)} kernel rows on the page, report lists {len(want)}")
    for (name, calls, total, slow), k in zip(rows, want):
        if htmllib.unescape(name) != k["name"] or int(calls) != k["calls"] or \
                abs(float(total) - k["total_ms"]) > 1e-3 * k["total_ms"] or \
                int(slow) != (k["slowest_rank"] if k["slowest_rank"] is not None else -1):
            fail(f"page row {name, calls, total, slow} is not report's {k}")
    scaleprof("html", d, "-o", page)
    if 'id="kernels"' in open(page).read():
        fail("without --kernels the page should have no kernel view")


def case_stragglers_one_answer():
    """`stragglers` in the JSON and the straggler finding give one answer:
    the same ranks, or none in both; the arrival table is `last_arrivals`."""
    for name, args in (("oneans_small", ("--slow-compute-ms", 2, "--jitter", 0.3)),
                       ("oneans_big", ("--slow-compute-ms", 6, "--jitter", 0.3)),
                       ("oneans_jitter", ("--slow-compute-ms", 4, "--jitter", 0.6))):
        d, _ = gen(name, "--ranks", 8, "--markers", "--slow-rank", 5, *args)
        rep = report(d)
        got = [s["rank"] for s in rep["stragglers"]]
        print(f"  {name}: stragglers {got}, straggler finding {straggler_ranks(rep)}, "
              f"last arrivals {[(a['rank'], a['last_arrival_fraction']) for a in rep.get('last_arrivals', [])]}")
        if got != straggler_ranks(rep):
            fail(f"{name}: stragglers {got} but the straggler finding names {straggler_ranks(rep)}")
        if rep["schema_version"] < 3 or "last_arrivals" not in rep:
            fail("the arrival table should be last_arrivals, schema_version 3")
        for s in rep["stragglers"]:
            if s["cause"] not in ("compute", "memcpy", "input", "host", "other", "mixed"):
                fail(f"straggler cause {s['cause']!r}")


NO_GPU_WORDS = "no GPU activity was recorded in any of its 2 rank(s)"


def case_no_gpu_every_verb():
    """A job with no GPU (a CPU-only gloo job: markers, loader waits and
    workers, no CUDA, NCCL or GPU record): compare and html refuse with the
    same words, report says them too and shows the host-side view only,
    and export writes the host's timeline with no breakdown and no
    finding, saying why; none claims a GPU was idle."""
    d, truth = gen("nogpu", "--ranks", 2, "--markers", "--input-ms", 3, "--helper", "--no-gpu")
    page = os.path.join(TMP, "nogpu.html")
    timeline = os.path.join(TMP, "nogpu.json")
    runs = [("report", ("report", d), 0), ("compare", ("compare", d, d), 1),
            ("html", ("html", d, "-o", page), 1), ("html compare", ("html", d, d, "-o", page), 1),
            ("export", ("export", d, "-o", timeline), 0)]
    for name, args, rc in runs:
        p = scaleprof(*args, rc=rc)
        said = next((l for l in p.stderr.splitlines() if "GPU" in l), "")
        print(f"  {name}: exit {p.returncode}: {said[:150]}")
        if NO_GPU_WORDS not in p.stderr or "a job that ran on CPUs only" not in p.stderr:
            fail(f"scaleprof {name} should say {NO_GPU_WORDS!r} as report does:\n{p.stderr}")
        if name == "report" and ("Host-side report" not in p.stdout or
                                 re.search(r"GPU (is |are )?idle|breakdown|idle_", p.stdout)):
            fail(f"report of a job with no GPU should show the host side only:\n{p.stdout}")
    if os.path.exists(page):
        fail("html wrote a page about GPUs for a job with no GPU")
    # the host-side view: the marked iterations and the input wait the
    # generator put in each (truth: idle_input of the step)
    host = json.loads(scaleprof("report", d, "--json").stdout)
    if host.get("kind") != "host" or host.get("gpu") is not False or "breakdown" in host:
        fail(f"report --json of a job with no GPU should be the host-side view: {list(host)}")
    for r in host["per_rank"]:
        near(f"rank {r['rank']} input wait share", r["input_wait_share"], truth["breakdown"]["idle_input"], 0.02)
        near(f"rank {r['rank']} iteration ms", r["iteration_ms"], truth["step_ms"], 0.05 * truth["step_ms"])
        if r["iterations_from"] != "step markers":
            fail(f"iterations should come from the step markers, not {r['iterations_from']}")
    if [f["cause"] for f in host["findings"]] != ["input_pipeline"]:
        fail(f"the host-side findings should be input_pipeline: {host['findings']}")
    with open(timeline) as f:
        tl = json.load(f)
    evs = tl["traceEvents"]
    claims = [e for e in evs if e.get("cat") == "finding" or "GPU" in e.get("name", "") or
              any(k.endswith("_ms") and k != "step_ms" for k in e.get("args", {}))]
    steps = [e for e in evs if e.get("cat") == "step"]
    waits = [e for e in evs if e.get("ph") == "X" and "poll" in e.get("name", "")]
    print(f"  export: {len(evs)} events, {len(steps)} steps, {len(waits)} waits, {len(claims)} GPU claims, "
          f"host_only {tl['otherData'].get('host_only')}")
    if claims:
        fail(f"export makes GPU claims for a job with no GPU: {claims[:2]}")
    if not steps or not waits or tl["otherData"].get("host_only") is not True:
        fail("export should still hold the host's timeline (steps, input waits), marked host_only")
    p = scaleprof("export", d, "-o", timeline, "--whatif", "input_pipeline", rc=1)
    print(f"  export --whatif: exit 1: {p.stderr.strip()[:120]}")
    if NO_GPU_WORDS not in p.stderr:
        fail("export --whatif on a job with no GPU should refuse with report's words")


def case_color_every_verb():
    """Every verb takes --color and --no-color (and --color=WHEN), and its
    --help says so: compare rejected --no-color while report took it."""
    d, _ = gen("colorall", "--ranks", 2, "--markers")
    out = os.path.join(TMP, "colorall-out")
    runs = {
        "report": ("report", d), "compare": ("compare", d, d), "hang": ("hang", d),
        "export": ("export", d, "-o", out + ".json"), "html": ("html", d, "-o", out + ".html"),
        "dump": ("dump", os.path.join(d, "host0", "1000.sprof")),
    }
    for verb, args in runs.items():
        for flag in ("--no-color", "--color", "--color=never"):
            p = subprocess.run([SCALEPROF, *args, flag], capture_output=True, text=True)
            if p.returncode not in (0, 1) or "unknown" in p.stderr:
                fail(f"scaleprof {verb} {flag}: exit {p.returncode}: {p.stderr.strip()[:200]}")
        helptext = scaleprof(verb, "--help").stdout
        print(f"  {verb}: --color, --no-color and --color=never accepted; help says so: "
              f"{'--no-color' in helptext and '--color' in helptext}")
        if "--no-color" not in helptext:
            fail(f"scaleprof {verb} --help does not say --no-color")
    for verb in ("run", "import"):
        if "--no-color" not in scaleprof(verb, "--help").stdout:
            fail(f"scaleprof {verb} --help does not say --no-color")
    forced = scaleprof("report", d, "--color").stdout
    plain = scaleprof("report", d, "--no-color").stdout
    print(f"  report --color into a pipe: {forced.count(chr(27))} escapes; --no-color: {plain.count(chr(27))}")
    if "\033[" not in forced or "\033[" in plain:
        fail("--color should colour even into a pipe, --no-color never")
    p = scaleprof("report", d, "--color=sometimes", rc=2)
    if "always, never or auto" not in p.stderr:
        fail(f"--color=sometimes: {p.stderr}")


def usage_errors(cases):
    """Each (args, says): scaleprof ARGS exits 2 saying that on stderr."""
    for args, says in cases:
        p = subprocess.run([SCALEPROF, *args], capture_output=True, text=True)
        first = p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""
        print(f"  scaleprof {' '.join(a if not a.startswith(TMP) else '...' for a in args)}: exit {p.returncode}: {first}")
        if p.returncode != 2 or says not in p.stderr:
            fail(f"wanted exit 2 saying {says!r}")


def case_did_you_mean():
    """A mistyped verb or option is answered with the nearest name, and an
    option missing its value is said so, not 'unknown'."""
    d, _ = gen("dym", "--ranks", 2, "--markers")
    cases = [
        (("reprot", d), "did you mean 'report'?"),
        (("compre", d, d), "did you mean 'compare'?"),
        (("report", d, "--samples-per-stp", "4"), "did you mean --samples-per-step?"),
        (("compare", d, d, "--globl-batch", "64"), "did you mean --global-batch?"),
        (("export", d, "-o", os.path.join(TMP, "dym.json"), "--rnaks", "0"), "did you mean --ranks?"),
        (("report", d, "--rank"), "--rank needs a value"),
        (("run", "-o", os.path.join(TMP, "dym-run"), "--nproc_pre_node", "2", "--", "true"), "did you mean --nproc_per_node?"),
    ]
    usage_errors(cases)
    p = subprocess.run([SCALEPROF, "frobnicate"], capture_output=True, text=True)
    if p.returncode != 2 or "did you mean" in p.stderr or "unknown verb" not in p.stderr:
        fail(f"a verb nothing like any: no suggestion, the list: {p.stderr}")


def case_straggler_not_small_batch():
    """Uneven data makes rank 2 late; the others' wait is the straggler's
    doing, not a batch too small to hide the collectives."""
    d, _ = gen("unevensb", "--ranks", 4, "--markers", "--slow-rank", 2, "--slow-input-ms", 15,
               "--compute-ms", 10, "--transfer-ms", 1)
    rep = report(d)
    causes = [f["cause"] for f in rep["findings"]]
    print(f"  findings {causes}")
    if "straggler" not in causes:
        fail("rank 2 should be the straggler")
    if "small_batch" in causes:
        fail("small_batch fired on a straggler run")


def case_straggler_input_one_finding():
    """A rank that waits 15 ms per step for its own input holds the others
    back: one finding, the straggler with its input as the cause and the
    input's first try, not a second input_pipeline finding for the same
    time; the evidence quotes rank 2's own wait, not the all-ranks mean."""
    d, _ = gen("inputstrag", "--ranks", 4, "--markers", "--slow-rank", 2, "--slow-input-ms", 15,
               "--compute-ms", 10, "--transfer-ms", 1)
    rep = report(d)
    for f in rep["findings"]:
        print(f"  {f['cause']} ranks {f['ranks']} gain {f['gain']:.3f}: {f['evidence'][:60]}...")
    f = findings(rep).get("straggler")
    if not f or f["ranks"] != [2]:
        fail("rank 2 should be named straggler")
    if "waiting for input: 15.00 ms per step" not in f["evidence"]:
        fail(f"the straggler's evidence should give rank 2's own input wait: {f['evidence']}")
    if "input" not in f["first_try"]:
        fail(f"the first try should be about rank 2's input: {f['first_try']}")
    dup = [g for g in rep["findings"] if g["cause"] == "input_pipeline" and set(g["ranks"]) <= {2}]
    if dup:
        fail(f"rank 2's input is listed twice: straggler and {dup}")


def case_imbalance_evidence_matches_data():
    """Work that varies per step and rank (jitter): imbalance says the
    slowest rank changes from step to step only as the per-step table
    shows it: the rank with most time outside collectives, step by step."""
    d, _ = gen("jitter", "--ranks", 4, "--markers", "--jitter", 0.6)
    rep = report(d, "--per-step")
    f = findings(rep).get("imbalance")
    if not f:
        fail(f"no imbalance finding: {[g['cause'] for g in rep['findings']]}")
    print(f"  {f['evidence']}")
    by_step = {}
    for row in rep["steps_detail"]:
        local = row["step_ms"] - row["collective_wait"] - row["collective_transfer"]
        by_step.setdefault(row["step"], []).append((local, row["rank"]))
    slowest = [max(v)[1] for _, v in sorted(by_step.items())]
    counts = {r: slowest.count(r) for r in set(slowest)}
    print(f"  slowest rank per step: {slowest}")
    m = re.search(r"changes from step to step \((\d+) different ranks over (\d+) steps, none slowest in more than (\d+)\)",
                  f["evidence"])
    if len(counts) > 1:
        if not m or [int(x) for x in m.groups()] != [len(counts), len(slowest), max(counts.values())]:
            fail(f"the evidence should give {len(counts)} ranks over {len(slowest)} steps, at most "
                 f"{max(counts.values())}: {f['evidence']}")
    elif m:
        fail("the evidence says the slowest rank changes, the table shows one rank")


def case_whatif_check_fails_openly():
    """When the replay fails its check the report says so, in the text and
    the JSON, lists no gain it withheld and does not call the run healthy.
    Equal buckets whose steps are told apart by a pause, with the
    recording paused once, give ranks whose steps disagree today (rank 1's
    twice the others'): the unchanged replay cannot reproduce them.  Were
    the steps found alike, the check would pass and the gains be listed:
    both are asserted, whichever this trace gives."""
    d, _ = gen("openly", "--ranks", 4, "--steps", 8, "--input-ms", 1, "--jitter", 0.2, "--slow-rank", 1,
               "--slow-input-ms", 5, "--equal-buckets", "--pause-after-step", 4)
    rep = json.loads(scaleprof("report", d, "--json").stdout)
    text = scaleprof("report", d, "--no-color").stdout
    c = rep["whatif"]["check"]
    print(f"  {whatif_check.summary(rep)}; withheld {c.get('withheld')}")
    listed = {f["cause"] for f in rep["findings"]}
    if c["ok"] is False:
        if not c["withheld"] or listed & set(c["withheld"]):
            fail(f"withheld {c['withheld']}, listed {listed}")
        if rep["healthy"] is not False:
            fail("a run whose gains were withheld is called healthy")
        if "fails its check" not in text or not any("what-if replay" in w for w in rep["warnings"]):
            fail("the text report and the warnings should say the replay fails its check")
        page = os.path.join(TMP, "openly.html")
        scaleprof("html", d, "-o", page)
        with open(page) as f:
            html = f.read()
        if "fails its check" not in html or 'id="healthy"' in html:
            fail("the HTML report should say the replay fails its check, and not call the run healthy")
    else:
        bad = whatif_check.problems(rep)
        if bad or c["withheld"]:
            fail(f"the check passes but: {bad} withheld {c['withheld']}")
        if "fails its check" in text:
            fail("the text says the check fails; the JSON says it passes")


def case_whatif_check_can_fail():
    """The assertion every report here passes (whatif_check.problems) fails
    on a report whose replay drifts, whose cause saves more than its time
    on the critical path, or whose ideal is slower than one fix alone."""
    d, _ = gen("checkfail", "--ranks", 4, "--markers", "--slow-rank", 1, "--slow-compute-ms", 4)
    rep = report(d)
    c = rep["whatif"]["check"]
    print(f"  {whatif_check.summary(rep)}")
    if c["ok"] is not True or not c["causes"]:
        fail(f"the check should pass here, with causes priced: {c}")
    import copy
    tampered = []
    for what, change in (("drift", lambda c: c.update(replay_error_pct=2.0)),
                         ("over bound", lambda c: c["causes"][0].update(saved_ms=c["causes"][0]["critical_path_ms"] + 1)),
                         ("ideal", lambda c: c.update(ideal_ms=c["best_single_ms"] + 1))):
        bad = copy.deepcopy(rep)
        change(bad["whatif"]["check"])
        got = whatif_check.problems(bad)
        print(f"  {what}: {got}")
        if not got:
            tampered.append(what)
    if tampered:
        fail(f"the assertion does not see: {tampered}")


def case_cross_node_report():
    """Every collective spans two hosts at 20 GB/s of bus bandwidth and the
    transfer is exposed: cross_node (moderate or worse).  Not on one host, and not
    when the link between hosts is fast."""
    slow, _ = gen("xslow", "--ranks", 8, "--hosts", 2, "--markers", "--inter-transfer-ms", 6)
    one, _ = gen("xone", "--ranks", 8, "--hosts", 1, "--markers", "--transfer-ms", 6)
    fast, _ = gen("xfast", "--ranks", 8, "--hosts", 2, "--markers", "--inter-transfer-ms", 0.4)
    f = findings(report(slow)).get("cross_node")
    print(f"  two hosts, slow: {f}")
    if not f or f["severity"] not in ("moderate", "high") or "GB/s" not in f["evidence"]:
        fail("cross_node (moderate) with its bandwidth expected")
    for name, d in (("one host", one), ("two hosts, fast link", fast)):
        got = findings(report(d)).get("cross_node")
        print(f"  {name}: {got}")
        if got:
            fail(f"no cross_node expected on {name}")


def case_cross_node_far_below():
    """Two hosts of four ranks, an all-reduce within each host and one over
    both: the one spanning hosts gets about a fifth of the bus bandwidth
    of those within a host, though this job pays only about 1% of its step
    for it.  cross_node is listed (low, priced as it is, saying the cost is
    small here); with the link at half the rate within a host and the same
    small cost, it is not."""
    common = ("--ranks", 8, "--hosts", 2, "--markers", "--intra-coll", "--bytes", 1 << 20, "--transfer-ms", 0.01)
    far, _ = gen("xfar", *common, "--inter-transfer-ms", 0.06)
    near_, _ = gen("xnear", *common, "--inter-transfer-ms", 0.025)
    rep = report(far)
    f = findings(rep).get("cross_node")
    print(f"  cross_node: {f and (f['severity'], f['gain'], f['evidence'][150:260])}")
    if not f or f["severity"] != "low" or f["gain"] >= 0.02 or "pays little" not in f["evidence"]:
        fail(f"a link at a fifth of the bandwidth within a host should be named, priced as it is: {f}")
    m = re.search(r"reach ([\d.]+) GB/s bus bandwidth, (\d+)% of the ([\d.]+) GB/s within a host", f["evidence"])
    if not m or not 0.1 <= float(m[1]) / float(m[3]) <= 0.25:
        fail(f"the evidence should give both bandwidths: {f['evidence']}")
    got = findings(report(near_)).get("cross_node")
    print(f"  link at half the rate, same small cost: {got and got['severity']}")
    if got:
        fail(f"a link at half the rate within a host, costing ~1%, is no finding: {got}")


def case_compare_cross_node():
    """Eight GPUs on one node, then on two: efficiency holds above 80% but
    the collective transfer per step grows fourfold: compare says
    cross_node, fine on one node, poor on two."""
    one, _ = gen("cn1", "--ranks", 8, "--hosts", 1, "--markers", "--compute-ms", 30, "--transfer-ms", 0.5)
    two, _ = gen("cn2", "--ranks", 8, "--hosts", 2, "--markers", "--compute-ms", 30, "--inter-transfer-ms", 2)
    out = json.loads(scaleprof("compare", one, two, "--json").stdout)
    print(f"  efficiencies {[round(r['efficiency'], 3) for r in out['runs']]}, findings {out['findings']}")
    if not any(f["cause"] == "cross_node" for f in out["findings"]):
        fail("compare should name cross_node")
    same, _ = gen("cn1b", "--ranks", 8, "--hosts", 1, "--markers", "--compute-ms", 30, "--transfer-ms", 0.5,
                  "--jitter", 0.03)
    out = json.loads(scaleprof("compare", one, same, "--json").stdout)
    if any(f["cause"] == "cross_node" for f in out["findings"]):
        fail("two single-node runs should not give cross_node")


def case_single_gpu_kernels():
    """One GPU, no markers, no collectives: the steps are found from the
    repeating kernel-name sequence."""
    d, truth = gen("single", "--ranks", 1, "--no-nccl", "--kernels", 5, "--colls", 3, "--input-ms", 2,
                   "--sync-ms", 0.5, "--jitter", 0.05)
    rep = check_steps_found(d, truth, "kernels", "steps should come from the kernel sequence")
    check_breakdown(rep, truth)


def case_single_gpu_one_kernel_name():
    """One GPU whose kernels all share one name: the names repeat every
    kernel, so the pause between steps (input, host) tells the steps, not
    one "step" per kernel."""
    d, truth = gen("onename", "--ranks", 1, "--no-nccl", "--kernels", 9, "--colls", 1, "--input-ms", 2,
                   "--one-kernel-name", "--jitter", 0.05)
    check_steps_found(d, truth, None, "one step per training step expected, not one per kernel")


def case_single_gpu_layer_grids():
    """One GPU, no markers, no collectives, every kernel of one name, and
    no pause between steps to speak of; what repeats is the layers' thread
    counts: 30 steps of nine kernels are 30 steps, not 270."""
    d, truth = gen("layergrids", "--ranks", 1, "--no-nccl", "--kernels", 9, "--colls", 1, "--steps", 30,
                   "--compute-ms", 8.5, "--tail-ms", 0.05, "--one-kernel-name", "--grid-per-layer",
                   "--jitter", 0.05)
    check_steps_found(d, truth, "kernels",
                      "the steps should come from the kernels' repeating grid sizes, one per training step")


def case_batch_ramp():
    """A batch size that grows over the run, no markers: step 23 takes
    twice as long as step 0.  The steps stay the job's, with distinct
    gradient buckets and with four equal ones."""
    for name, extra in (("ramp", ["--colls", 3]),
                        ("ramp_equal", ["--colls", 4, "--equal-buckets", "--input-ms", 3])):
        d, truth = gen(name, "--ranks", 4, "--steps", 24, "--ramp", 1.0, "--jitter", 0.05, *extra)
        rep = report(d)
        st = rep["steps"]
        print(f"  {name}: detected_by {st['detected_by']}, count {st['count']}, mean {st['mean_ms']:.3f} ms; "
              f"truth {truth['steps']} steps of {truth['step_ms']:.3f} ms")
        if st["detected_by"] != "collectives" or st["count"] != truth["steps"]:
            fail("the step count should be the job's while the step time grows")
        if any("step count unsure" in w for w in rep["warnings"]):
            fail("every rank found the same steps: nothing to be unsure of")
        near("step_ms", st["mean_ms"], truth["step_ms"], 0.02 * truth["step_ms"])
        check_breakdown(rep, truth)


def case_eval_passes():
    """Data parallel without markers, an evaluation pass (forward kernels, a
    metric all-reduce, no gradients) after every 5th training step: the
    steps are the 24 training steps at their own length, the evaluations
    set aside and counted, in JSON and in the text report."""
    for name, extra in (("eval", ["--colls", 3]),
                        ("eval_equal", ["--colls", 4, "--equal-buckets", "--input-ms", 4])):
        d, truth = gen(name, "--ranks", 4, "--steps", 24, "--eval-every", 5, "--eval-ms", 6,
                       "--jitter", 0.03, *extra)
        rep = report(d)
        st = rep["steps"]
        print(f"  {name}: detected_by {st['detected_by']}, count {st['count']}, mean {st['mean_ms']:.3f} ms, "
              f"set aside {st.get('set_aside')}; truth {truth['steps']} steps of {truth['step_ms']:.3f} ms, "
              f"{truth['evals']} evaluations")
        if st["count"] != truth["steps"]:
            fail("the step count should be the training steps the job ran")
        near("step_ms", st["mean_ms"], truth["step_ms"], 0.02 * truth["step_ms"])
        if st.get("set_aside") != truth["evals"]:
            fail("the evaluation passes should be set aside and counted")
        text = scaleprof("report", d).stdout
        if f"{truth['evals']} passes between steps set aside" not in text:
            fail("the text report should say how many passes were set aside:\n" + text[:600])
    # a small all-reduce in every step (the loss, after the forward pass)
    # is part of the step, not a pass to set aside
    d, truth = gen("step_metric", "--ranks", 4, "--steps", 24, "--colls", 4, "--equal-buckets",
                   "--input-ms", 4, "--step-metric", "--jitter", 0.03)
    rep = report(d)
    st = rep["steps"]
    print(f"  step_metric: count {st['count']}, mean {st['mean_ms']:.3f} ms, set aside {st.get('set_aside')}; "
          f"truth {truth['steps']} steps of {truth['step_ms']:.3f} ms")
    if st["count"] != truth["steps"] or st.get("set_aside") != 0:
        fail("a collective in every step is the step's: nothing to set aside")
    near("step_ms", st["mean_ms"], truth["step_ms"], 0.02 * truth["step_ms"])


def case_equal_buckets():
    """A DDP job whose four gradient buckets are the same size, without
    markers: every collective looks alike, and the steps are found from the
    pause between them (forward pass, input) - not one step per bucket."""
    for name, extra in (("equal", []), ("equal_jitter", ["--jitter", 0.2]),
                        ("equal_one", ["--colls", 1])):
        args = ["--ranks", 4, "--colls", 4, "--equal-buckets", "--input-ms", 6] + extra
        d, truth = gen(name, *args)
        rep = check_steps_found(d, truth, "collectives",
                                "the step count should be the true one, not one step per collective",
                                f"{' '.join(map(str, extra)) or 'four buckets'}: ")
        check_breakdown(rep, truth)


def case_equal_buckets_sim():
    """The same on simulated GPUs: examples/ddp_train, two ranks, ten steps,
    four equal 4 MiB all-reduces per step, no markers: ten steps."""
    ddp, sim = os.environ.get("DDP_TRAIN"), os.environ.get("SCALEPROF_SIM_DIR")
    if not ddp or not sim:
        print("SKIP: examples/ddp_train or the simulated GPUs are not built here")
        sys.exit(77)
    d = os.path.join(TMP, "ddp_equal")
    p = subprocess.run([SCALEPROF, "run", "--sim", "--nproc", "2", "-o", d, "--", ddp, "--no-markers",
                        "--steps", "10", "--grad-mb", "16", "--buckets", "4",
                        "--data", os.path.join(TMP, "data")], capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"scaleprof run failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    if f"next: scaleprof report {d}" not in p.stderr:
        fail(f"a run on (simulated) GPUs should suggest the report: {p.stderr}")
    rep = report(d)
    st = rep["steps"]
    allreduces = [c for c in rep["collectives"] if c["op"] == "allreduce" and c["bytes"] == 4 << 20]
    print(f"  detected_by {st['detected_by']}, count {st['count']}, median {st['median_ms']:.2f} ms; "
          f"4 MiB all-reduces {[c['calls'] for c in allreduces]}")
    if not allreduces:
        fail("the 4 MiB all-reduces are not in the report")
    if st["detected_by"] != "collectives" or st["count"] != 10:
        fail("ten steps expected from the collectives")


def case_unranked_single_gpu():
    """A single-GPU job started without a launcher and without NCCL names no
    rank anywhere: its GPU process is analyzed as rank 0, with a warning
    that says so, and its forked loader worker attaches to it."""
    d, truth = gen("unranked", "--ranks", 1, "--no-nccl", "--no-rank", "--markers", "--helpers", 1,
                   "--input-ms", 2, "--steps", 15)
    rep = report(d)
    pr = rep["per_rank"]
    print(f"  ranks {rep['ranks']}, per_rank {[(r['rank'], r['helper_processes']) for r in pr]}, "
          f"steps {rep['steps']['count']} by {rep['steps']['detected_by']}")
    if rep["ranks"] != 1 or [r["rank"] for r in pr] != [0]:
        fail("the GPU process should be rank 0, the only rank")
    if pr[0]["helper_processes"] != 1:
        fail("the loader worker should attach to rank 0 as its helper")
    if rep["steps"]["count"] != truth["steps"]:
        fail(f"{truth['steps']} steps expected")
    if not any("rank 0" in w and "no rank" in w for w in rep["warnings"]):
        fail(f"a warning should say that rank 0 was assumed: {rep['warnings']}")
    check_breakdown(rep, truth)
    text = scaleprof("report", d, "--no-color").stdout
    if "1 loader proc" not in text:
        fail("the text report should show the loader worker on rank 0's line:\n" + text)


def case_compare_unranked_baseline():
    """`compare run-1gpu run-4gpu` where the 1-GPU run names no rank: the
    efficiency is computed against it."""
    one, t1 = gen("cmpu1", "--ranks", 1, "--no-nccl", "--no-rank", "--markers", "--input-ms", 1)
    four, t4 = gen("cmpu4", "--ranks", 4, "--markers", "--input-ms", 1, "--transfer-ms", 2)
    out = json.loads(scaleprof("compare", one, four, "--json").stdout)
    gpus = [r["gpus"] for r in out["runs"]]
    want = t4["steps_per_s"] / t1["steps_per_s"]
    print(f"  runs' GPUs {gpus}")
    if gpus != [1, 4]:
        fail("the baseline should count one GPU")
    near("4 GPUs efficiency", out["runs"][1]["efficiency"], want, 0.02 * want)


def report_on_terminal(d, cols, env_columns=None):
    """The text report as a terminal of `cols` columns shows it (a pty)."""
    import fcntl, pty, struct, termios
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, cols, 0, 0))
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    if env_columns:
        env["COLUMNS"] = str(env_columns)
    p = subprocess.Popen([SCALEPROF, "report", d, "--no-color"], stdout=slave, stderr=subprocess.DEVNULL,
                         env=env)
    os.close(slave)
    out = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.close(master)
    if p.wait() != 0:
        fail(f"scaleprof report on a terminal exited {p.returncode}")
    return out.decode().replace("\r\n", "\n")


def bar_of(text, label):
    line = next((l for l in text.splitlines() if l.startswith(label)), None)
    if line is None:
        fail(f"no line starting with {label!r}:\n{text}")
    return line.split("|")[1]


def case_narrow_terminal():
    """On an 80-column terminal no line of the report is wider than the
    window (bars shrink, prose wraps at words); a wider terminal gets wider
    bars; into a pipe the bars keep 50 characters."""
    d, _ = gen("narrow", "--ranks", 4, "--markers", "--input-ms", 4, "--slow-rank", 1, "--slow-compute-ms", 3,
               "--helpers", 2, "--hosts", 2)
    text = report_on_terminal(d, 80)
    wide = [l for l in text.splitlines() if len(l) > 80]
    bar80 = len(bar_of(text, "  rank 0"))
    print(f"  80 columns: bar {bar80} wide, {len(wide)} line(s) over 80")
    if wide:
        fail("lines wider than the terminal:\n" + "\n".join(wide))
    if "2 loader procs" not in text or "host host0" not in text:
        fail("the rank line should name its host and its loader processes:\n" + text)
    for word in ("straggler", "first try:"):
        if word not in text:
            fail(f"{word!r} missing from the report on a terminal")
    bar120 = len(bar_of(report_on_terminal(d, 80, env_columns=120), "  rank 0"))
    piped = len(bar_of(scaleprof("report", d, "--no-color").stdout, "  rank 0"))
    print(f"  COLUMNS=120: bar {bar120} wide; into a pipe: bar {piped} wide")
    if not bar80 < bar120 or piped != 50:
        fail("bars should follow the terminal's width, and be 50 wide into a pipe")


def case_color_bars_keep_letters():
    """On a terminal the bars are coloured and keep their letters (a blank
    coloured cell says nothing once copied out), and the legend shows the
    colours; into a pipe there is no colour at all."""
    import pty
    import select
    d, _ = gen("color", "--ranks", 2, "--markers")
    pid, fd = pty.fork()
    if pid == 0:
        os.environ["COLUMNS"] = "100"
        os.environ.pop("NO_COLOR", None)
        os.execv(os.environ["SCALEPROF_BIN"], [os.environ["SCALEPROF_BIN"], "report", d])
    out = b""
    while True:
        r, _, _ = select.select([fd], [], [], 30)
        if not r:
            break
        try:
            chunk = os.read(fd, 65536)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    text = out.decode(errors="replace")
    bars = [l for l in text.splitlines() if l.lstrip().startswith(("rank ", "all "))and "|" in l]
    if "\033[" not in text or not bars:
        fail("no coloured bars on a terminal: " + text[:400])
    for l in bars:
        inside = re.sub(r"\033\[[0-9;]*m", "", l.split("|")[1])
        print(f"  bar: {inside}")
        if not inside or set(inside) - set("CMTWIH."):
            fail("a coloured bar lost its letters: %r" % l)
    legend = [l for l in text.splitlines() if "compute" in l and "input" in l]
    if not legend or "\033[" not in legend[0]:
        fail("the legend shows no colours")
    piped = scaleprof("report", d).stdout
    if "\033[" in piped:
        fail("colour escapes in a pipe")


def case_paused_recording():
    """Recording paused through the control file (stop, then start) for two
    seconds: the step that met the pause is left out and said so, the pause
    counts for nothing (same mean step and idle as the same job unpaused),
    and no collective is called "not reached by every rank"."""
    plain, _ = gen("unpaused", "--ranks", 4, "--markers", "--steps", 20)
    paused, _ = gen("paused", "--ranks", 4, "--markers", "--steps", 20, "--pause-after-step", 10)
    a, b = report(plain), report(paused)
    print(f"  unpaused: {a['steps']['count']} steps, mean {a['steps']['mean_ms']:.3f} ms, "
          f"idle_other {a['breakdown']['idle_other']:.4f}")
    print(f"  paused:   {b['steps']['count']} steps, mean {b['steps']['mean_ms']:.3f} ms, "
          f"idle_other {b['breakdown']['idle_other']:.4f}; warnings {b['warnings']}")
    near("mean step", b["steps"]["mean_ms"], a["steps"]["mean_ms"], 0.01 * a["steps"]["mean_ms"])
    near("idle_other", b["breakdown"]["idle_other"], a["breakdown"]["idle_other"], 0.005)
    if b["steps"]["count"] != a["steps"]["count"] - 1:
        fail("the one step that met the pause should be left out")
    if not any("paused" in w for w in b["warnings"]):
        fail("the pause is not said")
    if any("not reached by every rank" in w for w in b["warnings"]):
        fail("collectives around the pause called incomplete")


def case_run_refuses_mixing():
    """A second run into the same directory is refused (a report would mix
    the two runs) unless --force; a command that cannot start is said so,
    without "next: scaleprof report"."""
    d = os.path.join(TMP, "mixing")
    job = ["cat", "/etc/hostname"]  # records a read: it leaves a trace
    first = subprocess.run([SCALEPROF, "run", "-o", d, "--"] + job, capture_output=True, text=True)
    again = subprocess.run([SCALEPROF, "run", "-o", d, "--"] + job, capture_output=True, text=True)
    forced = subprocess.run([SCALEPROF, "run", "-o", d, "--force", "--"] + job, capture_output=True, text=True)
    print(f"  first {first.returncode}, again {again.returncode}: {again.stderr.strip()}, forced {forced.returncode}")
    if first.returncode != 0 or again.returncode != 2 or "earlier run" not in again.stderr or forced.returncode != 0:
        fail("a second run into a directory with traces should be refused, and --force allowed")
    # the two runs' traces carry different identities: report refuses to mix them
    mixed = subprocess.run([SCALEPROF, "report", d], capture_output=True, text=True)
    print(f"  report of both: {mixed.returncode}: {mixed.stderr.strip()[:300]}")
    ids = re.findall(r"([\w.-]+-\d+-\d+) \(\d+ files?\)", mixed.stderr)
    if mixed.returncode == 0 or "2 runs" not in mixed.stderr or len(ids) != 2 or "--run" not in mixed.stderr:
        fail("a directory holding two runs should be refused, naming both")
    one = subprocess.run([SCALEPROF, "report", d, "--run", ids[0]], capture_output=True, text=True)
    print(f"  --run {ids[0]}: {one.returncode}: {one.stderr.strip()[:200]}")
    if "runs:" in one.stderr or "holds traces of" in one.stderr:
        fail("--run should pick one run")
    # `cat` used no GPU: run says so and suggests only what works (report's
    # host-side view, export), never html or compare
    nxt = next((l.split("next: ", 1)[1].split(" (")[0] for l in first.stderr.splitlines() if "next: " in l), "")
    print(f"  run of a job with no GPU suggests: {nxt}")
    if ("no GPU activity was recorded" not in first.stderr or not nxt or
            re.search(r"next: .*scaleprof (html|compare)", first.stderr)):
        fail("run of a job with no GPU should say so and suggest what works: %r" % first.stderr)
    # (the directory holds the forced second run by now: the first is named)
    tried = subprocess.run([SCALEPROF] + nxt.split()[1:] + ["--run", ids[0]], capture_output=True, text=True,
                           cwd=TMP)
    print(f"  {nxt} --run {ids[0]}: exit {tried.returncode}")
    if tried.returncode != 0:
        fail(f"the suggested next step fails: {tried.stderr}")
    ranked = subprocess.run([SCALEPROF, "run", "-o", os.path.join(TMP, "mixing2"), "--nproc", "2", "--"] + job,
                            capture_output=True, text=True)
    nxt = next((l.split("next: ", 1)[1].split(" (")[0] for l in ranked.stderr.splitlines() if "next: " in l), "")
    tried = subprocess.run([SCALEPROF] + nxt.split()[1:], capture_output=True, text=True, cwd=TMP)
    print(f"  two ranks, no GPU: suggests {nxt}: exit {tried.returncode}")
    if "scaleprof export" not in ranked.stderr or tried.returncode != 0:
        fail(f"two ranks with no GPU: the host timeline should be suggested, and work: {ranked.stderr}")
    # `cat` used no GPU: the report says so and shows the host side only, not "healthy"
    if (one.returncode != 0 or "no GPU activity" not in one.stderr or "healthy" in one.stdout or
            "Host-side report" not in one.stdout):
        fail("a job without GPU activity should get the host-side view, with the reason: %r" % one.stderr)
    # a job whose processes record nothing and end at once leaves no file:
    # said so, with its exit status, and no "next: scaleprof report"
    quiet = subprocess.run([SCALEPROF, "run", "-o", os.path.join(TMP, "quiet"), "--", "true"],
                           capture_output=True, text=True)
    print(f"  quiet short job: {quiet.returncode}: {quiet.stderr.strip()}")
    if quiet.returncode != 0 or "left no trace" not in quiet.stderr or "next:" in quiet.stderr:
        fail("a job that left no trace should be said so, with its exit status")
    missing = subprocess.run([SCALEPROF, "run", "-o", os.path.join(TMP, "never"), "--", "/nonexistent/cmd"],
                             capture_output=True, text=True)
    print(f"  missing command: {missing.returncode}: {missing.stderr.strip()}")
    if missing.returncode == 0 or "next:" in missing.stderr or "did not start" not in missing.stderr:
        fail("a command that cannot start should be said so, with no next step")


def case_run_torchrun_spellings():
    """scaleprof run takes torchrun's spellings: --nproc_per_node or
    --nproc-per-node, --nnodes and --node_rank (or --node-rank): node 1 of
    2 with 2 processes per node starts ranks 2 and 3 of 4, LOCAL_RANK 0
    and 1, as torchrun would on that node."""
    job = ["sh", "-c", 'echo "$RANK $LOCAL_RANK $WORLD_SIZE $LOCAL_WORLD_SIZE $NODE_RANK" > "$0/rank$RANK"']
    for name, flags, want in (
            ("one_node", ["--nproc_per_node", "2"], {"0 0 2 2 0", "1 1 2 2 0"}),
            ("dashes", ["--nproc-per-node=2"], {"0 0 2 2 0", "1 1 2 2 0"}),
            ("node1", ["--nnodes", "2", "--node_rank", "1", "--nproc_per_node", "2"], {"2 0 4 2 1", "3 1 4 2 1"}),
            ("node1b", ["--nnodes=2", "--node-rank=1", "--nproc-per-node", "2", "--master_addr", "10.0.0.1"],
             {"2 0 4 2 1", "3 1 4 2 1"})):
        out = os.path.join(TMP, "torchrun-" + name)
        os.makedirs(out + "-env")
        p = subprocess.run([SCALEPROF, "run", "-o", out, *flags, "--", job[0], job[1], job[2], out + "-env"],
                           capture_output=True, text=True, timeout=60)
        got = set()
        for f in os.listdir(out + "-env"):
            with open(os.path.join(out + "-env", f)) as fh:
                got.add(fh.read().strip())
        print(f"  run {' '.join(flags)}: exit {p.returncode}; RANK LOCAL_RANK WORLD_SIZE LOCAL_WORLD_SIZE "
              f"NODE_RANK: {sorted(got)}")
        if p.returncode != 0 or got != want:
            fail(f"wanted {sorted(want)}: {p.stderr}")
    p = scaleprof("run", "--node_rank", "2", "--nnodes", "2", "--nproc_per_node", "1", "--", "true", rc=2)
    if "--node_rank" not in p.stderr:
        fail(f"--node_rank past --nnodes should be refused: {p.stderr}")


def case_symlink_loops():
    """Links that loop (two links to the directory itself, a link to its
    parent) inside a trace directory: every directory is entered once, the
    report ends at once with the traces counted once."""
    import time
    d, _ = gen("loops", "--ranks", 2, "--markers")
    os.symlink(".", os.path.join(d, "self1"))
    os.symlink(".", os.path.join(d, "self2"))
    os.symlink("..", os.path.join(d, "host0", "up"))
    t0 = time.time()
    rep = report(d)
    took = time.time() - t0
    print(f"  report in {took:.2f} s, {rep['events']['files']} files, {rep['ranks']} ranks")
    if rep["events"]["files"] != 2 or rep["ranks"] != 2 or took > 20:
        fail("each trace once, and no walk without end")


def case_man_pages_clean():
    """The man pages render cleanly: no control characters in their
    sources (a literal form feed showed as "Bscaleprof reportR"), and every
    font escape names a font."""
    mandir = os.environ["MAN_DIR"]
    pages = sorted(f for f in os.listdir(mandir) if re.search(r"\.[1-9]$", f))
    if not pages:
        fail("no man pages found")
    for name in pages:
        with open(os.path.join(mandir, name), "rb") as f:
            text = f.read()
        bad = sorted({c for c in text if c < 32 and c not in (9, 10)})
        print(f"  {name}: {len(text)} bytes, control characters {bad or 'none'}")
        if bad:
            fail(f"{name} holds control characters {bad}")
        for m in re.finditer(rb"\\f(.)", text):
            if m.group(1) not in b"BIRP(":
                fail(f"{name}: font escape \\f{m.group(1).decode(errors='replace')} names no font")


# The verbs that build a model, each with the operands it needs: the model's
# options (--run --steps --skip --step-marker --threads) are one parser's.
def model_verbs(d, d2, name):
    out = os.path.join(TMP, name)
    return {
        "report": ("report", d), "compare": ("compare", d, d2), "export": ("export", d, "-o", out + ".json"),
        "html": ("html", d, "-o", out + ".html"), "hang": ("hang", d), "reduce": ("reduce", d, "-o", out + "-sum"),
    }


def case_model_options_every_verb():
    """Every verb that analyzes traces takes the same model options, refuses
    the same bad values with the same words (naming the value), and lists
    them in its --help: --run was report's alone, --step-marker missing in
    compare and hang, and html dropped the regex's error."""
    d, _ = gen("mopt", "--ranks", 2, "--markers", "--steps", 12)
    d2, _ = gen("mopt2", "--ranks", 4, "--markers", "--steps", 12)
    bad = [
        (("--skip", "-1"), '--skip: "-1" is out of range (expected 0..1000000)'),
        (("--skip", "many"), '--skip: "many" is not an integer'),
        (("--steps", "9:3"), '--steps: "9:3" is out of range'),
        (("--step-marker", "("), '--step-marker: "(" is not an extended regular expression: '),
        (("--threads", "0"), '--threads: "0" is out of range (expected 1..256)'),
        (("--run", ""), '--run: "" is not a run ID'),
    ]
    for verb, args in model_verbs(d, d2, "mopt-out").items():
        helptext = scaleprof(verb, "--help").stdout
        for opt in ("--run ID", "--steps A:B", "--skip N", "--step-marker RE", "--threads N"):
            if not re.search(r"^  " + re.escape(opt) + " ", helptext, re.M):
                fail(f"scaleprof {verb} --help does not list {opt}")
        for extra, says in bad:
            p = subprocess.run([SCALEPROF, *args, *extra], capture_output=True, text=True)
            first = p.stderr.strip().splitlines()[0] if p.stderr.strip() else ""
            if p.returncode != 2 or not first.startswith(f"scaleprof {verb}: {says}"):
                fail(f"scaleprof {verb} {' '.join(extra)}: wanted exit 2 with 'scaleprof {verb}: {says}...', "
                     f"got {p.returncode}: {p.stderr.strip()[:300]}")
        print(f"  {verb}: lists the five, refuses {len(bad)} bad values with the same words")
    # the values reach the model in every verb: --run picks one of two runs
    two = os.path.join(TMP, "mopt-two")
    subprocess.run([GEN, two, "--ranks", "2", "--markers", "--run-id", "runA"], check=True, capture_output=True)
    subprocess.run([GEN, two, "--ranks", "2", "--markers", "--run-id", "runB", "--pid-base", "2000"], check=True,
                   capture_output=True)
    for verb, args in model_verbs(two, two, "mopt-two-out").items():
        mixed = subprocess.run([SCALEPROF, *args], capture_output=True, text=True)
        one = subprocess.run([SCALEPROF, *args, "--run", "runB"], capture_output=True, text=True)
        print(f"  {verb} on two runs: exit {mixed.returncode}; with --run runB: exit {one.returncode}")
        if mixed.returncode == 0 or "holds traces of 2 runs" not in mixed.stderr:
            fail(f"scaleprof {verb} on two runs should refuse to mix them: {mixed.stderr[:300]}")
        if one.returncode not in (0, 1) or "holds traces of 2 runs" in one.stderr or \
                (verb != "hang" and one.returncode != 0):
            fail(f"scaleprof {verb} --run runB should read that run only: {one.returncode} {one.stderr[:300]}")


def case_summary_step_marker_every_verb():
    """A summary reduced with --step-marker is read by every verb given the
    same one: hang and compare could not take it, so they could not read
    such a summary at all."""
    d, _ = gen("summk", "--ranks", 4, "--markers", "--steps", 12)
    d2, _ = gen("summk2", "--ranks", 2, "--markers", "--steps", 12)
    summary = os.path.join(TMP, "summk-sum")
    scaleprof("reduce", d, "-o", summary, "--step-marker", "train_step")
    for args in (("hang", summary), ("compare", summary, d2), ("report", summary)):
        without = subprocess.run([SCALEPROF, *args], capture_output=True, text=True)
        given = subprocess.run([SCALEPROF, *args, "--step-marker", "train_step"], capture_output=True, text=True)
        print(f"  {args[0]}: without the marker exit {without.returncode}, with it exit {given.returncode}")
        if without.returncode == 0 or "was reduced with --step-marker 'train_step'" not in without.stderr:
            fail(f"{args[0]} without the summary's marker should refuse it: {without.stderr[:300]}")
        # hang exits 1 when nothing hung; what matters is that it read the summary
        if given.returncode not in (0, 1) or "reduced with" in given.stderr or not given.stdout.strip():
            fail(f"{args[0]} with the summary's marker should read it: {given.returncode} {given.stderr[:300]}")


def case_options_not_abbreviated():
    """Long options are taken as written: `export --rank 0` meant --ranks
    (getopt's prefix matching) and is refused now, naming --ranks; a prefix
    of two names names both; the names in full still work."""
    d, _ = gen("abbr", "--ranks", 2, "--markers")
    out = os.path.join(TMP, "abbr.json")
    cases = [
        (("export", d, "-o", out, "--rank", "0"), "option --rank is unknown; did you mean --ranks? "
                                                   "(options are not abbreviated)"),
        (("report", d, "--ste", "3:5"), "did you mean --steps or --step-marker?"),
        (("report", d, "--js"), "did you mean --json?"),
        (("compare", d, d, "--sk", "1"), "did you mean --skip?"),
        (("hang", d, "--min", "2"), "did you mean --min-hang?"),
        (("run", "-o", os.path.join(TMP, "abbr-run"), "--npr", "2", "--", "true"), "did you mean --nproc"),
        (("import", "kineto", "-o", os.path.join(TMP, "abbr-imp"), "--sta", "x.json"), "did you mean --stats?"),
        (("report", d, "--json=1"), "--json takes no value"),
        (("dump", "--head", os.path.join(d, "host0", "1000.sprof")), "did you mean --header-only?"),
    ]
    usage_errors(cases)
    ranks = subprocess.run([SCALEPROF, "export", d, "-o", out, "--ranks", "0"], capture_output=True, text=True)
    steps = subprocess.run([SCALEPROF, "report", d, "--steps=4:6", "--skip", "0"], capture_output=True, text=True)
    if ranks.returncode != 0 or steps.returncode != 0 or "analyzed: steps 4-6" not in steps.stdout:
        fail(f"the names in full should work: {ranks.stderr} {steps.stderr}")


def case_compare_steps_every_run():
    """compare --steps A:B compares the same steps of every run (each as
    report --steps gives them); steps a run does not have are a usage error
    naming the run, as in report."""
    d1, _ = gen("cst1", "--ranks", 1, "--markers", "--steps", 12, "--ramp", 0.5)
    d2, _ = gen("cst2", "--ranks", 2, "--markers", "--steps", 12, "--ramp", 0.5)
    got = json.loads(scaleprof("compare", d1, d2, "--steps", "6:9", "--json").stdout)
    for run, d in zip(got["runs"], (d1, d2)):
        want = report(d, "--steps", "6:9")["steps"]["mean_ms"]
        near(f"{os.path.basename(d)} step_ms over steps 6-9", run["step_ms"], want, 1e-9)
    whole = json.loads(scaleprof("compare", d1, d2, "--json").stdout)
    if abs(whole["runs"][0]["step_ms"] - got["runs"][0]["step_ms"]) < 1e-6:
        fail("--steps 6:9 should change the steps compared (the ramp makes later steps longer)")
    p = subprocess.run([SCALEPROF, "compare", d1, d2, "--steps", "50:60"], capture_output=True, text=True)
    print(f"  compare --steps 50:60: exit {p.returncode}: {p.stderr.strip()}")
    if p.returncode != 2 or f"--steps 50:60: {d1} has steps 0-11 only" not in p.stderr or d2 not in p.stderr:
        fail("steps no run has should be a usage error naming each run")
    p = subprocess.run([SCALEPROF, "html", d1, d2, "--steps", "6:9", "-o", os.path.join(TMP, "cst.html")],
                       capture_output=True, text=True)
    if p.returncode != 0:
        fail(f"html of a comparison takes --steps as compare does: {p.stderr}")


def case_help_matches_man():
    """Every option in each verb's --help is documented in its man page."""
    mandir = os.environ["MAN_DIR"]
    for verb in ("report", "compare", "export", "html", "hang", "reduce"):
        helptext = scaleprof(verb, "--help").stdout
        with open(os.path.join(mandir, f"scaleprof-{verb}.1")) as f:
            man = f.read().replace("\\-", "-")
        for opt in sorted(set(re.findall(r"--[a-z][a-z-]+", helptext))):
            print(f"  {verb} {opt}: {'ok' if opt in man else 'MISSING'}")
            if opt not in man:
                fail(f"{opt} of scaleprof {verb} is not in scaleprof-{verb}.1")


if __name__ == "__main__":
    testmain.run(globals())
