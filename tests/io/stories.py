#!/usr/bin/env python3
"""Input-side user stories, run under LD_PRELOAD=libscaleprof.so.

Each story runs a small job the way a user would (a PyTorch DataLoader, a
threaded reader, a forking or exec'ing launcher, a child killed by SIGTERM,
a job pointed at a directory it cannot write), then reads the traces with
trace_sum and checks what the user would check.  Usage: stories.py STORY.

Paths come from meson through the environment: SCALEPROF_LIB, TRACE_SUM,
IO_STORY, ERRNO_CHECK, FORTIFIED, DATALOADER_JOB.
"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time

LIB = os.environ["SCALEPROF_LIB"]
TRACE_SUM = os.environ["TRACE_SUM"]
STORY_TIMEOUT_S = 40
SKIP = 77

failures = []


def check(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


def run(cmd, tracedir=None, env_extra=None, timeout=STORY_TIMEOUT_S):
    """Run cmd, under the preload when tracedir is given."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if tracedir is not None:
        env["LD_PRELOAD"] = LIB
        env["SCALEPROF_DIR"] = tracedir
    env.update(env_extra or {})
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        check(False, f"{cmd[0]} finished within {timeout} s (a deadlock?)")
        finish()


def traces(tracedir, events=False):
    cmd = [TRACE_SUM] + (["--events"] if events else []) + [tracedir]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=STORY_TIMEOUT_S)
    if out.returncode != 0:
        check(False, "trace_sum reads every trace: " + out.stderr.strip())
    return [json.loads(line) for line in out.stdout.splitlines() if line.strip()]


def keyvals(text):
    """'key value' lines printed by the jobs, repeated keys as lists."""
    kv = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 2:
            kv.setdefault(parts[0], []).append(parts[1])
    return kv


def finish():
    if failures:
        print(f"{len(failures)} check(s) failed")
        sys.exit(1)
    sys.exit(0)


def make_file(path, size):
    with open(path, "wb") as f:
        f.write(os.urandom(size))
    return path


def by_pid(ts, pid):
    return [t for t in ts if t["pid"] == pid]


# ---- stories -----------------------------------------------------------------


def story_threads(tmp):
    """64 threads reading at once: every read is in the trace, none lost."""
    nthreads, nreads = 64, 200
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    r = run([os.environ["IO_STORY"], "threads", str(nthreads), str(nreads), data], os.path.join(tmp, "t"))
    check(r.returncode == 0, "the threaded job succeeds")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, f"one trace for one process (got {len(ts)})")
    t = ts[0]
    check(t["read_calls"].get(data) == nthreads * nreads,
          f"{nthreads}x{nreads} reads recorded (got {t['read_calls'].get(data)})")
    check(t["read_bytes"].get(data) == nthreads * nreads, "one byte per read")
    check(t["dropped"] == 0, "no event dropped")
    check(t["closed"] == 1, "the trace was closed at exit")


def story_waves(tmp):
    """Threads that come and go (192 of them, 16 at a time, more than the
    recorder's 128 buffer slots): none of their reads is lost."""
    waves, nthreads, nreads = 12, 16, 10
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    r = run([os.environ["IO_STORY"], "waves", str(waves), str(nthreads), str(nreads), data], os.path.join(tmp, "t"))
    check(r.returncode == 0, "the job succeeds")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, "one trace")
    if ts:
        want = waves * nthreads * nreads
        check(ts[0]["read_calls"].get(data) == want, f"{want} reads recorded (got {ts[0]['read_calls'].get(data)})")
        check(ts[0]["dropped"] == 0, f"no event dropped (got {ts[0]['dropped']})")


def story_reopen(tmp):
    """A file opened again and again (epochs of a data loader) keeps its
    path on every read, long after the trace's string arena would have
    filled had each open interned the path anew."""
    k = 250000  # x ~60 bytes of path > the 8 MiB string arena
    data = make_file(os.path.join(tmp, "a-rather-long-name-for-a-dataset-shard-0001.bin"), 4096)
    r = run([os.environ["IO_STORY"], "reopen", str(k), data], os.path.join(tmp, "t"), {"SCALEPROF_CPU_HZ": "0"})
    check(r.returncode == 0, "the job runs")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, "one trace")
    if ts:
        check(ts[0]["read_calls"].get(data) == k, f"all {k} reads carry the path (got {ts[0]['read_calls'].get(data)})")
        check(ts[0]["dropped"] == 0, "nothing dropped")


