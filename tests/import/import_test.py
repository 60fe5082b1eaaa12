#!/usr/bin/env python3
"""Stories of a user who brings PyTorch-profiler (Kineto) traces to scaleprof.

Run as `import_test.py CASE`; meson registers one test per case.  Each case
imports a trace with `scaleprof import kineto`, reads the result back with
the format library's reader (sprof_events, JSON lines) or with
`scaleprof report --json`, and checks what a user would check.  Expected
numbers are computed here from the JSON itself, independently of the C
code, wherever they are not simply written in the hand-made trace.

Environment (set by meson): SCALEPROF, SPROF_EVENTS, DATA (the data folder).
"""
import decimal
import gzip
import json
import os
import re
import subprocess
import sys
import tempfile
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from intervals import measure, union  # noqa: E402  (the traces' time intervals)

SCALEPROF = os.environ["SCALEPROF"]
SPROF_EVENTS = os.environ["SPROF_EVENTS"]
DATA = os.environ["DATA"]
SKIP = 77

SP_FLAG_CLOSED, SP_FLAG_IMPORTED, SP_FLAG_NO_FILE_IO, SP_FLAG_NO_CPU = 1, 2, 4, 8
GPU_KERNEL, GPU_MEMCPY, GPU_MEMSET, GPU_NCCL_KERNEL = 1, 2, 3, 4
COPY_H2D, COPY_D2H, COPY_D2D = 1, 2, 3
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE = 1, 2, 3
NCCL_ALLREDUCE, NCCL_BROADCAST, NCCL_ALLGATHER, NCCL_REDUCESCATTER, NCCL_SEND, NCCL_RECV = 1, 2, 4, 5, 6, 7
CUDA_LAUNCH, CUDA_DEVICE_SYNC, CUDA_STREAM_SYNC, CUDA_EVENT_SYNC = 1, 3, 4, 5
CUDA_STREAM_WAIT_EVENT, CUDA_MEMCPY, CUDA_MEMCPY_ASYNC = 6, 7, 8
MARK_RANGE = 4
WAIT_DATALOADER = 6


class Failed(Exception):
    pass


def check(cond, what):
    if not cond:
        raise Failed(what)


def data(name):
    return os.path.join(DATA, name)


def run(args, expect_rc=None):
    p = subprocess.run(args, capture_output=True, text=True, timeout=50)
    if expect_rc is not None and p.returncode != expect_rc:
        raise Failed("%s exited %d, expected %d\nstdout: %s\nstderr: %s"
                     % (" ".join(args), p.returncode, expect_rc, p.stdout, p.stderr))
    return p


def import_traces(out, *inputs, expect_rc=0, extra=()):
    return run([SCALEPROF, "import", "kineto", *inputs, "-o", out, *extra], expect_rc)


def read_trace(path):
    """(header, events) of a scaleprof trace, through the public reader."""
    p = run([SPROF_EVENTS, path], 0)
    lines = [json.loads(l) for l in p.stdout.splitlines()]
    header = lines[0]["header"]
    check("diag" in lines[-1], "reader output ends with its diagnostics line")
    return header, lines[1:-1]


def of_type(events, type_, **fields):
    return [e for e in events if e["type"] == type_ and all(e[k] == v for k, v in fields.items())]


def only(events, what):
    check(len(events) == 1, "exactly one %s, got %d: %s" % (what, len(events), events))
    return events[0]


def imported_header_ok(h, pid):
    check(h["pid"] == pid, "header pid %s is the trace's process %d" % (h["pid"], pid))
    want = SP_FLAG_IMPORTED | SP_FLAG_NO_FILE_IO | SP_FLAG_NO_CPU
    check(h["flags"] & want == want, "header flags %#x say imported, no file I/O, no CPU" % h["flags"])
    check(h["closed"] == 1, "the output file was closed cleanly")
    check(h["source"] == "import:kineto", "source TLV is import:kineto, got %r" % h["source"])


def load_kineto(name):
    opener = gzip.open if name.endswith(".gz") else open
    with opener(data(name), "rt") as f:
        return json.load(f)


# ---- one hand-made trace per mapping rule ----------------------------------


def case_kernels_and_copies(tmp):
    """Kernels, copies and memsets keep their times to the nanosecond."""
    p = import_traces(tmp, data("kernels_copies.json"))
    check(re.search(r"skipped 1 cpu_op, 1 ac2g", p.stdout), "summary counts the skipped: " + p.stdout)
    h, evs = read_trace(os.path.join(tmp, "imported", "4242.sprof"))
    imported_header_ok(h, 4242)
    check((h["rank"], h["world_size"]) == (0, 1), "no distributedInfo: a single process, rank 0 of 1")
    k = only(of_type(evs, "gpu", kind=GPU_KERNEL, name="void gemm_kernel<float>(float*, int)"), "gemm kernel")
    check(k["t"] == 1623142623460111123, "kernel start keeps all digits of 1623142623460111.123 us: %d" % k["t"])
    check(k["dur"] == 41407, "kernel duration 41.407 us = 41407 ns: %d" % k["dur"])
    check((k["device"], k["stream"], k["correlation"]) == (0, 7, 11), "kernel device/stream/correlation")
    check(k["grid"] == 80 * 2 * 256, "grid is total threads 80*2*1 x 256: %d" % k["grid"])
    h2d = only(of_type(evs, "gpu", kind=GPU_MEMCPY, copy_kind=COPY_H2D), "HtoD copy")
    check((h2d["t"], h2d["dur"], h2d["bytes"]) == (2000000, 12000, 92928), "HtoD copy time and bytes: %s" % h2d)
    d2h = only(of_type(evs, "gpu", kind=GPU_MEMCPY, copy_kind=COPY_D2H), "DtoH copy")
    check((d2h["device"], d2h["stream"], d2h["bytes"]) == (1, 9, 4), "DtoH copy on device 1: %s" % d2h)
    check((h2d["src_mem"], h2d["dst_mem"]) == (MEM_PAGEABLE, MEM_DEVICE),
          "'(Pageable -> Device)' gives the copy's memory kinds: %s" % h2d)
    check((d2h["src_mem"], d2h["dst_mem"]) == (MEM_DEVICE, MEM_PINNED),
          "'(Device -> Pinned)' gives the copy's memory kinds: %s" % d2h)
    d2d = only(of_type(evs, "gpu", kind=GPU_MEMCPY, copy_kind=COPY_D2D), "DtoD copy")
    check(d2d["t"] == 2200000 and d2d["dur"] == 5088, "2.2e3 us parses to 2200000 ns: %s" % d2d)
    ms = only(of_type(evs, "gpu", kind=GPU_MEMSET), "memset")
    check(ms["bytes"] == 6291456 and ms["dur"] == 4960, "memset bytes and duration: %s" % ms)
    only(of_type(evs, "gpu", kind=GPU_KERNEL, name="legacy_category_kernel"), "kernel from the old 'Kernel' category")
    launch = only(of_type(evs, "cuda", api=CUDA_LAUNCH), "launch")
    check((launch["t"], launch["dur"], launch["correlation"]) == (1000250, 3500, 11), "launch: %s" % launch)
    check(len(evs) == 7, "7 events written, nothing else: %d" % len(evs))


