#!/usr/bin/env python3
"""Attacks on the recorder, each made to happen (docs/reliability.md).

Each story does to a recorded job what real programs, shells, scripts and
other users do - take its descriptor numbers, lower its fd limit, kill it,
truncate its trace, plant a FIFO or a symlink, pass secrets on its command
line - and checks that the job is unharmed and the trace honest.  Usage:
reliability.py STORY.  The helpers (run, traces, check) are tests/io's.
"""
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from contextlib import contextmanager

sys.path.insert(0, os.environ["IO_STORIES_DIR"])
import stories  # noqa: E402  (tests/io's helpers and stories)
from stories import check, keyvals, make_file, run, traces  # noqa: E402

JOB = os.environ["ATTACK_JOB"]
IO_STORY = os.environ["IO_STORY"]
SKIP = 77


def trace_files(tracedir):
    out = []
    for root, _, files in os.walk(tracedir):
        out += [os.path.join(root, f) for f in files if f.endswith(".sprof")]
    return out


# ---- the job's descriptors -------------------------------------------------------


def story_fd_bash(tmp):
    """bash saves an fd with fcntl(F_DUPFD) and restores it: 'exec 512>out;
    echo data >&512' writes the job's file, and the trace stays whole."""
    out = os.path.join(tmp, "out")
    td = os.path.join(tmp, "t")
    script = f"exec 512>{out}; echo data >&512; exec 3>{out}.3; echo three >&3; exec 600>{out}.600; echo x >&600"
    r = run(["bash", "-c", script], td)
    check(r.returncode == 0, "bash succeeds")
    for suffix, want in (("", "data\n"), (".3", "three\n"), (".600", "x\n")):
        with open(out + suffix) as f:
            got = f.read()
        check(got == want, f"the job's file{suffix} holds what bash wrote: {got!r}")
    ts = traces(td)
    check(len(ts) >= 1 and all(t["closed"] == 1 for t in ts), f"every trace reads back closed ({len(ts)})")


def story_fd_pipes(tmp):
    """A pipe dup2'd onto 513 and 514 (once the CPU sampler's /proc fds)
    still works after several sampler ticks; the job's fd table lists only
    the job's own fds and never grows past its 64 entries."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    bare = keyvals(run([JOB, "pipes", data]).stdout)
    r = run([JOB, "pipes", data], os.path.join(tmp, "t"), {"SCALEPROF_CPU_HZ": "50"})
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and kv.get("pipe_ok") == ["1"], f"the pipe works after the sampler ran: {r.stdout!r}")
    fds = r.stdout.split("fds", 1)[1].split("\n", 1)[0].split() if "fds" in r.stdout else None
    check(fds == ["0", "1", "2"], f"the job holds fds 0 1 2 and nothing of the recorder's: {fds}")
    check(kv.get("fdsize") == bare.get("fdsize"),
          f"the job's fd table keeps its size ({kv.get('fdsize')} as bare {bare.get('fdsize')}): "
          "no growth, no RCU grace period on the first recorded call")


def story_fd_lowest(tmp):
    """A single-threaded job doing close(3); open() always gets 3, while
    stop and start are written to the control file again and again."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    td = os.path.join(tmp, "t")
    os.makedirs(td)
    control = os.path.join(td, "control")
    stop = threading.Event()

    def writer():
        word = "stop"
        while not stop.is_set():
            with open(control, "w") as f:
                f.write(word + "\n")
            word = "start" if word == "stop" else "stop"
            time.sleep(0.01)

    w = threading.Thread(target=writer)
    w.start()
    try:
        r = run([JOB, "lowest", data, "2"], td, {"SCALEPROF_CPU_HZ": "100"})
    finally:
        stop.set()
        w.join()
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and "note" not in kv, f"the job's first open got fd 3: {r.stdout!r}")
    check(kv.get("misses") == ["0"], f"open() returned 3 every time of {kv.get('tries')} (missed {kv.get('misses')})")


def story_fd_rlimit(tmp):
    """With RLIMIT_NOFILE=16 the job can open as many files as without the
    preload: the recorder takes none of its 16."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    bare = keyvals(run([JOB, "rlimit", "16", data]).stdout)
    r = run([JOB, "rlimit", "16", data], os.path.join(tmp, "t"))
    kv = keyvals(r.stdout)
    check(kv.get("opened") == bare.get("opened") and kv.get("errno") == bare.get("errno"),
          f"opened {kv.get('opened')} files (bare: {bare.get('opened')}), then errno {kv.get('errno')}")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1 and ts[0]["closed"] == 1, "and the job's trace is complete")


def story_no_membarrier_wait(tmp):
    """The trace opens without a global barrier or fd-table growth: a
    process with a second thread makes no membarrier registration after its
    threads exist and no fcntl dup above 64 (strace, when installed)."""
    strace = subprocess.run(["which", "strace"], capture_output=True, text=True).stdout.strip()
    data = make_file(os.path.join(tmp, "data"), 4096)
    if not strace or run([strace, "-o", "/dev/null", "true"]).returncode != 0:
        print("strace not usable here; the FDSize check of fd_pipes covers the table growth")
        sys.exit(SKIP)
    log = os.path.join(tmp, "strace.txt")
    run([strace, "-f", "-o", log, "-e", "trace=membarrier,fcntl,dup2,dup3", JOB, "pipes", data], os.path.join(tmp, "t"))
    with open(log) as f:
        lines = f.read().splitlines()
    registers = [ln for ln in lines if "MEMBARRIER_CMD_REGISTER" in ln]
    high = [ln for ln in lines if "F_DUPFD" in ln and any(f", {n}" in ln for n in ("512", "513", "1024"))]
    check(len(registers) <= 1, f"membarrier is registered once, at load, single-threaded: {registers}")
    check(not high, f"no descriptor is moved high: {high}")


# ---- signals, kills, truncation ---------------------------------------------------


def story_sigexit(tmp):
    """_exit() from a signal handler that interrupted an append ends the
    process at once (it waited 200 ms for the append it interrupted)."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    slow = []
    runs = 30
    for i in range(runs):
        t0 = time.monotonic()
        r = run([JOB, "sigexit", data, str(random.randrange(1 << 30))], os.path.join(tmp, f"t{i}"),
                {"SCALEPROF_CPU_HZ": "0"})
        took = time.monotonic() - t0
        if r.returncode != 3:
            check(False, f"run {i}: exit status 3 from the handler's _exit (got {r.returncode})")
        if took > 0.15:
            slow.append(round(took, 3))
    check(len(slow) <= 1, f"{runs} handler exits, none stalled (over 150 ms: {slow})")
    ts = traces(tmp)
    check(len(ts) == runs and all(t["closed"] == 1 for t in ts), f"all {runs} traces closed by the _exit")