def story_forkbusy(tmp):
    """fork while other threads record: children record too, no deadlock."""
    kids, nreads = 10, 50
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    r = run([os.environ["IO_STORY"], "forkbusy", str(kids), str(nreads), data], os.path.join(tmp, "t"))
    check(r.returncode == 0, "every forked child finished cleanly: " + r.stdout.replace("\n", " "))
    kv = keyvals(r.stdout)
    parent = int(kv["parent"][0])
    children = [int(p) for p in kv.get("child", [])]
    ts = traces(os.path.join(tmp, "t"))
    ptrace = by_pid(ts, parent)
    check(len(ptrace) == 1, "the parent has its trace")
    forks = {p[1] for p in ptrace[0]["proc"] if p[0] == "fork"} if ptrace else set()
    check(forks == set(children), "the parent recorded a fork event per child, with its pid")
    for c in children:
        ct = by_pid(ts, c)
        check(len(ct) == 1 and ct[0]["ppid"] == parent, f"child {c} has one trace naming its parent")
        if ct:
            check(ct[0]["read_calls"].get(data) == nreads + 1,
                  f"child {c} recorded its {nreads} reads and the one through its parent's fd, with the path")
            check(ct[0]["closed"] == 1, f"child {c} closed its trace on _exit")


def story_exec(tmp):
    """exec of a program without the preload in its environment."""
    nreads, later = 20, 5
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    story = os.environ["IO_STORY"]
    cmd = [story, "exec", str(nreads), data, story, "threads", "1", str(later), data]
    r = run(cmd, os.path.join(tmp, "t"))
    check(r.returncode == 0 and f"reads {later}" in r.stdout, "the exec'd program ran to completion")
    pid = int(keyvals(r.stdout)["pid"][0])
    ts = sorted(by_pid(traces(os.path.join(tmp, "t")), pid), key=lambda t: t["file"])
    check(len(ts) == 2, f"the pid has two traces, before and after exec (got {len(ts)})")
    before = [t for t in ts if t["read_calls"].get(data) == nreads]
    check(len(before) == 1, f"the trace before exec has all {nreads} reads")
    if before:
        check(before[0]["closed"] == 1, "it was closed before the exec")
        check(any(p[0] == "exec" and p[3] == story for p in before[0]["proc"]), "it names the program exec'd")
    after = [t for t in ts if t["read_calls"].get(data) == later]
    check(len(after) == 1, "the tree stays profiled: the new program, whose envp lacked LD_PRELOAD, is traced")

    r = run(cmd, os.path.join(tmp, "u"), {"SCALEPROF_FOLLOW": "0"})
    check(r.returncode == 0 and f"reads {later}" in r.stdout, "with SCALEPROF_FOLLOW=0 the program runs too")
    pid = int(keyvals(r.stdout)["pid"][0])
    ts = by_pid(traces(os.path.join(tmp, "u")), pid)
    check(len(ts) == 1 and ts[0]["read_calls"].get(data) == nreads,
          "... and only the traced part is recorded, complete")


def story_execfail(tmp):
    """An exec that fails returns its error, and recording goes on."""
    n = 30
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    not_a_program = os.path.join(tmp, "not-a-program")
    with open(not_a_program, "wb") as f:
        f.write(b"\x00\x01 neither ELF nor script\n")
    os.chmod(not_a_program, 0o755)
    ENOENT, ENOEXEC = 2, 8
    for prog, err, files, why in ((os.path.join(tmp, "missing"), ENOENT, 1, "a missing program: the trace stays open"),
                                  (not_a_program, ENOEXEC, 2, "a program the kernel refuses: a new trace after")):
        cmd = [os.environ["IO_STORY"], "execfail", str(n), data, prog]
        plain = run(cmd)
        tracedir = os.path.join(tmp, "t" + str(err))
        r = run(cmd, tracedir)
        first = r.stdout.split("\n")[0]
        check(first == plain.stdout.split("\n")[0] == f"exec -1 errno {err}",
              f"{why}; execv fails with errno {err}, as without the preload: {first!r}")
        pid = int(keyvals(r.stdout)["pid"][0])
        ts = by_pid(traces(tracedir), pid)
        check(len(ts) == files, f"{why} ({len(ts)} file(s))")
        check(sum(t["read_calls"].get(data, 0) for t in ts) == 2 * n, f"all {2 * n} reads are recorded")
        if files == 2:
            check(any(p[0] == "exec" for t in ts for p in t["proc"]), "the attempt is recorded")


