"""A training job's input side: a map-style dataset of files on disk, read
by a PyTorch DataLoader with 4 worker processes, consumed by a loop that
does nothing else.  Usage: dataloader_job.py DATASET_DIR DELAY_S.
Prints "main <pid>" so the test can find this process's trace."""
import os
import sys
import time

import torch
from torch.utils.data import DataLoader, Dataset

WORKERS = 4
BATCH = 4


class FilesOnDisk(Dataset):
    def __init__(self, root, delay):
        self.paths = sorted(os.path.join(root, n) for n in os.listdir(root))
        self.delay = delay

    def __len__(self):
        return len(self.paths)

    def __getitem__(self, i):
        if self.delay:
            time.sleep(self.delay)  # a slow decoder or slow storage
        with open(self.paths[i], "rb") as f:
            data = f.read()
        return torch.tensor(len(data))


def main():
    root, delay = sys.argv[1], float(sys.argv[2])
    loader = DataLoader(FilesOnDisk(root, delay), batch_size=BATCH, num_workers=WORKERS)
    seen = 0
    for batch in loader:
        seen += int(batch.sum())
    print(f"main {os.getpid()}")
    print(f"bytes {seen}")


if __name__ == "__main__":
    main()