def case_nccl_from_kernels(tmp):
    """NCCL kernels become both GPU activity and collectives that match across ranks."""
    import_traces(tmp, data("nccl.json"))
    h, evs = read_trace(os.path.join(tmp, "imported", "2001.sprof"))
    check(h["rank"] == 3 and h["world_size"] == 4, "rank 3 of 4 from distributedInfo: %s" % h)
    check(len(of_type(evs, "gpu", kind=GPU_NCCL_KERNEL)) == 6, "six NCCL kernels as nccl_kernel activity")
    nccl = sorted(of_type(evs, "nccl"), key=lambda e: e["t"])
    check(len(nccl) == 6, "six synthesized NCCL events, got %d" % len(nccl))
    ar, ag, rs, sr1, sr2, bc = nccl
    check(ar["op"] == NCCL_ALLREDUCE and ar["bytes"] == 6637568 * 4 and ar["count"] == 6637568,
          "allreduce of 6637568 floats: %s" % ar)
    check(ar["datatype"] == 7 and ar["nranks"] == 2 and ar["rank"] == 1,
          "float, group of 2, this rank (3) is index 1 of [1, 3]: %s" % ar)
    check(ar["t"] == 5000500 and ar["gpu_start"] == 5000500 and ar["gpu_dur"] == 2636669,
          "collective timed by its kernel: %s" % ar)
    check((ar["correlation"], ar["stream"], ar["device"]) == (600, 40, 1), "correlation/stream/device: %s" % ar)
    check(ag["op"] == NCCL_ALLGATHER and ag["bytes"] == 2000 and ag["datatype"] == 9, "bf16 allgather: %s" % ag)
    check(ag["comm"] == ar["comm"] and (ar["seq"], ag["seq"], bc["seq"]) == (1, 2, 3),
          "same process group, sequence counted in order: %s" % [ar["seq"], ag["seq"], bc["seq"]])
    check(bc["op"] == NCCL_BROADCAST and bc["bytes"] == 24, "broadcast of 3 longs: %s" % bc)
    check(rs["op"] == NCCL_REDUCESCATTER and rs["seq"] == 17 and rs["comm"] != ar["comm"],
          "reduce_scatter on another group keeps the trace's Seq 17: %s" % rs)
    check(rs["rank"] == 3 and rs["nranks"] == 4 and rs["bytes"] == 8192, "fp16, rank 3 of 4: %s" % rs)
    check(sr1["op"] == NCCL_SEND and sr1["comm"] == sr2["comm"] and (sr1["seq"], sr2["seq"]) == (1, 2),
          "SendRecv kernels without arguments: one communicator per stream, counted: %s %s" % (sr1, sr2))
    check(sr1["bytes"] == 0 and sr1["rank"] == -1, "unknown size and rank stay unknown: %s" % sr1)


def case_cuda_runtime_calls(tmp):
    """Launches, syncs and copies are kept with their correlation; other runtime calls are not."""
    p = import_traces(tmp, data("runtime.json"))
    check("skipped 2 cuda_runtime" in p.stdout, "cudaGetDevice and cudaEventRecord skipped: " + p.stdout)
    h, evs = read_trace(os.path.join(tmp, "imported", "77.sprof"))
    imported_header_ok(h, 77)
    apis = [(e["api"], e["correlation"], e["dur"]) for e in sorted(of_type(evs, "cuda"), key=lambda e: e["t"])]
    want = [(CUDA_LAUNCH, 1, 5000), (CUDA_LAUNCH, 2, 6000), (CUDA_DEVICE_SYNC, 3, 700000),
            (CUDA_STREAM_SYNC, 4, 40000), (CUDA_EVENT_SYNC, 5, 30000), (CUDA_MEMCPY_ASYNC, 6, 8000),
            (CUDA_MEMCPY, 7, 80000), (CUDA_STREAM_WAIT_EVENT, 8, 2000)]
    check(apis == want, "runtime calls mapped:\n got  %s\n want %s" % (apis, want))


def case_steps_and_dataloader(tmp):
    """ProfilerStep ranges mark steps; DataLoader waits say the host waited for input."""
    import_traces(tmp, data("steps_dataloader.json"))
    h, evs = read_trace(os.path.join(tmp, "imported", "555.sprof"))
    check(h["rank"] == 0 and h["world_size"] == 2, "rank from distributedInfo")
    steps = sorted(of_type(evs, "marker", kind=MARK_RANGE), key=lambda e: e["t"])
    check([(s["name"], s["t"], s["dur"]) for s in steps] ==
          [("ProfilerStep#3", 10000000, 150000500), ("ProfilerStep#4", 160001000, 140000000)],
          "two host-side step ranges (the GPU-side annotation is not a step): %s" % steps)
    waits = sorted(of_type(evs, "wait", op=WAIT_DATALOADER), key=lambda e: e["t"])
    check([(w["t"], w["dur"]) for w in waits] == [(10010000, 60000000), (160002000, 1400000)],
          "both loader iterators' __next__ are input waits, the python frame is not: %s" % waits)
    base = 1711964646000000000
    check(h["start_mono"] == 10000000 and h["start_real"] == base + 10000000,
          "start clocks on the trace's axis, wall clock from baseTimeNanoseconds: %s" % h)
    check(h["end_mono"] == 300001000 and h["end_real"] == base + 300001000, "end clocks: %s" % h)


