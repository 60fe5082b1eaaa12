#!/usr/bin/env python3
"""`scaleprof reduce` as a user runs it: a job's traces split over several
host directories, one reduce process per host through a launcher, then
the verbs on the summaries give what they give on the traces.

usage: reduce_test.py CASE   with SCALEPROF_BIN, GEN_TRACE and MAN_DIR set.
Each case prints what it checks and exits 1 on the first mismatch (77: the
launcher it needs is not installed)."""
import json, os, re, shutil, subprocess, sys, tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import testmain  # noqa: E402  (the command line every script takes)

SCALEPROF = os.environ["SCALEPROF_BIN"]
GEN = os.environ["GEN_TRACE"]
TMP = tempfile.mkdtemp(prefix="sprof-reduce-")
SKIP = 77


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def gen(name, *args):
    out = os.path.join(TMP, name)
    subprocess.run([GEN, out, *map(str, args)], check=True, stdout=subprocess.DEVNULL)
    return out


def scaleprof(*args, rc=0):
    p = subprocess.run([SCALEPROF, *map(str, args)], capture_output=True, text=True, timeout=120)
    if rc is not None and p.returncode != rc:
        fail(f"scaleprof {' '.join(map(str, args))}: exit {p.returncode}, wanted {rc}\n{p.stdout}\n{p.stderr}")
    return p


def without_provenance(text, d):
    """JSON of a verb with the directory it was given taken out: the only
    thing that may differ between traces and summaries."""
    doc = json.loads(text)

    def strip(x):
        if isinstance(x, dict):
            return {k: strip(v) for k, v in x.items() if k != "dir"}
        if isinstance(x, list):
            return [strip(v) for v in x]
        return x
    return json.dumps(strip(doc), sort_keys=False, indent=1)


def same(what, a, b):
    if a != b:
        al, bl = a.splitlines(), b.splitlines()
        for i, (x, y) in enumerate(zip(al, bl)):
            if x != y:
                fail(f"{what}: traces and summaries differ at line {i + 1}:\n  traces:    {x}\n  summaries: {y}")
        fail(f"{what}: traces and summaries differ in length ({len(al)} against {len(bl)} lines)")
    print(f"  {what}: identical ({len(a)} bytes)")


def parts_by_hand(traces, out, nparts, *extra):
    """nparts reduce processes started at once without a launcher
    (--part/--parts), as pdsh would start them."""
    ps = [subprocess.Popen([SCALEPROF, "reduce", traces, "-o", out, "--part", str(i), "--parts", str(nparts),
                            "--wait", "60", *map(str, extra)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
          for i in range(nparts)]
    for i, p in enumerate(ps):
        so, se = p.communicate(timeout=120)
        if p.returncode != 0:
            fail(f"reduce part {i} of {nparts}: exit {p.returncode}\n{so}\n{se}")
        print("  " + so.strip())


def mpirun_reduce(traces, out, np, *extra):
    mpirun = shutil.which("mpirun")
    if not mpirun:
        print("mpirun not found (Debian: openmpi-bin): skipped")
        sys.exit(SKIP)
    cmd = [mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(np), SCALEPROF, "reduce", traces,
           "-o", out, "--wait", "60", *map(str, extra)]
    env = dict(os.environ, OMPI_MCA_plm_rsh_agent="", OMPI_MCA_rmaps_base_oversubscribe="1")
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=180, env=env)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout}\n{p.stderr}")
    for line in sorted(p.stdout.splitlines()):
        print("  " + line)
    return p


def check_summary_files(out, nparts, rank_steps):
    names = sorted(os.listdir(out))
    want = [f"part-{i:06d}.spsum" for i in range(nparts)]
    if names != want:
        fail(f"{out} holds {names}, wanted {want} (and no .parts left)")
    total = sum(os.path.getsize(os.path.join(out, n)) for n in names)
    per = total / rank_steps
    print(f"  summaries: {total} bytes, {per:.0f} bytes per rank-step")
    if per > 4096:
        fail(f"{per:.0f} bytes per rank-step: more than a few KB")


