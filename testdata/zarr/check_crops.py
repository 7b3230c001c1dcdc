#!/usr/bin/python3
"""Check crops read by runtime/volume against numpy (run by its tests).

Usage: check_crops.py CASES.json
CASES.json lists, per crop and key, the array (a zarr root and path, or a
.npy file of numpy's reading of it, or null for a class the volume lacks),
the dtype, the box origin and shape, the fill
value, the augmentation, and the file and offset of the bytes Go read.
Each is recomputed with zarr and numpy: the box sliced out of the array,
padded with the fill value, then np.flip, np.transpose and np.rot90 in that
order. Prints "ok N" or the first mismatch, and exits 1 on a mismatch.
"""
import json
import sys

import numpy as np
import zarr

arrays = {}


def array(c):
    key = (c["root"], c["path"], c.get("npy"))
    if key not in arrays:
        if c.get("npy"):
            arrays[key] = np.load(c["npy"])
        else:
            arrays[key] = zarr.open(zarr.DirectoryStore(c["root"]), mode="r", path=c["path"] or None)
    return arrays[key]


def expected(c):
    dt = np.dtype(c["dtype"])
    out = np.full(c["shape"], c["fill"], dtype=dt)
    if c["root"] is not None:
        z = array(c)
        src, dst = [], []
        for o, n, s in zip(c["origin"], c["shape"], z.shape):
            lo, hi = max(o, 0), min(o + n, s)
            if lo >= hi:
                return augment(out, c)
            src.append(slice(lo, hi))
            dst.append(slice(lo - o, hi - o))
        out[tuple(dst)] = z[tuple(src)]
    return augment(out, c)


def augment(out, c):
    for a, m in enumerate(c["mirror"]):
        if m:
            out = np.flip(out, a)
    out = np.transpose(out, c["transpose"])
    if c["rot90"]:
        out = np.rot90(out, c["rot90"], axes=tuple(c["rot90_axes"]))
    return out


cases = json.load(open(sys.argv[1]))
for i, c in enumerate(cases):
    want = np.ascontiguousarray(expected(c)).astype(np.dtype(c["dtype"]).newbyteorder("<")).tobytes()
    with open(c["file"], "rb") as f:
        f.seek(c["offset"])
        got = f.read(len(want))
    if got != want:
        print(f"case {i} ({c['what']}): Go's bytes differ from numpy's")
        sys.exit(1)
print("ok", len(cases))
