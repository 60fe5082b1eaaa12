#!/usr/bin/env python3
"""`scaleprof hang` on jobs that hang, lose a node or desync, run on the
simulated GPUs under `scaleprof run --sim` and killed with SIGKILL the way
a scheduler kills a job that ran out of time.

usage: hang_test.py STORY   with SCALEPROF_BIN and HANG_JOB in the environment.
Each story prints what it checks and exits 1 on the first mismatch."""
import glob, json, os, re, shutil, signal, subprocess, sys, tempfile, time
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)

SCALEPROF = os.environ["SCALEPROF_BIN"]
JOB = os.environ["HANG_JOB"]
TMP = tempfile.mkdtemp(prefix="sprof-hang-")
BLOCK_WAIT_S = 90   # the job reaches its blocking step (4 ranks on 2 busy cores)
HUNG_FOR_S = 2.5    # then it stays hung this long before the kill
NPROC = 4


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def scaleprof(*args, rc=0):
    p = subprocess.run([SCALEPROF, *map(str, args)], capture_output=True, text=True, timeout=60)
    if rc is not None and p.returncode != rc:
        fail(f"scaleprof {' '.join(map(str, args))}: exit {p.returncode}, wanted {rc}\n{p.stdout}\n{p.stderr}")
    return p


def kill_ranks(state):
    """SIGKILL every rank still running (a pid is checked to still be the
    job's before the kill: a rank that exited may have left its pid to
    another process)."""
    for f in glob.glob(os.path.join(state, "pid.*")):
        try:
            pid = int(open(f).read())
            with open(f"/proc/{pid}/cmdline", "rb") as c:
                if os.path.basename(JOB).encode() not in c.read():
                    continue
            os.kill(pid, signal.SIGKILL)
        except (ValueError, OSError):
            pass


def run_job(name, *args, until=None, after_s=HUNG_FOR_S, while_hung=None):
    """The job on NPROC simulated GPUs; with `until`, waits for the state
    file of that name, lets it run after_s more seconds (then calls
    while_hung(trace dir), the job still alive), then SIGKILLs every rank.
    Returns (trace dir, state dir)."""
    out, state = os.path.join(TMP, name), os.path.join(TMP, name + "-state")
    os.makedirs(state)
    # --keep-going: the ranks stay hung behind a failed one until killed here
    # (scaleprof run would stop them at once, as torchrun does)
    cmd = [SCALEPROF, "run", "--sim", "--keep-going", "--nproc", str(NPROC), "-o", out, "--", JOB, "--state-dir", state,
           *map(str, args)]
    log = open(os.path.join(TMP, name + ".log"), "w")
    p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
    if until is None:
        if p.wait(timeout=120) != 0:
            fail(f"the job failed: {open(log.name).read()}")
        return out, state
    deadline = time.time() + BLOCK_WAIT_S
    while not os.path.exists(os.path.join(state, until)):
        if p.poll() is not None or time.time() > deadline:
            kill_ranks(state)
            fail(f"the job never reached '{until}': {open(log.name).read()}")
        time.sleep(0.05)
    time.sleep(after_s)
    try:
        if while_hung:
            while_hung(out)
    finally:
        kill_ranks(state)
    try:
        p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
    return out, state


def hang_json(d, rc=0):
    return json.loads(scaleprof("hang", d, "--json", rc=rc).stdout)


def expect(what, got, want):
    print(f"  {what}: {got}")
    if got != want:
        fail(f"{what}: got {got!r}, wanted {want!r}")


def check_hung_120(h, missing, absent, entered):
    if len(h["hung"]) != 1:
        fail(f"expected one hung collective, got {h['hung']}")
    x = h["hung"][0]
    expect("communicator (16 hex digits)", len(x["comm"]) == 16 and int(x["comm"], 16) >= 0, True)
    expect("sequence", x["seq"], 120)
    expect("op", x["op"], "allreduce")
    expect("bytes", x["bytes"], 65536 * 4)
    expect("entered", x["entered"], entered)
    expect("missing", x["missing"], missing)
    expect("absent", x["absent"], absent)
    expect("last completed", x["last_completed"] in (118, 119), True)
    if not (HUNG_FOR_S * 0.8 <= x["hung_s"] <= HUNG_FOR_S + 30):
        fail(f"hung_s {x['hung_s']} is not about the {HUNG_FOR_S} s the job stayed hung")
    print(f"  hung for {x['hung_s']:.2f} s (kept hung {HUNG_FOR_S} s)")
    for r in entered:
        expect(f"rank {r} state", x["last"][str(r)]["state"], "in_collective")
    return x