def story_cloneexec(tmp):
    """A spawn helper's child (clone with CLONE_VM, sharing our memory until
    it execs or exits) does not close the parent's trace."""
    n = 40
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    true = shutil.which("true")
    r = run([os.environ["IO_STORY"], "cloneexec", str(n), data, true], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(kv.get("exec_status") == ["0"] and kv.get("exit_status") == ["5"], f"the helpers ran: {kv}")
    ts = by_pid(traces(os.path.join(tmp, "t")), int(kv["pid"][0]))
    check(len(ts) == 1, f"the parent has one trace ({len(ts)})")
    if ts:
        check(ts[0]["read_calls"].get(data) == 3 * n, f"with all {3 * n} of its reads "
              f"(got {ts[0]['read_calls'].get(data)})")
        check([p[0] for p in ts[0]["proc"]] == ["exit"], f"and no exec or exit of its helpers: {ts[0]['proc']}")
        check(ts[0]["closed"] == 1, "closed at the parent's own exit")


def story_spawn(tmp):
    """posix_spawnp of a program whose environment lacks LD_PRELOAD: the
    parent records the spawn, and the child is traced all the same."""
    n = 7
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    story = os.environ["IO_STORY"]
    r = run([story, "spawn", story, "threads", "1", str(n), data], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and kv.get("status") == ["0"], "the spawned program ran")
    child = int(kv["child"][0])
    ts = traces(os.path.join(tmp, "t"))
    parent = [t for t in ts if t["pid"] != child]
    check(len(parent) == 1 and ["spawn", child, 0, story] in parent[0]["proc"],
          "the parent's trace has the spawn, with the child's pid and program")
    kid = by_pid(ts, child)
    check(len(kid) == 1 and kid[0]["read_calls"].get(data) == n and kid[0]["ppid"] == parent[0]["pid"],
          "the child has its own trace, naming the parent, with its reads")


def child_reads(tmp, story, nreads):
    """Runs io_story STORY, whose child reads a file nreads times: the file,
    the story's key values and the child's traces."""
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    kv = keyvals(run([os.environ["IO_STORY"], story, str(nreads), data], os.path.join(tmp, "t")).stdout)
    return data, kv, by_pid(traces(os.path.join(tmp, "t")), int(kv["child"][0]))


def story_exit(tmp):
    """A child leaving through _exit() loses nothing."""
    nreads = 100
    data, kv, ct = child_reads(tmp, "exit", nreads)
    check(kv.get("status") == ["3"], "the child's exit status is untouched")
    check(len(ct) == 1 and ct[0]["read_calls"].get(data) == nreads, f"all {nreads} reads of the child are there")
    if ct:
        check(["exit", int(kv["child"][0]), 3, ""] in ct[0]["proc"], "its exit event carries status 3")
        check(ct[0]["closed"] == 1, "its trace was closed")


def story_sigterm(tmp):
    """A child killed by SIGTERM (no handler installed) loses nothing."""
    nreads = 100
    data, kv, ct = child_reads(tmp, "sigterm", nreads)
    check(kv.get("signal") == ["15"], "the child died of SIGTERM, as without the preload")
    check(len(ct) == 1, "the killed child left a trace")
    if ct:
        check(ct[0]["read_calls"].get(data) == nreads, f"all {nreads} reads survive the kill "
              f"(got {ct[0]['read_calls'].get(data)})")
        check(ct[0]["closed"] == 0, "the trace shows it was never closed")


def story_unwritable(tmp):
    """SCALEPROF_DIR unwritable: one line on stderr, the job unchanged."""
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    not_a_dir = make_file(os.path.join(tmp, "file"), 1)
    cmd = [os.environ["IO_STORY"], "threads", "4", "10", data]
    plain = run(cmd)
    traced = run(cmd, os.path.join(not_a_dir, "traces"))
    check(traced.returncode == plain.returncode, "same exit code")
    check(traced.stdout == plain.stdout, "same output")
    lines = traced.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("scaleprof: ") and "job continues" in lines[0],
          f"exactly one line on stderr: {lines}")


def story_vfork(tmp):
    """A vfork'd child is one child in the parent's trace (PROC vfork, not
    also a fork), its exit status untouched; vfork stays vfork, so the
    child, which borrows the parent's memory until it exits, records
    nothing: no trace of its own, none of its reads in the parent's."""
    n = 10
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    r = run([os.environ["IO_STORY"], "vfork", str(n), data], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and kv.get("status") == ["4"], f"the child's exit status is untouched: {r.stdout!r}")
    child = int(kv["child"][0])
    ts = traces(os.path.join(tmp, "t"))
    parent = [t for t in ts if t["pid"] != child]
    events = [p for t in parent for p in t["proc"] if p[1] == child]
    check([e[0] for e in events] == ["vfork"], f"the parent records the child once, as a vfork: {events}")
    kid = by_pid(ts, child)
    check(not kid, f"the child leaves no trace of its own ({len(kid)})")
    check(all(t["read_calls"].get(data, 0) == 0 for t in parent), "and none of its reads is the parent's")


def story_missing(tmp):
    """A program that reaches the recorder's NCCL and CUDA entry points with
    neither library loaded gets the documented failure: the family's error
    value, errno ENOSYS, one line on stderr per function, no crash."""
    r = run([os.environ["MISSING_REAL"]], os.path.join(tmp, "t"))
    check(r.returncode == 0, f"the program runs to its end: {r.returncode} {r.stdout!r}")
    ENOSYS = 38
    calls = [line.split() for line in r.stdout.splitlines()]
    check(len(calls) == 4 and all(c[1:] == ["1", str(ENOSYS)] for c in calls),
          f"each call fails with the family's error and errno ENOSYS: {calls}")
    lines = r.stderr.splitlines()
    check(sorted(line.split()[1] for line in lines) == ["cudaDeviceSynchronize", "ncclAllReduce"] and
          all("fails with ENOSYS" in line for line in lines),
          f"one line on stderr per missing function: {lines}")


