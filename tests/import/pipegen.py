#!/usr/bin/env python3
"""pipegen: pipeline-parallel training jobs written as PyTorch-profiler traces.

A stand-in for real Megatron-style jobs (data parallel x pipeline parallel)
exported by torch.profiler, for testing `scaleprof import kineto` and the
report on them.  It knows nothing of scaleprof: it simulates a schedule of
its own, writes one Kineto JSON file per worker, and measures what removing
an injected fault gains by simulating the same job again without it.

Layout (Megatron's order, tensor parallel 1): global rank = stage * DP + d.
The pipeline group of replica d is [d, d + DP, ...]; the data-parallel
group of stage s is [s * DP, ..., s * DP + DP - 1]; every group is created
on every rank in the same order, so the process-group names agree.

Schedules: GPipe (all forwards, then all backwards), 1F1B (PipeDream
flush: warm-up forwards, one forward one backward, cool-down backwards),
interleaved 1F1B (V model chunks per stage, microbatches in groups of PP,
activations from the last stage wrap to the first).

The simulation, per worker: one compute stream and one NCCL stream per
(peer, direction) and per data-parallel and world group.  Between two
compute ops the worker issues one communicate call: the send of what the
last op produced and the recv of what the next op needs (Megatron's
send_forward_recv_backward and the like).  Every NCCL kernel of the call
starts when the compute stream reaches it (ProcessGroupNCCL makes its
stream wait for the current one); a send and its recv both end at
max(their starts) + the transfer time, so a recv never ends before its
send started; the compute stream goes on when every op of the call ended.
At the end of a step the gradients are all-reduced over the data-parallel
group (ends when the last member arrived, + transfer), then a one-element
all-reduce over the world (the grad norm), then the optimizer; the host
waits for the GPU (loss.item()) and starts the next ProfilerStep.  The
host runs ahead of the GPU, launching each kernel a few us after the last.

Faults: slow_rank (one worker's kernels take `factor` times as long),
slow_stage (every worker of one stage), moving (each step one worker,
drawn at random, is slow by `factor`).  The fixed job is the same job with
the factor 1.  measured gain = 1 - mean step (fixed) / mean step (as is),
over the steps after the warm-up.

Usage: pipegen.py OUTDIR [--shape NAME] [--fixed]; `SHAPES` lists them.
"""
import argparse
import gzip
import json
import os
import random
import sys

US = 1000  # ns per us
EPOCH_NS = 1_700_000_000_000_000_000  # the job's wall clock at its time 0
BASE_NS = 1_696_118_400_000_000_000   # 2023-10-01, the quarter it falls in

SHAPES = {
    # name: schedule, DP, PP, microbatches, V, fault, faulty, factor, steps
    "1f1b_slow_rank": dict(sched="1f1b", dp=2, pp=4, mb=16, fault="slow_rank", who=5, factor=1.4),
    "gpipe_slow_stage": dict(sched="gpipe", dp=4, pp=2, mb=12, fault="slow_stage", who=1, factor=1.35),
    "1f1b_moving": dict(sched="1f1b", dp=4, pp=4, mb=16, fault="moving", who=None, factor=1.6),
    "interleaved_slow_rank": dict(sched="interleaved", dp=2, pp=4, mb=8, v=2, fault="slow_rank", who=2,
                                  factor=1.4),
    "1f1b_slow_stage": dict(sched="1f1b", dp=2, pp=4, mb=16, fault="slow_stage", who=2, factor=1.3),
    "1f1b_64_slow_rank": dict(sched="1f1b", dp=16, pp=4, mb=12, fault="slow_rank", who=37, factor=1.4,
                              steps=8),
    "interleaved_64_slow_rank": dict(sched="interleaved", dp=16, pp=4, mb=8, v=2, fault="slow_rank", who=45,
                                     factor=1.4, steps=8),
    "gpipe_moving": dict(sched="gpipe", dp=4, pp=2, mb=12, fault="moving", who=None, factor=1.6),
    "interleaved_moving": dict(sched="interleaved", dp=2, pp=4, mb=8, v=2, fault="moving", who=None, factor=1.6),
    "gpipe_64_slow_stage": dict(sched="gpipe", dp=32, pp=2, mb=8, fault="slow_stage", who=0, factor=1.3,
                                steps=8),
}
DEFAULTS = dict(v=1, steps=10, seed=7, fwd_us=900.0, bwd_us=1800.0, p2p_us=60.0, dp_ar_us=700.0,
                world_ar_us=25.0, opt_us=300.0, launch_us=6.0, sync_us=15.0, warmup=3)


