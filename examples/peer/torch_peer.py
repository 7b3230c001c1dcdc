#!/usr/bin/python3
"""The PyTorch side of make peer: Debian's python3-zarr and python3-torch.

Usage: torch_peer.py STORE CROPS.json CROPS.bin NUM_WORKERS [N]

Reads the crops the Go loader draws for epoch 0, in its order (CROPS.json,
from peer-bench crops; the first N of them when N is given) with a torch
DataLoader over zarr arrays, as a PyTorch
user would write it: slice each box, np.flip / np.transpose / np.rot90 it
as the crop says, batch 8. It first checks that its first crops are
byte-equal to the Go loader's (CROPS.bin), then times one epoch in this
fresh process, from the DataLoader's creation to its last batch, and
prints crops per second.
"""
import json
import sys
import time

import numpy as np
import torch
import zarr
from torch.utils.data import DataLoader, Dataset

PATHS = ["raw", "labels/a", "labels/b"]
EDGE = 64


def augment(x, c):
    for a, m in enumerate(c["mirror"]):
        if m:
            x = np.flip(x, a)
    x = np.transpose(x, c["transpose"])
    if c["rot90"]:
        x = np.rot90(x, c["rot90"], axes=(1, 2))
    return np.ascontiguousarray(x)


class Crops(Dataset):
    def __init__(self, store, crops):
        self.store, self.crops, self.arrays = store, crops, None

    def __len__(self):
        return len(self.crops)

    def __getitem__(self, i):
        if self.arrays is None:  # opened in each worker
            self.arrays = [zarr.open(zarr.DirectoryStore(self.store), mode="r", path=p) for p in PATHS]
        c = self.crops[i]
        out = []
        for k, a in enumerate(self.arrays):
            o = c["origin"][min(k, 1)]
            out.append(augment(a[o[0]:o[0] + EDGE, o[1]:o[1] + EDGE, o[2]:o[2] + EDGE], c))
        return torch.from_numpy(out[0]), torch.from_numpy(np.stack(out[1:]))


def main():
    store, crops_file, bin_file, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    crops = json.load(open(crops_file))
    if len(sys.argv) > 5:
        crops = crops[: int(sys.argv[5])]
    want = open(bin_file, "rb").read()
    per = 3 * EDGE ** 3
    ds = Crops(store, crops)
    for i in range(len(want) // per):
        raw, labels = ds[i]
        got = raw.numpy().tobytes() + labels.numpy().tobytes()
        if got != want[i * per:(i + 1) * per]:
            sys.exit(f"crop {i}: torch's bytes differ from the Go loader's")
    start = time.perf_counter()
    loader = DataLoader(Crops(store, crops), batch_size=8, num_workers=workers)
    n = 0
    for raw, labels in loader:
        n += raw.shape[0]
    print(f"{n / (time.perf_counter() - start):.1f}")


if __name__ == "__main__":
    main()