def story_timeout(tmp):
    """A job that puts a timeout on a read with alarm() and siglongjmp out of
    it (the read never returns) goes on being recorded: every later read is
    in the trace."""
    n = 50
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    r = run([os.environ["IO_STORY"], "timeout", str(n), data], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and kv.get("jumped") == ["2"] and kv.get("reads") == [str(2 * n)],
          f"the job's two reads timed out and it read on: {r.stdout!r} {r.stderr!r}")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, "one trace")
    if ts:
        got = ts[0]["read_calls"].get(data)
        check(got == 2 * n, f"the {2 * n} reads after the timeouts are recorded (got {got})")
        check(ts[0]["closed"] == 1, "the trace was closed at exit")


def story_badenv(tmp):
    """A user who mistypes a SCALEPROF_* variable gets one line on stderr
    naming the variable, its value and the default used instead; the job's
    output and exit status are those it has without the preload, and the
    default is what the recorder does."""
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    story = os.environ["IO_STORY"]
    reads = [story, "threads", "1", "20", data]
    plain = run(reads)

    def trace_mode(d):
        files = [os.path.join(r, f) for r, _, fs in os.walk(d) for f in fs if f.endswith(".sprof")]
        return [oct(os.stat(f).st_mode & 0o777) for f in files]

    def all_reads(d):
        ts = traces(d)
        return len(ts) == 1 and ts[0]["read_calls"].get(data) == 20

    cases = [
        # variable, value, the default the line must name, the job, what the default means
        ("SCALEPROF_CPU_HZ", "abc", "10", [story, "burn", "1", "0.6"],
         lambda d: len(traces(d)[0]["cpu"]) >= 2, "CPU samples are taken at the default rate"),
        ("SCALEPROF_CPU_HZ", "-5", "10", reads, all_reads, "the job is recorded"),
        ("SCALEPROF_STEPS", "9:5", "every step", reads, all_reads, "every read is recorded"),
        ("SCALEPROF_ENABLE", "maybe", "1", reads, all_reads, "the recorder stays on"),
        ("SCALEPROF_MODE", "999", "0600", reads, lambda d: trace_mode(d) == ["0o600"],
         "the trace file has mode 0600"),
        ("SCALEPROF_CUPTI", "x", "1", reads, all_reads, "the job is recorded"),
        ("SCALEPROF_QUIET", "yes", "0", reads, all_reads, "the job is recorded"),
        ("SCALEPROF_FOLLOW", "2", "1", [story, "exec", "5", data, "/bin/echo", "exec'd"], None,
         "the exec'd program is followed"),
    ]
    for var, value, dflt, cmd, holds, meaning in cases:
        bare = plain if cmd is reads else run(cmd)
        d = os.path.join(tmp, f"{var}-{value}")
        r = run(cmd, d, {var: value})
        # the burn's CPU time and the exec'd pid differ from run to run: their keys must not
        same = r.stdout == bare.stdout if cmd is reads else \
            [ln.split()[:1] for ln in r.stdout.splitlines()] == [ln.split()[:1] for ln in bare.stdout.splitlines()]
        check(r.returncode == bare.returncode and same,
              f"{var}={value}: exit status {r.returncode} and output as without the preload")
        lines = r.stderr.splitlines()
        if var == "SCALEPROF_FOLLOW":
            # the exec'd program reads its environment again: one line per program
            lines = sorted(set(lines))
        want = f'scaleprof: {var}: "{value}"'
        check(len(lines) == 1 and lines[0].startswith(want) and lines[0].endswith(f"using the default, {dflt}"),
              f"{var}={value}: one line naming the variable, the value and the default {dflt}: {lines}")
        if holds is None:
            ts = traces(d)
            holds_now = len(ts) == 2
        else:
            holds_now = holds(d)
        check(holds_now, f"{var}={value}: {meaning}")


def events_of(t, op):
    return [e for e in t["io"] if e[0] == op]


def story_closeall(tmp):
    """A job that closes every fd (as daemons do) neither loses its trace
    nor gets trace data written into the file it opens next, and its fds
    are closed, also by closefrom where the kernel lacks close_range."""
    n = 20000  # enough events to fill slots, so frames get written after the close
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    old_kernel = {"LD_PRELOAD": LIB + ":" + os.environ["NO_CLOSE_RANGE"]}
    for how, env in (("close", None), ("close_range", None), ("closefrom", None),
                     ("closefrom-without-close_range", old_kernel)):
        out = os.path.join(tmp, f"out-{how}.txt")
        tracedir = os.path.join(tmp, how)
        r = run([os.environ["IO_STORY"], "closeall", str(n), data, out, how.split("-")[0]], tracedir, env)
        check(r.returncode == 0, f"{how}: the job runs")
        left = keyvals(r.stdout).get("left_open")
        check(left == ["0"], f"{how}: every fd of the job is closed, and the recorder holds none in the job's "
                             f"table ({left} left above 2)")
        with open(out, "rb") as f:
            content = f.read()
        check(content == b"hello", f"{how}: the job's own file holds exactly what it wrote ({len(content)} bytes)")
        ts = traces(tracedir)
        check(len(ts) == 1 and ts[0]["closed"] == 1, f"{how}: the trace was closed normally")
        if ts:
            check(ts[0]["read_calls"].get(data) == 2 * n, f"{how}: all {2 * n} reads are in it")


