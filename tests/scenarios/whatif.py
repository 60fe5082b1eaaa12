#!/usr/bin/env python3
"""whatif.py - does the report's price of a cause match what fixing it saves?

Each shape is a training job (examples/shapes) run twice on simulated GPUs
under `scaleprof run --sim`: as it is, with its cause, and fixed, with the
one flag that removes the cause.  The real gain of the fix comes from the
job's own step log (EXAMPLE_TRUTH), never from the analyzer:

    measured_gain = 1 - mean_step(fixed) / mean_step(as is)

over the steps after the first SKIP, all ranks.  Then the as-is run's
`scaleprof report --json` is judged as a user would read it:

  * the finding with the largest `gain` has the expected cause, and, where
    the shape says, exactly the expected ranks;
  * its gain is within max(0.05, 15% of measured_gain) of measured_gain
    (for the pipeline bubble, whose fixed run keeps (S-1)/(M+S-1) of its
    step as bubble by construction, measured_gain takes that share out of
    the fixed step: the report prices the bubble removed entirely);
  * findings are ordered by gain; `healthy` is false when measured_gain
    >= 0.05;
  * shape-specific: a balanced pipeline names no straggler and no
    pipeline_stage at all; with out-of-phase loaders no straggler or
    imbalance outranks input_pipeline;
  * the report's step count is the job's, as is and fixed; where the
    shape says, the top finding's evidence names what it must (the
    pipeline's schedule); no finding the shape forbids at high severity;
  * the fixed run's report no longer names the fixed cause with gain >=
    0.05 (for the pipeline bubble: 0.05 above the bubble the fixed schedule
    keeps by construction, (S-1)/(M+S-1)).

The simulator's truth (SIM_TRUTH) and the job's log also say whether a pair
of runs is fit to judge: each shape's gain lies in a band its sizes give,
each cause is present in the as-is truth and absent from the fixed one, and
the GPUs idled beyond their usual step's for no reason of the job's (host
hiccups: a loaded machine delayed a rank) for at most 5% of the kept
steps.  The time so lost widens the gain's tolerance by as much, the most
it can have moved the measured gain.  A pair that is not fit is called disturbed, said so, and run again
(five attempts); a report that disagrees with the truth is never retried.

Every shape prints one line: measured gain, predicted gain, the named
cause and ranks, so the gap shows at a glance.

Usage: whatif.py SHAPE | --list | --commands SHAPE
Environment (meson passes them; by hand they default to ./build):
SCALEPROF_BIN, SHAPES_BIN, SIM_LIBDIR, SCENARIO_WORKDIR.
Exit status: 0 pass, 1 fail.
"""
import json
import os
import shlex
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import check  # noqa: E402  (the accuracy suite's truth readers)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "analyzer"))
import whatif_check  # noqa: E402  (the replay's check of itself)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import testmain  # noqa: E402  (the verdict every script ends with)

STEPS = 10
SKIP = 3
ATTEMPTS = 5
GAIN_ABS_TOLERANCE = 0.05
GAIN_REL_TOLERANCE = 0.15
CATEGORY_TOLERANCE = 0.03  # a category's share, report against truth
HICCUP_MAX = 0.05         # a run whose GPUs idled longer for no reason of the job's is disturbed
NOT_WORTH = 0.05          # a cause saving less than this is not worth reporting
RUN_TIMEOUT_S = 120
SEVERITY = {"low": 0, "moderate": 1, "high": 2}


def common(spec):
    return ["--steps", str(spec.get("steps", STEPS)), "--skip", str(SKIP)]


# Gradients over a 20 GB/s link: 16 MiB in 4 buckets cost 1.3 ms per step,
# visible beside 20 ms of compute without deciding anything.
DP = ["--shape", "dp", "--work-ms", "20", "--grad-mb", "16", "--buckets", "4"]
SLOW_LINK = {"SIM_NVLINK_GBPS": "20"}
PIPE_STAGES = 4
# Mixture of experts: 4 layers of 24 ms per step, 64 KiB of tokens between
# every two ranks per layer each way (microseconds on the sim's links).
A2A = ["--shape", "alltoall", "--work-ms", "24", "--layers", "4", "--token-kb", "64"]
PIPE_FIXED_MICRO = 64
# Copies over a slow host link: 4 MiB a step at 1 GB/s from pageable memory
# (4.2 ms), 2.5 GB/s from pinned (1.7 ms), against 8 ms of compute.
COPY = ["--shape", "copy", "--work-ms", "8", "--batch-mb", "4", "--grad-mb", "1"]
SLOW_HOST_LINK = {"SIM_PAGEABLE_GBPS": "1", "SIM_PINNED_GBPS": "2.5"}

def as_is_and_fixed(job, asis=(), fixed=()):
    """The flags of a job run as is and fixed: JOB's own, then those that
    make the difference (none where only the environment changes)."""
    return {"asis": job + list(asis), "fixed": job + list(fixed)}


def bubble(job, micro, fixed_micro=PIPE_FIXED_MICRO, chunks=1):
    """A pipeline's bubble, fixed by more micro-batches for the same work:
    the flags, what the report must name (the bubble, no stage or rank to
    blame) and the bubble the fixed schedule keeps by construction,
    (S-1)/(V*M+S-1) of its step with V model chunks per rank."""
    return {**as_is_and_fixed(job, ["--micro-batches", str(micro)],
                              ["--micro-batches", str(fixed_micro)]),
            "cause": "pipeline_bubble", "ranks": None, "forbid": ["straggler", "pipeline_stage"],
            "fixed_residual": (PIPE_STAGES - 1.0) / (chunks * fixed_micro + PIPE_STAGES - 1.0)}