def check_rank_2_missing(h, state, process, says, what):
    """The hang at #120 that rank 2 never entered (check_hung_120), and
    what h says rank 2 did last: its state, its process and, in its
    sentence, says (the failure names what the sentence should do).
    Returns the hang and rank 2's entry."""
    x = check_hung_120(h, missing=[2], absent=[], entered=[0, 1, 3])
    two = x["last"]["2"]
    expect("rank 2 state", two["state"], state)
    expect("rank 2 process", two["process"], process)
    if says not in two["doing"]:
        fail(f"rank 2's sentence does not {what}: {two['doing']}")
    return x, two


def story_hang_blocked_rank():
    """A rank that blocks in its own code after its last launch, before
    all-reduce #120 of a communicator of 4, while the others wait in #120
    until the job is killed with SIGKILL: hang names that rank, the
    communicator and #120, says what it was doing and shows the others
    waiting in #120; report says so in its first lines."""
    live = {}
    d, _ = run_job("blocked", "--steps", 200, "--hang-rank", 2, "--hang-at", 120, until="blocked",
                   while_hung=lambda d: live.update(hang_json(d)))
    print("  while the job still hangs:")
    if not live.get("hung"):
        fail(f"the live job is not called hung: {live}")
    expect("rank 2 process, job alive", live["hung"][0]["last"]["2"]["process"], "open")
    expect("rank 2 state, job alive", live["hung"][0]["last"]["2"]["state"], "own_code_after_launch")
    print("  after the SIGKILL:")
    h = hang_json(d)
    x, two = check_rank_2_missing(h, "own_code_after_launch", "killed", "its own code after its last launch",
                                  "say it blocked in its own code")
    if two["silent_s"] < HUNG_FOR_S * 0.8:
        fail(f"rank 2 silent for {two['silent_s']} s only")
    main = [t for p in two["processes"] if not p["helper"] for t in p["threads"] if t["main"]]
    if not main or not main[0]["last"][-1]["what"].startswith("launched"):
        fail(f"rank 2's main thread's last event is not a launch: {main}")
    expect("top-level hung_s", abs(h["hung_s"] - x["hung_s"]) < 1e-6, True)
    c = h["communicators"][0]
    expect("per rank entered / completed", [(r["rank"], r["entered"], r["completed"] in (118, 119))
                                            for r in c["ranks"]],
           [(0, 120, True), (1, 120, True), (2, 119, True), (3, 120, True)])
    text = scaleprof("hang", d).stdout
    print(text)
    if "nothing hung" in text:
        fail("the text of a hung job says nothing hung")
    for want in ("HUNG in allreduce #120 on communicator " + x["comm"], "never entered it:            rank 2",
                 "rank 2 [own_code_after_launch] blocked in its own code after its last launch",
                 "rank 0 [in_collective] waiting in allreduce #120"):
        if want not in text:
            fail(f"the text does not say '{want}'")
    rep = scaleprof("report", d).stdout.splitlines()
    print("report, first lines:\n  " + "\n  ".join(rep[:3]))
    head = rep[0]
    if not head.startswith("HUNG: the job appears hung in allreduce #120 on communicator " + x["comm"]):
        fail(f"report's first line does not name the hang: {head}")
    if "ranks 0,1,3 entered it, rank 2 never did" not in head or "scaleprof hang" not in head:
        fail(f"report's first line does not name rank 2 and point at scaleprof hang: {head}")
    rj = json.loads(scaleprof("report", d, "--json").stdout)["hang"]
    expect("report --json hang.hung", rj["hung"], True)
    expect("report --json hang.instances[0].missing", rj["instances"][0]["missing"], [2])