def story_shell(tmp):
    """A shell script's redirections (stdout to /dev/null for one command,
    "exec 3>file", "exec 4>file") behave as without the preload, and the
    trace's frames never land in the script's files."""
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    out3, out4 = os.path.join(tmp, "out3"), os.path.join(tmp, "out4")
    script = (f"cat {data} >/dev/null; echo one; exec 3>{out3}; cat {data} >/dev/null; "
              f"exec 4>{out4}; i=0; while [ $i -lt 200 ]; do cat {data} >/dev/null; i=$((i+1)); done; "
              "echo three >&3; echo four >&4; echo two")
    sh = shutil.which("sh")
    r = run([sh, "-c", script], os.path.join(tmp, "t"))
    check(r.returncode == 0 and r.stdout == "one\ntwo\n" and r.stderr == "",
          f"the script's output and status are unchanged: {r.returncode} {r.stdout!r} {r.stderr!r}")
    for path, want in ((out3, b"three\n"), (out4, b"four\n")):
        with open(path, "rb") as f:
            got = f.read()
        check(got == want, f"{os.path.basename(path)} holds only what the script wrote ({len(got)} bytes)")
    ts = traces(os.path.join(tmp, "t"))
    cats = [t for t in ts if t["exe"].endswith("/cat")]
    check(len(cats) == 202, f"every cat left a trace ({len(cats)} of 202)")
    check(all(t["read_bytes"].get(data) == 4096 for t in cats), "each with its 4096 bytes of reads")


def story_stdfds(tmp):
    """A daemon closes 0, 1, 2 and reopens them on /dev/null: it gets 0, 1, 2."""
    n = 50
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    out = os.path.join(tmp, "report")
    # No CPU sampler: the job's first read, made with 0, 1 and 2 closed,
    # is then what opens the trace.
    r = run([os.environ["IO_STORY"], "stdfds", str(n), data, out], os.path.join(tmp, "t"), {"SCALEPROF_CPU_HZ": "0"})
    check(r.returncode == 0, "the job runs")
    with open(out) as f:
        line = f.readline().split()
    check(line == ["fds", "0", "1", "2"], f"the reopens got 0, 1 and 2: {line}")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) >= 1 and sum(t["read_calls"].get(data, 0) for t in ts) == 3 * n,
          f"all {3 * n} reads are recorded")


