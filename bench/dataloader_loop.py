"""dataloader_loop.py - a CPU training loop fed by a PyTorch DataLoader, the
end-to-end case of bench/run: WORKERS loader processes read samples from
files on disk, the main process runs a small MLP forward and backward per
batch.  Prints "step_ms M" (the median time of a step after the first
WARMUP) and, under --torch-profiler OUT, records the loop with
torch.profiler (CPU activities) and writes its Chrome trace to OUT.

usage: dataloader_loop.py DATA_DIR STEPS [--torch-profiler OUT]
"""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

WORKERS = 2
BATCH = 16
SAMPLES = 256
SAMPLE_BYTES = 16384
WARMUP = 3
torch.set_num_threads(1)


class FilesOnDisk(Dataset):
    def __init__(self, root):
        self.paths = sorted(os.path.join(root, n) for n in os.listdir(root))

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        with open(self.paths[i], "rb") as f:
            data = f.read()
        x = torch.frombuffer(bytearray(data), dtype=torch.uint8)[:1024].float() / 255
        return x, x[:16]


def make_data(root):
    os.makedirs(root, exist_ok=True)
    if len(os.listdir(root)) >= SAMPLES:
        return
    for i in range(SAMPLES):
        with open(os.path.join(root, "s%04d" % i), "wb") as f:
            f.write(os.urandom(SAMPLE_BYTES))


def loop(root, steps, prof=None):
    model = torch.nn.Sequential(torch.nn.Linear(1024, 256), torch.nn.ReLU(), torch.nn.Linear(256, 16))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(FilesOnDisk(root), batch_size=BATCH, num_workers=WORKERS,
                        persistent_workers=True, shuffle=True)
    times, done = [], 0
    while done < steps:
        t0 = time.perf_counter()
        for x, y in loader:
            loss = torch.nn.functional.mse_loss(model(x), y)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if prof is not None:
                prof.step()
            t1 = time.perf_counter()
            times.append(t1 - t0)
            t0 = t1
            done += 1
            if done >= steps:
                break
    kept = sorted(times[WARMUP:]) or sorted(times)
    return kept[len(kept) // 2] * 1e3


def main():
    root, steps = sys.argv[1], int(sys.argv[2])
    make_data(root)
    if len(sys.argv) > 4 and sys.argv[3] == "--torch-profiler":
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            ms = loop(root, steps, prof)
        prof.export_chrome_trace(sys.argv[4])
    else:
        ms = loop(root, steps)
    print("step_ms %.3f" % ms)


if __name__ == "__main__":
    main()
