#!/usr/bin/python3
"""Writes torch_cpu_bare_array.json.gz (tests/import): a CPU training loop (a linear model,
a DataLoader with 2 worker processes whose items take 2 ms each) profiled
by a PyTorch built without Kineto (Debian's python3-torch 1.13), whose
export_chrome_trace writes the legacy format: a bare JSON array of events
with no "cat" and "pid": "CPU functions".  A schedule makes the profiler
mark each step with a ProfilerStep#N range.

usage: /usr/bin/python3 make_bare_array.py OUT.json.gz"""
import gzip
import os
import sys
import tempfile
import time

import torch
from torch.utils.data import DataLoader, Dataset


class Slow(Dataset):
    def __len__(self):
        return 96

    def __getitem__(self, i):
        time.sleep(0.002)
        return torch.randn(32), torch.randn(1)


def main(out):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(32, 64), torch.nn.ReLU(), torch.nn.Linear(64, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = DataLoader(Slow(), batch_size=8, num_workers=2)
    tmp = tempfile.mktemp(suffix=".json")
    sched = torch.profiler.schedule(wait=1, warmup=1, active=8, repeat=1)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], schedule=sched,
                                on_trace_ready=lambda p: p.export_chrome_trace(tmp)) as prof:
        for x, y in loader:
            loss = ((model(x) - y) ** 2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            prof.step()
    with open(tmp, "rb") as f, gzip.open(out, "wb") as g:
        g.write(f.read())
    os.unlink(tmp)


if __name__ == "__main__":
    main(sys.argv[1])
