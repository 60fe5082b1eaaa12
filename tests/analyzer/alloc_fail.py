#!/usr/bin/env python3
"""alloc_fail.py - the analyzer with one allocation failed.

A small trace set (4 ranks, a straggler, input waits, markers) is
analyzed by report (JSON and text), export, html, hang and compare with
all their memory, then again with the Nth allocation failed (failalloc.c,
preloaded: malloc, calloc or realloc returns NULL), for every N of a
small run or an even spread of N over a larger one.  Each run must:
  * not crash (no signal);
  * with status 0, have printed and written exactly what it did with all
    its memory;
  * with status 3, say on stderr that it ran out of memory;
  * with any other status, say why on stderr (an allocation inside libc,
    such as opendir's, fails as that call: "cannot open ...").
Prints how many runs ended each way, per command.

Environment: SCALEPROF_BIN, GEN_TRACE, FAILALLOC_LIB (meson passes them).
"""
import os
import subprocess
import sys
import tempfile

SCALEPROF = os.environ["SCALEPROF_BIN"]
GEN_TRACE = os.environ["GEN_TRACE"]
LIB = os.environ["FAILALLOC_LIB"]
RUNS_PER_COMMAND = int(os.environ.get("ALLOC_FAIL_RUNS", "250"))
NOMEM = 3


def run(cmd, out_file, fail_at=0, count_file=None):
    env = dict(os.environ, LD_PRELOAD=LIB, FAILALLOC_N=str(fail_at))
    if count_file:
        env["FAILALLOC_COUNT"] = count_file
    if out_file and os.path.exists(out_file):
        os.unlink(out_file)
    p = subprocess.run(cmd, capture_output=True, env=env, timeout=60)
    written = b""
    if out_file and os.path.exists(out_file):
        with open(out_file, "rb") as f:
            written = f.read()
    return p.returncode, p.stdout, p.stderr.decode(errors="replace"), written


def spread(total, n):
    """Every N up to total when that is few enough, else the first 40 and an
    even spread of the rest."""
    if total <= n:
        return list(range(1, total + 1))
    first = list(range(1, 41))
    step = (total - 40) / (n - 40)
    return first + sorted({40 + int(i * step) + 1 for i in range(n - 40)})


def main():
    if os.environ.get("SANITIZED", "none") != "none":
        # ASan's allocator must be the process's first: a preloaded one
        # before it stops the program at start, before any of ours runs.
        print(f"skipped: a build with -Db_sanitize={os.environ['SANITIZED']} cannot preload failalloc")
        sys.exit(77)
    failures = []
    with tempfile.TemporaryDirectory(prefix="scaleprof-allocfail-") as tmp:
        t = os.path.join(tmp, "t")
        subprocess.run([GEN_TRACE, t, "--ranks", "4", "--steps", "8", "--kernels", "6", "--input-ms", "2",
                        "--markers", "--slow-rank", "2", "--slow-compute-ms", "4"],
                       check=True, capture_output=True)
        out = os.path.join(tmp, "out")
        commands = {
            "report --json": ([SCALEPROF, "report", "--json", t], None),
            "report": ([SCALEPROF, "report", "--color=never", t], None),
            "export": ([SCALEPROF, "export", t, "-o", out + ".pftrace"], out + ".pftrace"),
            "html": ([SCALEPROF, "html", t, "-o", out + ".html"], out + ".html"),
            "hang": ([SCALEPROF, "hang", t], None),
            "compare": ([SCALEPROF, "compare", t, t], None),
        }
        for name, (cmd, out_file) in commands.items():
            count = os.path.join(tmp, "count")
            base = run(cmd, out_file, 0, count)
            with open(count) as f:
                total = int(f.read())
            if base[0] < 0:
                failures.append(f"{name}: crashed with all its memory ({base[2][-300:]})")
                continue
            ends = {"same answer": 0, "out of memory (3)": 0, "other error, said": 0}
            for n in spread(total, RUNS_PER_COMMAND):
                rc, stdout, stderr, written = run(cmd, out_file, n)
                where = f"{name}, allocation {n} of {total} failed"
                if rc < 0:
                    failures.append(f"{where}: killed by signal {-rc}: {stderr[-300:]}")
                elif rc == base[0] and stdout == base[1] and written == base[3]:
                    ends["same answer"] += 1
                elif rc == base[0]:
                    failures.append(f"{where}: status {rc} as with all its memory, but a different answer "
                                    f"(stderr: {stderr.strip()[-300:]!r})")
                elif rc == NOMEM:
                    ends["out of memory (3)"] += 1
                    if "out of memory" not in stderr:
                        failures.append(f"{where}: status 3 without saying it ran out of memory: {stderr[-300:]!r}")
                else:
                    ends["other error, said"] += 1
                    if not stderr.strip():
                        failures.append(f"{where}: status {rc} and nothing said")
            print(f"{name}: {total} allocations with all its memory (status {base[0]}); "
                  f"with one failed: " + ", ".join(f"{k} {v}" for k, v in ends.items()))
    for f in failures[:40]:
        print("FAIL " + f)
    if failures:
        print(f"{len(failures)} failure(s)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
