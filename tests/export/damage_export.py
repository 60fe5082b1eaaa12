#!/usr/bin/env python3
"""A trace set damaged at random never crashes export or html.

The rounds of tests/analyzer/damage.py (files cut, bytes flipped, files
deleted, replaced or added), then `scaleprof export --whatif none` and
`scaleprof html` on each damaged copy: exit 0 or 1, never a signal or a
usage error, a reason on stderr for 1, and when export exits 0 a timeline
that parses (the JSON, and the Perfetto trace through perfetto_check's
decoder), when html exits 0 a page that ends.

usage: damage_export.py [ITERATIONS] [SEED]  (SCALEPROF_BIN, GEN_TRACE)."""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "analyzer"))
import damage  # noqa: E402  (its rounds; its main() runs only as a script)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import perfetto_check  # noqa: E402


def main():
    rng = random.Random(damage.SEED)
    print(f"seed {damage.SEED}, {damage.ITERATIONS} rounds")
    tmp = tempfile.mkdtemp(prefix="sprof-damage-export-")
    try:
        intact = os.path.join(tmp, "intact")
        subprocess.run([damage.GEN, intact, "--ranks", "4", "--hosts", "2", "--steps", "20", "--kernels", "20",
                        "--markers", "--helper", "--input-ms", "1", "--slow-rank", "1", "--slow-compute-ms", "1"],
                       check=True, stdout=subprocess.DEVNULL)
        exits = {0: 0, 1: 0}
        for i in range(damage.ITERATIONS):
            d = os.path.join(tmp, "damaged")
            shutil.rmtree(d, ignore_errors=True)
            shutil.copytree(intact, d)
            done = []
            for _ in range(rng.randint(1, damage.MAX_DAMAGES)):
                files = damage.traces(d)
                done.append(rng.choice(damage.DAMAGES if files else [damage.foreign])(rng, files, d))
            what = f"round {i} (seed {damage.SEED}): " + "; ".join(done)
            out = os.path.join(tmp, "t.json")
            p, _ = damage.run("export", ["export", d, "-o", out, "--whatif", "none"], what)
            exits[p.returncode] += 1
            if p.returncode == 0:
                with open(out) as f:
                    try:
                        json.load(f)
                    except ValueError as e:
                        damage.fail(f"export wrote invalid JSON ({e}) after: {what}")
            pf = os.path.join(tmp, "t.pftrace")
            p, _ = damage.run("export", ["export", d, "-o", pf, "--whatif", "none"], what)
            if p.returncode == 0:
                with open(pf, "rb") as f:
                    try:
                        perfetto_check.PerfettoTrace(f.read()).as_json()
                    except perfetto_check.Failure as e:
                        damage.fail(f"export wrote a Perfetto trace that does not read back ({e}) after: {what}")
            page = os.path.join(tmp, "p.html")
            p, _ = damage.run("html", ["html", d, "-o", page], what)
            if p.returncode == 0:
                with open(page, encoding="utf-8") as f:
                    if not f.read().rstrip().endswith("</html>"):
                        damage.fail(f"html wrote a page that does not end after: {what}")
        print(f"{damage.ITERATIONS} damaged copies: export exited 0 {exits[0]} times, 1 {exits[1]} times")
        if not exits[0]:
            damage.fail("no damaged copy was exported: the rounds tested too little")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


main()