GPU_CATS = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")


def case_lanes_keep_trace_order(tmp):
    """Steps, runtime calls and GPU activity come back as three threads, each in the trace's order."""
    name = "sampled128_rank0.json.gz"
    import_traces(tmp, data(name))
    with gzip.open(data(name), "rt") as f:  # exact decimals: ts is epoch microseconds
        trace = json.load(f, parse_float=decimal.Decimal)
    pid = next(e["pid"] for e in trace["traceEvents"] if e.get("cat") in ("cpu_op", "user_annotation"))
    h, evs = read_trace(os.path.join(tmp, "imported", "%d.sprof" % pid))
    check(h["events_dropped"] == 0, "nothing lost: %s" % h)
    tids = {}
    for e in evs:
        lane = {"marker": "host", "wait": "host", "cuda": "cuda", "gpu": "gpu", "nccl": "gpu"}[e["type"]]
        tids.setdefault(lane, set()).add(e["tid"])
    check(all(len(t) == 1 for t in tids.values()) and len(tids) == 3,
          "one thread per lane: %s" % tids)
    check(len(set.union(*tids.values())) == 3, "three distinct threads: %s" % tids)
    # The GPU lane keeps Kineto's order, which is not sorted by time in
    # this trace: the importer neither sorts nor loses a record.
    want = [int(e["ts"] * 1000) for e in trace["traceEvents"]
            if e.get("ph") == "X" and e.get("cat") in GPU_CATS and "ts" in e]
    got = [e["t"] for e in evs if e["type"] == "gpu"]
    check(len(got) == len(want), "every GPU record: %d of %d" % (len(got), len(want)))
    check(all(abs(g - w) <= 1 for g, w in zip(got, want)), "GPU records in the trace's order")
    check(any(b < a for a, b in zip(want, want[1:])), "this trace has GPU records out of time order")


# ---- failures a user will meet ----------------------------------------------


def case_malformed_json_keeps_events(tmp):
    """A damaged file: the error names its position, the events before it are kept."""
    text = open(data("nccl.json")).read()
    cut = text.index('{"ph": "X", "cat": "kernel", "name": "ncclDevKernel_ReduceScatter')
    bad = os.path.join(tmp, "bad.json")
    open(bad, "w").write(text[:cut] + "@@@ " + text[cut:])
    p = import_traces(os.path.join(tmp, "out"), bad, expect_rc=1)
    m = re.search(r"malformed JSON at byte (\d+) \(line (\d+), column (\d+)\)", p.stderr)
    check(m, "message with byte offset and line:column: " + p.stderr)
    line = text[:cut].count("\n") + 1
    check(abs(int(m.group(1)) - cut) <= 4 and int(m.group(2)) == line,
          "position %s near byte %d, line %d" % (m.groups(), cut, line))
    h, evs = read_trace(os.path.join(tmp, "out", "imported", "2001.sprof"))
    check(h["closed"] == 1, "output closed and valid")
    check(len(of_type(evs, "nccl")) == 2, "the two collectives before the damage are kept")