def story_sigkill(tmp):
    """SIGKILL at random moments, N times: every read the job reported
    complete before the kill is in its trace."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    kills = int(os.environ.get("RELIABILITY_KILLS", "20"))
    checked = lost = dropped = 0
    env = dict(os.environ, LD_PRELOAD=stories.LIB, SCALEPROF_DIR="")
    for i in range(kills):
        td = os.path.join(tmp, f"k{i}")
        env["SCALEPROF_DIR"] = td
        p = subprocess.Popen([JOB, "count", data], env=env, stdout=subprocess.PIPE)
        deadline = time.monotonic() + random.uniform(0.02, 0.4)
        reported = 0
        os.set_blocking(p.stdout.fileno(), False)
        buf = b""
        while time.monotonic() < deadline:
            try:
                buf += os.read(p.stdout.fileno(), 65536)
            except BlockingIOError:
                time.sleep(0.002)
        p.send_signal(signal.SIGKILL)
        p.wait()
        os.set_blocking(p.stdout.fileno(), True)
        buf += p.stdout.read()
        p.stdout.close()
        buf = buf.decode()
        for line in buf.splitlines():
            if line.startswith("done "):
                reported = int(line.split()[1])
        ts = traces(td)
        got = ts[0]["read_calls"].get(data, 0) if len(ts) == 1 else 0
        dropped += ts[0]["dropped"] if len(ts) == 1 else 0
        checked += reported
        if got < reported:
            lost += reported - got
            check(False, f"kill {i}: {reported} reads reported done, {got} in the trace")
    print(f"figures: kills {kills}, events checked {checked}, lost {lost}, dropped (counted) {dropped}")
    check(lost == 0, f"{kills} kills, {checked} reported reads checked, {lost} lost")


def story_truncate(tmp):
    """Truncating a live trace (a cleanup script, copytruncate rotation)
    faults the job's next store into it: the design accepts that, and what
    protects the file is who may write it - 0600 files in 0700 directories
    of the job's user, no symlinks followed.  A closed trace may be
    truncated freely."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    td = os.path.join(tmp, "t")
    r = run([JOB, "touch", data, "0.2"], td)
    check(r.returncode == 0, "a short job runs")
    for path in trace_files(td):
        os.truncate(path, 0)
    r = run([JOB, "touch", data, "0.1"], td)
    check(r.returncode == 0, "truncating closed traces harms nothing; the next run records beside them")
    env = dict(os.environ, LD_PRELOAD=stories.LIB, SCALEPROF_DIR=os.path.join(tmp, "live"))
    p = subprocess.Popen([JOB, "touch", data, "3"], env=env, stdout=subprocess.PIPE)
    time.sleep(0.5)
    for path in trace_files(os.path.join(tmp, "live")):
        os.truncate(path, 0)
    rc = p.wait(timeout=30)
    check(rc in (0, -signal.SIGBUS),
          f"a live trace truncated: the job ends {'normally' if rc == 0 else 'with SIGBUS, as documented'} ({rc})")
    for path in trace_files(os.path.join(tmp, "t")):
        st = os.stat(path)
        check(stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.geteuid(), f"{path} is 0600, the job's user's")
        d = os.stat(os.path.dirname(path))
        check(stat.S_IMODE(d.st_mode) == 0o700, "its directory is 0700")


# ---- where traces go, what steers them -------------------------------------------


def story_dir_resolved(tmp):
    """A relative SCALEPROF_DIR is resolved once, from where the job
    started: a job that changes directory keeps its traces together."""
    os.makedirs(os.path.join(tmp, "work", "sub"))
    rel = f"rel-traces-{os.getpid()}"
    env = dict(os.environ, LD_PRELOAD=stories.LIB, SCALEPROF_DIR=rel)
    # programs that record (a read), so each leaves a file (a quiet one
    # living under 20 ms would leave none: story quiet_short)
    r = subprocess.run(["bash", "-c", "cd sub && cat /etc/hostname && cd / && cat /etc/hostname"],
                       cwd=os.path.join(tmp, "work"), env=env, capture_output=True, text=True, timeout=30)
    check(r.returncode == 0, "the job runs")
    here = trace_files(os.path.join(tmp, "work", rel))
    check(len(here) >= 3, f"every process's trace is under the first process's directory ({len(here)})")
    check(not os.path.exists(os.path.join(tmp, "work", "sub", rel)), "none under the directory it moved to")
    check(not os.path.exists("/" + rel), "none under /")


def story_dir_symlink(tmp):
    """A symlink planted at SCALEPROF_DIR is refused with one line: nothing
    is written through it, the job runs unchanged."""
    target = os.path.join(tmp, "elsewhere")
    os.makedirs(target)
    link = os.path.join(tmp, "t")
    os.symlink(target, link)
    data = make_file(os.path.join(tmp, "data"), 4096)
    cmd = [IO_STORY, "threads", "2", "5", data]
    plain = run(cmd)
    r = run(cmd, link, {"SCALEPROF_QUIET": "0"})
    check(r.returncode == plain.returncode and r.stdout == plain.stdout, "the job is unchanged")
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and "symbolic link" in lines[0], f"one line says why: {lines}")
    check(os.listdir(target) == [], "nothing was written through the link")


def deep_dir(base, length):
    """base/d123456789/d123456789/... made at least `length` bytes long."""
    path = base
    while len(path) < length:
        path = os.path.join(path, "d123456789")
    return path


def story_dir_long(tmp):
    """A SCALEPROF_DIR of 1500 bytes (it was cut at 1023, silently, and the
    traces went to the directory named by the first 1023 bytes) is used
    whole; one of 5000 bytes (past PATH_MAX) is refused with one line, the
    job unchanged."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    cmd = [JOB, "touch", data, "0.05"]
    long_dir = deep_dir(os.path.join(tmp, "a"), 1500)
    r = run(cmd, long_dir, {"SCALEPROF_QUIET": "0"})
    check(r.returncode == 0 and r.stderr == "", f"a 1500-byte DIR: the job runs, no line ({r.stderr[:200]!r})")
    here = trace_files(long_dir)
    everywhere = trace_files(os.path.join(tmp, "a"))
    check(len(here) == 1 and len(everywhere) == 1, f"its trace is in DIR itself ({len(here)} there, {len(everywhere)} in all)")
    too_long = deep_dir(os.path.join(tmp, "b"), 5000)
    r = run(cmd, too_long, {"SCALEPROF_QUIET": "0"})
    lines = r.stderr.splitlines()
    check(r.returncode == 0 and len(lines) == 1 and "SCALEPROF_DIR" in lines[0] and "job continues" in lines[0],
          f"a 5000-byte DIR: refused with one line ({[ln[:120] for ln in lines]})")
    check(not trace_files(os.path.join(tmp, "b")), "and nothing written under it")


def story_dir_long_cwd(tmp):
    """A relative SCALEPROF_DIR under a working directory of 1500 bytes
    is made absolute (it stayed relative when the working directory did
    not fit in 1024 bytes, and the traces of a job that changes directory
    scattered): all traces under the first process's directory."""
    work = deep_dir(os.path.join(tmp, "w"), 1500)
    os.makedirs(os.path.join(work, "sub"))
    rel = f"rel-traces-{os.getpid()}"
    env = dict(os.environ, LD_PRELOAD=stories.LIB, SCALEPROF_DIR=rel, SCALEPROF_QUIET="0")
    r = subprocess.run(["bash", "-c", "cd sub && cat /etc/hostname && cd / && cat /etc/hostname"],
                       cwd=work, env=env, capture_output=True, text=True, timeout=30)
    scattered = os.path.exists("/" + rel)
    if scattered:
        shutil.rmtree("/" + rel)
    check(r.returncode == 0 and r.stderr == "", f"the job runs, no line ({r.stderr[:200]!r})")
    here = trace_files(os.path.join(work, rel))
    check(len(here) >= 3, f"every process's trace is under the first process's directory ({len(here)})")
    check(not os.path.exists(os.path.join(work, "sub", rel)), "none under the directory it moved to")
    check(not scattered, "none under /")


def story_dir_symlink_middle(tmp):
    """A symlink owned by another user in the middle of SCALEPROF_DIR's
    path (shared/link -> that user's directory, DIR = shared/link/a/b) is
    refused with one line, nothing written through it; a link of the
    job's own user (or root's) on the way is followed (needs root: a link
    owned by another user)."""
    if os.geteuid() != 0:
        print("skipped (needs root)")
        sys.exit(SKIP)
    shared = os.path.join(tmp, "shared")
    theirs = os.path.join(tmp, "theirs")
    os.makedirs(shared)
    os.makedirs(theirs)
    os.chmod(shared, 0o777)
    os.chmod(theirs, 0o777)
    os.chmod(tmp, 0o755)
    os.chown(theirs, 65534, 65534)
    link = os.path.join(shared, "link")
    os.symlink(theirs, link)
    os.lchown(link, 65534, 65534)
    data = make_file(os.path.join(tmp, "data"), 4096)
    cmd = [JOB, "touch", data, "0.05"]
    plain = run(cmd)
    r = run(cmd, os.path.join(link, "a", "b"), {"SCALEPROF_QUIET": "0"})
    lines = r.stderr.splitlines()
    check(r.returncode == plain.returncode and r.stdout.split()[0] == plain.stdout.split()[0], "the job is unchanged")
    check(len(lines) == 1 and "symbolic link" in lines[0], f"one line says why ({lines})")
    check(os.listdir(theirs) == [], f"nothing was written through the link ({os.listdir(theirs)})")
    mine = os.path.join(tmp, "mine")
    os.makedirs(mine)
    os.symlink(mine, os.path.join(tmp, "mylink"))
    r = run(cmd, os.path.join(tmp, "mylink", "a"), {"SCALEPROF_QUIET": "0"})
    check(r.returncode == 0 and r.stderr == "" and len(trace_files(mine)) == 1,
          f"a link of the job's own user on the way is followed ({r.stderr!r})")


