"""A training loop on CPUs only, as someone without a GPU writes it: a
map-style dataset whose __getitem__ opens and reads one file of a
directory and then sleeps (a slow decoder), a DataLoader with W worker
processes, and a model step of matrix products in the loop.  The loop
times itself with time.perf_counter: around next(iterator) (the wait for
input) and around each whole iteration, and prints that truth last:

  truth: iterations N iter_ms X wait_ms Y wait_share Z workers W

Usage: cpu_loop.py DATA_DIR WORKERS ITERATIONS [SLEEP_MS] [COMPUTE_MS] [READ_MB]
(READ_MB > 0: the dataset's files are READ_MB MB each, FILES_BIG of them,
so that a sample's time is mostly its read; SLEEP_MS 0 then makes reading
all a sample does.)
(CPU_LOOP_TIMES=FILE: each iteration's start, input and end times in ns.)
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

BATCH = 4
FILES = 64
FILE_BYTES = 64 * 1024
FILES_BIG = 8
WARMUP = 3


class Shards(Dataset):
    def __init__(self, root, sleep_s, files):
        self.paths = [os.path.join(root, f"shard{i:03d}.bin") for i in range(files)]
        self.sleep_s = sleep_s

    def __len__(self):
        return 10 ** 6

    def __getitem__(self, i):
        with open(self.paths[i % len(self.paths)], "rb") as f:
            raw = f.read()
        time.sleep(self.sleep_s)
        return torch.frombuffer(bytearray(raw[:4096]), dtype=torch.uint8).float()


def make_data(root, files, size):
    os.makedirs(root, exist_ok=True)
    for i in range(files):
        p = os.path.join(root, f"shard{i:03d}.bin")
        if not os.path.exists(p) or os.path.getsize(p) != size:
            with open(p, "wb") as f:
                f.write(os.urandom(size))


def main():
    root, workers, iters = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    sleep_ms = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    compute_ms = float(sys.argv[5]) if len(sys.argv) > 5 else 15.0
    read_mb = float(sys.argv[6]) if len(sys.argv) > 6 else 0
    files, size = (FILES_BIG, int(read_mb * 1024 * 1024)) if read_mb > 0 else (FILES, FILE_BYTES)
    torch.set_num_threads(1)
    make_data(root, files, size)
    loader = DataLoader(Shards(root, sleep_ms / 1000, files), batch_size=BATCH, num_workers=workers)
    w = torch.randn(4096, 256)
    it = iter(loader)
    # perf_counter is CLOCK_MONOTONIC here: the trace's clock
    log = open(os.environ["CPU_LOOP_TIMES"], "w") if os.environ.get("CPU_LOOP_TIMES") else None
    waits, times = [], []
    for n in range(iters + WARMUP):
        t0 = time.perf_counter()
        x = next(it)
        t1 = time.perf_counter()
        end = t1 + compute_ms / 1000
        while time.perf_counter() < end:  # the model's step, a fixed time
            y = (x @ w).relu().sum()
        t2 = time.perf_counter()
        if n >= WARMUP:
            waits.append(t1 - t0)
            times.append(t2 - t0)
        if log:
            log.write(f"{n} {int(t0 * 1e9)} {int(t1 * 1e9)} {int(t2 * 1e9)}\n")
    del it
    iter_ms = 1000 * sum(times) / len(times)
    wait_ms = 1000 * sum(waits) / len(waits)
    print(f"truth: iterations {len(times)} iter_ms {iter_ms:.2f} wait_ms {wait_ms:.2f} "
          f"wait_share {wait_ms / iter_ms:.3f} workers {workers} y {float(y):.1f}")


if __name__ == "__main__":
    main()