def story_hang_absent_rank():
    """The same hang with the blocked rank's trace deleted (a node that
    crashed and took its trace along): the rank is named as absent, from
    the world size in the others' headers."""
    d, state = run_job("absent", "--steps", 200, "--hang-rank", 2, "--hang-at", 120, until="blocked")
    pid = open(os.path.join(state, "pid.2")).read().strip()
    gone = glob.glob(os.path.join(d, "*", pid + ".sprof"))
    if len(gone) != 1:
        fail(f"no trace of rank 2 (pid {pid}) to delete: {gone}")
    os.unlink(gone[0])
    h = hang_json(d)
    x = check_hung_120(h, missing=[], absent=[2], entered=[0, 1, 3])
    expect("rank 2 in last", x["last"]["2"]["state"], "no_trace")
    expect("missing_ranks", h["missing_ranks"], [2])
    text = scaleprof("hang", d).stdout
    print(text)
    if "left no trace:               rank 2" not in text:
        fail("the text does not name rank 2 as leaving no trace")
    head = scaleprof("report", d).stdout.splitlines()[0]
    print("report:", head)
    if not head.startswith("HUNG:") or "rank 2 left no trace" not in head:
        fail(f"report's first line does not name the absent rank: {head}")


def story_hang_crashed_rank():
    """A rank that exits (status 3) after its launches instead of calling
    all-reduce #120, while the others wait in #120 until the job is
    killed: the hang is at #120 and that rank is shown as exited with its
    status, its trace closed."""
    d, _ = run_job("crashed", "--steps", 200, "--crash-rank", 2, "--crash-at", 120, until="crashed")
    h = hang_json(d)
    check_rank_2_missing(h, "exited", "closed", "exited (status 3)", "give its exit status")
    print(scaleprof("hang", d).stdout)


def story_hang_crashed_rank_stopped():
    """The same crash under a launcher that stops the other ranks at once
    (scaleprof run without --keep-going, as torchrun does): the others
    waited in #120 for milliseconds only, yet #120 can never complete - a
    member exited before entering it - and hang says so, not "nothing
    hung"."""
    out, state = os.path.join(TMP, "stopped"), os.path.join(TMP, "stopped-state")
    os.makedirs(state)
    p = subprocess.run([SCALEPROF, "run", "--sim", "--nproc", str(NPROC), "-o", out, "--", JOB, "--state-dir",
                        state, "--steps", "200", "--crash-rank", "2", "--crash-at", "120"],
                       capture_output=True, text=True, timeout=120)
    expect("the launcher's status (the crashed rank's)", p.returncode, 3)
    if "rank 2 exited with status 3: stopping the 3 other ranks" not in p.stderr:
        fail(f"the launcher did not say it stopped the others: {p.stderr}")
    h = hang_json(out)
    if len(h["hung"]) != 1:
        fail(f"expected one hung collective, got {h['hung']} (pending {h.get('pending')})")
    x = h["hung"][0]
    expect("sequence", x["seq"], 120)
    expect("stranded", x["stranded"], True)
    expect("missing", x["missing"], [2])
    expect("entered", x["entered"], [0, 1, 3])
    expect("rank 2 state", x["last"]["2"]["state"], "exited")
    text = scaleprof("hang", out).stdout
    print(text)
    if "can never complete, a member exited before entering it" not in text or "nothing hung" in text:
        fail("the text does not say #120 can never complete")


def damage(rng, src, dst):
    """A copy of the trace set with each file cut short, with bytes
    flipped, or replaced by random bytes, at random."""
    shutil.copytree(src, dst)
    for f in glob.glob(os.path.join(dst, "*", "*.sprof")):
        size = os.path.getsize(f)
        if rng.random() < 0.1:
            with open(f, "wb") as fh:
                fh.write(os.urandom(rng.randrange(8192)))
        elif rng.random() < 0.5:
            os.truncate(f, rng.randrange(size + 1))
        else:
            with open(f, "r+b") as fh:
                for _ in range(rng.randrange(1, 64)):
                    fh.seek(rng.randrange(size))
                    fh.write(bytes([rng.randrange(256)]))