def story_host_dotdot(tmp):
    """A host name of '..' (or with a '/') wrote traces outside
    SCALEPROF_DIR (DIR/../<pid>.sprof): host names are made safe file
    names (needs root: a UTS namespace of its own, unshare -u)."""
    if os.geteuid() != 0 or run(["unshare", "-u", "true"]).returncode != 0:
        print("skipped (needs root)")
        sys.exit(SKIP)
    data = make_file(os.path.join(tmp, "data"), 4096)
    # the name is set by Python (hostname(1) refuses these), which then
    # execs the job with the preload
    become = ("import os, socket, sys; socket.sethostname(sys.argv[1]); "
              "os.environ.update(LD_PRELOAD=sys.argv[2], SCALEPROF_DIR=sys.argv[3]); os.execv(sys.argv[4], sys.argv[4:])")
    for i, host in enumerate(("..", "a/../../b", ".")):
        top = os.path.join(tmp, f"top{i}")
        td = os.path.join(top, "t")
        r = run(["unshare", "-u", sys.executable, "-c", become, host, stories.LIB, td, JOB, "touch", data, "0.05"],
                None, {"SCALEPROF_QUIET": "0"})
        check(r.returncode == 0 and r.stderr == "", f"host {host!r}: the job runs ({r.stderr[:200]!r})")
        inside = trace_files(td)
        everywhere = trace_files(top)
        check(len(inside) == 1 and len(everywhere) == 1 and os.path.dirname(os.path.dirname(inside[0])) == td,
              f"host {host!r}: the trace is in a directory of DIR ({[os.path.relpath(f, top) for f in everywhere]})")
        ts = traces(td)
        check(len(ts) == 1 and ts[0].get("host", host) == host, f"host {host!r}: the header keeps the name")


def control_story(tmp, setup):
    """Runs a job that pauses for 1 s while `setup` plants a control file;
    returns the number of reads recorded out of those made."""
    os.makedirs(tmp, exist_ok=True)
    data = make_file(os.path.join(tmp, "data"), 4096)
    td = os.path.join(tmp, "t")
    os.makedirs(td)
    setup(os.path.join(td, "control"))
    r = run([JOB, "touch", data, "1"], td, {"SCALEPROF_CPU_HZ": "50"}, timeout=30)
    kv = keyvals(r.stdout)
    ts = traces(td)
    made = int(kv.get("reads", ["0"])[0])
    got = ts[0]["read_calls"].get(data, 0) if ts else -1
    return r, made, got


def story_control_untrusted(tmp):
    """A control file that others could have written (group/world
    writable, or owned by another user) is not obeyed."""
    def world_writable(path):
        with open(path, "w") as f:
            f.write("stop\n")
        os.chmod(path, 0o666)
    r, made, got = control_story(os.path.join(tmp, "a"), world_writable)
    check(r.returncode == 0 and got == made and made > 0, f"a world-writable 'stop' is ignored ({got} of {made} reads)")
    if os.geteuid() == 0:
        def foreign(path):
            with open(path, "w") as f:
                f.write("stop\n")
            os.chmod(path, 0o644)
            os.chown(path, 65534, 65534)
        r, made, got = control_story(os.path.join(tmp, "b"), foreign)
        check(got == made and made > 0, f"a 'stop' owned by another user is ignored ({got} of {made} reads)")

    def own(path):
        with open(path, "w") as f:
            f.write("stop\n")
        os.chmod(path, 0o600)
    r, made, got = control_story(os.path.join(tmp, "c"), own)
    check(r.returncode == 0 and got < made, f"the job's own 'stop' is obeyed ({got} of {made} reads recorded)")


def story_control_fifo(tmp):
    """A FIFO in the control file's place blocks nothing: the sampler goes
    on sampling and the job ends on time."""
    r, made, got = control_story(tmp, lambda path: os.mkfifo(path, 0o600))
    check(r.returncode == 0 and got == made and made > 0, f"the job ran and was recorded ({got} of {made} reads)")
    ts = traces(os.path.join(tmp, "t"))
    check(ts and len(ts[0]["cpu"]) >= 10, f"CPU samples kept coming ({len(ts[0]['cpu']) if ts else 0} in 1 s at 50 Hz)")


# ---- the clock -------------------------------------------------------------------