def story_header(tmp):
    """Each trace names its process: host, program, arguments, parent, and
    the rank and world size its launcher gave it (torchrun, Open MPI, Slurm)."""
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    launchers = {
        "torchrun": {"RANK": "3", "WORLD_SIZE": "8", "LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "4"},
        "openmpi": {"OMPI_COMM_WORLD_RANK": "3", "OMPI_COMM_WORLD_SIZE": "8",
                    "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"},
        "slurm": {"SLURM_PROCID": "3", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1"},
    }
    for env in launchers.values():  # whatever launched this test must not leak in
        for var in list(env) + ["PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID"]:
            os.environ.pop(var, None)
    for name, env in launchers.items():
        env = dict(env, CUDA_VISIBLE_DEVICES="2,3")
        tracedir = os.path.join(tmp, name)
        cmd = [os.environ["IO_STORY"], "threads", "1", "5", data]
        r = run(cmd, tracedir, env)
        ts = traces(tracedir)
        check(r.returncode == 0 and len(ts) == 1, f"{name}: one trace")
        if not ts:
            continue
        t = ts[0]
        want_local_world = 4 if name != "slurm" else -1
        check((t["rank"], t["world_size"], t["local_rank"], t["local_world_size"]) == (3, 8, 1, want_local_world),
              f"{name}: rank 3 of 8, local rank 1 ({t['rank']}, {t['world_size']}, {t['local_rank']}, "
              f"{t['local_world_size']})")
        check(t["ppid"] == os.getpid(), f"{name}: the parent is the launcher (this test)")
        check(t["host"] == socket.gethostname(), f"{name}: host {t['host']!r}")
        check(t["exe"] == os.path.realpath(cmd[0]), f"{name}: the program")
        check(t["argv"] == " ".join(cmd), f"{name}: its arguments {t['argv']!r}")
        check(t["source"] == "preload" and t["cuda_devices"] == "2,3", f"{name}: source and visible devices")
        check(0 < t["start_mono"] < t["end_mono"], f"{name}: start and end clocks")
    r = run([os.environ["IO_STORY"], "threads", "1", "5", data], os.path.join(tmp, "none"))
    ts = traces(os.path.join(tmp, "none"))
    check(len(ts) == 1 and (ts[0]["rank"], ts[0]["world_size"]) == (-1, -1), "no launcher: rank unknown (-1)")


def story_checkpoint(tmp):
    """A checkpoint written from the training loop (write, pwrite, writev,
    fwrite) and flushed (fsync, fdatasync) is in the trace, each call with
    its bytes and its path; a failed write keeps its errno."""
    mb = 2
    out = os.path.join(tmp, "ckpt")
    os.mkdir(out)
    r = run([os.environ["IO_STORY"], "checkpoint", out, str(mb)], os.path.join(tmp, "t"))
    check(r.returncode == 0, "the checkpointing job succeeds")
    kv = keyvals(r.stdout)
    check(kv.get("errno") == ["9"], f"the failed write's errno is EBADF as without us (got {kv.get('errno')})")
    ts = traces(os.path.join(tmp, "t"), events=True)
    check(len(ts) == 1, f"one trace (got {len(ts)})")
    if not ts:
        return
    path = os.path.join(out, "ckpt.bin")
    ev = [e for e in ts[0]["io"] if e[3] == path]
    ops = [e[0] for e in ev]
    for op in ("write", "fsync", "pwrite", "fdatasync", "writev", "fwrite"):
        check(op in ops, f"{op} of the checkpoint is recorded (ops: {sorted(set(ops))})")
    written = sum(e[4] for e in ev if e[0] in ("write", "pwrite", "writev", "fwrite") and e[4] > 0)
    check(written == 4 * (mb << 20), f"{4 * mb} MiB written in all (got {written} bytes)")
    failed = [e for e in ev if e[0] == "write" and e[4] < 0]
    check(len(failed) == 1 and failed[0][6] == 9, f"the failed write is recorded with EBADF (got {failed})")
    check(all(e[4] == 0 for e in ev if e[0] in ("fsync", "fdatasync")), "a flush carries no bytes")


def story_errno(tmp):
    """Return values, errno and partial reads are those of libc."""
    scratch_a, scratch_b = os.path.join(tmp, "a"), os.path.join(tmp, "b")
    os.mkdir(scratch_a)
    os.mkdir(scratch_b)
    plain = run([os.environ["ERRNO_CHECK"], scratch_a])
    traced = run([os.environ["ERRNO_CHECK"], scratch_b], os.path.join(tmp, "t"))
    check(plain.returncode == 0 and traced.returncode == 0, "both runs succeed")
    check(plain.stdout.replace(scratch_a, "") == traced.stdout.replace(scratch_b, ""),
          "identical results with and without the preload")
    if plain.stdout.replace(scratch_a, "") != traced.stdout.replace(scratch_b, ""):
        for a, b in zip(plain.stdout.splitlines(), traced.stdout.splitlines()):
            if a != b:
                print(f"   plain:  {a}\n   traced: {b}")
    ts = traces(os.path.join(tmp, "t"), events=True)
    check(len(ts) == 1, "one trace")
    if not ts:
        return
    t = ts[0]
    content = os.path.join(scratch_b, "content.txt")
    missing = os.path.join(scratch_b, "no/such/file")
    reads = events_of(t, "read")
    opens = events_of(t, "open")
    ENOENT, EINTR, EAGAIN, EBADF, ENOTSOCK = 2, 4, 11, 9, 88
    FD_PIPE, FD_SOCKET = 2, 3
    check(sum(1 for e in opens if e[3] == missing and e[4] == -1 and e[6] == ENOENT) == 7,
          "the seven failed opens (open, open64, openat, __open64_2, __openat64_2, creat, creat64) "
          "are recorded with ENOENT and the path")
    check(any(e[3] == content and e[4] == 6 and e[5] == 64 for e in reads),
          "the short read at end of file: 6 bytes of 64 asked")
    check(any(e[3] == content and e[4] == 0 for e in reads), "the read at end of file returned 0")
    check(any(e[4] == -1 and e[6] == EINTR for e in reads), "the interrupted read: EINTR")
    check(any(e[4] == -1 and e[6] == EAGAIN and e[2] == FD_PIPE for e in reads), "the empty non-blocking pipe: EAGAIN")
    check(any(e[4] == -1 and e[6] == EBADF for e in reads), "the bad fd: EBADF")
    check(any(e[3] == content and e[4] == 9 and e[5] == 9 for e in events_of(t, "readv")), "the scatter read")
    check(len(events_of(t, "preadv")) == 4, "preadv, preadv64, preadv2, preadv64v2")
    check(len(events_of(t, "pread")) == 6, "pread, pread64, __pread_chk, __pread64_chk, a bad one and the "
          "one that left errno alone")
    check(any(e[3] == content and e[4] == 6 for e in events_of(t, "fread")), "fread's short read: 6 bytes")
    check(len(events_of(t, "fread")) == 5, "fread, fread_unlocked, __fread_chk")
    check(any(e[6] == ENOTSOCK for e in events_of(t, "recv")), "recv on a pipe: ENOTSOCK")
    check(len(events_of(t, "recv")) == 5, "recv, recvfrom, recvmsg")
    check(any(e[3] == content for e in events_of(t, "mmap")), "the file mapping")
    writes = events_of(t, "write")
    check(len(writes) == 4 and {e[2] for e in writes} == {FD_PIPE, FD_SOCKET},
          "writes to a pipe (two of them leaving errno alone) and a socket, nothing else")
    kept = [e for e in reads if e[2] == FD_PIPE and e[4] == 4 and e[5] == 4]
    check(len(kept) == 2, f"the pipe's reads that left errno alone are recorded (got {len(kept)})")
    check(t["types"].get("wait") == 8, f"eight poll-family waits (got {t['types'].get('wait')})")
    check(any(e[3] == content and e[4] == 1 for e in reads), "a read through a dup2'd fd keeps the path")


def story_fortified(tmp):
    """A binary built with -D_FORTIFY_SOURCE=2 is recorded."""
    exe = os.environ["FORTIFIED"]
    nm = shutil.which("nm")
    if nm:
        syms = subprocess.run([nm, "-D", exe], capture_output=True, text=True).stdout
        check("__read_chk" in syms, "the binary calls __read_chk, not read")
    data = make_file(os.path.join(tmp, "data.bin"), 1000)
    r = run([exe, data, "48"], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(kv.get("bytes") == ["1000"], "it read the file")
    calls = int(r.stdout.split()[3])
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1 and ts[0]["read_bytes"].get(data) == 1000, "the trace has its 1000 bytes, with the path")
    if ts:
        check(ts[0]["read_calls"].get(data) == calls, f"and each of its {calls} reads")


def story_cpu(tmp):
    """A job burning two cores has CPU samples that say so."""
    secs, burners = 1.5, 2
    r = run([os.environ["IO_STORY"], "burn", str(burners), str(secs)], os.path.join(tmp, "t"))
    check(r.returncode == 0, "the job runs")
    cpu_ns = int(keyvals(r.stdout)["cpu_ns"][0])
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, "one trace")
    samples = ts[0]["cpu"] if ts else []
    hz = 10
    check(len(samples) >= 0.5 * secs * hz, f"about {hz} samples a second ({len(samples)} in {secs} s)")
    if not samples:
        return
    last = samples[-1][0] + samples[-1][1]
    check(all(a[0] + a[1] <= b[0] + b[1] for a, b in zip(samples, samples[1:])), "process CPU time only grows")
    # the job measures itself (getrusage) before it prints and exits: a
    # sample taken in between may count the few ms it spends after that
    after_print = 0.05e9
    check(-after_print <= cpu_ns - last <= burners * 0.4e9,
          f"the last sample's CPU time ({last / 1e9:.3f} s) is the job's ({cpu_ns / 1e9:.3f} s) "
          "less at most the last interval (or a sample taken after the job measured itself)")
    check(max(s[4] for s in samples) >= burners + 1, "the thread count includes the burners and main")
    check(all(s[3] == os.cpu_count() for s in samples), f"core count = {os.cpu_count()}")
    check(all(0 <= s[2] <= 1000 for s in samples) and max(s[2] for s in samples) > 0,
          "the machine's busy fraction is in 0..1000 and was seen busy")


def story_early(tmp):
    """The first recorded call comes from another library's constructor,
    before the recorder's own have run (a CUDA or logging library reading
    its configuration at load): it is recorded, and the process is
    sampled as one whose first call comes later."""
    data = make_file(os.path.join(tmp, "config"), 3000)
    env = {"LD_PRELOAD": LIB + ":" + os.environ["EARLY_READ_LIB"], "EARLY_READ": data}
    # One thread computing for 1-2 s after its load (bash's clock counts
    # whole seconds), with no call of its own that would start the
    # sampler: only the constructor's read opened the trace.
    burn = "end=$((SECONDS + 2)); while [ $SECONDS -lt $end ]; do :; done; echo done"
    t0 = time.monotonic()
    r = run(["bash", "--norc", "--noprofile", "-c", burn], os.path.join(tmp, "t"), env)
    secs = time.monotonic() - t0
    check(r.returncode == 0 and r.stdout.strip() == "done", f"the job runs: {r.stdout.strip()!r}")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, f"one trace ({len(ts)})")
    if not ts:
        return
    check(ts[0]["read_bytes"].get(data) == 3000, "the constructor's read is in the trace, with its path")
    samples = ts[0]["cpu"]
    print(f"figures: {len(samples)} CPU samples in {secs:.2f} s")
    check(len(samples) >= 0.5 * (secs - 0.2) * 10, f"about 10 CPU samples a second ({len(samples)} in {secs:.2f} s)")