# A shape: the job (ranks, environment, flags as is and fixed), what the
# report should name, and the band of gains its sizes give (outside it the
# pair was disturbed).  "premises" name truth checks (PREMISES below).
SHAPES = {
    "serial_buckets": {
        "story": "4-rank data parallel, 4 equal gradient buckets all-reduced back to back "
                 "after the backward pass; rank 1 computes 2x slower (fix: slow factor 1)",
        "nproc": 4, "env": SLOW_LINK,
        "asis": DP + ["--slow-rank", "1", "--slow-factor", "2"],
        "fixed": DP + ["--slow-rank", "1", "--slow-factor", "1"],
        "cause": "straggler", "ranks": [1], "band": (0.35, 0.6),
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "serial_buckets_unequal": {
        "story": "the same with unequal buckets (1:2:4:8 parts of the gradient)",
        "nproc": 4, "env": SLOW_LINK,
        "asis": DP + ["--unequal", "--slow-rank", "1", "--slow-factor", "2"],
        "fixed": DP + ["--unequal", "--slow-rank", "1", "--slow-factor", "1"],
        "cause": "straggler", "ranks": [1], "band": (0.35, 0.6),
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "random_imbalance": {
        "story": "4-rank data parallel, each step each rank's work drawn from [0.2, 1.8] "
                 "(seeded: variable sequence lengths), so a different rank is last each "
                 "step (fix: every rank does the step's mean work)",
        "nproc": 4, "env": SLOW_LINK,
        "asis": DP + ["--imbalance", "0.8", "--seed", "3"],
        "fixed": DP + ["--imbalance", "0.8", "--seed", "3", "--balance"],
        "cause": "imbalance", "ranks": None, "band": (0.12, 0.35),
        "premises": ["waits_asis", "no_waits_fixed", "last_rank_changes"],
    },
    "exposed_communication": {
        "story": "4-rank data parallel, 64 MiB of gradients all-reduced after the backward "
                 "pass over a 5 GB/s link, nothing overlapped (fix: the same job on links "
                 "so fast the transfer vanishes: what hiding it entirely would give)",
        "nproc": 4, "env": {"SIM_NVLINK_GBPS": "5"}, "env_fixed": {"SIM_NVLINK_GBPS": "100000"},
        **as_is_and_fixed(["--shape", "dp", "--work-ms", "20", "--grad-mb", "64",
                           "--buckets", "4"]),
        "cause": "communication", "ranks": None, "band": (0.25, 0.65),
        "premises": [],
    },
    "launch_bound": {
        "story": "2 ranks, 500 kernels of 30 us per step with 300 us of host work before "
                 "each launch (GPU busy under 10%) (fix: --host-us 0: the host time between "
                 "launches cut to the launch latency, which the kernels then hide)",
        "nproc": 2, "env": {},
        **as_is_and_fixed(["--shape", "launch", "--kernels", "500", "--kernel-us", "30",
                           "--grad-mb", "1"],
                          ["--host-us", "300"], ["--host-us", "0"]),
        "cause": "host_overhead", "ranks": [0, 1], "band": (0.6, 0.98),
        # 500 x (300 us + the ~18 us launch call)
        "asis_step_ms": (150, 200),
        "premises": ["gpu_mostly_idle_asis", "host_paced_asis", "gpu_busy_fixed"],
        "clean": ["fixed"],      # as is, the GPU idles between launches by design
        # host-bound on two shared cores: other engineers' load moves both runs
        "attempts": 5,
    },
    "slow_launch_api": {
        "story": "2 ranks, 1000 kernels of 10 us per step, no host work between launches, but "
                 "each launch call keeps the host 40 us (a slow launch path) (fix: launch calls "
                 "that return in what they should)",
        "nproc": 2, "env": {"SIM_LAUNCH_CALL_US": "40"}, "env_fixed": {"SIM_LAUNCH_CALL_US": "0"},
        **as_is_and_fixed(["--shape", "launch", "--kernels", "1000", "--kernel-us", "10",
                           "--host-us", "0", "--grad-mb", "1"]),
        "cause": "launch_api", "ranks": [0, 1], "band": (0.5, 0.95),
        # 1000 x (40 us + the sim's ~10 us of its own per call)
        "asis_step_ms": (45, 90),
        "premises": ["in_launch_calls_asis", "host_paced_asis", "gpu_busy_fixed"],
        "clean": ["fixed"],      # as is, the GPU idles inside the launch calls by design
        # host-bound on two shared cores: other engineers' load moves both runs
        "attempts": 5,
    },
    "two_fixed_stragglers": {
        "story": "8-rank data parallel; rank 5 computes 2x slower and rank 1 1.5x, the "
                 "same two ranks in every step (fix: both at normal speed; a third run "
                 "with only rank 5 fixed checks the gain the report gives each)",
        "nproc": 8, "env": SLOW_LINK,
        "asis": DP + ["--slow-rank", "5:2", "--slow-rank", "1:1.5"],
        "fixed": DP,
        # each rank fixed alone: the gain the finding's rank_gains gives it
        "alone": [5, 1],
        "alone_5": DP + ["--slow-rank", "1:1.5"], "alone_1": DP + ["--slow-rank", "5:2"],
        "cause": "straggler", "ranks": [1, 5], "band": (0.35, 0.6),
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "three_fixed_stragglers": {
        "story": "8-rank data parallel; ranks 2, 3 and 6 compute 1.8x, 1.6x and 1.4x "
                 "slower in every step (fix: all three at normal speed; three more runs, "
                 "each with one of them fixed, check the gain the report gives each)",
        "nproc": 8, "env": SLOW_LINK,
        "asis": DP + ["--slow-rank", "2:1.8", "--slow-rank", "3:1.6", "--slow-rank", "6:1.4"],
        "fixed": DP,
        "alone": [2, 3, 6],
        "alone_2": DP + ["--slow-rank", "3:1.6", "--slow-rank", "6:1.4"],
        "alone_3": DP + ["--slow-rank", "2:1.8", "--slow-rank", "6:1.4"],
        "alone_6": DP + ["--slow-rank", "2:1.8", "--slow-rank", "3:1.6"],
        "cause": "straggler", "ranks": [2, 3, 6], "band": (0.3, 0.55),
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "pipeline_bubble": {
        "story": "4 pipeline stages over send/recv, GPipe with 4 micro-batches, every "
                 "stage equal: the fill and drain bubble (fix: 64 micro-batches, same "
                 "total work)",
        "nproc": PIPE_STAGES, "env": {},
        **bubble(["--shape", "pipeline", "--work-ms", "96"], 4),
        "band": (0.3, 0.45),
        "premises": [],
    },
    "pipeline_slow_stage": {
        "story": "4 pipeline stages, GPipe with 8 micro-batches; stage 2 computes 2x "
                 "slower (fix: stage 2 at the others' speed)",
        "nproc": PIPE_STAGES, "env": {},
        **as_is_and_fixed(["--shape", "pipeline", "--work-ms", "24", "--micro-batches", "8",
                           "--slow-rank", "2"],
                          ["--slow-factor", "2"], ["--slow-factor", "1"]),
        "cause": "pipeline_stage", "ranks": [2], "band": (0.3, 0.55),
        "premises": [],
    },
    "alltoall_hot_rank": {
        "story": "4-rank mixture of experts: each of 4 layers computes, dispatches tokens to "
                 "every other rank by grouped ncclSend/ncclRecv (an all-to-all), computes its "
                 "experts on what it received and sends the results back the same way; rank 2 "
                 "receives 4x the tokens and its experts compute 4x longer (fix: every rank "
                 "receives the same tokens)",
        "nproc": 4, "env": {},
        "asis": A2A + ["--hot-rank", "2", "--hot-factor", "4"],
        "fixed": A2A + ["--hot-rank", "2", "--hot-factor", "1"],
        "cause": "straggler", "ranks": [2], "band": (0.45, 0.7),
        "truth_categories": ["collective_wait", "collective_transfer"],
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "alltoall_slow_link": {
        "story": "the same 4-rank mixture of experts, every rank receiving the same tokens, "
                 "8 MiB between every two ranks per layer each way over a 5 GB/s link (fix: "
                 "links so fast the transfer vanishes: what hiding it entirely would give)",
        "nproc": 4, "env": {"SIM_NVLINK_GBPS": "5"}, "env_fixed": {"SIM_NVLINK_GBPS": "100000"},
        **as_is_and_fixed(["--shape", "alltoall", "--work-ms", "24", "--layers", "4",
                           "--token-kb", "8192"]),
        "cause": "communication", "ranks": None, "band": (0.25, 0.5),
        "truth_categories": ["collective_wait", "collective_transfer"],
        "premises": [],
    },
    "pipeline_1f1b_slow_stage": {
        "story": "4 pipeline stages, one-forward-one-backward with 8 micro-batches: in the "
                 "steady state a stage's send of activations and receive of gradients share "
                 "one group (and the other way); stage 1 computes 2x slower (fix: stage 1 at "
                 "the others' speed)",
        "nproc": PIPE_STAGES, "env": {},
        **as_is_and_fixed(["--shape", "1f1b", "--work-ms", "24", "--micro-batches", "8",
                           "--slow-rank", "1"],
                          ["--slow-factor", "2"], ["--slow-factor", "1"]),
        "cause": "pipeline_stage", "ranks": [1], "band": (0.3, 0.55),
        "truth_categories": ["collective_wait", "collective_transfer"],
        "premises": [],
    },
    "pipeline_1f1b_bubble": {
        "story": "4 pipeline stages, one-forward-one-backward with 4 micro-batches, every "
                 "stage equal: the warm-up and cool-down bubble (fix: 64 micro-batches, same "
                 "total work)",
        "nproc": PIPE_STAGES, "env": {},
        **bubble(["--shape", "1f1b", "--work-ms", "96"], 4),
        "band": (0.3, 0.45),
        "truth_categories": ["collective_wait", "collective_transfer"],
        "premises": [],
    },
    "pipeline_bubble_no_markers": {
        "story": "4 pipeline stages over send/recv, GPipe with 4 micro-batches, every stage "
                 "equal, and no step marker: the steps are the job's only from its traffic "
                 "(fix: 64 micro-batches, same total work)",
        "nproc": PIPE_STAGES, "env": {}, "steps": 12,
        **bubble(["--shape", "pipeline", "--work-ms", "60", "--no-markers"], 4),
        "band": (0.3, 0.45),
        "forbid_high": ["communication", "host_overhead"],
        "pipeline": (PIPE_STAGES, 4, "GPipe"),
        "premises": [],
    },
    "pipeline_slow_stage_no_markers": {
        "story": "4 pipeline stages, GPipe with 8 micro-batches and no step marker; stage 2 "
                 "computes 1.8x slower (fix: stage 2 at the others' speed)",
        "nproc": PIPE_STAGES, "env": {}, "steps": 12,
        **as_is_and_fixed(["--shape", "pipeline", "--work-ms", "18", "--micro-batches", "8",
                           "--slow-rank", "2", "--no-markers"],
                          ["--slow-factor", "1.8"], ["--slow-factor", "1"]),
        "cause": "pipeline_stage", "ranks": [2], "band": (0.25, 0.5),
        "pipeline": (PIPE_STAGES, 8, "GPipe"),
        "premises": [],
    },
    "pipeline_1f1b_no_markers": {
        "story": "4 pipeline stages, 1F1B (each send of the steady state grouped with its "
                 "recv) with 6 micro-batches, every stage equal, no step marker: the bubble, "
                 "and the schedule named (fix: 64 micro-batches, same total work)",
        "nproc": PIPE_STAGES, "env": {}, "steps": 12,
        **bubble(["--shape", "pipeline", "--work-ms", "50", "--1f1b", "--no-markers"], 6),
        "band": (0.2, 0.4),
        "forbid_high": ["communication", "host_overhead"],
        "evidence": ["1F1B"],
        "pipeline": (PIPE_STAGES, 6, "1F1B"),
        "premises": [],
    },
    "pipeline_interleaved_no_markers": {
        "story": "4 pipeline stages, 2 model chunks per rank looped (the last stage feeds "
                 "the first stage's second chunk: the ranks form a ring), 4 micro-batches, "
                 "every stage equal, no step marker: the bubble of the interleaved schedule "
                 "(fix: 32 micro-batches, same total work)",
        "nproc": PIPE_STAGES, "env": {}, "steps": 12,
        **bubble(["--shape", "pipeline", "--work-ms", "96", "--interleave", "2",
                  "--no-markers"], 4, fixed_micro=32, chunks=2),
        "band": (0.15, 0.35),
        "forbid_high": ["communication", "host_overhead"],
        "evidence": ["interleaved"],
        "pipeline": (PIPE_STAGES, 4, "interleaved"),
        "premises": [],
    },
    "pipeline_dp_slow_rank": {
        "story": "2 data-parallel copies of a 3-stage GPipe pipeline (6 ranks, 8 micro-batches, "
                 "each stage's gradients all-reduced over its 2 copies, no step marker); rank 1 "
                 "(copy 0's stage 1) computes 1.8x slower, its copy rank 4 does not: a slow "
                 "rank, not a slow stage (fix: rank 1 at normal speed)",
        "nproc": 6, "env": {}, "steps": 12,
        **as_is_and_fixed(["--shape", "pipeline", "--work-ms", "18", "--micro-batches", "8",
                           "--pp-dp", "2", "--grad-mb", "4", "--slow-rank", "1", "--no-markers"],
                          ["--slow-factor", "1.8"], ["--slow-factor", "1"]),
        "cause": "straggler", "ranks": [1], "band": (0.2, 0.5),
        "pipeline": (3, 8, "GPipe"),
        "premises": [],
    },
    "pipeline_dp_slow_stage": {
        "story": "the same 2 copies of the pipeline; stage 1 computes 1.8x slower in both "
                 "(ranks 1 and 4): a slow stage (fix: stage 1 at the others' speed)",
        "nproc": 6, "env": {}, "steps": 12,
        **as_is_and_fixed(["--shape", "pipeline", "--work-ms", "18", "--micro-batches", "8",
                           "--pp-dp", "2", "--grad-mb", "4", "--slow-stage", "1", "--no-markers"],
                          ["--slow-factor", "1.8"], ["--slow-factor", "1"]),
        "cause": "pipeline_stage", "ranks": [1, 4], "band": (0.2, 0.5),
        "pipeline": (3, 8, "GPipe"),
        "premises": [],
    },
    "tp_dp": {
        "story": "2 tensor-parallel groups of 2 (all-reduce in the group after every "
                 "layer) x data parallel across them; group 1 (ranks 2, 3) computes 2x "
                 "slower (fix: group 1 at normal speed)",
        "nproc": 4, "env": {},
        **as_is_and_fixed(["--shape", "tpdp", "--work-ms", "20", "--tp", "2", "--layers", "4",
                           "--slow-group", "1"],
                          ["--slow-factor", "2"], ["--slow-factor", "1"]),
        "cause": "straggler", "ranks": [2, 3], "band": (0.35, 0.6),
        "premises": ["waits_asis", "no_waits_fixed"],
    },
    "mid_step_sync": {
        "story": "4-rank data parallel; after the forward pass each rank reads its loss back "
                 "(a copy and a stream sync, as .item() does) and then spends 8 ms of host work "
                 "before launching the backward, besides the sync that ends every step (fix: no "
                 "read-back: the host work overlaps the forward)",
        "nproc": 4, "env": {},
        **as_is_and_fixed(["--shape", "dp", "--work-ms", "20", "--grad-mb", "4",
                           "--step-host-ms", "8"],
                          ["--mid-sync"], []),
        "cause": "host_sync", "ranks": [0, 1, 2, 3], "band": (0.12, 0.35),
        "clean": ["fixed"],      # as is, the GPU idles after the sync by design
        "premises": [],
    },
    "checkpoint": {
        "story": "4-rank data parallel; every 4th step rank 0 writes a 64 MiB checkpoint and "
                 "fsyncs it from the training loop while the others wait in the next all-reduce "
                 "(fix: no checkpoint in the loop: what an asynchronous one would give)",
        "nproc": 4, "env": {}, "steps": 16,
        **as_is_and_fixed(["--shape", "dp", "--work-ms", "20", "--grad-mb", "4"],
                          ["--ckpt-every", "4", "--ckpt-mb", "64"], []),
        "cause": "file_writes", "ranks": [0], "band": (0.15, 0.7),
        "clean": ["fixed"],      # as is, rank 0's GPU idles while it writes
        "premises": [],
    },
    "loaders_out_of_phase": {
        "story": "2 ranks, one loader process each reading files, no prefetch; rank 0's "
                 "batch takes 30 ms to prepare on even steps, rank 1's on odd steps, nothing "
                 "otherwise, against 10 ms of GPU work (fix: no preparation on any step: "
                 "the batch costs its read alone)",
        "nproc": 2, "env": {},
        **as_is_and_fixed(["--shape", "loader", "--work-ms", "10", "--loader-ms", "0",
                           "--read-kb", "64"],
                          ["--loader-slow-ms", "30"], ["--loader-slow-ms", "0"]),
        "cause": "input_pipeline", "ranks": [0, 1], "band": (0.5, 0.85),
        "outranks": ["straggler", "imbalance"],
        "premises": ["input_asis", "no_input_fixed", "loaders_take_turns"],
    },
    "loaders_prefetch": {
        "story": "the same loaders with one batch of prefetch: one rank's slow batch can "
                 "hide behind the other's wait, so the late rank and how late it is drift "
                 "from run to run, while the step stays (30 + 10) / 2 ms (fix: no "
                 "preparation on any step)",
        "nproc": 2, "env": {},
        # 11 steps: the 8 kept are 4 whole periods of a late and a quick step
        "steps": 11,
        **as_is_and_fixed(["--shape", "loader", "--work-ms", "10", "--loader-ms", "0",
                           "--read-kb", "64", "--prefetch", "1"],
                          ["--loader-slow-ms", "30"], ["--loader-slow-ms", "0"]),
        "cause": "input_pipeline", "ranks": None, "band": (0.35, 0.6),
        "outranks": ["straggler", "imbalance"],
        "premises": ["some_input_asis", "no_input_fixed"],
    },
    "copy_pageable": {
        "story": "2-rank data parallel; each step copies a 4 MiB batch from pageable host "
                 "memory to the GPU on the compute stream, then computes 8 ms on it; the "
                 "host link gives 1 GB/s from pageable memory (fix: the batch in pinned "
                 "memory, the next one copied on a side stream during this step's compute)",
        "nproc": 2, "env": SLOW_HOST_LINK,
        "asis": COPY,
        "fixed": COPY + ["--pinned", "--prefetch", "1"],
        "cause": "memcpy", "ranks": [0, 1], "band": (0.2, 0.45),
        "evidence": ["host to device", "pageable", "4.0 MiB", "GB/s", "overlapped"],
        "first_try": ["pinned"],
        "premises": ["memcpy_asis", "no_memcpy_fixed"],
        "clean": ["asis"],       # fixed, the GPU idles ~1.1 ms a step while the host stages the batch
    },
    "single_gpu_copy": {
        "story": "one GPU, no communicator and no step marker: every kernel of the job has "
                 "the same name and only the grid differs per layer; each step copies a 4 MiB "
                 "batch from pageable memory before computing on it (fix: pinned, the next "
                 "batch copied on a side stream during this step's compute); the steps are "
                 "the job's only from what repeats in its kernels",
        "nproc": 1, "env": SLOW_HOST_LINK, "steps": 20,
        "asis": COPY + ["--no-nccl", "--no-markers"],
        "fixed": COPY + ["--no-nccl", "--no-markers", "--pinned", "--prefetch", "1"],
        "cause": "memcpy", "ranks": [0], "band": (0.2, 0.45),
        "evidence": ["host to device", "pageable"],
        "premises": ["memcpy_asis", "no_memcpy_fixed"],
    },
    "copy_pinned_serial": {
        "story": "the same job with the batch already in pinned memory, copied on the "
                 "compute stream before each step's compute (fix: the next batch copied on "
                 "a side stream during this step's compute)",
        "nproc": 2, "env": SLOW_HOST_LINK,
        "asis": COPY + ["--pinned"],
        "fixed": COPY + ["--pinned", "--prefetch", "1"],
        "cause": "memcpy", "ranks": [0, 1], "band": (0.08, 0.25),
        "evidence": ["host to device", "pinned", "4.0 MiB", "GB/s", "overlapped"],
        "first_try_not": ["pin"],
        "premises": ["memcpy_asis", "no_memcpy_fixed"],
        # a copy on the compute stream each step: every step waits on the
        # host, so a loaded host disturbs many attempts (0.4 s each)
        "attempts": 10,
    },
}


class Failure(Exception):
    pass


class Disturbed(Exception):
    pass


# ------------------------------------------------------------------ runs

class Env:
    def __init__(self):
        root = os.path.dirname(os.path.dirname(HERE))
        build = os.environ.get("BUILD") or os.path.join(root, "build")
        self.scaleprof = os.environ.get("SCALEPROF_BIN") or os.path.join(build, "analyzer",
                                                                        "scaleprof")
        self.shapes = os.environ.get("SHAPES_BIN") or os.path.join(build, "examples", "shapes")
        self.sim_libdir = os.environ.get("SIM_LIBDIR") or os.path.join(build, "sim")
        self.workdir = os.environ.get("SCENARIO_WORKDIR") or os.path.join(build, "tests",
                                                                          "scenarios", "runs")
        missing = [p for p in (self.scaleprof, self.shapes,
                               os.path.join(self.sim_libdir, "libcudart.so.13"))
                   if not os.path.exists(p)]
        if missing:
            raise Failure("not built: %s (./scaleprof.sh build)" % ", ".join(missing))


def job_command(env, shape, which, trace):
    spec = SHAPES[shape]
    return ([env.scaleprof, "run", "--sim", "-o", trace, "--nproc", str(spec["nproc"]), "--",
             env.shapes] + common(spec) + spec[which])


def run_job(env, shape, which):
    """Runs one side of SHAPE under the profiler; returns its directory."""
    spec = SHAPES[shape]
    base = os.path.join(env.workdir, "whatif", shape, which)
    shutil.rmtree(base, ignore_errors=True)
    os.makedirs(os.path.join(base, "truth"))
    cmd = job_command(env, shape, which, os.path.join(base, "trace"))
    cmd[cmd.index("--") + 1:cmd.index("--") + 2] = [env.shapes, "--data",
                                                    os.path.join(env.workdir, "whatif", "data")]
    job_env = dict(os.environ)
    job_env.update(spec.get("env_" + which, spec["env"]))
    job_env["SIM_TRUTH"] = os.path.join(base, "truth")
    job_env["EXAMPLE_TRUTH"] = os.path.join(base, "example.jsonl")
    job_env["LD_LIBRARY_PATH"] = env.sim_libdir + (
        ":" + job_env["LD_LIBRARY_PATH"] if job_env.get("LD_LIBRARY_PATH") else "")
    with open(os.path.join(base, "command.txt"), "w") as f:
        f.write(" ".join("%s=%s" % kv for kv in spec.get("env_" + which, spec["env"]).items()) + " " +
                " ".join(shlex.quote(c) for c in cmd) + "\n")
    with open(os.path.join(base, "run.log"), "w") as log:
        try:
            rc = subprocess.call(cmd, env=job_env, stdout=log, stderr=subprocess.STDOUT,
                                 timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            raise Failure("%s %s: job timed out after %d s" % (shape, which, RUN_TIMEOUT_S))
    if rc != 0:
        with open(os.path.join(base, "run.log")) as f:
            tail = f.read()[-3000:]
        raise Failure("%s %s: `%s` exited %d:\n%s" % (shape, which, " ".join(cmd), rc, tail))
    return base


def report(env, run_dir):
    p = subprocess.run([env.scaleprof, "report", os.path.join(run_dir, "trace"), "--json"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                       timeout=RUN_TIMEOUT_S)
    if p.returncode != 0:
        raise Failure("scaleprof report %s exited %d: %s" % (run_dir, p.returncode,
                                                              p.stderr.strip()[-2000:]))
    try:
        rep = json.loads(p.stdout)
    except ValueError as e:
        raise Failure("scaleprof report --json printed no JSON (%s): %s" % (e, p.stdout[:500]))
    bad = whatif_check.problems(rep)
    print("  %s" % whatif_check.summary(rep))
    if bad:
        raise Failure("%s: the what-if replay fails its check: %s" % (run_dir, "; ".join(bad)))
    return rep


# ----------------------------------------------------------------- truth

def job_log(run_dir):
    return list(check.read_jsonl(os.path.join(run_dir, "example.jsonl")))


def mean_step_ms(run_dir):
    """Mean step over every rank's steps after the first SKIP (the job's log)."""
    steps = [e for e in job_log(run_dir) if e["type"] == "step" and e["step"] >= SKIP]
    if not steps:
        raise Failure("%s: the job logged no step after the first %d" % (run_dir, SKIP))
    return sum(e["end_ns"] - e["start_ns"] for e in steps) / len(steps) / 1e6


class Pair:
    """One shape's two runs and what the truth says of them."""

    def __init__(self, shape, asis, fixed):
        self.shape, self.dirs = shape, {"asis": asis, "fixed": fixed}
        self.step = {k: mean_step_ms(d) for k, d in self.dirs.items()}
        self.gain = 1.0 - self.step["fixed"] / self.step["asis"]
        # A fixed run that keeps a known share of its cause by construction
        # (the bubble of 64 micro-batches, (S-1)/(M+S-1)) measures less than
        # the cause removed entirely, which is what the report prices: the
        # predicted gain is judged against the fixed step less that share.
        residual = SHAPES[shape].get("fixed_residual", 0.0)
        self.gain_whole = 1.0 - self.step["fixed"] * (1.0 - residual) / self.step["asis"]
        self._frac = {}
        self.hiccup = {}    # share of a run's kept time lost to the machine (premise_clean)

    def allowance(self, *which):
        """What the machine's hiccups in these runs may have moved a measured gain by."""
        return sum(self.hiccup.get(w, 0.0) for w in which)

    def frac(self, which):
        if which not in self._frac:
            self._frac[which] = check.truth_breakdown(self.dirs[which], SKIP)
        return self._frac[which]


def premise_clean(pair, which):
    """How much of the run the machine took away.  A rank's GPU that sits
    idle without the job waiting for input longer than it does in its
    median kept step (what the job's own host work leaves idle each step)
    was held up by its host being descheduled by the machine's load: a
    hiccup that neither run's fix is about.  The longest such excess over
    the ranks in each kept step, summed over the steps, is the share of the
    kept steps' time lost.  A step is no longer than its slowest rank plus
    such a delay, so the measured gain moves by at most the two runs'
    shares: the judgement allows for them (pair.hiccup).  A run that lost
    more than HICCUP_MAX of its time says too little and is Disturbed."""
    run_dir = pair.dirs[which]
    gpus = check.load_sim_truth(os.path.join(run_dir, "truth"))
    steps, waits = check.load_example_truth(os.path.join(run_dir, "example.jsonl"))
    idle, lengths = {}, {}
    for rank, windows in sorted(steps.items()):
        for step, (lo, hi) in sorted(windows.items()):
            if step >= SKIP:
                idle[rank, step] = check.classify_step(gpus[rank], waits.get(rank, []),
                                                       lo, hi)["idle_rest"]
                lengths.setdefault(step, []).append(hi - lo)
    usual = {}
    for rank in steps:
        mine = sorted(v for (r, _), v in idle.items() if r == rank)
        usual[rank] = mine[len(mine) // 2] if mine else 0
    worst = {}
    for (rank, step), v in idle.items():
        extra = v - usual[rank]
        if extra > worst.get(step, (0, -1))[0]:
            worst[step] = (extra, rank)
    kept = sum(sum(v) / len(v) for v in lengths.values())
    lost = sum(extra for extra, _ in worst.values())
    share = lost / kept if kept else 0.0
    pair.hiccup[which] = share
    if share > HICCUP_MAX:
        extra, step, rank = max((e, s, r) for s, (e, r) in worst.items())
        raise Disturbed("%s: GPUs idle %.1f ms beyond their usual step's with nothing to wait "
                        "for, %.1f%% of the kept steps (bar %.0f%%; the most: rank %d, %.1f ms "
                        "more in step %d)" % (which, lost / 1e6, 100 * share, 100 * HICCUP_MAX,
                                              rank, extra / 1e6, step))


def premise_last_rank_changes(pair):
    """By design (the seed), the rank last at each step's first collective
    changes; fewer than 3 different ranks means the shape is mis-sized."""
    _, _, colls = pair.frac("asis")
    buckets = int(SHAPES[pair.shape]["asis"][SHAPES[pair.shape]["asis"].index("--buckets") + 1])
    by_seq = {}
    for c in colls:
        by_seq.setdefault(c["seq"], []).append(c)
    # a step's first bucket is the one its last rank is late for
    lasts = [max(g, key=lambda c: c["arrive_ns"])["rank"]
             for seq, g in sorted(by_seq.items()) if seq % buckets == 0 and seq // buckets >= SKIP]
    if len(set(lasts)) < 3:
        raise Failure("%s: last ranks %s over the kept steps: mis-sized" % (pair.shape, lasts))


def premise_host_paced_asis(pair):
    """A host-bound run is as long as its host's work: the step its sizes
    give (asis_step_ms).  A longer one had its host slowed by the machine's
    load, which stretches the launch calls and the work between them alike
    and so says nothing about which of the two the job spends."""
    lo, hi = SHAPES[pair.shape]["asis_step_ms"]
    if not lo <= pair.step["asis"] <= hi:
        raise Disturbed("as is: step %.1f ms, its sizes give %.0f-%.0f ms: the host was slowed"
                        % (pair.step["asis"], lo, hi))


def premise_in_launch_calls_asis(pair):
    """As is, the host spends most of each kept step inside launch calls
    (the shape's own clock around them, on every rank)."""
    path = os.path.join(pair.dirs["asis"], "example.jsonl")
    steps, _ = check.load_example_truth(path)
    calls = {(ev["rank"], ev["step"]): ev["calls_ns"] for ev in check.read_jsonl(path)
             if ev["type"] == "launch"}
    for rank, windows in sorted(steps.items()):
        kept = [(s, hi - lo) for s, (lo, hi) in windows.items() if s >= SKIP]
        inside = sum(calls.get((rank, s), 0) for s, _ in kept)
        total = sum(n for _, n in kept)
        if not total or inside < 0.6 * total:
            raise Disturbed("as is: rank %d inside launch calls only %.1f%% of its steps"
                            % (rank, 100 * inside / max(total, 1)))


def premise_loaders_take_turns(pair):
    """Rank s % 2 waits longest for its input at step s."""
    waits = {}
    for e in job_log(pair.dirs["asis"]):
        if e["type"] == "input_wait" and e["step"] >= SKIP:
            waits.setdefault(e["step"], {})[e["rank"]] = e["end_ns"] - e["start_ns"]
    wrong = [s for s, w in waits.items() if max(w, key=w.get) != s % 2]
    if wrong:
        raise Disturbed("as is: at steps %s the late loader is not rank step %% 2" % wrong)


def share_premise(which, category, at_least=0.0, at_most=1.0):
    """A premise on the truth: CATEGORY's share of the step time in run
    WHICH lies in [AT_LEAST, AT_MOST], or the pair was disturbed."""
    def premise(pair):
        f = pair.frac(which)[0][category]
        if not at_least <= f <= at_most:
            raise Disturbed("%s: %s %.1f%% of step time in the truth, not in %.0f%%..%.0f%%"
                            % (RUN_NAMES[which], category, 100 * f, 100 * at_least,
                               100 * at_most))
    return premise


RUN_NAMES = {"asis": "as is", "fixed": "fixed"}

PREMISES = {
    "memcpy_asis": share_premise("asis", "memcpy", at_least=0.08),
    "no_memcpy_fixed": share_premise("fixed", "memcpy", at_most=0.03),
    "waits_asis": share_premise("asis", "collective_wait", at_least=0.15),
    "no_waits_fixed": share_premise("fixed", "collective_wait", at_most=0.05),
    "last_rank_changes": premise_last_rank_changes,
    # launch-bound: the GPU computes little of the step
    "gpu_mostly_idle_asis": share_premise("asis", "compute", at_most=0.10),
    "host_paced_asis": premise_host_paced_asis,
    # with the launch calls back to back the GPU, not the host, sets the pace
    "gpu_busy_fixed": share_premise("fixed", "compute", at_least=0.8),
    "in_launch_calls_asis": premise_in_launch_calls_asis,
    "input_asis": share_premise("asis", "idle_input", at_least=0.25),
    "some_input_asis": share_premise("asis", "idle_input", at_least=0.15),
    "no_input_fixed": share_premise("fixed", "idle_input", at_most=0.05),
    "loaders_take_turns": premise_loaders_take_turns,
}


def judge_pair(pair):
    spec = SHAPES[pair.shape]
    lo, hi = spec["band"]
    if not lo <= pair.gain <= hi:
        raise Disturbed("measured gain %.3f (steps %.2f -> %.2f ms) outside the band %.2f..%.2f "
                        "its sizes give" % (pair.gain, pair.step["asis"], pair.step["fixed"],
                                            lo, hi))
    for which in spec.get("clean", ["asis", "fixed"]):
        premise_clean(pair, which)
    for name in spec["premises"]:
        PREMISES[name](pair)


# ---------------------------------------------------------------- report

def gain_of(f):
    g = f.get("gain")
    return float(g) if isinstance(g, (int, float)) else None


def describe(f):
    g = gain_of(f)
    return "%s ranks %s %s gain %s%s" % (
        f.get("cause"), f.get("ranks"), f.get("severity"),
        "%.3f" % g if g is not None else "n/a",
        "" if "cost" not in f else " cost %s" % f.get("cost"))


def top_finding(rep):
    fs = rep.get("findings", [])
    with_gain = [f for f in fs if gain_of(f) is not None]
    if with_gain:
        return max(with_gain, key=gain_of)
    return fs[0] if fs else None


def judge_report(pair, rep, rep_fixed):
    """Every disagreement with the truth, as text (empty: the report is right)."""
    spec = SHAPES[pair.shape]
    bad = []
    fs = rep.get("findings", [])
    top = top_finding(rep)
    if top is None:
        bad.append("as is: no finding at all (measured gain %.3f)" % pair.gain)
    else:
        if gain_of(top) is None:
            bad.append("as is: findings carry no gain (top: %s)" % describe(top))
        if top.get("cause") != spec["cause"]:
            bad.append("as is: top finding is %s, expected %s" % (describe(top), spec["cause"]))
        elif spec["ranks"] is not None and top.get("ranks") != spec["ranks"]:
            bad.append("as is: %s names ranks %s, expected %s" % (spec["cause"], top.get("ranks"),
                                                                  spec["ranks"]))
        if top.get("cause") == spec["cause"]:
            ev, first = top.get("evidence", ""), top.get("first_try", "")
            for word in spec.get("evidence", []):
                if word not in ev:
                    bad.append("as is: %s evidence does not say %r: %s" % (spec["cause"], word, ev))
            for word in spec.get("first_try", []):
                if word not in first:
                    bad.append("as is: %s first try does not say %r: %s"
                               % (spec["cause"], word, first))
            for word in spec.get("first_try_not", []):
                if word in first.lower():
                    bad.append("as is: %s first try says %r: %s" % (spec["cause"], word, first))
        g = gain_of(top)
        tol = (max(GAIN_ABS_TOLERANCE, GAIN_REL_TOLERANCE * pair.gain_whole) +
               pair.allowance("asis", "fixed"))
        if g is not None and abs(g - pair.gain_whole) > tol:
            bad.append("as is: %s gain %.3f, measured %.3f%s (tolerance %.3f)"
                       % (top.get("cause"), g, pair.gain_whole,
                          "" if pair.gain_whole == pair.gain else
                          " with the fixed run's residual taken out (%.3f as run)" % pair.gain, tol))
    gains = [gain_of(f) for f in fs]
    if None not in gains and gains != sorted(gains, reverse=True):
        bad.append("as is: findings not ordered by gain: %s" % gains)
    if pair.gain >= NOT_WORTH and rep.get("healthy") is not False:
        bad.append("as is: healthy is %s, measured gain %.3f" % (rep.get("healthy"), pair.gain))
    for cause in spec.get("forbid", []):
        for f in fs:
            if f.get("cause") == cause:
                bad.append("as is: names %s, which this shape does not have" % describe(f))
    if "pipeline" in spec:
        w = rep.get("whatif", {})
        got = (w.get("pipeline_stages"), w.get("micro_batches"), w.get("pipeline_schedule"))
        if got != spec["pipeline"]:
            bad.append("as is: pipeline (stages, micro-batches, schedule) %s, the job's %s"
                       % (got, spec["pipeline"]))
    for cause in spec.get("forbid_high", []):
        for f in fs:
            if f.get("cause") == cause and f.get("severity") == "high":
                bad.append("as is: names %s high, which this shape does not have" % describe(f))
    want_steps = spec.get("steps", STEPS)
    for which, r in (("as is", rep), ("fixed", rep_fixed)):
        got = r.get("steps", {}).get("count")
        if got != want_steps:
            bad.append("%s: %s steps reported, the job ran %d" % (which, got, want_steps))
    for cause in spec.get("outranks", []):
        ours = [gain_of(f) or 0 for f in fs if f.get("cause") == spec["cause"]]
        for f in fs:
            if f.get("cause") == cause and (gain_of(f) or 0) >= (max(ours) if ours else 0):
                bad.append("as is: %s outranks %s" % (describe(f), spec["cause"]))
    share = float(rep.get("breakdown", {}).get("collective_transfer", 0))
    for f in fs:
        if f.get("cause") == "communication" and (gain_of(f) or 0) > share + CATEGORY_TOLERANCE:
            bad.append("as is: %s, more than the %.1f%% of step time the report gives collective "
                       "transfer" % (describe(f), 100 * share))
    truth = pair.frac("asis")[0]
    for cat in spec.get("truth_categories", []):
        got = float(rep.get("breakdown", {}).get(cat, 0))
        if abs(got - truth[cat]) > CATEGORY_TOLERANCE:
            bad.append("as is: %s %.1f%% of step time, truth %.1f%% (tolerance %.0f points)"
                       % (cat, 100 * got, 100 * truth[cat], 100 * CATEGORY_TOLERANCE))
    limit = NOT_WORTH + spec.get("fixed_residual", 0.0)
    for f in rep_fixed.get("findings", []):
        if f.get("cause") != spec["cause"]:
            continue
        g = gain_of(f)
        if g is None:
            bad.append("fixed: %s still named, with no gain (%s)" % (spec["cause"], describe(f)))
        elif g >= limit:
            bad.append("fixed: %s still named with gain %.3f (limit %.3f)"
                       % (spec["cause"], g, limit))
    return bad


def measure_alone(env, pair):
    """Each rank of a straggler set fixed alone, for real: {rank: measured
    gain}.  A run the machine disturbed (premise_clean) is Disturbed."""
    out = {}
    for rank in SHAPES[pair.shape].get("alone", []):
        which = "alone_%d" % rank
        pair.dirs[which] = run_job(env, pair.shape, which)
        premise_clean(pair, which)
        out[rank] = 1.0 - mean_step_ms(pair.dirs[which]) / pair.step["asis"]
    return out


def judge_alone(pair, alone, rep):
    """The gain the report gives each rank fixed alone (rank_gains) against
    the one measured."""
    bad = []
    top = top_finding(rep) or {}
    given = {g.get("rank"): g.get("gain") for g in top.get("rank_gains", [])}
    for rank, measured in sorted(alone.items()):
        got = given.get(rank)
        tol = (max(GAIN_ABS_TOLERANCE, GAIN_REL_TOLERANCE * measured) +
               pair.allowance("asis", "alone_%d" % rank))
        print("  rank %d fixed alone: measured gain %.3f, report %s" % (
            rank, measured, "%.3f" % got if isinstance(got, (int, float)) else got))
        if not isinstance(got, (int, float)):
            bad.append("as is: the finding gives no gain for rank %d fixed alone" % rank)
        elif abs(got - measured) > tol:
            bad.append("as is: rank %d alone gain %.3f, measured %.3f (tolerance %.3f)"
                       % (rank, got, measured, tol))
    return bad


def summary_line(pair, rep, rep_fixed):
    top = top_finding(rep)
    g = gain_of(top) if top else None
    return ("whatif %s: truth step %.2f -> %.2f ms, measured gain %.3f; report mean %s ms, "
            "predicted gain %s, top %s (if fixed %s ms); all: %s; fixed run: %s"
            % (pair.shape, pair.step["asis"], pair.step["fixed"], pair.gain,
               rep.get("steps", {}).get("mean_ms"), "%.3f" % g if g is not None else "n/a",
               describe(top) if top else "none",
               top.get("step_ms_if_fixed") if top else None,
               "; ".join(describe(f) for f in rep.get("findings", [])) or "none",
               "; ".join(describe(f) for f in rep_fixed.get("findings", [])) or "none"))


def run_shape(shape):
    spec = SHAPES[shape]
    print("shape %s: %s" % (shape, spec["story"]))
    env = Env()
    attempts = spec.get("attempts", ATTEMPTS)
    for attempt in range(1, attempts + 1):
        pair = Pair(shape, run_job(env, shape, "asis"), run_job(env, shape, "fixed"))
        try:
            judge_pair(pair)
            alone = measure_alone(env, pair)
        except Disturbed as e:
            print("  disturbed (attempt %d of %d): %s" % (attempt, attempts, e))
            continue
        rep, rep_fixed = report(env, pair.dirs["asis"]), report(env, pair.dirs["fixed"])
        for which, r in (("asis", rep), ("fixed", rep_fixed)):
            frac = pair.frac(which)[0]
            got = r.get("breakdown", {})
            got = dict(got, **{"idle_host+idle_other": float(got.get("idle_host", 0)) +
                               float(got.get("idle_other", 0))})
            print("  %-6s step %.2f ms; categories truth/report: %s" % (
                which, pair.step[which], "; ".join(
                    "%s %.1f/%.1f%%" % (k, 100 * v, 100 * float(got.get(k, 0)))
                    for k, v in frac.items() if k != "step_ms")))
        print(summary_line(pair, rep, rep_fixed))
        if pair.hiccup:
            print("  lost to the machine: %s" % ", ".join(
                "%s %.1f%%" % (w, 100 * h) for w, h in sorted(pair.hiccup.items())))
        bad = judge_report(pair, rep, rep_fixed)
        bad += judge_alone(pair, alone, rep)
        for b in bad:
            print("  wrong: " + b)
        if bad:
            raise Failure("%d disagreement(s) with the truth" % len(bad))
        return
    raise Failure("every attempt was disturbed: the machine is too loaded to judge")


def main(argv):
    if len(argv) == 2 and argv[1] == "--list":
        print("\n".join(SHAPES))
        return 0
    if len(argv) == 3 and argv[1] == "--commands" and argv[2] in SHAPES:
        spec = SHAPES[argv[2]]
        for which in ["asis", "fixed"] + ["alone_%d" % r for r in spec.get("alone", [])]:
            prefix = "".join("%s=%s " % kv for kv in spec.get("env_" + which, spec["env"]).items())
            cmd = ["build/analyzer/scaleprof", "run", "--sim", "-o", "%s-%s" % (argv[2], which),
                   "--nproc",
                   str(spec["nproc"]), "--", "build/examples/shapes"] + common(spec) + spec[which]
            print("%-7s %s%s" % (which, prefix, " ".join(cmd)))
        return 0
    if len(argv) != 2 or argv[1] not in SHAPES:
        sys.stderr.write("usage: whatif.py SHAPE|--list|--commands SHAPE\nshapes: %s\n"
                         % " ".join(SHAPES))
        return 2
    return testmain.verdict(argv[1], run_shape, Failure)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