def story_hang_damaged():
    """The hung job's traces damaged at random (files cut short, bytes
    flipped, replaced), 40 times: hang exits 0 or 1 with valid JSON, never by a
    signal, and says why on stderr when it exits 1 with nothing read."""
    import random
    d, _ = run_job("dmg", "--steps", 150, "--hang-rank", 1, "--hang-at", 100, until="blocked", after_s=1.5)
    seed = int(os.environ.get("HANG_DAMAGE_SEED", time.time()))
    print(f"  seed {seed} (HANG_DAMAGE_SEED={seed} replays it)")
    rng = random.Random(seed)
    exits = {0: 0, 1: 0}
    for i in range(40):
        dst = os.path.join(TMP, f"dmg-{i}")
        damage(rng, d, dst)
        p = scaleprof("hang", dst, "--json", rc=None)
        if p.returncode not in (0, 1):
            fail(f"round {i}: exit {p.returncode}\n{p.stderr}")
        exits[p.returncode] += 1
        if p.stdout:
            json.loads(p.stdout)
        elif not p.stderr:
            fail(f"round {i}: nothing printed and no reason given")
        q = scaleprof("hang", dst, rc=None)
        if q.returncode not in (0, 1):
            fail(f"round {i}: text: exit {q.returncode}\n{q.stderr}")
        shutil.rmtree(dst)
    print(f"  40 damaged copies: exit 0 {exits[0]} times, 1 {exits[1]} times")


def story_hang_desync():
    """One rank calls all-gather where the others call all-reduce at the
    same sequence number (the sim lets the mismatched call complete): both
    calls are named, with their ranks, and the verb exits 0."""
    d, _ = run_job("desync", "--steps", 30, "--desync-rank", 1, "--desync-at", 12)
    h = hang_json(d)
    if len(h["desync"]) != 1:
        fail(f"expected one desync, got {h['desync']}")
    x = h["desync"][0]
    expect("sequence", x["seq"], 12)
    a, b = x["calls"]
    expect("majority call", (a["op"], a["bytes"], a["dtype"], a["ranks"]), ("allreduce", 65536 * 4, "float32", [0, 2, 3]))
    expect("other call", (b["op"], b["bytes"], b["dtype"], b["ranks"]), ("allgather", 65536, "float32", [1]))
    expect("hung", h["hung"], [])
    text = scaleprof("hang", d).stdout
    print(text)
    if "DESYNC on communicator " + x["comm"] + " at #12: ranks 0,2,3 called allreduce" not in text or \
            "rank 1 called allgather" not in text:
        fail("the text does not name both calls")
    if text.count("nothing hung") != 1:
        fail("the text does not say once that nothing hung")
    head = scaleprof("report", d).stdout.splitlines()[0]
    print("report:", head)
    if not head.startswith("DESYNC: at #12"):
        fail("report's first line does not name the desync")


def story_hang_healthy():
    """A run whose collectives all completed: hang says nothing hung and
    exits 1; report says nothing about a hang."""
    d, _ = run_job("healthy", "--steps", 30)
    h = hang_json(d, rc=1)
    expect("hung", h["hung"], [])
    expect("pending", h["pending"], [])
    expect("desync", h["desync"], [])
    text = scaleprof("hang", d, rc=1).stdout
    print(text)
    if "nothing hung: every collective entered was completed" not in text:
        fail("the text does not say nothing hung")
    rep = scaleprof("report", d).stdout
    if "HUNG" in rep or "hung" in rep.lower() or "scaleprof hang" in rep:
        fail(f"report mentions a hang on a healthy run:\n{rep}")
    rj = json.loads(scaleprof("report", d, "--json").stdout)["hang"]
    expect("report --json hang.hung", rj["hung"], False)


def story_hang_stopped_running():
    """A job killed with SIGKILL while it runs, not hung: a collective may
    be pending at the end, but calls entered it until the kill, so it is
    not called a hang (exit 1)."""
    d, _ = run_job("running", "--steps", 1000000, until="pid.3", after_s=3)
    h = hang_json(d, rc=1)
    expect("hung", h["hung"], [])
    for p in h["pending"]:
        print(f"  pending #{p['seq']}: last entry {p['pending_s']:.4f} s before the end (bar {p['bar_s']:.2f} s)")
        if p["pending_s"] >= p["bar_s"]:
            fail("a pending collective passed the bar")
    rep = scaleprof("report", d).stdout
    if rep.startswith("HUNG"):
        fail("report calls a running job hung")