def shape(name):
    s = dict(DEFAULTS)
    s.update(SHAPES[name])
    s["name"] = name
    return s


# ---- schedules: per stage, the compute ops in order -------------------------------

def schedule(s, stage):
    """Batches of compute ops [(kind 'F'|'B', chunk, microbatch)] of one stage,
    in issue order; one communicate call follows each batch."""
    P, M, V = s["pp"], s["mb"], s["v"]
    if s["sched"] == "gpipe":
        return [[("F", 0, i)] for i in range(M)] + [[("B", 0, i)] for i in range(M)]
    if s["sched"] == "1f1b":
        warm = min(P - stage - 1, M)
        ops = [("F", 0, i) for i in range(warm)]
        for i in range(M - warm):
            ops += [("F", 0, warm + i), ("B", 0, i)]
        ops += [("B", 0, M - warm + i) for i in range(warm)]
        return [[o] for o in ops]
    # interleaved 1F1B: virtual microbatch k runs chunk (k // P) % V of
    # microbatch group k // (P V); backwards visit the chunks in reverse.
    # In the steady state a forward and a backward share one call (send
    # both outputs, receive both next inputs).
    total = M * V

    def fwd(k):
        g, r = divmod(k, P * V)
        return ("F", r // P, g * P + r % P)

    def bwd(k):
        g, r = divmod(k, P * V)
        return ("B", V - 1 - r // P, g * P + r % P)

    warm = min((P - stage - 1) * 2 + (V - 1) * P, total)
    batches = [[fwd(k)] for k in range(warm)]
    batches += [[fwd(warm + k), bwd(k)] for k in range(total - warm)]
    batches += [[bwd(total - warm + k)] for k in range(warm)]
    return batches


def producer(s, op, stage):
    """(stage, op) whose output `op` consumes, None when it needs no message."""
    kind, c, i = op
    P, V = s["pp"], s["v"]
    if kind == "F":
        if stage > 0:
            return stage - 1, ("F", c, i)
        return (P - 1, ("F", c - 1, i)) if c > 0 else None
    if stage < P - 1:
        return stage + 1, ("B", c, i)
    return (0, ("B", c + 1, i)) if c < V - 1 else None


def consumer(s, op, stage):
    """(stage, op) that consumes `op`'s output on another stage, or None."""
    kind, c, i = op
    P, V = s["pp"], s["v"]
    if kind == "F":
        if stage < P - 1:
            return stage + 1, ("F", c, i)
        return (0, ("F", c + 1, i)) if c < V - 1 else None
    if stage > 0:
        return stage - 1, ("B", c, i)
    return (P - 1, ("B", c - 1, i)) if c > 0 else None


# ---- one worker's program ----------------------------------------------------------

def rank_of(s, stage, d):
    return stage * s["dp"] + d


def program(s, rank):
    """Items of one step: ('C', op) compute, ('X', [(dir, peer_rank, tag)]) a
    communicate call, ('AR', group) an all-reduce, ('OPT',) the optimizer."""
    dp = s["dp"]
    stage, d = divmod(rank, dp)
    batches = schedule(s, stage)
    items = []
    pending = []  # the sends of the batch just computed
    for batch in batches:
        x = list(pending)
        for op in batch:
            src = producer(s, op, stage)
            if src:
                x.append(("recv", rank_of(s, src[0], d), (src[1], op)))
        if x:
            items.append(("X", order_ops(x, stage)))
        pending = []
        for op in batch:
            items.append(("C", op))
            dst = consumer(s, op, stage)
            if dst:
                pending.append(("send", rank_of(s, dst[0], d), (op, dst[1])))
    if pending:
        items.append(("X", pending))
    items.append(("AR", "dp"))
    items.append(("AR", "world"))
    items.append(("OPT",))
    return items


def order_ops(x, stage):
    """Megatron's order within one call: even stages send first, odd ones
    receive first (it avoids a cycle of sends waiting for each other)."""
    return sorted(x, key=lambda o: (o[0] == "send") == (stage % 2 == 1))


# ---- the simulation ----------------------------------------------------------------

class Deadlock(Exception):
    pass


def factor_of(s, rank, step, fixed, moving):
    if fixed:
        return 1.0
    stage = rank // s["dp"]
    if s["fault"] == "slow_rank" and rank == s["who"]:
        return s["factor"]
    if s["fault"] == "slow_stage" and stage == s["who"]:
        return s["factor"]
    if s["fault"] == "moving" and moving[step] == rank:
        return s["factor"]
    return 1.0


def simulate(s, fixed=False):
    """Per rank, the list of what ran: dicts with kind, start/end ns, host launch
    ns, and what the trace needs.  Returns (runs, steps) with steps[r] =
    [(host_start, host_end)] per step."""
    W = s["dp"] * s["pp"]
    rng = random.Random(s["seed"])
    moving = [rng.randrange(W) for _ in range(s["steps"])]
    progs = [program(s, r) for r in range(W)]
    runs = [[] for _ in range(W)]
    steps = [[] for _ in range(W)]
    t_gpu = [1_000_000.0 + 37_000.0 * (r % 3) for r in range(W)]  # ns; ranks start a bit apart
    for step in range(s["steps"]):
        host = list(t_gpu)
        for r in range(W):
            steps[r].append([host[r], None])
        pos = [0] * W
        posted = {}   # (sender, receiver, tag) -> {dir: start}
        ar_posted = {}  # (group key) -> {rank: start}
        pending_x = [None] * W
        done = 0
        while done < W:
            progress = False
            for r in range(W):
                while pos[r] < len(progs[r]):
                    item = progs[r][pos[r]]
                    host[r] += s["launch_us"] * US
                    launch = host[r]
                    ready = max(t_gpu[r], launch + 3 * US)
                    f = factor_of(s, r, step, fixed, moving)
                    if item[0] == "C":
                        dur = (s["fwd_us"] if item[1][0] == "F" else s["bwd_us"]) * US * f
                        runs[r].append(dict(kind="compute", op=item[1], start=ready, end=ready + dur,
                                            launch=launch, step=step))
                        t_gpu[r] = ready + dur
                    elif item[0] == "OPT":
                        dur = s["opt_us"] * US * f
                        runs[r].append(dict(kind="opt", start=ready, end=ready + dur, launch=launch, step=step))
                        t_gpu[r] = ready + dur
                    elif item[0] == "X":
                        if pending_x[r] is None:
                            pending_x[r] = ready
                            for dir_, peer, tag in item[1]:
                                key = (r, peer, tag) if dir_ == "send" else (peer, r, tag)
                                posted.setdefault(key, {})[dir_] = ready
                        start = pending_x[r]
                        ends = []
                        for dir_, peer, tag in item[1]:
                            key = (r, peer, tag) if dir_ == "send" else (peer, r, tag)
                            other = "recv" if dir_ == "send" else "send"
                            if other not in posted[key]:
                                break
                            ends.append(max(start, posted[key][other]) + s["p2p_us"] * US)
                        else:
                            for (dir_, peer, tag), end in zip(item[1], ends):
                                runs[r].append(dict(kind=dir_, peer=peer, tag=tag, start=start, end=end,
                                                    launch=launch, step=step))
                            t_gpu[r] = max(ends)
                            pending_x[r] = None
                            pos[r] += 1
                            progress = True
                            continue
                        host[r] -= s["launch_us"] * US  # not launched again
                        break
                    else:  # AR
                        group = dp_group(s, r) if item[1] == "dp" else list(range(W))
                        key = (item[1], group[0])
                        if pending_x[r] is None:
                            pending_x[r] = ready
                            ar_posted.setdefault(key, {})[r] = ready
                        members = ar_posted[key]
                        if len(members) < len(group):
                            host[r] -= s["launch_us"] * US
                            break
                        xfer = (s["dp_ar_us"] if item[1] == "dp" else s["world_ar_us"]) * US
                        end = max(members.values()) + xfer
                        runs[r].append(dict(kind="allreduce", group=item[1], ranks=group, start=pending_x[r],
                                            end=end, launch=launch, step=step))
                        t_gpu[r] = end
                        pending_x[r] = None
                    pos[r] += 1
                    progress = True
                    if pos[r] == len(progs[r]):
                        done += 1
            if not progress and done < W:
                raise Deadlock("step %d: no worker can go on (positions %s)" % (step, pos))
        for r in range(W):
            # loss.item(): the host waits for the GPU, then the next step
            sync_from = host[r] + s["launch_us"] * US
            runs[r].append(dict(kind="sync", start=sync_from, end=max(sync_from, t_gpu[r]) + s["sync_us"] * US,
                                step=step))
            t_gpu[r] = runs[r][-1]["end"]
            steps[r][-1][1] = t_gpu[r]
    return runs, steps


def dp_group(s, r):
    stage = r // s["dp"]
    return [stage * s["dp"] + d for d in range(s["dp"])]


def pp_group(s, r):
    d = r % s["dp"]
    return [stage * s["dp"] + d for stage in range(s["pp"])]


def mean_step_ms(s, steps):
    """Mean step time over the steps after the warm-up, over all workers."""
    vals = [(e - b) for per in steps for (b, e) in per[s["warmup"]:]]
    return sum(vals) / len(vals) / 1e6


def measured_gain(s):
    _, asis = simulate(s)
    _, fixed = simulate(s, fixed=True)
    return 1.0 - mean_step_ms(s, fixed) / mean_step_ms(s, asis)


# ---- Kineto JSON -------------------------------------------------------------------

GEMM_F = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn"
GEMM_B = "ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_nt"
ELTWISE = "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl(at::TensorIteratorBase&)>"
OPT = "void at::native::multi_tensor_apply_kernel<at::native::FusedAdamMathFunctor<c10::BFloat16, 4>>"
SENDRECV = "ncclDevKernel_SendRecv(ncclDevComm*, unsigned long, ncclWork*)"
ALLREDUCE = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
ALLREDUCE_F32 = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"
COMPUTE_STREAM = 7
ACT_NELEMS = 4 * 2048 * 1024
GRAD_NELEMS = 50 * 1024 * 1024
GPUS_PER_HOST = 8


class Groups:
    """The process groups, named in creation order as PyTorch names them."""

    def __init__(self, s):
        W = s["dp"] * s["pp"]
        self.world = ("0", "default_pg", list(range(W)))
        n = 1
        self.dp, self.pp = {}, {}
        for stage in range(s["pp"]):
            g = [stage * s["dp"] + d for d in range(s["dp"])]
            self.dp[stage] = (str(n), "DATA_PARALLEL_GROUP", g)
            n += 1
        for d in range(s["dp"]):
            g = [stage * s["dp"] + d for stage in range(s["pp"])]
            self.pp[d] = (str(n), "PIPELINE_MODEL_PARALLEL_GROUP", g)
            n += 1

    def all(self):
        return [self.world] + list(self.dp.values()) + list(self.pp.values())


def fmt_list(ranks):
    # torch.profiler writes a group's ranks as text; past 30 it truncates
    if len(ranks) > 30:
        return "[" + ", ".join(map(str, ranks[:29])) + ", ..., %d]" % ranks[-1]
    return "[" + ", ".join(map(str, ranks)) + "]"


def ts_us(t_ns, base_ns):
    """Kineto's microseconds with three decimals, from integer ns."""
    return round(int(t_ns) - base_ns) / US


PEER_ARGS = ("kernel", "cpu_op", "none")


def write_worker(s, rank, runs, steps, groups, path, peer_args="kernel"):
    """One worker's trace, as torch.profiler's export_chrome_trace writes it.
    peer_args: where the peer of a send or recv is written: "kernel" (newer
    PyTorch: Src/Dst Rank and Seq on the record_param_comms op and copied
    onto its kernel), "cpu_op" (only the op has them, with Rank; the kernel
    has the older set), "none" (PyTorch before them: neither)."""
    W = s["dp"] * s["pp"]
    dp, stage, d = s["dp"], rank // s["dp"], rank % s["dp"]
    host_id, local = divmod(rank, GPUS_PER_HOST)
    pid = 21000 + local          # the same pids on every host, as under torchrun
    tid = pid
    dev = local
    skew = (host_id * 37_000) % 91_000  # ns: this host's clock against the others'
    # Kineto's base time: the wall clock floored to a quarter, the same on
    # every rank; ts is the host's wall clock from it
    base = BASE_NS
    clk = lambda t: ts_us(EPOCH_NS + 50_000_000 + round(t) + skew, base)  # noqa: E731
    host_ev, gpu_ev, rt_ev = [], [], []
    corr = [1000]
    ext = [1]
    seq = {}  # (pg, kind) -> last
    nccl_stream = {}

    def stream_for(key):
        if key not in nccl_stream:
            nccl_stream[key] = 20 + 4 * len(nccl_stream)
        return nccl_stream[key]

    def launch(t_ns, c):
        rt_ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": pid, "tid": tid,
                      "ts": clk(t_ns), "dur": 4.2, "args": {"cbid": 211, "correlation": c}})

    def kernel(name, start, end, stream, c, extra=None, grid=(132, 1, 1), block=(256, 1, 1)):
        args = {"queued": 0, "device": dev, "context": 1, "stream": stream, "correlation": c,
                "registers per thread": 128, "shared memory": 65536, "grid": list(grid), "block": list(block)}
        if extra:
            args.update(extra)
        gpu_ev.append({"ph": "X", "cat": "kernel", "name": name, "pid": dev, "tid": stream,
                       "ts": clk(start), "dur": (round(end) - round(start)) / US, "args": args})

    def comm_args(coll, pg, nelems, dtype, peer=None):
        """(what the kernel carries, what only newer versions add)"""
        name, desc, ranks = pg
        kind = "p2p" if coll in ("send", "recv") else "coll"
        seq[(name, kind)] = seq.get((name, kind), 0) + 1
        a = {"Collective name": coll, "In msg nelems": nelems, "Out msg nelems": nelems,
             "Group size": len(ranks), "dtype": dtype, "In split size": "[]", "Out split size": "[]",
             "Process Group Name": name, "Process Group Description": desc,
             "Process Group Ranks": fmt_list(ranks)}
        extra = {}
        if coll == "send":
            extra["Dst Rank"] = peer
        elif coll == "recv":
            extra["Src Rank"] = peer
        extra["Seq"] = seq[(name, kind)]
        return a, extra

    def record_param_comms(t_ns, a, extra, group_rank):
        """The host op; returns the kernel's args."""
        e = ext[0]
        ext[0] += 1
        args = {"External id": e, "Record function id": e}
        args.update(a)
        if peer_args != "none":
            args.update(extra)
            args["Rank"] = group_rank  # a send's or recv's peer, else this rank, in the group
        host_ev.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": pid, "tid": tid,
                        "ts": clk(t_ns), "dur": 3.1, "args": args})
        k = {"External id": e}
        k.update(a)
        if peer_args == "kernel":
            k.update(extra)
        return k

    for run in runs[rank]:
        c = corr[0]
        corr[0] += 1
        k = run["kind"]
        if k == "compute":
            kind, chunk, mb = run["op"]
            launch(run["launch"], c)
            mid = run["start"] + (run["end"] - run["start"]) * 0.55
            kernel(GEMM_F if kind == "F" else GEMM_B, run["start"], mid, COMPUTE_STREAM, c)
            c2 = corr[0]
            corr[0] += 1
            launch(run["launch"] + 1500, c2)
            kernel(ELTWISE, mid, run["end"], COMPUTE_STREAM, c2, grid=(4096, 1, 1), block=(128, 1, 1))
        elif k == "opt":
            launch(run["launch"], c)
            kernel(OPT, run["start"], run["end"], COMPUTE_STREAM, c)
        elif k in ("send", "recv"):
            pg = groups.pp[d]
            a = record_param_comms(run["launch"] - 2000, *comm_args(k, pg, ACT_NELEMS, "BFloat16", run["peer"]),
                                   pg[2].index(run["peer"]))
            launch(run["launch"], c)
            kernel(SENDRECV, run["start"], run["end"], stream_for((k, run["peer"])), c, a,
                   grid=(1, 1, 1), block=(640, 1, 1))
        elif k == "allreduce":
            pg = groups.dp[stage] if run["group"] == "dp" else groups.world
            nel, dt, nm = (GRAD_NELEMS, "BFloat16", ALLREDUCE) if run["group"] == "dp" else (1, "Float",
                                                                                               ALLREDUCE_F32)
            a = record_param_comms(run["launch"] - 2000, *comm_args("allreduce", pg, nel, dt), pg[2].index(rank))
            launch(run["launch"], c)
            kernel(nm, run["start"], run["end"], stream_for(("ar", pg[0])), c, a, grid=(16, 1, 1),
                   block=(640, 1, 1))
        elif k == "sync":
            rt_ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaStreamSynchronize", "pid": pid,
                          "tid": tid, "ts": clk(run["start"]), "dur": (round(run["end"]) - round(run["start"])) / US,
                          "args": {"cbid": 131, "correlation": c}})
    for n, (b, e) in enumerate(steps[rank]):
        host_ev.append({"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#%d" % n, "pid": pid, "tid": tid,
                        "ts": clk(b), "dur": (round(e) - round(b)) / US, "args": {"External id": 900000 + n}})
    host_ev.sort(key=lambda e: e["ts"])
    rt_ev.sort(key=lambda e: e["ts"])
    gpu_ev.sort(key=lambda e: e["ts"])
    meta = [{"name": "process_name", "ph": "M", "ts": 0, "pid": pid, "tid": 0, "args": {"name": "python3"}},
            {"name": "thread_name", "ph": "M", "ts": 0, "pid": pid, "tid": tid, "args": {"name": "thread %d" % tid}}]
    pg_config = [{"pg_name": g[0], "pg_desc": g[1], "backend_config": "cuda:nccl", "pg_size": len(g[2]),
                  "ranks": g[2]} for g in groups.all()]
    doc = {"schemaVersion": 1,
           "deviceProperties": [{"id": i, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045641216,
                                 "computeMajor": 9, "computeMinor": 0, "numSms": 132} for i in range(GPUS_PER_HOST)],
           "distributedInfo": {"backend": "nccl", "rank": rank, "world_size": W, "pg_count": len(pg_config),
                               "pg_config": pg_config, "nccl_version": "2.21.5"},
           "record_shapes": 1,
           "traceEvents": host_ev + rt_ev + gpu_ev + meta,
           "traceName": "rank%d.pt.trace.json" % rank,
           "displayTimeUnit": "ms",
           "baseTimeNanoseconds": base}
    with gzip.open(path, "wt", compresslevel=1) as f:
        json.dump(doc, f, separators=(",", ":"))


def write_job(s, outdir, fixed=False, peer_args="kernel"):
    """Simulate and write one file per worker; returns (paths, mean step ms)."""
    runs, steps = simulate(s, fixed)
    groups = Groups(s)
    os.makedirs(outdir, exist_ok=True)
    paths = []
    for r in range(s["dp"] * s["pp"]):
        p = os.path.join(outdir, "rank%d.pt.trace.json.gz" % r)
        write_worker(s, r, runs, steps, groups, p, peer_args)
        paths.append(p)
    return paths, mean_step_ms(s, steps)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--shape", default="1f1b_slow_rank", choices=sorted(SHAPES))
    ap.add_argument("--fixed", action="store_true", help="the same job without its fault")
    ap.add_argument("--peer-args", default="kernel", choices=PEER_ARGS,
                    help="where a send's or recv's peer is written (kernel: newer PyTorch; none: before 2.4)")
    a = ap.parse_args()
    s = shape(a.shape)
    paths, ms = write_job(s, a.outdir, a.fixed, a.peer_args)
    print("%s: %d files, mean step %.3f ms, measured gain of the fix %.3f"
          % (a.shape, len(paths), ms, measured_gain(s)))


if __name__ == "__main__":
    sys.exit(main())