def story_notsc(tmp):
    """A job that makes rdtsc trap (prctl(PR_SET_TSC, PR_TSC_SIGSEGV), as
    record-and-replay tools and sandboxes do) before its first recorded
    call or after 100 ms of recording: the recorder reads CLOCK_MONOTONIC through the system call from
    then on; the job runs as bare and every read is recorded."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    for when in ("first", "later"):
        cmd = [JOB, "notsc", data, when]
        bare = run(cmd)
        td = os.path.join(tmp, when)
        r = run(cmd, td, {"SCALEPROF_CLOCK": "tsc"} if when == "later" else None)
        check(bare.returncode == 0 and "tsc_mode 2" in bare.stdout, f"{when}: bare, rdtsc traps ({bare.stdout!r})")
        check(r.returncode == bare.returncode and r.stdout == bare.stdout,
              f"{when}: the job runs as bare (exit {r.returncode}, {r.stdout!r})")
        ts = traces(td)
        got = sum(t["read_calls"].get(data, 0) for t in ts)
        want = 200 + (1 if when == "later" else 0)
        check(got == want, f"{when}: every read recorded ({got} of {want})")
        check(all(t["closed"] == 1 for t in ts), f"{when}: every trace closed ({len(ts)})")


# ---- exec, vfork, spawn -------------------------------------------------------------


def story_bigenv(tmp):
    """exec with 40,000 environment variables from a thread with a 256 KiB
    stack (the child's environment was built with alloca: SIGSEGV): the
    exec happens, the child gets every variable and, when the caller's
    environment lacked LD_PRELOAD, the preload back, and is recorded."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    n = 40000
    for keep in ("1", "0"):
        cmd = [JOB, "bigenv", data, str(n), keep]
        bare = run(cmd)
        check(bare.returncode == 0 and f"bigenv {n}" in bare.stdout, f"keep={keep}: bare, the exec works ({bare.stdout!r})")
        td = os.path.join(tmp, "t" + keep)
        r = run(cmd, td)
        kv = keyvals(r.stdout)
        check(r.returncode == 0 and kv.get("bigenv") == [str(n)],
              f"keep={keep}: the exec happens with every variable (exit {r.returncode}, {r.stdout!r})")
        check(kv.get("preload") == ["1"], f"keep={keep}: and the child is preloaded ({kv.get('preload')})")
        ts = traces(td)
        got = sum(t["read_calls"].get(data, 0) for t in ts)
        check(got == 1, f"keep={keep}: the child's read is recorded ({got})")


SPAWN_SLACK_MS = 5.0  # the preloaded /bin/true's own start and exit, and a loaded machine (fork: 40+ ms)
PY_SPAWN = """
import subprocess, sys, time
heap = bytearray(b"\\1") * (int(sys.argv[1]) << 20)
open(sys.argv[2], "rb").read()
took = []
for _ in range(15):
    t0 = time.monotonic()
    subprocess.run(["/bin/true"], check=True)
    took.append(time.monotonic() - t0)
print("subprocess_ms %.3f" % (sorted(took)[len(took) // 2] * 1e3))
"""


def story_vfork(tmp):
    """vfork stays vfork: a vfork child's store before its exit (errno
    after a failed exec) reaches the parent, as it does bare; and spawning
    from a process with 1 GiB touched (vfork+exec, posix_spawn, Python's
    subprocess.run) costs what it costs bare, within 1.5x and a few ms
    (vfork run as fork copied the page tables: 1 -> 125 ms)."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    bare = run([JOB, "vfork", data])
    td = os.path.join(tmp, "v")
    r = run([JOB, "vfork", data], td)
    check(bare.stdout.startswith("child_store 2\n"), f"bare: the child's store reaches the parent ({bare.stdout!r})")
    check(r.returncode == bare.returncode and r.stdout == bare.stdout,
          f"preloaded: the same ({r.stdout!r})")
    ts = traces(td)
    vforks = [p for t in ts for p in t["proc"] if p[0] == "vfork"]
    check(len(ts) == 1 and len(vforks) == 1, f"the parent's trace has its PROC vfork ({len(ts)} traces, {vforks})")
    mb = os.environ.get("RELIABILITY_SPAWN_MB", "1024")
    figures = {}
    for mode in ("bare", "preloaded"):
        td = os.path.join(tmp, "s" + mode) if mode == "preloaded" else None
        kv = keyvals(run([JOB, "spawntime", data, mb, "15"], td, timeout=120).stdout)
        pr = run(["/usr/bin/python3", "-c", PY_SPAWN, mb, data], td, timeout=120)
        check(pr.returncode == 0, f"{mode}: Python's subprocess.run works ({pr.stderr.strip()[-300:]!r})")
        py = keyvals(pr.stdout)
        figures[mode] = {k: float((kv.get(k) or py.get(k) or ["nan"])[0])
                         for k in ("vfork_ms", "spawn_ms", "subprocess_ms")}
    print(f"figures: {mb} MiB touched, median ms per spawn: {figures}")
    for k in ("vfork_ms", "spawn_ms", "subprocess_ms"):
        b, p = figures["bare"][k], figures["preloaded"][k]
        check(p <= 1.5 * b + SPAWN_SLACK_MS, f"{k}: {p:.2f} ms preloaded, {b:.2f} ms bare")


def story_reexec(tmp):
    """A process that execs itself 1100 times (one pid, 1101 program
    images, each with a read): every image has its file (<pid>.sprof,
    <pid>.1.sprof, ...); from image 1001 on they were refused ("cannot
    create a trace ... File exists")."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    n = 1100
    td = os.path.join(tmp, "t")
    t0 = time.monotonic()
    r = run([JOB, "reexec", data, str(n)], td, {"SCALEPROF_QUIET": "0", "SCALEPROF_CPU_HZ": "0"}, timeout=240)
    took = time.monotonic() - t0
    check(r.returncode == 0 and r.stdout == "images done\n", f"the job runs ({r.returncode}, {r.stdout[-80:]!r})")
    check(r.stderr == "", f"no line from the recorder ({r.stderr[:200]!r})")
    files = trace_files(td)
    ts = traces(td)
    got = sum(t["read_calls"].get(data, 0) for t in ts)
    print(f"figures: {n + 1} images in {took:.1f} s, {len(files)} files")
    check(len(files) == n + 1 and got == n + 1, f"a file for every image ({len(files)}), every read recorded ({got})")
    check(len({t["pid"] for t in ts}) == 1, "all of one pid")


# ---- what a recorded process costs: the footprint budget (docs/reliability.md) ----

# Per recorded process, over the same process bare, for a light one (10
# reads: nothing compressed, no library loaded) and a busy one (4000
# reads: libzstd loaded, chunks compressed), while it sleeps after:
BUDGET = {
    "threads": (1, 1),  # the service thread, which also compresses
    # the trace mapping (24 MiB), fd names (16 MiB, reserved), code, bss,
    # the stack; busy: + the service thread's malloc arena (64 MiB of
    # address space: glibc's dlopen of libzstd and zstd's context)
    "vmsize_kib": (46 << 10, 114 << 10),
    "vmrss_kib": (4 << 10, 4 << 10),
    # the trace's blocks while it lives: the header page, 256 KiB of the
    # string arena and 32 slots of 128 KiB, reserved ahead of use
    "disk_kib": (5 << 10, 5 << 10),
}
FOOTPRINT_READS = (10, 4000)
# Under RLIMIT_AS below 4 GiB (ulimit -v 131072 here): a trace of 32 slots
# and 1 MiB of strings, 1 MiB of fd names, no libzstd (so no arena)
BUDGET_TIGHT = {"threads": (1, 1), "vmsize_kib": (12 << 10, 12 << 10), "vmrss_kib": (4 << 10, 4 << 10),
                "disk_kib": (5 << 10, 5 << 10)}


def status_of(pid):
    with open(f"/proc/{pid}/status") as f:
        return {k: v.split()[0] for k, v in (ln.split(":", 1) for ln in f if ":" in ln) if v.split()}


def footprint(tmp, td, reads, as_limit=None):
    """Threads, VmSize and VmRSS (KiB) of the idle job, and the KiB its
    trace holds on disk, while it sleeps."""
    data = os.path.join(tmp, "data")
    if not os.path.exists(data):
        make_file(data, 4096)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if td:
        env.update(LD_PRELOAD=stories.LIB, SCALEPROF_DIR=td)
    def limit():
        if as_limit:
            import resource
            resource.setrlimit(resource.RLIMIT_AS, (as_limit, as_limit))

    p = subprocess.Popen([JOB, "idle", data, "1", str(reads)], env=env, stdout=subprocess.PIPE, text=True,
                         preexec_fn=limit, stderr=subprocess.DEVNULL)
    try:
        p.stdout.readline()
        time.sleep(0.3)  # the compressor has had its pass
        st = status_of(p.pid)
        disk = sum(os.stat(f).st_blocks // 2 for f in trace_files(td)) if td else 0
    finally:
        p.wait(timeout=30)
        p.stdout.close()
    return {"threads": int(st["Threads"]), "vmsize_kib": int(st["VmSize"]), "vmrss_kib": int(st["VmRSS"]),
            "disk_kib": disk}


def story_disk_beside(tmp):
    """10 workers, alive together, each writing 12 MiB to a 200 MiB file
    system that also holds their traces: every write succeeds, as bare
    (each live trace reserved 24 MiB: 6-9 of 10 failed with ENOSPC), and
    one line says the traces are smaller (free space below 64 trace
    reservations); needs root (a tmpfs of that size)."""
    with tmpfs(os.path.join(tmp, "fs"), 200) as mnt:
        data = make_file(os.path.join(tmp, "data"), 4096)
        env = dict(os.environ, LD_PRELOAD=stories.LIB, SCALEPROF_DIR=os.path.join(mnt, "t"), SCALEPROF_QUIET="0")
        procs = [subprocess.Popen([JOB, "fillwrite", data, os.path.join(mnt, f"out{i}"), "12", "0.5"], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for i in range(10)]
        outs = [p.communicate(timeout=60) for p in procs]
        failed = [keyvals(o)["write_failed"][0] if "write_failed" in o else "?" for o, _ in outs]
        print(f"figures: writes failed per worker {failed}; df: {shutil.disk_usage(mnt)}")
        check(all(f == "0" for f in failed), f"every worker's 12 writes succeed ({failed})")
        lines = [ln for _, e in outs for ln in e.splitlines()]
        check(all(p.returncode == 0 for p in procs) and len(lines) == 1 and "free on the trace directory" in lines[0],
              f"no worker harmed; one line for all ten says the traces are smaller (200 MiB is below 272): {lines}")
        check(len(trace_files(os.path.join(mnt, "t"))) == 10, "and each has its trace")


def story_footprint(tmp):
    """What a recorded process costs over the same process bare, read
    from /proc/PID/status while it sleeps after recording: threads,
    virtual size (RLIMIT_AS counts it), resident size, disk held by its
    live trace - each within the budget of docs/reliability.md."""
    for budget, as_limit, what in ((BUDGET, None, ""), (BUDGET_TIGHT, AS_LIMIT_MIB << 20, ", ulimit -v 131072")):
        for i, reads in enumerate(FOOTPRINT_READS):
            bare = footprint(tmp, None, reads, as_limit)
            rec = footprint(tmp, os.path.join(tmp, f"t{reads}{bool(as_limit)}"), reads, as_limit)
            added = {k: rec[k] - bare[k] for k in budget}
            print(f"figures: {reads} reads{what}: bare {bare}, recorded {rec}, added {added}")
            for k, limits in budget.items():
                check(added[k] <= limits[i], f"{reads} reads{what}: {k} +{added[k]} (budget {limits[i]})")


@contextmanager
def tmpfs(path, mib):
    """A tmpfs of MIB MiB mounted at PATH (made here) for the with-block,
    unmounted after; the story is skipped where none can be mounted
    (mounting needs root)."""
    os.makedirs(path)
    if os.geteuid() != 0 or subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={mib}m", "tmpfs", path],
                                           capture_output=True).returncode != 0:
        print("skipped (needs root: cannot mount a tmpfs)")
        sys.exit(SKIP)
    try:
        yield path
    finally:
        subprocess.run(["umount", path])


DISK_FS_MIB = 64
DISK_FILL_MIB = 48  # the job's own data, written first: 16 MiB are left
DISK_WORKERS = 16  # short processes alive together,
DISK_WRITERS = 6  # the first 6 of them writing 1 MiB each (within the room the recorder leaves)
DISK_FULL_RES = 4096 + (256 << 10) + 32 * (128 << 10)  # a new trace's reservation (preload.h)
DISK_LOW_RES = 4096 + (128 << 10) + 8 * (128 << 10)  # the smaller one, on a disk low on room
DISK_FLOOR = max(2 * DISK_FULL_RES, (DISK_FS_MIB << 20) // 100)  # never taken by the recorder


def tree_kib(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks // 2
            except OSError:
                pass
    return total


def story_disk_low(tmp):
    """A job on a 64 MiB file system that also holds its traces fills 48
    MiB of it itself, then starts 16 short processes together, 6 of them
    writing 1 MiB each while all are alive: not one write fails, recorded as bare (each live
    trace reserved 4.3 MiB: the job's writes failed with ENOSPC); the
    trace directory never holds more than the room the recorder may take
    (what was free less the floor, two trace reservations: before, under
    load, processes reading the free space together each reserved
    against it); one line says why, for the whole job; some processes are
    recorded.  Needs root (a tmpfs of that size)."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    got = {}
    for pre in (False, True):
        res = os.path.join(tmp, f"res{int(pre)}")
        os.makedirs(res)
        with tmpfs(os.path.join(tmp, f"fs{int(pre)}"), DISK_FS_MIB) as mnt:
            td = os.path.join(mnt, "t")
            script = (f"{JOB} fillwrite {data} {mnt}/fill {DISK_FILL_MIB} 0 > {res}/fill || exit 1\n"
                      f"i=0; while [ $i -lt {DISK_WORKERS} ]; do mb=0 s=1; [ $i -lt {DISK_WRITERS} ] && mb=1 s=0.5\n"
                      f"  {JOB} fillwrite {data} {mnt}/out$i $mb $s > {res}/w$i &\n"
                      "  i=$((i+1)); done; wait\n")
            env = dict(os.environ)
            env.pop("LD_PRELOAD", None)
            if pre:
                env.update(LD_PRELOAD=stories.LIB, SCALEPROF_DIR=td, SCALEPROF_QUIET="0")
            peak = [0]
            done = threading.Event()

            def watch():
                while not done.is_set():
                    peak[0] = max(peak[0], tree_kib(td))
                    time.sleep(0.005)

            w = threading.Thread(target=watch)
            w.start()
            try:
                r = subprocess.run(["sh", "-c", script], env=env, capture_output=True, text=True, timeout=60,
                                   start_new_session=True)
            finally:
                done.set()
                w.join()
            peak[0] = max(peak[0], tree_kib(td))
            failed = {}
            for f in sorted(os.listdir(res)):
                with open(os.path.join(res, f)) as fh:
                    kv = keyvals(fh.read())
                failed[f] = kv["write_failed"][0] if "write_failed" in kv else "?"
            ntraces = len(trace_files(td))
            got[pre] = (r, failed, peak[0], ntraces)
            how = "preloaded" if pre else "bare"
            print(f"figures: {how}: writes failed {failed}; trace directory at most {peak[0]} KiB, "
                  f"{ntraces} traces; df after: {shutil.disk_usage(mnt)}; stderr {r.stderr.strip()[:300]!r}")
    for pre in (False, True):
        r, failed, peak, ntraces = got[pre]
        how = "preloaded" if pre else "bare"
        check(r.returncode == 0 and len(failed) == DISK_WORKERS + 1 and all(v == "0" for v in failed.values()),
              f"{how}: every write of the job succeeds ({failed})")
    r, _, peak, ntraces = got[True]
    room = (DISK_FS_MIB - DISK_FILL_MIB << 20) - DISK_FLOOR  # what was free less the floor
    check(peak * 1024 <= room, f"the trace directory held at most {peak} KiB (the recorder's room: {room >> 10} KiB)")
    lines = r.stderr.splitlines()
    check(len(lines) == 1 and lines[0].startswith("scaleprof: ") and "free on the trace directory" in lines[0],
          f"one line for the whole job says why: {lines}")
    check(ntraces >= 1, f"the processes with room are recorded ({ntraces} traces)")


GROW_FS_MIB = 320  # roomy when the trace is made: its usual reservation, grown as used
GROW_FLOOR = max(2 * DISK_FULL_RES, (GROW_FS_MIB << 20) // 100)
GROW_WRITE_KIB = (GROW_FLOOR >> 10) - 64  # written last: fits in the floor
# (what the job leaves free beyond the floor, threads reading at once, reads after)
GROW_CASES = {"slots": (2048, 64, 0),         # the trace wants 32 more slots (4 MiB)
              "chunks": (128, 1, 1200000)}    # the trace appends ~1.4 MiB of compressed chunks


def story_disk_grow(tmp):
    """A job whose trace was made on a roomy file system fills it until
    the floor and a little more are left, then makes its trace grow: 64
    threads read at once (the trace wants 4 MiB more for their slots;
    the floor and 2 MiB were left), or one thread reads 1,200,000 times
    (the trace appends compressed chunks; the floor and 128 KiB were left;
    a slot holds about 18,000 reads, which repeat one another);
    then it writes what fits in the floor.  The write succeeds, as bare
    (before, the trace grew into the floor and the job's write failed
    with ENOSPC); one line says the trace grows no further; the trace is
    whole, what did not fit counted as dropped.  Needs root (a tmpfs of
    that size)."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    for case, (extra_kib, threads, reads) in GROW_CASES.items():
        got = {}
        for pre in (False, True):
            with tmpfs(os.path.join(tmp, f"{case}{int(pre)}"), GROW_FS_MIB) as mnt:
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                if pre:
                    env.update(LD_PRELOAD=stories.LIB, SCALEPROF_DIR=os.path.join(mnt, "t"), SCALEPROF_QUIET="0")
                r = subprocess.run([JOB, "growfill", data, mnt, str((GROW_FLOOR >> 10) + extra_kib), str(threads),
                                    str(reads), str(GROW_WRITE_KIB)], env=env, capture_output=True, text=True,
                                   timeout=60)
                kv = keyvals(r.stdout)
                ntraces = len(trace_files(os.path.join(mnt, "t")))
                ts = traces(os.path.join(mnt, "t")) if ntraces else []
                got[pre] = (r, kv, ntraces, ts)
                print(f"figures: {case}, {'preloaded' if pre else 'bare'}: {r.stdout.split()}; {ntraces} traces; "
                      f"df after: {shutil.disk_usage(mnt)}; stderr {r.stderr.strip()[:300]!r}")
        for pre in (False, True):
            r, kv, _, _ = got[pre]
            how = f"{case}, {'preloaded' if pre else 'bare'}"
            check(r.returncode == 0 and kv.get("threads") == [str(threads)], f"{how}: the job ran ({r.stdout!r})")
            check(kv.get("fill_failed") == ["0"] and kv.get("write_failed") == ["0"],
                  f"{how}: every write of the job succeeds (fill {kv.get('fill_failed')}, "
                  f"then {GROW_WRITE_KIB} KiB: {kv.get('write_failed')} failed, errno {kv.get('errno')})")
        r, _, ntraces, ts = got[True]
        lines = r.stderr.splitlines()
        check(len(lines) == 1 and "grows no further" in lines[0],
              f"{case}: one line says the trace stops growing: {lines}")
        check(ntraces == 1 and len(ts) == 1 and ts[0].get("closed"),
              f"{case}: the job is recorded, its trace closed and read ({ntraces} traces)")
        if len(ts) == 1:
            calls = ts[0]["read_calls"].get(data, 0)
            dropped = ts[0].get("dropped", 0)
            check(calls + dropped >= 1 + threads + reads and (reads == 0 or dropped > 0),
                  f"{case}: each of the job's {1 + threads + reads} reads of its file recorded or counted as "
                  f"dropped ({calls} recorded, {dropped} dropped)")


# ---- process limits ------------------------------------------------------------------

NPROC_LIMIT = 60
NPROC_WORKERS = 40
NOBODY = 65534


def pids_cgroup(tmp):
    """A fresh pids cgroup to put a job in (v2 where the pids controller is
    enabled below the mount, else v1's pids hierarchy), or None."""
    for mount, v2 in (("/sys/fs/cgroup", True), ("/sys/fs/cgroup/unified", True), ("/sys/fs/cgroup/pids", False)):
        if v2:
            try:
                with open(os.path.join(mount, "cgroup.subtree_control")) as f:
                    if "pids" not in f.read().split():
                        continue
            except OSError:
                continue
        elif not os.path.exists(os.path.join(mount, "pids.max")) and not os.path.exists(
                os.path.join(mount, "cgroup.procs")):
            continue
        path = os.path.join(mount, f"scaleprof-rel-{os.getpid()}-{len(os.listdir(tmp))}")
        try:
            os.mkdir(path)
            with open(os.path.join(path, "pids.max"), "w") as f:
                f.write(f"{NPROC_LIMIT}\n")
            return path
        except OSError:
            try:
                os.rmdir(path)
            except OSError:
                pass
    return None


def run_limited(cmd, tmp, td, how):
    """Run cmd (preloaded when td) as one process-limited job: in a pids
    cgroup of NPROC_LIMIT, or as user nobody under RLIMIT_NPROC (root's
    own processes are not held to RLIMIT_NPROC)."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    if td:
        env.update(LD_PRELOAD=stories.LIB, SCALEPROF_DIR=td, SCALEPROF_QUIET="0")
    group = None
    if how == "cgroup":
        group = pids_cgroup(tmp)

        def enter():
            with open(os.path.join(group, "cgroup.procs"), "w") as f:
                f.write(f"{os.getpid()}\n")
    else:
        import resource

        def enter():
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            resource.setrlimit(resource.RLIMIT_NPROC, (NPROC_LIMIT, NPROC_LIMIT))
    try:
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, preexec_fn=enter)
    finally:
        if group:
            os.rmdir(group)


def story_nproc(tmp):
    """Under a process limit of 60 (a pids cgroup, as containers set, and
    ulimit -u for a user other than root) a job that forks 40 workers,
    each reading once, loses no fork (each worker's recorder thread made
    the job's tasks 82: forks failed); its output is as bare, and a
    process too near the limit says once why it is not recorded."""
    if os.geteuid() != 0:
        print("skipped (needs root: a pids cgroup, and a second user for ulimit -u)")
        sys.exit(SKIP)
    os.chmod(tmp, 0o755)  # user nobody reaches the data and writes its traces
    data = make_file(os.path.join(tmp, "data"), 4096)
    os.chmod(data, 0o644)
    cmd = [JOB, "forker", str(NPROC_WORKERS), data]
    ways = ["ulimit"]
    probe = pids_cgroup(tmp)
    if probe:
        os.rmdir(probe)
        ways.append("cgroup")
    else:
        print("no writable pids cgroup here: ulimit -u only")
    for how in ways:
        bare = run_limited(cmd, tmp, None, how)
        check(bare.returncode == 0 and keyvals(bare.stdout).get("forks_failed") == ["0"],
              f"{how}: bare, the job forks its {NPROC_WORKERS} workers under a limit of {NPROC_LIMIT}: "
              f"{bare.stdout.split()}")
        td = os.path.join(tmp, "t-" + how)
        os.makedirs(td)
        os.chmod(td, 0o777)
        r = run_limited(cmd, tmp, td, how)
        print(f"figures: {how}: {r.stdout.split()}; {len(r.stderr.splitlines())} lines on stderr")
        check(r.returncode == bare.returncode and r.stdout == bare.stdout,
              f"{how}: preloaded, the job's output is as bare: {r.stdout.split()} ({r.stderr.strip()[:300]!r})")
        lines = r.stderr.splitlines()
        check(all(ln.startswith("scaleprof: ") and "limit" in ln for ln in lines),
              f"{how}: every line on stderr is the recorder's, about the limit ({lines[:2]})")
        ts = traces(td)
        check(len(ts) >= 1, f"{how}: the processes with room are recorded ({len(ts)} traces)")
        check(len(ts) + len(lines) == NPROC_WORKERS + 1,
              f"{how}: every process has its trace or its line ({len(ts)} + {len(lines)})")


AS_LIMIT_MIB = 128


def story_aslimit(tmp):
    """A job under an address-space limit of 128 MiB (RLIMIT_AS, set by
    the job itself or by ulimit -v before it) that reads a file 10 or 4000
    times (chunks filled: the compressor's library once made a malloc
    arena of 64 MiB), then mallocs 1 MiB blocks until one fails, gets
    within 10% of what it gets bare (it got 80 of 125 MiB); a line says
    the recorder took less."""
    import resource
    data = make_file(os.path.join(tmp, "data"), 4096)

    def ulimit_v():
        resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT_MIB << 20, AS_LIMIT_MIB << 20))

    for how, mb, pre in (("setrlimit", AS_LIMIT_MIB, None), ("ulimit -v", 0, ulimit_v)):
        for reads in (10, 4000):
            cmd = [JOB, "aslimit", str(mb), str(reads), data]
            got = {}
            for td in (None, os.path.join(tmp, f"t-{mb}-{reads}")):
                env = dict(os.environ)
                env.pop("LD_PRELOAD", None)
                if td:
                    env.update(LD_PRELOAD=stories.LIB, SCALEPROF_DIR=td, SCALEPROF_QUIET="0")
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, preexec_fn=pre)
                got[bool(td)] = (r, int(keyvals(r.stdout).get("malloc_mib", ["0"])[0]))
            (rb, bare), (rr, rec) = got[False], got[True]
            print(f"figures: {how}, {reads} reads: bare {bare} MiB, recorded {rec} MiB ({rec / max(bare, 1):.0%})")
            check(rb.returncode == 0 and rr.returncode == 0 and bare > 100,
                  f"{how}, {reads} reads: the job runs, bare and recorded ({bare} MiB bare)")
            check(rec >= 0.9 * bare, f"{how}, {reads} reads: {rec} MiB malloc'd recorded, within 10% of bare ({bare})")
            lines = rr.stderr.splitlines()
            check(len(lines) == 1 and "address space" in lines[0], f"{how}: one line says why: {lines}")
            ts = traces(td)
            n = ts[0]["read_calls"].get(data, 0) if len(ts) == 1 else 0
            check(len(ts) == 1 and n + ts[0]["dropped"] >= reads and n > 0,
                  f"{how}, {reads} reads: recorded ({n}, {ts[0]['dropped'] if ts else '-'} dropped)")


CLONE_READS = 200000


def story_clonevm(tmp):
    """A child made with clone(CLONE_VM) and no CLONE_SETTLS runs on its
    parent's thread-local storage, the trace's slot state with it; both
    pread 200,000 times at once (both appended through one slot: 372k of
    400k recorded, none counted as dropped).  Now every read of the parent
    is recorded, the child's are counted as dropped, none is lost, and
    the trace reads back without damage."""
    data = make_file(os.path.join(tmp, "data"), 4096)
    td = os.path.join(tmp, "t")
    r = run([JOB, "clonevm", str(CLONE_READS), data], td)
    kv = keyvals(r.stdout)
    check(r.returncode == 0 and kv.get("parent_reads") == [str(CLONE_READS)] and
          kv.get("child_reads") == [str(CLONE_READS)], f"the job runs: {r.stdout.split()}")
    ts = traces(td)
    check(len(ts) == 1, f"one trace ({len(ts)})")
    if not ts:
        return
    got, dropped = ts[0]["read_calls"].get(data, 0), ts[0]["dropped"]
    print(f"figures: preads {2 * CLONE_READS + 1}, recorded {got}, dropped (counted) {dropped}")
    check(got == CLONE_READS + 1, f"every read of the parent (and its first) is recorded, no more: {got}")
    check(got + dropped >= 2 * CLONE_READS + 1, f"the child's are counted as dropped: {dropped}")
    exe = os.environ["SCALEPROF_BIN"]
    d = subprocess.run([exe, "dump", trace_files(td)[0]], capture_output=True, text=True, timeout=60)
    check(d.returncode == 0 and not d.stderr.strip(), f"the trace reads back without a warning ({d.stderr.strip()[:200]!r})")


# ---- the analyzer's input -----------------------------------------------------------


def story_analyzer_fifo(tmp):
    """A FIFO named like a trace (x.sprof) given to dump, or lying in a
    trace directory given to report: opening it blocked forever (waiting
    for a writer); now it is refused as not a trace file, at once."""
    exe = os.environ["SCALEPROF_BIN"]
    td = os.path.join(tmp, "t")
    data = make_file(os.path.join(tmp, "data"), 4096)
    r = run([JOB, "touch", data, "0.05"], td)
    check(r.returncode == 0 and len(trace_files(td)) == 1, "a real trace to go with it")
    fifo = os.path.join(td, "x.sprof")
    os.mkfifo(fifo)
    for cmd in ([exe, "dump", fifo], [exe, "report", td]):
        t0 = time.monotonic()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=10)
            took = time.monotonic() - t0
            check(took < 5, f"{cmd[1]}: returns ({took:.2f} s, exit {r.returncode})")
            if cmd[1] == "dump":
                check(r.returncode != 0 and "x.sprof" in r.stderr, f"dump: a message naming the file ({r.stderr.strip()[:200]!r})")
            else:
                check(r.returncode in (0, 1), f"report: exit {r.returncode} ({r.stderr.strip()[:200]!r})")
        except subprocess.TimeoutExpired:
            check(False, f"{cmd[1]}: returns (blocked for 10 s on the FIFO)")


def story_analyzer_escapes(tmp):
    """A run ID holding terminal escapes (a title change and a screen
    clear) was printed raw by report and hang: every string from a trace
    reaches the terminal with its control bytes shown as \\xNN."""
    exe = os.environ["SCALEPROF_BIN"]
    td = os.path.join(tmp, "t")
    data = make_file(os.path.join(tmp, "data"), 4096)
    evil = "\x1b]0;owned\x07\x1b[2J"
    for run_id in (evil, "second-run"):
        r = run([JOB, "touch", data, "0.05"], td, {"SCALEPROF_RUN_ID": run_id})
        check(r.returncode == 0, f"the job with run ID {run_id!r} succeeds")
    check(len(trace_files(td)) == 2, "two traces, one per run")
    for verb in ("report", "hang"):
        r = subprocess.run([exe, verb, td], capture_output=True, text=True, timeout=30)
        out = r.stdout + r.stderr
        check("\x1b" not in out and "\x07" not in out, f"{verb}: no control byte reaches the terminal")
        check("\\x1b]0;owned" in out, f"{verb}: the run ID is shown, escaped ({out.strip()[:160]!r})")


def story_analyzer_utf8(tmp):
    """A file whose name is not UTF-8 (an overlong '/', an encoded
    surrogate, a code point above U+10FFFF) was copied byte for byte into
    `export` and `dump --json`, and a strict JSON reader rejected the
    output: every JSON the analyzer writes is valid UTF-8."""
    exe = os.environ["SCALEPROF_BIN"]
    td = os.path.join(tmp, "t")
    bad = os.path.join(tmp.encode(), b"data-\xc0\xaf-\xed\xa0\x80-\xf4\x90\x80\x80-\xe2\x82\xac")
    with open(bad, "wb") as f:
        f.write(b"x" * 4096)
    r = run([JOB, "touch", os.fsdecode(bad), "0.05"], td, {"RANK": "0", "WORLD_SIZE": "1"})
    check(r.returncode == 0 and len(trace_files(td)) == 1, "the job reads the file and leaves a trace")
    out = os.path.join(tmp, "timeline.json")
    outputs = []
    p = subprocess.run([exe, "dump", "--json", trace_files(td)[0]], capture_output=True, timeout=30)
    outputs.append(("dump --json", p.stdout))
    subprocess.run([exe, "export", td, "-o", out], capture_output=True, timeout=30)
    if os.path.exists(out):
        with open(out, "rb") as f:
            outputs.append(("export", f.read()))
    check(len(outputs) == 2, f"dump --json and export both wrote their JSON ({[w for w, _ in outputs]})")
    for what, data in outputs:
        try:
            text = data.decode("utf-8")  # strict: no surrogate, overlong or out-of-range form
            docs = [json.loads(line) for line in text.splitlines() if line.strip()] if what.startswith("dump") \
                else [json.loads(text)]
            ok = bool(docs)
        except (UnicodeDecodeError, ValueError) as e:
            ok = False
            print(f"  {what}: {e}")
        check(ok, f"{what}: valid UTF-8 JSON")
    check(any("\u20ac" in d.decode("utf-8", "replace") for _, d in outputs),
          "the valid part of the name (a euro sign) is kept")


# ---- what the trace reveals ---------------------------------------------------------


SECRETS = ["s3cr3t-tok-1", "hunter2pw", "xyzBEARER789", "k3yvalue", "envsecret-42", "hdrS3cret55",
           "urlPassw0rd6", "qsT0ken77"]


def story_argv_secrets(tmp):
    """Secrets on the command line are redacted in the trace header:
    --opt=value, --opt value, Header: value (also as --header=...),
    NAME=value, a URL's password and its ?token= parameter; nor does any
    environment secret reach a trace."""
    td = os.path.join(tmp, "t")
    url = f"https://alice:{SECRETS[6]}@data.example/shard?page=2&token={SECRETS[7]}&fmt=tar"
    argv = ["/bin/echo", "--api-token=" + SECRETS[0], "--password", SECRETS[1], "-H",
            "Authorization: Bearer " + SECRETS[2], "API_KEY=" + SECRETS[3], "--epochs", "3", "train.py",
            "--header=Authorization: Bearer " + SECRETS[5], url]
    r = run(argv, td, {"MY_SECRET_TOKEN": SECRETS[4]})
    check(r.returncode == 0 and SECRETS[0] in r.stdout, "the job got its arguments unchanged")
    ts = traces(td)
    check(len(ts) == 1, "one trace")
    shown = ts[0]["argv"] if ts else ""
    check(not any(s in shown for s in SECRETS), f"no secret in the recorded argv: {shown!r}")
    for keep in ("--api-token=<redacted>", "--password", "Authorization: <redacted>", "API_KEY=<redacted>",
                 "--epochs", "3", "train.py", "--header=Authorization: <redacted>",
                 "https://alice:<redacted>@data.example/shard?page=2&token=<redacted>&fmt=tar"):
        check(keep in shown, f"{keep!r} is kept")
    for path in trace_files(td):
        with open(path, "rb") as f:
            raw = f.read()
        check(not any(s.encode() in raw for s in SECRETS), f"no secret anywhere in the bytes of {path}")


# ---- attacks that already held --------------------------------------------------------


def story_errno(tmp):
    """errno is the job's across every intercepted call (tests/io's story)."""
    stories.story_errno(tmp)


def story_unwritable(tmp):
    """An unwritable directory stops recording, not the job (tests/io's story)."""
    stories.story_unwritable(tmp)


def story_full(tmp):
    """A full file system: the trace cannot be created or grow; the job
    runs unchanged with one line on stderr (needs a small tmpfs: root)."""
    with tmpfs(os.path.join(tmp, "small"), 2) as mnt:
        with open(os.path.join(mnt, "filler"), "wb") as f:
            try:
                f.write(b"\0" * (4 << 20))
            except OSError:
                pass
        data = make_file(os.path.join(tmp, "data"), 4096)
        cmd = [IO_STORY, "threads", "4", "10", data]
        plain = run(cmd)
        r = run(cmd, os.path.join(mnt, "t"), {"SCALEPROF_QUIET": "0"})
        check(r.returncode == plain.returncode and r.stdout == plain.stdout, "the job is unchanged")
        check(len(r.stderr.splitlines()) == 1 and "job continues" in r.stderr, f"one line: {r.stderr!r}")


def story_threads(tmp):
    """2000 threads alive at once, each reading once: every read is
    recorded or counted as dropped (128 slots cannot hold 2000 live
    threads' chunks at once), none silently lost, the job unharmed."""
    n = int(os.environ.get("RELIABILITY_THREADS", "2000"))
    data = make_file(os.path.join(tmp, "data"), 4096)
    r = run([JOB, "threads", str(n), data], os.path.join(tmp, "t"), {"SCALEPROF_CPU_HZ": "0"}, timeout=120)
    check(r.returncode == 0 and f"threads {n}" in r.stdout, f"{n} threads ran: {r.stdout.strip()!r}")
    ts = traces(os.path.join(tmp, "t"))
    check(len(ts) == 1, f"the job left one trace ({len(ts)})")
    if ts:
        got, dropped = ts[0]["read_calls"].get(data, 0), ts[0]["dropped"]
        print(f"figures: threads {n}, reads recorded {got}, dropped (counted) {dropped}")
        check(got <= n and got + dropped >= n, f"{got} recorded + {dropped} counted as dropped covers {n} reads")


def story_quiet_short(tmp):
    """A process that records nothing and ends within 20 ms (a shell's fork
    child on its way to exec, /bin/true) leaves no file; a quiet one that
    lives longer, and every one that records, leaves its file; the shell
    that forked them all has a fork event for each."""
    script = "for i in $(seq 20); do /bin/true; done; sleep 0.1; cat /etc/hostname"
    bare = run(["bash", "-c", script])
    td = os.path.join(tmp, "t")
    r = run(["bash", "-c", script], td)
    check(r.returncode == 0 and r.stdout == bare.stdout, "the job's output is as without the preload")
    ts = traces(td)
    names = sorted(os.path.basename(t["exe"]) for t in ts)
    print(f"figures: traces {len(ts)}: {names}")
    check(not [t for t in ts if os.path.basename(t["exe"]) == "true"], "no file for the 20 /bin/true")
    check(len([t for t in ts if os.path.basename(t["exe"]) == "sleep"]) == 1,
          "sleep (quiet, 100 ms) has its file")
    cats = [t for t in ts if os.path.basename(t["exe"]) == "cat"]
    check(len(cats) == 1 and cats[0]["read_calls"].get("/etc/hostname", 0) >= 1, "cat has its file, with its read")
    shells = [t for t in ts if os.path.basename(t["exe"]) == "bash"]
    forks = sum(1 for t in shells for p in t["proc"] if p[0] == "fork")
    check(forks >= 22, f"the shell's trace has a fork event for every child ({forks})")
    check(all(t["closed"] == 1 for t in ts), "every file reads back closed")


def story_compact_short(tmp):
    """Every cleanly closed trace ends at its content: a /bin/cat that
    reads a pipe (it interns no string), one that reads a file (it
    interns its path) and a process of 20000 reads each leave a file whose
    size (st_size, what tar, scp and object stores copy) is what it holds,
    not the reservation of a live trace; each reads back closed, with its
    reads."""
    text = os.path.join(tmp, "text")
    with open(text, "w") as f:
        f.write("some text\n" * 10)
    data = make_file(os.path.join(tmp, "data"), 4096)
    cases = [("cat of a pipe", ["sh", "-c", f"cat <{text} | cat >/dev/null"], None, 16 << 10),
             ("cat of a file", ["cat", text], text, 16 << 10),
             ("20000 reads", [IO_STORY, "threads", "1", "20000", data], data, 256 << 10)]
    for i, (what, cmd, path, limit) in enumerate(cases):
        td = os.path.join(tmp, f"t{i}")
        r = run(cmd, td)
        check(r.returncode == 0, f"{what}: the job runs ({r.stderr.strip()[:200]})")
        ts = {os.path.realpath(t["file"]): t for t in traces(td)}
        for f in trace_files(td):
            st = os.stat(f)
            t = ts.get(os.path.realpath(f), {})
            reads = t.get("io_ops", {}).get("read", 0)
            print(f"figures: {what}: {os.path.basename(t.get('exe', '?'))} {f}: {st.st_size} bytes "
                  f"({st.st_blocks * 512} on disk), {reads} reads, closed {t.get('closed')}")
            if os.path.basename(t.get("exe", "")) not in ("cat", "io_story"):
                continue  # the shell of the pipe case: its forks only
            check(st.st_size < limit, f"{what}: the trace is {st.st_size} bytes (under {limit})")
            check(t.get("closed") == 1 and reads >= 1, f"{what}: it reads back closed, with its reads ({reads})")
            if path:
                check(t["read_calls"].get(path, 0) >= 1, f"{what}: its reads name {path}")


def story_lazy_libraries(tmp):
    """The preload maps no library of its own at load: libzstd is loaded
    when a chunk is first worth compressing, libunwind when a call site is
    first wanted.  A short process that records a few reads maps neither,
    and its trace (stored uncompressed) reads back whole; a long one is
    compressed and reads back whole too."""
    td = os.path.join(tmp, "t")
    text = os.path.join(tmp, "text")
    with open(text, "w") as f:
        f.write("some text\n")
    r = run(["cat", text, "/proc/self/maps"], td)  # a recorded read, then what it maps
    check(r.returncode == 0 and "libc" in r.stdout, "the job runs")
    mapped = [m for m in ("libzstd", "libunwind", "liblzma") if m in r.stdout]
    check(not mapped, f"a short recorded process maps none of libzstd, libunwind, liblzma ({mapped})")
    ts = traces(td)
    check(len(ts) == 1 and ts[0]["read_calls"].get(text, 0) >= 1, "its trace reads back with its reads")
    data = make_file(os.path.join(tmp, "data"), 4096)
    n = 20000
    td2 = os.path.join(tmp, "t2")
    r = run([IO_STORY, "threads", "1", str(n), data], td2)
    ts = traces(td2)
    got = ts[0]["read_calls"].get(data, 0) if len(ts) == 1 else 0
    check(r.returncode == 0 and got == n, f"{n} reads in many chunks: all recorded ({got})")
    files = trace_files(td2)
    if files:
        size = os.stat(files[0]).st_blocks * 512
        check(size < n * 8, f"and compressed: {size} bytes on disk for {n} reads")


def story_fork(tmp):
    """fork while threads record, and posix_spawn (tests/io's stories)."""
    os.makedirs(os.path.join(tmp, "f"))
    os.makedirs(os.path.join(tmp, "s"))
    stories.story_forkbusy(os.path.join(tmp, "f"))
    stories.story_spawn(os.path.join(tmp, "s"))


if __name__ == "__main__":
    stories.main(globals(), "reliability.py", "scaleprof-rel-")