def check_verbs(traces, out, *opts):
    """Every analyzing verb, on traces and on summaries, as a user reads it."""
    a = scaleprof("report", traces, "--json", "--per-step", *opts).stdout
    b = scaleprof("report", out, "--json", "--per-step", *opts).stdout
    same("report --json --per-step", without_provenance(a, traces), without_provenance(b, out))
    rep = json.loads(a)
    if not rep["findings"] and not rep["per_rank"]:
        fail("the report on the traces is empty: nothing was compared")
    a = scaleprof("report", traces, *opts).stdout.split("\n", 1)[1]
    b = scaleprof("report", out, *opts).stdout.split("\n", 1)[1]
    same("report (text, after the line naming the directory)", a, b)
    a = scaleprof("hang", traces, "--json", rc=None).stdout
    b = scaleprof("hang", out, "--json", rc=None).stdout
    same("hang --json", without_provenance(a, traces), without_provenance(b, out))
    ha, hb = os.path.join(TMP, "a.html"), os.path.join(TMP, "b.html")
    scaleprof("html", traces, "-o", ha, *opts)
    scaleprof("html", out, "-o", hb, *opts)
    pa = open(ha).read().replace(f">scaleprof report: {traces}<", "").replace(f"{traces} &middot;", "")
    pb = open(hb).read().replace(f">scaleprof report: {out}<", "").replace(f"{out} &middot;", "")
    same("html (the directory's name taken out)", pa, pb)
    return rep


def case_mpirun_four_hosts():
    """A job of 8 ranks on 4 hosts, one of them slow, with loader helpers:
    `mpirun -np 4 scaleprof reduce` writes one summary per host, a few KB
    per rank-step; report, hang and html on the summaries give what they
    give on the traces, byte for byte but the directory's name; compare
    takes summaries beside traces."""
    traces = gen("job", "--ranks", 8, "--hosts", 4, "--steps", 14, "--markers", "--helper",
                 "--slow-rank", 5, "--slow-compute-ms", 3, "--intra-coll", "--clock-error-us", 300)
    out = os.path.join(TMP, "summary")
    mpirun_reduce(traces, out, 4)
    check_summary_files(out, 4, 8 * 14)
    rep = check_verbs(traces, out)
    causes = [f["cause"] for f in rep["findings"]]
    print(f"  findings on both: {causes}")
    if "straggler" not in causes:
        fail(f"the slow rank 5 is not found as a straggler: {causes}")
    other = gen("job4", "--ranks", 4, "--hosts", 2, "--steps", 14, "--markers")
    a = scaleprof("compare", other, traces, "--json").stdout
    b = scaleprof("compare", other, out, "--json").stdout
    same("compare --json (4 GPUs of traces against 8 as traces / as summaries)",
         without_provenance(a, traces), without_provenance(b, out))


def case_parts_without_launcher():
    """Without a launcher's variables, --part/--parts say which process is
    which: 3 processes over 5 host directories (one takes two), on a job
    whose GPU records come late and whose hosts' links differ: the same
    report; reduced again into the same directory, the summaries are
    replaced, not mixed."""
    traces = gen("lag", "--ranks", 10, "--hosts", 5, "--steps", 12, "--gpu-thread-lag", 2,
                 "--pair-colls", "--slow-host", 3, "--inter-transfer-ms", 4)
    out = os.path.join(TMP, "lag-summary")
    parts_by_hand(traces, out, 3, "--skip", 2)
    check_summary_files(out, 3, 10 * 12)
    check_verbs(traces, out, "--skip", 2)
    parts_by_hand(traces, out, 3, "--skip", 2)
    check_summary_files(out, 3, 10 * 12)
    check_verbs(traces, out, "--skip", 2)


