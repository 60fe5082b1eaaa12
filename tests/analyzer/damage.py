#!/usr/bin/env python3
"""A trace set damaged at random never crashes the analyzer.

Traces come off machines that crash, disks that fill and copies that stop
half way.  This test takes a small generated multi-rank trace set and, in
ITERATIONS rounds, copies it and damages the copy at random: a file cut at
a random offset, random bytes flipped in random files, a file deleted, a
file replaced by random bytes or by nothing, a foreign file added (one or
more of these per round).  Then `scaleprof report --json` and `scaleprof
compare` (the intact set against the damaged one) must:
  - exit 0 or 1: never a signal, never 2 (that is for usage errors);
  - say why on stderr when they exit 1;
  - print valid JSON when report exits 0;
  - finish within RUN_TIMEOUT seconds.

usage: damage.py [ITERATIONS] [SEED]   with SCALEPROF_BIN and GEN_TRACE in the
environment.  The seed is printed, so a failing round can be replayed."""
import json, os, random, shutil, subprocess, sys, tempfile, time

SCALEPROF = os.environ["SCALEPROF_BIN"]
GEN = os.environ["GEN_TRACE"]
ITERATIONS = int(sys.argv[1]) if len(sys.argv) > 1 else 200
SEED = int(sys.argv[2]) if len(sys.argv) > 2 else int(time.time())
RUN_TIMEOUT = 20  # seconds; a small trace set reports in well under one
MAX_DAMAGES = 3   # damages per round


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def traces(d):
    return sorted(os.path.join(root, f) for root, _, files in os.walk(d) for f in files)


def cut(rng, files, d):
    f = rng.choice(files)
    size = os.path.getsize(f)
    at = rng.randrange(size + 1)
    os.truncate(f, at)
    return f"cut {os.path.relpath(f, d)} at {at} of {size}"


def flip(rng, files, d):
    f = rng.choice(files)
    size = os.path.getsize(f)
    if not size:
        return f"flip nothing in empty {os.path.relpath(f, d)}"
    n = rng.randint(1, 16)
    with open(f, "rb") as fh:
        data = fh.read()
    # a trace is mostly unused slot space (zeros): aim half the flips at
    # bytes that carry something (header, strings, frames)
    used = [i for i in range(0, size, 7) if data[i]]
    with open(f, "r+b") as fh:
        for _ in range(n):
            at = rng.choice(used) if used and rng.random() < 0.5 else rng.randrange(size)
            fh.seek(at)
            b = fh.read(1)[0]
            fh.seek(at)
            fh.write(bytes([b ^ (1 << rng.randrange(8)) if rng.random() < 0.7 else rng.randrange(256)]))
    return f"flip {n} bytes in {os.path.relpath(f, d)}"


def delete(rng, files, d):
    f = rng.choice(files)
    os.unlink(f)
    return f"delete {os.path.relpath(f, d)}"


def replace_random(rng, files, d):
    f = rng.choice(files)
    n = rng.choice([0, 1, 7, 64, 4096, rng.randrange(1 << 16)])
    with open(f, "wb") as fh:
        fh.write(rng.randbytes(n))
    return f"replace {os.path.relpath(f, d)} with {n} random bytes"


def foreign(rng, files, d):
    name = rng.choice(["notes.txt", "core", "x.sprof", "host0/stray.sprof", "host9/9.sprof"])
    path = os.path.join(d, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    data = rng.choice([b"", b"hello\n", rng.randbytes(rng.randrange(1, 9000))])
    if name.endswith(".sprof") and files and rng.random() < 0.5:
        # the start of a real trace: a valid header over a foreign body
        with open(rng.choice(files), "rb") as fh:
            data = fh.read(rng.randrange(64, 8192)) + data
    with open(path, "wb") as fh:
        fh.write(data)
    return f"add {name} ({len(data)} bytes)"


def wreck_all(rng, files, d):
    """Every file cut or replaced: usually nothing is left to analyze."""
    for f in files:
        rng.choice([cut, replace_random])(rng, [f], d)
    return f"cut or replace all {len(files)} files"


DAMAGES = [cut, flip, delete, replace_random, foreign, wreck_all]


def run(what, args, damage):
    t0 = time.monotonic()
    try:
        p = subprocess.run([SCALEPROF, *args], capture_output=True, text=True, timeout=RUN_TIMEOUT,
                           errors="replace")
    except subprocess.TimeoutExpired:
        fail(f"{what} ran over {RUN_TIMEOUT} s after: {damage}")
    took = time.monotonic() - t0
    if p.returncode < 0:
        fail(f"{what} killed by signal {-p.returncode} after: {damage}\n{p.stderr[-2000:]}")
    if p.returncode not in (0, 1):
        fail(f"{what} exit {p.returncode} (wanted 0 or 1) after: {damage}\n{p.stderr[-2000:]}")
    if p.returncode == 1 and not p.stderr.strip():
        fail(f"{what} exit 1 with nothing on stderr after: {damage}")
    return p, took


def main():
    print(f"seed {SEED}, {ITERATIONS} rounds")
    rng = random.Random(SEED)
    tmp = tempfile.mkdtemp(prefix="sprof-damage-")
    try:
        intact = os.path.join(tmp, "intact")
        subprocess.run([GEN, intact, *map(str, ["--ranks", 4, "--hosts", 2, "--steps", 30, "--kernels", 60,
                                                "--markers", "--helper", "--input-ms", 1])],
                       check=True, stdout=subprocess.DEVNULL)
        exits = {0: 0, 1: 0}
        slowest = 0.0
        for i in range(ITERATIONS):
            d = os.path.join(tmp, "damaged")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(intact, d)
            done = []
            for _ in range(rng.randint(1, MAX_DAMAGES)):
                files = traces(d)
                kinds = DAMAGES if files else [foreign]
                done.append(rng.choice(kinds)(rng, files, d))
            damage = f"round {i} (seed {SEED}): " + "; ".join(done)
            p, took = run("report --json", ["report", d, "--json"], damage)
            slowest = max(slowest, took)
            exits[p.returncode] += 1
            if p.returncode == 0:
                try:
                    json.loads(p.stdout)
                except ValueError as e:
                    fail(f"report --json printed invalid JSON ({e}) after: {damage}\n{p.stdout[:2000]}")
            _, took = run("compare", ["compare", intact, d], damage)
            slowest = max(slowest, took)
        print(f"{ITERATIONS} damaged copies: report exited 0 {exits[0]} times, 1 {exits[1]} times; "
              f"no signal, no usage error, slowest run {slowest:.2f} s")
        if not exits[0] or not exits[1]:
            fail("the damage never let a report through, or never stopped one: the rounds tested too little")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