def story_hang_recent_kill():
    """Killed 0.3 s after the rank blocked, before CUPTI's next delivery
    (about once a second): the kernel records of the last steps may be
    lost, but each rank's cudaStreamSynchronize that returned after
    all-reduce #119 says #119 completed, so with --min-hang 0.1 the hang
    is still at #120 with #119 as the last completed; without it, 0.3 s is
    too short to call a hang."""
    d, _ = run_job("recent", "--steps", 200, "--hang-rank", 2, "--hang-at", 120, until="blocked", after_s=0.3)
    h = hang_json(d, rc=1)
    expect("hung without --min-hang", h["hung"], [])
    h = json.loads(scaleprof("hang", d, "--json", "--min-hang", "0.1").stdout)
    if len(h["hung"]) != 1:
        fail(f"expected one hung collective, got {h['hung']}")
    x = h["hung"][0]
    expect("sequence", x["seq"], 120)
    expect("missing", x["missing"], [2])
    expect("last completed", x["last_completed"], 119)
    for r, v in sorted(x["last"].items()):
        p = v["processes"][0]
        print(f"  rank {r}: {p['kernels']} kernel records for {p['launches']} launches")


def kineto(path, rank, calls):
    """A Kineto trace of one rank: NCCL kernels with Seq on one process group."""
    ev = [{"ph": "X", "cat": "cpu_op", "name": "aten::empty", "pid": 1000 + rank, "tid": 1000 + rank, "ts": 500,
           "dur": 1}]
    t = 1000.0
    for seq, op, nelems in calls:
        kname = {"allreduce": "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*)",
                 "allgather": "ncclDevKernel_AllGather_RING_LL(ncclDevComm*)"}[op]
        ev.append({"ph": "X", "cat": "kernel", "name": kname, "pid": rank, "tid": 7, "ts": t, "dur": 50,
                   "args": {"device": rank, "stream": 7, "correlation": 100 + seq, "Collective name": op,
                            "In msg nelems": nelems, "Out msg nelems": nelems, "Group size": 2, "dtype": "Float",
                            "Process Group Name": "0", "Process Group Ranks": "[0, 1]", "Seq": seq}})
        t += 1000
    with open(path, "w") as f:
        json.dump({"schemaVersion": 1, "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": 2},
                   "traceEvents": ev}, f)


def story_hang_kineto():
    """Imported Kineto traces (NCCL kernels with Seq): a rank that called
    all-gather at Seq 5 where the other called all-reduce is a desync
    named with both calls; traces whose collectives all completed say
    nothing hung (exit 1)."""
    same = [(s, "allreduce", 1024) for s in range(1, 7)]
    odd = [(s, "allgather" if s == 5 else "allreduce", 1024) for s in range(1, 7)]
    for name, calls1 in (("k-desync", odd), ("k-healthy", same)):
        f0, f1 = os.path.join(TMP, name + "0.json"), os.path.join(TMP, name + "1.json")
        kineto(f0, 0, same)
        kineto(f1, 1, calls1)
        scaleprof("import", "kineto", f0, f1, "-o", os.path.join(TMP, name))
    h = hang_json(os.path.join(TMP, "k-desync"))
    if len(h["desync"]) != 1 or h["desync"][0]["seq"] != 5:
        fail(f"expected a desync at Seq 5, got {h['desync']}")
    a, b = h["desync"][0]["calls"]
    expect("calls", sorted([(a["op"], a["ranks"]), (b["op"], b["ranks"])]), [("allgather", [1]), ("allreduce", [0])])
    print(scaleprof("hang", os.path.join(TMP, "k-desync")).stdout)
    h = hang_json(os.path.join(TMP, "k-healthy"), rc=1)
    expect("kineto healthy: hung", h["hung"], [])
    expect("kineto healthy: pending", h["pending"], [])


def story_hang_usage():
    """Bad options and directories get a clear message: exit 2 for usage,
    1 when there is nothing to analyze, never a crash."""
    empty = os.path.join(TMP, "empty")
    os.makedirs(empty)
    junk = os.path.join(TMP, "junk")
    os.makedirs(junk)
    with open(os.path.join(junk, "1.sprof"), "wb") as f:
        f.write(os.urandom(5000))
    cases = [((), 2, "no trace directory"), (("--events", "0", empty), 2, "--events"),
             (("--events", "x", empty), 2, "--events"), (("--min-hang", "-1", empty), 2, "--min-hang"),
             (("--bogus", empty), 2, "unknown"), ((empty, empty), 2, "one trace directory"),
             ((os.path.join(TMP, "nope"),), 1, "no such file"), ((empty,), 1, "no *.sprof"),
             ((junk,), 1, "nothing to analyze")]
    for args, rc, says in cases:
        p = scaleprof("hang", *args, rc=rc)
        print(f"  hang {' '.join(args)}: exit {rc}: {p.stderr.strip().splitlines()[0]}")
        if says not in p.stderr:
            fail(f"the message does not say '{says}': {p.stderr}")
    if "--min-hang" not in scaleprof("hang", "--help").stdout:
        fail("--help does not list --min-hang")