def story_control(tmp):
    """Recording paused and resumed on a running job through DIR/control."""
    n = 50
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    tracedir = os.path.join(tmp, "t")
    os.mkdir(tracedir)
    r = run([os.environ["IO_STORY"], "control", str(n), data, tracedir], tracedir)
    check(r.returncode == 0 and f"reads {3 * n}" in r.stdout, "the job did its three rounds of reads")
    ts = traces(tracedir)
    check(len(ts) == 1, "one trace")
    if ts:
        check(ts[0]["read_calls"].get(data) == 2 * n,
              f"the reads while stopped are not recorded ({ts[0]['read_calls'].get(data)} of {3 * n})")
        kinds = [p[0] for p in ts[0]["proc"]]
        check("stop" in kinds and "start" in kinds, f"the pause and the resume are in the trace: {kinds}")


def story_steps(tmp):
    """SCALEPROF_STEPS=3:5 records steps 3..5, in the rank and in its worker."""
    steps, n, first, last = 8, 20, 3, 5
    data = make_file(os.path.join(tmp, "data.bin"), 4096)
    env = {"SCALEPROF_STEPS": f"{first}:{last}", "NVTX_INJECTION64_PATH": LIB}
    r = run([os.environ["STEPS_JOB"], str(steps), str(n), data], os.path.join(tmp, "t"), env)
    check(r.returncode == 0, "the training loop runs")
    kv = keyvals(r.stdout)
    ts = traces(os.path.join(tmp, "t"))
    want = (last - first + 1) * n
    for who in ("main", "worker"):
        t = by_pid(ts, int(kv[who][0]))
        check(len(t) == 1, f"the {who} process has its trace")
        if t:
            got = t[0]["read_calls"].get(data)
            check(got == want, f"the {who} recorded the reads of steps {first}..{last} only: {want} (got {got})")
    main = by_pid(ts, int(kv["main"][0]))
    if main:
        marks = [(p[0], p[2]) for p in main[0]["proc"] if p[0] in ("start", "stop")]
        check(marks == [("stop", 0), ("start", first), ("stop", last + 1)],
              f"the rank's trace marks where recording paused and resumed: {marks}")