def case_refusals():
    """What summaries cannot answer is said, with exit 1, never a crash:
    dump, export and --kernels need events; options that shaped the
    summaries must be given again; a damaged or missing summary and a
    process whose peers never come are named; --help matches the man page."""
    traces = gen("small", "--ranks", 4, "--hosts", 2, "--steps", 10)
    out = os.path.join(TMP, "small-summary")
    parts_by_hand(traces, out, 2)
    checks = [
        (("export", out, "-o", os.path.join(TMP, "x.json")), "the timeline needs the events"),
        (("dump", os.path.join(out, "part-000000.spsum")), "holds no events"),
        (("report", out, "--kernels"), "summaries (scaleprof reduce) do not hold"),
        (("html", out, "--kernels", "-o", os.path.join(TMP, "k.html")), "summaries (scaleprof reduce) do not hold"),
        (("report", out, "--skip", 1), "was reduced with --skip 3"),
        (("report", out, "--steps", "4:6"), "was reduced with --skip 3"),
    ]
    for args, words in checks:
        p = scaleprof(*args, rc=1)
        if words not in p.stderr:
            fail(f"scaleprof {' '.join(map(str, args))}: stderr does not say '{words}':\n{p.stderr}")
        print(f"  {' '.join(map(str, args[:1] + args[2:]))}: refused ({words})")
    bad = os.path.join(TMP, "bad-summary")
    os.makedirs(bad)
    src = os.path.join(out, "part-000001.spsum")
    data = open(src, "rb").read()
    shutil.copy(os.path.join(out, "part-000000.spsum"), bad)
    for cut in (4, 60, len(data) // 3, len(data) - 1):
        with open(os.path.join(bad, "part-000001.spsum"), "wb") as f:
            f.write(data[:cut])
        p = scaleprof("report", bad, rc=1)
        if "part-000001.spsum" not in p.stderr or "could not be used" not in p.stderr:
            fail(f"a summary cut at byte {cut} is not named:\n{p.stderr}")
    print("  summaries cut at 4 points: each named, the report refused")
    for at in (20, len(data) // 2, len(data) - 8):
        flipped = bytearray(data)
        flipped[at] ^= 0x5A
        with open(os.path.join(bad, "part-000001.spsum"), "wb") as f:
            f.write(bytes(flipped))
        p = scaleprof("report", bad, rc=1)
        if "part-000001.spsum" not in p.stderr or "could not be used" not in p.stderr:
            fail(f"a summary with byte {at} flipped is not named:\n{p.stderr}")
    print("  a byte flipped at 3 points: each named, the report refused")
    os.remove(os.path.join(bad, "part-000001.spsum"))
    p = scaleprof("report", bad, "--json")
    rep = json.loads(p.stdout)
    if rep["ranks"] != 2 or rep["world_size"] != 4 or rep["missing_ranks"] != [2, 3]:
        fail(f"one host's summary of two: ranks {rep['ranks']}, missing {rep['missing_ranks']}")
    print("  one host's summary alone: its 2 ranks, ranks 2 and 3 missing as with one host's traces")
    lone = os.path.join(TMP, "lone")
    p = subprocess.run([SCALEPROF, "reduce", traces, "-o", lone, "--part", "0", "--parts", "2", "--wait", "1"],
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 1 or "part 1 of 2 not in" not in p.stderr:
        fail(f"a reduce whose peer never starts: exit {p.returncode}\n{p.stderr}")
    print("  a peer that never starts: " + p.stderr.strip().splitlines()[0])
    scaleprof("reduce", traces, rc=2)
    scaleprof("reduce", "-o", lone, rc=2)
    scaleprof("reduce", traces, "-o", lone, "--part", 1, rc=2)
    helptext = scaleprof("reduce", "--help").stdout
    with open(os.path.join(os.environ["MAN_DIR"], "scaleprof-reduce.1")) as f:
        man = f.read().replace("\\-", "-")
    for opt in sorted(set(re.findall(r"--[a-z][a-z-]+", helptext))):
        if opt not in man:
            fail(f"{opt} of scaleprof reduce is not in scaleprof-reduce.1")
    print("  every option of --help is in scaleprof-reduce.1")


if __name__ == "__main__":
    testmain.run(globals(), cleanup=lambda: shutil.rmtree(TMP, ignore_errors=True))