def story_hang_summaries():
    """The crashed rank's job reduced (scaleprof reduce, two processes
    started by hand): hang on the summaries gives the post-mortem hang
    gives on the traces; with the traces gone, it still names #120, who
    entered it and who never did, and says what it cannot show."""
    d, _ = run_job("summarized", "--steps", 200, "--crash-rank", 2, "--crash-at", 120, until="crashed")
    out = os.path.join(TMP, "summarized-summary")
    ps = [subprocess.Popen([SCALEPROF, "reduce", d, "-o", out, "--part", str(i), "--parts", "2", "--wait", "60"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(2)]
    for p in ps:
        so, se = p.communicate(timeout=120)
        if p.returncode != 0:
            fail(f"reduce: exit {p.returncode}\n{so}\n{se}")
        print("  " + so.strip())

    def strip(text):
        h = json.loads(text)
        h.pop("dir", None)
        return json.dumps(h, indent=1)
    a = strip(scaleprof("hang", d, "--json").stdout)
    b = strip(scaleprof("hang", out, "--json").stdout)
    if a != b:
        fail(f"hang --json differs on the summaries:\n{a[:2000]}\n---\n{b[:2000]}")
    print(f"  hang --json on the summaries: identical ({len(a)} bytes)")
    os.rename(d, d + "-gone")
    h = hang_json(out)
    check_hung_120(h, missing=[2], absent=[], entered=[0, 1, 3])
    if not any("not readable here" in w for w in h["warnings"]):
        fail(f"the summaries' hang does not say the traces are out of reach: {h['warnings']}")
    print("  traces gone: #120 still named; " + [w for w in h["warnings"] if "not readable" in w][0][:90] + "...")


def story_hang_segv_rank():
    """A rank killed by SIGSEGV instead of entering all-reduce #600, the
    others stopped by the launcher (as torchrun does): run names the rank,
    the signal and its last recorded activity, and writes how every rank
    ended into the output directory; report's first lines and hang say the
    same, and hang knows #600 can never complete."""
    out, state = os.path.join(TMP, "segv"), os.path.join(TMP, "segv-state")
    os.makedirs(state)
    p = subprocess.run([SCALEPROF, "run", "--sim", "--nproc", str(NPROC), "-o", out, "--", JOB, "--state-dir",
                        state, "--steps", "800", "--crash-rank", "2", "--crash-at", "600", "--crash-signal", "11"],
                       capture_output=True, text=True, timeout=120)
    print(p.stderr)
    expect("the launcher's status (128 + SIGSEGV)", p.returncode, 139)
    pid = int(open(os.path.join(state, "pid.2")).read())
    if "rank 2 was killed by signal 11 (SIGSEGV): stopping the 3 other ranks" not in p.stderr:
        fail("run does not name the rank and the signal as it stops the others")
    if not re.search(rf"scaleprof run: rank 2 \(pid {pid} on \S+\) killed by signal 11 \(SIGSEGV\);.*its last "
                     r"recorded activity: allreduce #599 ", p.stderr):
        fail("run does not give the crashed rank's last recorded activity (allreduce #599)")
    records = "".join(open(f).read() for f in glob.glob(os.path.join(out, "exit-status.*")))
    expect("run's record of rank 2", f"rank 2 pid {pid} signal 11\n" in records, True)
    expect("ranks the launcher stopped", len(re.findall(r"^rank [013] pid \d+ signal (15|9) stopped$", records, re.M)), 3)
    text = scaleprof("report", out).stdout
    print(text[:1500])
    first = [l for l in text.splitlines() if l.startswith("ENDED:")]
    expect("report's first ENDED line names rank 2 and SIGSEGV",
           bool(first) and first[0].startswith(f"ENDED: rank 2 (pid {pid} ") and "SIGSEGV" in first[0], True)
    if "last recorded activity: allreduce #599" not in text:
        fail("report does not give rank 2's last recorded activity")
    if text.index("ENDED:") > text.index("where each GPU's step time went"):
        fail("the crash is not among the report's first lines")
    rep = json.loads(scaleprof("report", out, "--json").stdout)
    e = rep["ended"]
    expect("report --json: the first ended rank", (e[0]["rank"], e[0]["how"], e[0]["signal"], e[0]["signal_name"],
                                                   e[0]["stopped_by_launcher"]), (2, "signal", 11, "SIGSEGV", False))
    expect("report --json: the others stopped by the launcher",
           sorted(x["rank"] for x in e if x["stopped_by_launcher"]), [0, 1, 3])
    h = hang_json(out)
    x = h["hung"][0] if h["hung"] else {}
    expect("hang: stranded in #600, rank 2 missing", (x.get("seq"), x.get("stranded"), x.get("missing")),
           (600, True, [2]))
    expect("hang --json ended[0]", (h["ended"][0]["rank"], h["ended"][0]["signal_name"]), (2, "SIGSEGV"))
    htext = scaleprof("hang", out).stdout
    if "rank 2 killed by signal 11 (SIGSEGV)" not in htext:
        fail(f"hang's text does not say rank 2 was killed by SIGSEGV: {htext}")


def frozen_job(name, resume):
    """The job, rank 1 stopped with SIGSTOP once the job runs, for
    HUNG_FOR_S; with resume, then sent SIGCONT and left to run a second;
    then every rank is killed.  Returns the trace dir and rank 1's pid."""
    pids = {}

    def freeze(out):
        pid = int(open(os.path.join(TMP, name + "-state", "pid.1")).read())
        pids[1] = pid
        os.kill(pid, signal.SIGSTOP)
        time.sleep(HUNG_FOR_S)
        if resume:
            os.kill(pid, signal.SIGCONT)
            time.sleep(1.0)

    d, _ = run_job(name, "--steps", 1000000, until="pid.3", after_s=1.5, while_hung=freeze)
    return d, pids[1]


def story_hang_frozen_rank():
    """A rank frozen with SIGSTOP while the others run on into the next
    all-reduce, then the job killed: every rank entered the all-reduce, but
    hang leads with the rank whose trace (its CPU samples too) ends first,
    before it blames the network or NCCL; report's first line names it."""
    d, pid = frozen_job("frozen", resume=False)
    h = hang_json(d)
    if len(h["hung"]) != 1:
        fail(f"expected one hung collective, got {h['hung']}")
    x = h["hung"][0]
    expect("stalled rank", x["stalled_rank"], 1)
    if not HUNG_FOR_S * 0.7 <= x["stalled_s"] <= HUNG_FOR_S + 2:
        fail(f"stalled_s {x['stalled_s']} is not about the {HUNG_FOR_S} s rank 1 was stopped")
    text = scaleprof("hang", d).stdout
    print(text[:2000])
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("HUNG in"))
    if "stopped making progress first: rank 1" not in lines[head + 1]:
        fail("the line after HUNG does not lead with rank 1")
    if "a peer's GPU, the network" in text:
        fail("hang still blames a peer's GPU or the network")
    rtext = scaleprof("report", d).stdout
    if not rtext.startswith("HUNG:") or "rank 1 stopped making progress first" not in rtext.splitlines()[0]:
        fail(f"report's first line does not name rank 1: {rtext[:600]}")


def story_hang_frozen_resumed():
    """The same rank stopped with SIGSTOP, then sent SIGCONT: the job ran
    on, so nothing hung and no rank is said to have stopped making
    progress."""
    d, pid = frozen_job("resumed", resume=True)
    p = scaleprof("hang", d, rc=1)
    print(p.stdout[:1200])
    if "stopped making progress" in p.stdout or "HUNG" in p.stdout:
        fail("a resumed rank is blamed")
    if "stopped making progress" in scaleprof("report", d).stdout:
        fail("report blames a resumed rank")


if __name__ == "__main__":
    testmain.run(globals(), "story", cleanup=lambda: shutil.rmtree(TMP, ignore_errors=True))