def torch_python():
    """A Python that has torch: $TORCH_PYTHON, this one, or the system's."""
    candidates = [os.environ.get("TORCH_PYTHON"), sys.executable, "/usr/bin/python3"]
    for py in filter(None, candidates):
        if shutil.which(py) and subprocess.run([py, "-c", "import torch"], capture_output=True).returncode == 0:
            return py
    return None


def dataloader_run(tmp, name, dataset, delay):
    tracedir = os.path.join(tmp, name)
    r = run([torch_python(), os.environ["DATALOADER_JOB"], dataset, str(delay)], tracedir, timeout=90)
    check(r.returncode == 0, f"the {name} training loop runs: {r.stderr[-500:]}")
    pid = int(keyvals(r.stdout)["main"][0])
    return pid, traces(tracedir)


def story_dataloader(tmp):
    """A PyTorch DataLoader with 4 workers: the workers' traces hold exactly
    the dataset's bytes, and slow workers show up as the main process
    waiting longer."""
    if not torch_python():
        print("SKIP: no python3 here can import torch")
        sys.exit(SKIP)
    nfiles, workers, delay = 64, 4, 0.05
    dataset = os.path.join(tmp, "dataset")
    os.mkdir(dataset)
    sizes = {}
    for i in range(nfiles):
        path = make_file(os.path.join(dataset, f"sample{i:03d}.bin"), 1000 + 997 * i)
        sizes[path] = 1000 + 997 * i
    waits = {}
    for name, d in (("fast", 0.0), ("slow", delay)):
        main, ts = dataloader_run(tmp, name, dataset, d)
        kids = [t for t in ts if t["ppid"] == main]
        check(len(kids) == workers, f"{name}: one trace per worker, naming the main process (got {len(kids)})")
        per_path = {}
        for t in kids:
            for p, b in t["read_bytes"].items():
                if p in sizes:
                    per_path[p] = per_path.get(p, 0) + b
        check(per_path == sizes, f"{name}: the workers read exactly each file's size, once")
        total = sum(per_path.values())
        check(total == sum(sizes.values()), f"{name}: {total} bytes read = the dataset's {sum(sizes.values())}")
        mt = by_pid(ts, main)
        check(len(mt) == 1, f"{name}: the main process has its trace")
        waits[name] = mt[0]["input_wait_ns"] / 1e9 if mt else 0.0
        print(f"     {name}: main process waited {waits[name]:.3f} s on its workers")
    expected = delay * nfiles / workers
    grew = waits["slow"] - waits["fast"]
    check(0.6 * expected <= grew <= 2.5 * expected + 0.5,
          f"slow workers add about {expected:.2f} s of waiting (measured {grew:.2f} s)")


def main(scope, script, tmp_prefix):
    """Runs the story the command line names (story_NAME of scope, a
    script's globals()) in a temporary folder of its own, then finish();
    reliability.py runs its stories the same way."""
    stories = {name[6:]: fn for name, fn in scope.items() if name.startswith("story_")}
    if len(sys.argv) != 2 or sys.argv[1] not in stories:
        print("usage: %s %s" % (script, "|".join(stories)))
        sys.exit(2)
    print(stories[sys.argv[1]].__doc__.strip())
    with tempfile.TemporaryDirectory(prefix=tmp_prefix) as tmp:
        stories[sys.argv[1]](tmp)
    finish()


if __name__ == "__main__":
    main(globals(), "stories.py", "scaleprof-io-")
