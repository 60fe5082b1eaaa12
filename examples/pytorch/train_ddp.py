#!/usr/bin/env python3
"""train_ddp.py - a small DistributedDataParallel training job to profile.

Launched by torchrun (or `python3 -m torch.distributed.run`, or
`scaleprof run`), one process per GPU.  Each rank reads its share of a
synthetic dataset from files on disk through a DataLoader with --workers
loader processes, so the input pipeline is real: file reads in the workers,
batches handed to the trainer over the loader's queues.  The model is a
stack of linear layers sized by --width, big enough to make the gradient
all-reduce visible.

Every step is bracketed by an NVTX range (on CUDA) and a profiler
record_function, which is how profilers find step boundaries.  --cpu runs
the same job on CPU tensors with the gloo backend, so the input side can be
exercised on a machine without GPUs.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.distributed import DistributedSampler

SAMPLE_FEATURES = 1024          # floats per sample, as stored on disk
SAMPLES_PER_FILE = 64
CLASSES = 10
WARMUP_STEPS = 3                # excluded from the printed mean, as profilers do


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=20)
    p.add_argument("--batch", type=int, default=64, help="samples per GPU per step")
    p.add_argument("--workers", type=int, default=2, help="DataLoader worker processes")
    p.add_argument("--width", type=int, default=2048, help="hidden layer width")
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--files", type=int, default=64, help="dataset files to create")
    p.add_argument("--worker-cost-ms", type=float, default=0.0,
                   help="extra CPU time per sample in the loader (decode/augment)")
    p.add_argument("--data", default="ddp_data_torch", help="dataset directory")
    p.add_argument("--cpu", action="store_true", help="CPU tensors, gloo backend")
    p.add_argument("--rendezvous", default=None,
                   help="shared directory for a file rendezvous when MASTER_ADDR is unset "
                        "(default $SCALEPROF_RENDEZVOUS, then $SIM_RENDEZVOUS)")
    return p.parse_args()


def make_dataset(directory, files, rank):
    """Writes missing files atomically: several ranks may start at once."""
    os.makedirs(directory, exist_ok=True)
    gen = torch.Generator().manual_seed(1234)
    for i in range(files):
        path = os.path.join(directory, "shard-%04d.bin" % i)
        block = torch.randn(SAMPLES_PER_FILE, SAMPLE_FEATURES, generator=gen)
        if os.path.exists(path):
            continue
        tmp = "%s.tmp.%d.%d" % (path, rank, os.getpid())
        with open(tmp, "wb") as f:
            f.write(block.numpy().tobytes())
        os.replace(tmp, path)


class FileDataset(Dataset):
    """One sample = one read() of SAMPLE_FEATURES floats at its offset."""

    def __init__(self, directory, files, cost_ms):
        self.paths = [os.path.join(directory, "shard-%04d.bin" % i) for i in range(files)]
        self.cost_s = cost_ms / 1000.0
        self.sample_bytes = SAMPLE_FEATURES * 4

    def __len__(self):
        return len(self.paths) * SAMPLES_PER_FILE

    def __getitem__(self, index):
        path = self.paths[index // SAMPLES_PER_FILE]
        fd = os.open(path, os.O_RDONLY)
        try:
            os.lseek(fd, (index % SAMPLES_PER_FILE) * self.sample_bytes, os.SEEK_SET)
            raw = os.read(fd, self.sample_bytes)
        finally:
            os.close(fd)
        if self.cost_s:
            end = time.perf_counter() + self.cost_s
            while time.perf_counter() < end:
                pass
        x = torch.frombuffer(bytearray(raw), dtype=torch.float32)
        return x, index % CLASSES


def init_method(args):
    """torchrun passes MASTER_ADDR/PORT; other launchers (scaleprof run, a
    shell loop setting RANK and WORLD_SIZE) give a shared directory instead,
    where the ranks meet through a file."""
    if "MASTER_ADDR" in os.environ:
        return {}
    directory = (args.rendezvous or os.environ.get("SCALEPROF_RENDEZVOUS")
                 or os.environ.get("SIM_RENDEZVOUS"))
    if not directory:
        raise SystemExit("train_ddp.py: set MASTER_ADDR/MASTER_PORT (torchrun does) "
                         "or give --rendezvous DIR")
    return {"init_method": "file://" + os.path.abspath(os.path.join(directory, "torch-store")),
            "rank": int(os.environ.get("RANK", "0")),
            "world_size": int(os.environ.get("WORLD_SIZE", "1"))}


def make_model(width, layers):
    mods = [nn.Linear(SAMPLE_FEATURES, width), nn.ReLU()]
    for _ in range(layers - 1):
        mods += [nn.Linear(width, width), nn.ReLU()]
    mods.append(nn.Linear(width, CLASSES))
    return nn.Sequential(*mods)


class StepMarker:
    """NVTX range (CUDA) + record_function around one step."""

    def __init__(self, step, cuda):
        self.name = "step %d" % step
        self.cuda = cuda
        self.rf = torch.autograd.profiler.record_function(self.name)

    def __enter__(self):
        if self.cuda:
            torch.cuda.nvtx.range_push(self.name)
        self.rf.__enter__()

    def __exit__(self, *exc):
        self.rf.__exit__(*exc)
        if self.cuda:
            torch.cuda.nvtx.range_pop()


def main():
    args = parse_args()
    use_cuda = not args.cpu
    if use_cuda and not torch.cuda.is_available():
        raise SystemExit("train_ddp.py: no CUDA device; use --cpu to run on CPU tensors")
    dist.init_process_group("nccl" if use_cuda else "gloo", **init_method(args))
    rank, world = dist.get_rank(), dist.get_world_size()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device("cuda", local_rank) if use_cuda else torch.device("cpu")
    if use_cuda:
        torch.cuda.set_device(device)

    if rank == 0 or int(os.environ.get("LOCAL_RANK", "0")) == 0:
        make_dataset(args.data, args.files, rank)
    dist.barrier()

    data = FileDataset(args.data, args.files, args.worker_cost_ms)
    sampler = DistributedSampler(data, num_replicas=world, rank=rank, shuffle=True)
    loader = DataLoader(data, batch_size=args.batch, sampler=sampler,
                        num_workers=args.workers, pin_memory=use_cuda, drop_last=True,
                        persistent_workers=args.workers > 0)
    model = DDP(make_model(args.width, args.layers).to(device),
                device_ids=[local_rank] if use_cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()

    times = []
    step = 0
    epoch = 0
    while step < args.steps:
        sampler.set_epoch(epoch)
        it = iter(loader)
        while step < args.steps:
            t0 = time.perf_counter()
            with StepMarker(step, use_cuda):
                try:
                    x, y = next(it)
                except StopIteration:
                    break
                x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()
                if use_cuda:
                    torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
            step += 1
        epoch += 1

    kept = times[WARMUP_STEPS:] or times
    mean_ms = 1000.0 * sum(kept) / len(kept)
    if rank == 0:
        print("train_ddp: %d ranks, batch %d per rank, %d workers: %.2f ms/step, "
              "%.1f samples/s (last loss %.3f)"
              % (world, args.batch, args.workers, mean_ms,
                 1000.0 * args.batch * world / mean_ms, loss.item()))
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
