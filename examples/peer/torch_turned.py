#!/usr/bin/python3
"""The PyTorch side of make peer's rotated case: cellmap-data's method.

Usage: torch_turned.py STORE CROPS.json CROPS.bin NUM_WORKERS

Reads the crops the Go loader of examples/peer/turned draws for epoch 0
(CROPS.json, from peer-bench turned-crops: each crop's origin and rotation
matrix) as cellmap-data reads a turned crop (its CellMapImage): zarr-python
reads a box enlarged to hold the turned crop, ceil(64 * sum_j |R[i, j]|)
voxels along axis i (made even, so that its centre is the crop's), padded
with 0 past the array; torch's affine_grid and grid_sample turn it,
trilinear for raw (then divided by 255) and nearest for the two class
arrays; the middle 64^3 is the crop. The grid is the crop's matrix in
torch's (x, y, z) order, scaled by the box's sides, so that the crops are
the Go loader's. It first checks its first crops against the Go loader's
(CROPS.bin): all but a few voxels at the arrays' edges, where the Go
loader reads the fill and grid_sample blends with the padding, agree.
Then it times one epoch in this fresh process, from the DataLoader's
creation to its last batch, batch 8, and prints crops per second.
"""
import json
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
import zarr
from torch.utils.data import DataLoader, Dataset

PATHS = ["raw", "labels/a", "labels/b"]
EDGE = 64


def read_box(a, start, size):
    """The box of a at start, of size, 0 past the array's edges."""
    lo = np.maximum(start, 0)
    hi = np.minimum(start + size, a.shape)
    out = np.zeros(size, dtype=a.dtype)
    if np.all(hi > lo):
        inner = a[lo[0]:hi[0], lo[1]:hi[1], lo[2]:hi[2]]
        at = lo - start
        out[at[0]:at[0] + inner.shape[0], at[1]:at[1] + inner.shape[1], at[2]:at[2] + inner.shape[2]] = inner
    return out


def turn(a, origin, R, mode):
    """cellmap-data's turned read of the crop at origin of array a."""
    n = np.array([int(np.ceil(EDGE * np.abs(R[i]).sum())) for i in range(3)])
    n += n % 2
    centre = np.array(origin) + (EDGE - 1) / 2
    start = (centre - (n - 1) / 2).astype(int)
    box = torch.from_numpy(read_box(a, start, n).astype(np.float32))[None, None]
    # The output voxel at offset d from the centre reads offset R^T d; in
    # affine_grid's coordinates, each axis spans its side of the box.
    m = R.T * n[None, :] / n[:, None]
    theta = torch.tensor(m[::-1, ::-1].copy(), dtype=torch.float32)
    theta = torch.cat([theta, torch.zeros(3, 1)], dim=1)[None]
    grid = F.affine_grid(theta, list(box.shape), align_corners=False)
    out = F.grid_sample(box, grid, mode=mode, padding_mode="zeros", align_corners=False)[0, 0]
    lo = (n - EDGE) // 2
    return out[lo[0]:lo[0] + EDGE, lo[1]:lo[1] + EDGE, lo[2]:lo[2] + EDGE]


class Crops(Dataset):
    def __init__(self, store, crops):
        self.store, self.crops, self.arrays = store, crops, None

    def __len__(self):
        return len(self.crops)

    def __getitem__(self, i):
        if self.arrays is None:  # opened in each worker
            self.arrays = [zarr.open(zarr.DirectoryStore(self.store), mode="r", path=p) for p in PATHS]
        c = self.crops[i]
        R = np.array(c["rotation"])
        raw = turn(self.arrays[0], c["origin"][0], R, "bilinear") / 255
        labels = [turn(a, c["origin"][1], R, "nearest") for a in self.arrays[1:]]
        return raw, torch.stack(labels)


def main():
    store, crops_file, bin_file, workers = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    crops = json.load(open(crops_file))
    want = np.fromfile(bin_file, dtype="<f4")
    per = 3 * EDGE ** 3
    ds = Crops(store, crops)
    for i in range(len(want) // per):
        raw, labels = ds[i]
        go = want[i * per:(i + 1) * per]
        raw_ok = np.abs(raw.numpy().ravel() - go[:EDGE ** 3]) < 1e-4
        labels_ok = labels.numpy().ravel() == go[EDGE ** 3:]
        if raw_ok.mean() < 0.99 or labels_ok.mean() < 0.99:
            sys.exit(f"crop {i}: {raw_ok.mean():.4f} of raw and {labels_ok.mean():.4f} of the labels agree with the Go loader's")
    start = time.perf_counter()
    loader = DataLoader(Crops(store, crops), batch_size=8, num_workers=workers)
    n = 0
    for raw, labels in loader:
        n += raw.shape[0]
    print(f"{n / (time.perf_counter() - start):.1f}")


if __name__ == "__main__":
    main()