def case_truncated_gzip_keeps_events(tmp):
    """A trace cut short (a job killed while writing it): error at the end, events kept."""
    raw = gzip.open(data("resnet50_num_workers_0.pt.trace.json.gz")).read()
    cut = len(raw) // 2
    short = os.path.join(tmp, "short.json.gz")
    with gzip.open(short, "wb") as f:
        f.write(raw[:cut])
    p = import_traces(os.path.join(tmp, "a"), short, expect_rc=1)
    check(re.search(r"at byte %d \(line \d+, column \d+\)" % cut, p.stderr),
          "premature end named at byte %d: %s" % (cut, p.stderr))
    h, evs = read_trace(os.path.join(tmp, "a", "imported", "25738.sprof"))
    complete = raw[:cut].count(b'"cat": "Kernel"')
    kernels = len(of_type(evs, "gpu", kind=GPU_KERNEL))
    check(complete - 1 <= kernels <= complete, "kernels before the cut kept: %d of %d" % (kernels, complete))
    # The compressed stream itself cut short: zlib's complaint, same guarantees.
    gz = open(data("resnet50_num_workers_0.pt.trace.json.gz"), "rb").read()
    cutgz = os.path.join(tmp, "cut.json.gz")
    open(cutgz, "wb").write(gz[:len(gz) // 2])
    p = import_traces(os.path.join(tmp, "b"), cutgz, expect_rc=1)
    check(re.search(r"compressed input ends early, after \d+ bytes of JSON", p.stderr),
          "truncated gzip named as such, with the position: " + p.stderr)
    h, evs = read_trace(os.path.join(tmp, "b", "imported", "25738.sprof"))
    steps = of_type(evs, "marker", kind=MARK_RANGE)
    check(h["closed"] == 1 and len(steps) == 6 and len(of_type(evs, "gpu")) > 0,
          "the events of the first half (all 6 steps, some kernels) kept: %d steps" % len(steps))


def case_bare_array_debian_torch(tmp):
    """A PyTorch built without Kineto (Debian's 1.13) writes a bare JSON
    array from export_chrome_trace, events without a category: its
    ProfilerStep ranges and DataLoader waits are imported by name, each
    with its time; the report then says the job saw no GPU."""
    name = "torch_cpu_bare_array.json.gz"
    trace = load_kineto(name)
    check(isinstance(trace, list) and not any("cat" in e for e in trace), "the fixture is the bare-array format")
    p = import_traces(tmp, data(name))
    print("  " + p.stdout.strip())
    h, evs = read_trace(os.path.join(tmp, "imported", "0.sprof"))
    want_steps = sorted((e["name"], int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in trace
                        if e.get("ph") == "X" and e["name"].startswith("ProfilerStep#"))
    got_steps = sorted((s["name"], s["t"], s["dur"]) for s in of_type(evs, "marker", kind=MARK_RANGE))
    check(len(want_steps) == 8 and got_steps == want_steps,
          "every ProfilerStep range: %d of %d" % (len(got_steps), len(want_steps)))
    want_waits = sorted((int(e["ts"] * 1000), int(e["dur"] * 1000)) for e in trace
                        if e.get("ph") == "X" and "DataLoader" in e["name"] and "__next__" in e["name"])
    got_waits = sorted((w["t"], w["dur"]) for w in of_type(evs, "wait", op=WAIT_DATALOADER))
    check(len(want_waits) == 8 and got_waits == want_waits,
          "every DataLoader __next__ as an input wait: %d of %d" % (len(got_waits), len(want_waits)))
    check("imported 16 events" in p.stdout and "8 steps, 8 dataloader" in p.stdout, "summary: " + p.stdout)
    rep = run([SCALEPROF, "report", tmp], 0)
    check("no GPU activity was recorded" in rep.stderr, "report on a CPU-only trace says so: " + rep.stderr)
    # what it shows instead: the host side, each ProfilerStep an iteration
    # and the loader's __next__ ranges inside them its input wait
    host = json.loads(run([SCALEPROF, "report", tmp, "--json"], 0).stdout)
    steps = sorted(want_steps, key=lambda s: s[1])[3:]  # after the 3 warm-up steps
    wait = sum(min(t + d, s[1] + s[2]) - max(t, s[1]) for s in steps for t, d in want_waits
               if t < s[1] + s[2] and t + d > s[1])
    share = wait / sum(s[2] for s in steps)
    r = host["per_rank"][0]
    print("  host-side: %d iterations from %s, input wait %.3f of each (truth %.3f)"
          % (r["iterations"], r["iterations_from"], r["input_wait_share"], share))
    check(host["kind"] == "host" and r["iterations_from"] == "step markers" and r["iterations"] == 5,
          "the host-side view's iterations are the ProfilerSteps after warm-up: %r" % r)
    check(abs(r["input_wait_share"] - share) < 0.01, "its input wait is the loader's __next__ time")


def case_nothing_imported_is_an_error(tmp):
    """A trace of which nothing can be imported (no kernel, copy, CUDA call,
    step or loader range: only operators, or no event at all) is an error
    that says so and leaves no empty trace behind, wrapped or bare."""
    texts = {
        "ops_only": '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 5, "tid": 5, '
                    '"ts": 1, "dur": 2}]}',
        "empty": '{"traceEvents": []}',
        "bare": '[{"ph": "X", "ts": 1}]',
    }
    for what, text in texts.items():
        f = os.path.join(tmp, what + ".json")
        open(f, "w").write(text)
        out = os.path.join(tmp, "out-" + what)
        p = import_traces(out, f, expect_rc=1)
        print("  %s: exit 1: %s" % (what, p.stderr.strip()))
        check("nothing could be imported" in p.stderr, "%s: the reason: %s" % (what, p.stderr))
        left = [n for _, _, names in os.walk(out) for n in names if n.endswith(".sprof")]
        check(not left, "%s: no empty trace left behind: %s" % (what, left))
    p = import_traces(os.path.join(tmp, "out-ops_only"), os.path.join(tmp, "ops_only.json"), expect_rc=1)
    check("1 cpu_op" in p.stderr, "the skipped events are counted in the reason: " + p.stderr)


def case_not_kineto(tmp):
    """JSON that is not a Kineto trace is refused with a clear message."""
    for text in ('{"foo": [1, 2, 3]}', '{"traceEvents": {"ph": "X"}}'):
        f = os.path.join(tmp, "foreign.json")
        open(f, "w").write(text)
        p = import_traces(os.path.join(tmp, "out"), f, expect_rc=1, extra=("--force",))
        check("not a Kineto trace" in p.stderr and "traceEvents" in p.stderr, "clear message: " + p.stderr)
    p = import_traces(os.path.join(tmp, "out"), os.path.join(tmp, "missing.json"), expect_rc=1)
    check("cannot open" in p.stderr, "missing file: " + p.stderr)


def case_existing_output_needs_force(tmp):
    """Importing twice does not silently overwrite: --force says so."""
    import_traces(tmp, data("runtime.json"))
    p = import_traces(tmp, data("runtime.json"), expect_rc=1)
    check("--force" in p.stderr, "existing output refused: " + p.stderr)
    import_traces(tmp, data("runtime.json"), extra=("--force",))
    check(not [f for f in os.listdir(os.path.join(tmp, "imported")) if f.endswith(".tmp")],
          "no temporary files left behind")


# ---- real traces ----------------------------------------------------------------


def case_ddp_allreduce_sizes(tmp):
    """The 2-GPU DDP trace's allreduces come in with their sizes."""
    trace = load_kineto("ddp2_rank0_nccl.json.gz")
    want = sorted((e["args"]["In msg nelems"] * {"Float": 4, "Long": 8}[e["args"]["dtype"]],
                   e["args"]["Collective name"]) for e in trace["traceEvents"]
                  if e.get("cat") == "kernel" and e["name"].startswith("nccl"))
    import_traces(tmp, data("ddp2_rank0_nccl.json.gz"))
    h, evs = read_trace(os.path.join(tmp, "imported", "2910249.sprof"))
    check((h["rank"], h["world_size"]) == (0, 2), "rank 0 of 2")
    nccl = of_type(evs, "nccl")
    names = {NCCL_ALLREDUCE: "allreduce", NCCL_BROADCAST: "broadcast"}
    got = sorted((e["bytes"], names.get(e["op"], e["op"])) for e in nccl)
    check(got == want, "every NCCL kernel is a collective with the trace's size:\n got %s\n want %s" % (got, want))
    check(len({e["comm"] for e in nccl}) == 1 and sorted(e["seq"] for e in nccl) == list(range(1, 22)),
          "one process group, sequence 1..21")
    check(all(e["nranks"] == 2 and e["rank"] == 0 for e in nccl), "group of 2, rank 0")


def case_sampled128_collectives_match(tmp):
    """Two ranks of a 128-rank job, imported together: their collectives pair up."""
    p = import_traces(tmp, data("sampled128_rank0.json.gz"), data("sampled128_rank1.json.gz"))
    check(len(p.stdout.splitlines()) == 2, "one summary line per input: " + p.stdout)
    keys = []
    for pid, rank in ((4037, 0), (4045, 1)):
        h, evs = read_trace(os.path.join(tmp, "imported", "%d.sprof" % pid))
        check((h["rank"], h["world_size"]) == (rank, 128), "rank %d of 128: %s" % (rank, h))
        nccl = sorted(of_type(evs, "nccl"), key=lambda e: e["t"])
        check(len(nccl) == 10, "ten collectives on rank %d" % rank)
        keys.append(sorted((e["comm"], e["seq"]) for e in nccl))
    check(keys[0] == keys[1], "same (communicator, sequence) on both ranks:\n %s\n %s" % tuple(keys))
    check(len({c for c, _ in keys[0]}) == 2, "two communicators (two NCCL streams)")


def case_same_pid_two_ranks(tmp):
    """Two ranks whose processes had the same pid (two nodes, two
    containers) are both kept: the second never replaces the first, with
    --force or without; re-importing the same rank without --force is
    refused and says nothing was imported."""
    import gzip
    with gzip.open(data("sampled128_rank1.json.gz"), "rt") as f:
        text = f.read()
    same = os.path.join(tmp, "rank1_same_pid.json")
    with open(same, "w") as f:
        f.write(text.replace('"pid": 4045', '"pid": 4037').replace('"pid":4045', '"pid":4037'))
    out = os.path.join(tmp, "out")
    import_traces(out, data("sampled128_rank0.json.gz"))
    import_traces(out, same, extra=("--force",))
    files = sorted(os.listdir(os.path.join(out, "imported")))
    ranks = sorted(read_trace(os.path.join(out, "imported", f))[0]["rank"] for f in files)
    check(ranks == [0, 1], "both ranks kept under one pid: %s -> ranks %s" % (files, ranks))
    again = import_traces(out, data("sampled128_rank0.json.gz"), expect_rc=1)
    check("exists" in again.stderr and "imported" not in again.stdout,
          "re-importing rank 0 without --force is refused and claims no import: %r %r"
          % (again.stdout, again.stderr))


# ---- the answers a user wants (need `scaleprof report --json`) --------------------


def report_json(tmp, skip):
    p = run([SCALEPROF, "report", "--json", "--skip", str(skip), tmp])
    if p.returncode == 2 and "not built yet" in p.stderr:
        print("SKIP: `scaleprof report` is not built in this tree yet:", p.stderr.strip())
        sys.exit(SKIP)
    check(p.returncode == 0, "report --json exited %d: %s" % (p.returncode, p.stderr))
    return json.loads(p.stdout)


GPU_CATS = ("kernel", "Kernel", "gpu_memcpy", "Memcpy", "gpu_memset", "Memset")


def step_dataloader_share(name, skip):
    """From the JSON alone: (share of step time in DataLoader.__next__,
    share of step time the GPU sat idle while the host was in it).  The
    second is what idle_input measures: a loader wait under running
    kernels costs nothing."""
    evs = [e for e in load_kineto(name)["traceEvents"] if e.get("ph") == "X"]
    # warm-up: steps numbered below `skip` by their markers, as the report counts them
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in evs
                   if e["name"].startswith("ProfilerStep#") and e.get("cat") != "gpu_user_annotation"
                   and int(e["name"].split("#")[1]) >= skip)
    loads = [(e["ts"], e["ts"] + e["dur"]) for e in evs if "DataLoader" in e["name"] and "__next__" in e["name"]]
    busy = union((e["ts"], e["ts"] + e["dur"]) for e in evs if e.get("cat") in GPU_CATS)
    total = sum(b - a for a, b in steps)
    inside = idle = 0
    for sa, sb in steps:
        for a, b in loads:
            a, b = max(a, sa), min(b, sb)
            if b > a:
                inside += b - a
                idle += (b - a) - measure(busy, a, b)
    return inside / total, idle / total


def finding(rep, cause):
    for f in rep.get("findings", []):
        if cause in (f.get("cause"), f.get("name"), f.get("kind")):
            return f
    return None


def idle_input_share(rep):
    b = rep.get("breakdown", {})
    v = b.get("idle_input")
    check(v is not None, "report has breakdown.idle_input: %s" % list(rep))
    return v / 100.0 if v > 1.0 else v


# Six steps in these traces: one warm-up step skipped leaves five to judge.
RESNET_SKIP = 1
SHARE_TOLERANCE = 0.03


def case_resnet_input_bound(tmp):
    """0 loader workers: the report names the input pipeline, high, with the trace's share."""
    import_traces(tmp, data("resnet50_num_workers_0.pt.trace.json.gz"))
    rep = report_json(tmp, RESNET_SKIP)
    f = finding(rep, "input_pipeline")
    check(f is not None and f.get("severity") == "high", "input_pipeline finding, high: %s" % rep.get("findings"))
    loader, want = step_dataloader_share("resnet50_num_workers_0.pt.trace.json.gz", RESNET_SKIP)
    got = idle_input_share(rep)
    check(abs(got - want) <= SHARE_TOLERANCE,
          "idle_input %.3f within 3 points of the trace's GPU-idle loader time %.3f (loader %.3f)" % (got, want, loader))


def case_resnet_workers_not_input_bound(tmp):
    """4 loader workers: no input finding above low."""
    import_traces(tmp, data("resnet50_num_workers_4.pt.trace.json.gz"))
    rep = report_json(tmp, RESNET_SKIP)
    f = finding(rep, "input_pipeline")
    check(f is None or f.get("severity") in ("none", "low"), "no input_pipeline above low: %s" % f)
    loader, _ = step_dataloader_share("resnet50_num_workers_4.pt.trace.json.gz", RESNET_SKIP)
    check(loader < 0.05, "the trace itself shows little loader time (%.3f)" % loader)
    check(idle_input_share(rep) < 0.05, "and the report agrees: idle_input %.3f" % idle_input_share(rep))


def case_ddp_report_busbw(tmp):
    """The DDP allreduces get a bus bandwidth in the report."""
    import_traces(tmp, data("ddp2_rank0_nccl.json.gz"))
    rep = report_json(tmp, 0)
    colls = [c for c in rep.get("collectives", []) if c.get("op") in ("allreduce", NCCL_ALLREDUCE)]
    check(colls, "allreduce collectives in the report: %s" % rep.get("collectives"))
    check(all(c.get("bytes", 0) > 0 and c.get("busbw_gbps", 0) > 0 for c in colls),
          "allreduces with bytes and busbw_gbps > 0: %s" % colls)


def case_parallel_same_as_sequential(tmp):
    """Many files at once, one thread each: the same outputs, lines and status as one by one."""
    inputs = [data(n) for n in sorted(os.listdir(DATA)) if ".json" in n]
    inputs.append(data("nccl.json"))  # twice: the second finds the first's output
    bad = os.path.join(tmp, "bad.json")
    with open(bad, "w") as f:
        f.write('{"traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 2}, {"ph"')
    inputs.insert(2, bad)
    results = {}
    for jobs in (1, 4, 16):
        out = os.path.join(tmp, "j%d" % jobs)
        p = import_traces(out, *inputs, expect_rc=1, extra=("--jobs", str(jobs)))
        files = {}
        for d, _, names in os.walk(out):
            for n in names:
                with open(os.path.join(d, n), "rb") as f:
                    files[os.path.relpath(os.path.join(d, n), out)] = f.read()
        results[jobs] = (p.stdout.replace(out, "OUT"), p.stderr.replace(out, "OUT"), files)
    one = results[1]
    check(len(one[2]) >= 6, "outputs written: %s" % sorted(one[2]))
    check("exists (use --force" in one[1], "the repeated input finds its output: %s" % one[1])
    for jobs in (4, 16):
        r = results[jobs]
        check(r[0] == one[0], "-j %d prints the same lines:\n%s\nvs\n%s" % (jobs, r[0], one[0]))
        check(r[1] == one[1], "-j %d says the same errors:\n%s\nvs\n%s" % (jobs, r[1], one[1]))
        check(sorted(r[2]) == sorted(one[2]), "-j %d writes the same files" % jobs)
        for name in one[2]:
            check(r[2][name] == one[2][name], "-j %d: %s byte for byte" % (jobs, name))


# ---- input bounds (docs/import.md, "Bounds") --------------------------------

BOUND_DEPTH, BOUND_TOKEN = 1024, 1 << 20
BOUND_NAMES, BOUND_COMMS, BOUND_RANKS = 49152, 1024, 1 << 20
ATTACK_RSS_MAX_KB = 200 * 1024   # each attack once took 1 GB or more
ATTACK_SECONDS_MAX = 20          # and 19 s to an hour; a sanitizer build is slower


def kernel(i, **args):
    return {"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 10 + i * 10,
            "dur": 5, "args": dict({"device": 0, "stream": 7, "correlation": i + 1}, **args)}


def attack_gz(path, head_events, start, block, blocks, tail=b""):
    """A gzip whose JSON is a trace opening with head_events, then start,
    then `blocks` copies of block (the JSON text may be a gigabyte), then
    tail.  Each piece is a gzip member of its own, the block's compressed
    once and repeated: zlib reads concatenated members as one stream."""
    head = b'{"traceEvents": [' + b", ".join(json.dumps(e).encode() for e in head_events) + b", "
    member = gzip.compress(block)
    with open(path, "wb") as f:
        f.write(gzip.compress(head + start))
        for _ in range(blocks):
            f.write(member)
        f.write(gzip.compress(tail))
    return len(head)


def run_bounded(args):
    """Run, returning (proc, seconds, peak RSS in KiB of the importer)."""
    import resource
    import time
    t0 = time.monotonic()
    p = subprocess.run(args, capture_output=True, text=True, timeout=ATTACK_SECONDS_MAX * 3)
    seconds = time.monotonic() - t0
    return p, seconds, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss


def check_stopped_at_bound(tmp, gz, what, offset, kept):
    p, seconds, rss = run_bounded([SCALEPROF, "import", "kineto", gz, "-o", tmp])
    check(p.returncode == 1, "exit 1, got %d: %s" % (p.returncode, p.stderr))
    check("input bound: %s" % what in p.stderr and "at byte %d " % offset in p.stderr,
          "the message names the bound (%s) and byte %d: %s" % (what, offset, p.stderr))
    check(seconds < ATTACK_SECONDS_MAX and rss < ATTACK_RSS_MAX_KB,
          "bounded: %.1f s (< %d), %d KiB (< %d)" % (seconds, ATTACK_SECONDS_MAX, rss, ATTACK_RSS_MAX_KB))
    _, events = read_trace(os.path.join(tmp, "imported", "0.sprof"))
    check(len(of_type(events, "gpu")) == kept, "the %d kernels before the bound kept: %d"
          % (kept, len(of_type(events, "gpu"))))


def case_bound_unclosed_brackets(tmp):
    """1 MB of gzip holding a gigabyte of '[': stops at the depth bound, at once, small, events kept."""
    gz = os.path.join(tmp, "deep.json.gz")
    head = attack_gz(gz, [kernel(0), kernel(1)], b"", b"[" * (1 << 20), 1024)
    # Two levels are open (the top map, traceEvents): the bound is passed by
    # the bracket that would open level BOUND_DEPTH + 1.
    check_stopped_at_bound(tmp, gz, "nesting deeper than %d" % BOUND_DEPTH,
                           head + BOUND_DEPTH - 2, 2)


def check_long_token(tmp, name, start, unit, end, what, token_at):
    """An event that opens with start and goes on with a gigabyte of unit
    (1 MB of gzip) before end: the token bound (what) is passed, at the
    token's first byte, token_at from the end of start."""
    gz = os.path.join(tmp, name)
    head = attack_gz(gz, [kernel(0)], start, unit * ((1 << 20) // len(unit)), 1024, end)
    check_stopped_at_bound(tmp, gz, what % BOUND_TOKEN, head + len(start) + token_at, 1)


def case_bound_long_string(tmp):
    """A gigabyte-long kernel name (1 MB of gzip): stops at the string bound where the string begins."""
    check_long_token(tmp, "longname.json.gz", b'{"ph": "X", "cat": "kernel", "name": "', b"a", b'"}]}',
                     "a string longer than %d bytes", -1)


def case_bound_long_escaped_string(tmp):
    """A long string made of escaped quotes is still one string: the same bound."""
    check_long_token(tmp, "escapes.json.gz", b'{"ph": "X", "name": "', b'\\"', b'"}]}',
                     "a string longer than %d bytes", -1)


def case_bound_long_number(tmp):
    """A number of a gigabyte of digits: the token bound, at the number's first digit."""
    check_long_token(tmp, "longnum.json.gz", b'{"ph": "X", "ts": ', b"1", b"}]}",
                     "a number or literal longer than %d bytes", 0)


def write_trace(path, events, dist=None):
    with open(path, "w") as f:
        f.write('{"distributedInfo": %s, "traceEvents": [\n'
                % json.dumps(dist or {"backend": "nccl", "rank": 0, "world_size": 2}))
        f.write(",\n".join(json.dumps(e) for e in events))
        f.write("]}\n")


def case_bound_many_process_groups(tmp):
    """More communicators than the bound: the first ones' collectives kept, the rest named, report quick."""
    extra = 200
    kernels = [kernel(i, **{"Collective name": "allreduce", "In msg nelems": 8, "Group size": 2,
                            "dtype": "Float", "Process Group Name": "pg%d" % i,
                            "Process Group Ranks": "[0, 1]"}) for i in range(BOUND_COMMS + extra)]
    for k in kernels:
        k["name"] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    path = os.path.join(tmp, "pgs.json")
    write_trace(path, kernels)
    p = import_traces(tmp, path, expect_rc=1)
    check("input bound: more than %d communicators (process groups): %d collectives not written"
          % (BOUND_COMMS, extra) in p.stderr, "the message names the bound: %s" % p.stderr)
    with open(path) as f:
        first = f.read().index('"pg%d"' % BOUND_COMMS)
    check("the first at byte " in p.stderr, p.stderr)
    at = int(re.search(r"the first at byte (\d+)", p.stderr).group(1))
    check(at < first and first - at < 400, "the offset (%d) is the event's, before its group name at %d"
          % (at, first))
    _, events = read_trace(os.path.join(tmp, "imported", "0.sprof"))
    check(len(of_type(events, "nccl")) == BOUND_COMMS, "one collective per communicator in the bound")
    check(len(of_type(events, "gpu")) == BOUND_COMMS + extra, "every kernel kept")
    run([SCALEPROF, "report", tmp], 0)


def case_bound_many_names(tmp):
    """More distinct kernel names than the bound: every kernel kept, the excess without a name, said so."""
    extra = 100
    kernels = [kernel(i) for i in range(BOUND_NAMES + extra)]
    for i, k in enumerate(kernels):
        k["name"] = "k%d" % i
    path = os.path.join(tmp, "names.json")
    write_trace(path, kernels)
    p = import_traces(tmp, path, expect_rc=1)
    check("input bound: more than %d distinct names" % BOUND_NAMES in p.stderr and
          "%d events written without their name" % extra in p.stderr, p.stderr)
    _, events = read_trace(os.path.join(tmp, "imported", "0.sprof"))
    check(len(of_type(events, "gpu")) == BOUND_NAMES + extra, "every kernel kept")


def case_bound_world_size(tmp):
    """A world of two billion ranks is not believed: rank unknown, said so, the report quick."""
    path = os.path.join(tmp, "world.json")
    write_trace(path, [kernel(0)], {"backend": "nccl", "rank": 1999999999, "world_size": 2000000000})
    p = import_traces(tmp, path, expect_rc=1)
    check("input bound: distributedInfo not within 0 <= rank < world_size <= %d" % BOUND_RANKS
          in p.stderr and "the first at byte 20" in p.stderr, p.stderr)
    h, _ = read_trace(os.path.join(tmp, "imported", "0.sprof"))
    check(h["rank"] == -1 and h["world_size"] == -1, "rank and world size unknown: %s" % h)
    p, seconds, _ = run_bounded([SCALEPROF, "report", tmp])
    check(p.returncode == 0 and seconds < 5, "report in %.1f s" % seconds)


def p2p_kernel(i, coll, **args):
    k = kernel(i, **dict({"Collective name": coll, "In msg nelems": 1024, "Out msg nelems": 1024,
                          "Group size": 4, "dtype": "BFloat16", "Process Group Name": "pp",
                          "Process Group Ranks": "[1, 9, 17, 25]"}, **args))
    k["name"] = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
    return k


def case_p2p_peers_from_args(tmp):
    """A send's and a recv's peer come from Dst/Src Rank, as ranks of their process group."""
    ar = kernel(0, **{"Collective name": "allreduce", "In msg nelems": 4, "Group size": 4, "dtype": "Float",
                      "Process Group Name": "pp", "Process Group Ranks": "[1, 9, 17, 25]", "Seq": 5})
    ar["name"] = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    def cpu_op(ext, coll, **args):
        return {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 5, "tid": 5, "ts": 1, "dur": 1,
                "args": dict({"External id": ext, "Collective name": coll, "Group size": 4,
                              "Process Group Ranks": "[1, 9, 17, 25]"}, **args)}

    events = [
        # Kineto writes the host ops first: a kernel without Src/Dst Rank
        # takes its peer from the op that launched it (the same External id)
        cpu_op(501, "send", Rank=3),                 # for a send, "Rank" is the peer's
        cpu_op(502, "recv", **{"Src Rank": 17, "Rank": 2}),
        cpu_op(503, "allreduce", Rank=1),
        ar,
        p2p_kernel(1, "send", **{"Dst Rank": 17, "Seq": 1}),      # the next stage
        p2p_kernel(2, "recv", **{"Src Rank": 1, "Seq": 2}),       # the previous one
        p2p_kernel(3, "recv", **{"Src Rank": 17, "Seq": 3}),
        # no list of ranks, a group of the whole world: the global rank is the group rank
        p2p_kernel(4, "send", **{"Dst Rank": 30, "Group size": 32, "Process Group Ranks": "[]",
                                 "Process Group Name": "0"}),
        # the profiler elides a long list: the ranks it shows step by 2, the last is index 31
        p2p_kernel(5, "recv", **{"Src Rank": 41, "Group size": 32, "Process Group Name": "dp",
                                 "Process Group Ranks": "[1, 3, 5, 7, 9, ..., 63]"}),
        p2p_kernel(6, "send", **{"Dst Rank": 63, "Group size": 32, "Process Group Name": "dp",
                                 "Process Group Ranks": "[1, 3, 5, 7, 9, ..., 63]"}),
        # a list as a JSON array
        p2p_kernel(7, "send", **{"Dst Rank": 25, "Process Group Ranks": [1, 9, 17, 25]}),
        # older PyTorch: no peer named
        p2p_kernel(8, "recv"),
        # a peer outside the group is not believed
        p2p_kernel(9, "send", **{"Dst Rank": 2}),
        p2p_kernel(10, "send", **{"External id": 501}),
        p2p_kernel(11, "recv", **{"External id": 502}),
    ]
    path = os.path.join(tmp, "p2p.json")
    write_trace(path, events, {"backend": "nccl", "rank": 9, "world_size": 32})
    p = import_traces(tmp, path)
    check("; 2 send/recv without their peer" in p.stdout, "the summary counts the sends/recvs without a peer: "
          + p.stdout)
    _, evs = read_trace(os.path.join(tmp, "imported", "5.sprof"))  # the host ops' pid
    nccl = sorted(of_type(evs, "nccl"), key=lambda e: e["t"])
    coll, send, recv, recv2, world, elided, last, arr, old, outside, linked_send, linked_recv = nccl
    check((send["op"], send["peer"], send["rank"], send["nranks"]) == (NCCL_SEND, 2, 1, 4),
          "send to global rank 17 = index 2 of [1, 9, 17, 25], from index 1: %s" % send)
    check((recv["op"], recv["peer"]) == (NCCL_RECV, 0) and recv2["peer"] == 2, "recvs from 1 and 17: %s %s"
          % (recv, recv2))
    check(coll["seq"] == 5 and send["comm"] == coll["comm"] == recv2["comm"],
          "one communicator; the collective keeps its Seq: %s" % coll)
    check((send["seq"], recv["seq"], recv2["seq"]) == (1, 2, 3),
          "a p2p Seq is the group's p2p count, apart from the collectives': %s" % [send, recv, recv2])
    check(world["peer"] == 30 and world["rank"] == 9, "the world group without a list: %s" % world)
    check(elided["peer"] == 20 and elided["rank"] == 4 and last["peer"] == 31,
          "an elided, evenly spaced list: 41 is index 20, 9 index 4, the last 63 index 31: %s %s" % (elided, last))
    check(arr["peer"] == 3, "a list as an array: %s" % arr)
    check(old["op"] == NCCL_RECV and old["peer"] == -1, "no Src Rank: the peer unknown: %s" % old)
    check(outside["peer"] == -1, "a peer not in the group: unknown: %s" % outside)
    check((linked_send["peer"], linked_recv["peer"]) == (3, 2),
          "peers from the record_param_comms ops of the same External id: %s %s" % (linked_send, linked_recv))
    rep = json.loads(run([SCALEPROF, "report", tmp, "--json"], 0).stdout)
    check(any("2 of 11 send/recv calls name no peer" in w for w in rep["warnings"]),
          "the report says the waits of unpaired p2p are bounds: %s" % rep["warnings"])


def case_p2p_args_malformed(tmp):
    """Peers, group lists and ids that make no sense leave the peer unknown, never a crash."""
    big = 9223372036854775807
    odd = [
        {"Src Rank": "seventeen"}, {"Dst Rank": -3}, {"Dst Rank": 1e30}, {"Dst Rank": big},
        {"Dst Rank": 17, "Process Group Ranks": "[,,, ...]"},
        {"Dst Rank": 17, "Process Group Ranks": "[99999999999999999999999, 17]"},
        {"Dst Rank": 17, "Group size": -1, "Process Group Ranks": "[1, ..., 25]"},
        {"Dst Rank": 7, "Group size": 64, "Process Group Ranks": "[5, 5, ..., 5]"},
        {"Dst Rank": big - 1, "Group size": 3, "Process Group Ranks": "[0, %d, ..., %d]" % (big // 2, big)},
        {"Dst Rank": 17, "Process Group Ranks": {"a": [1, 9]}},
        {"Dst Rank": 17, "Process Group Ranks": [[1, 9], 17]},
        {"External id": big},
        {"External id": -1},
    ]
    events = [{"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 5, "tid": 5, "ts": 1, "dur": 1,
               "args": {"External id": big, "Collective name": "send", "Rank": big, "Group size": 4}},
              {"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": 5, "tid": 5, "ts": 1, "dur": 1,
               "args": {"External id": 7, "Collective name": "recv", "Rank": 9, "Group size": 4}}]
    events += [p2p_kernel(i, "send" if "Dst Rank" in a else "recv", **a) for i, a in enumerate(odd)]
    path = os.path.join(tmp, "odd.json")
    write_trace(path, events, {"backend": "nccl", "rank": 9, "world_size": 32})
    p = import_traces(tmp, path)
    check("; %d send/recv without their peer" % len(odd) in p.stdout, "every one without its peer: " + p.stdout)
    _, evs = read_trace(os.path.join(tmp, "imported", "5.sprof"))
    nccl = of_type(evs, "nccl")
    check(len(nccl) == len(odd) and all(e["peer"] == -1 for e in nccl), "peers unknown: %s" % nccl)
    run([SCALEPROF, "report", tmp], 0)


def main():
    case = sys.argv[1]
    fn = globals().get("case_" + case)
    if not fn:
        print("unknown case", case)
        return 2
    with tempfile.TemporaryDirectory(prefix="sprof-import-") as tmp:
        try:
            fn(tmp)
        except Failed as e:
            print("FAIL:", fn.__doc__.strip())
            print(e)
            return 1
    print("ok:", fn.__doc__.strip())
    return 0


if __name__ == "__main__":
    sys.exit(main())
