"""zarr-python's side of the prediction-writing comparison (predict.sh).

usage: predict_peer.py write DIR OUT DTYPE CODEC   write the predictions of
                                                  every 64^3 tile of DIR/raw
                                                  to OUT: prints MB/s
       predict_peer.py same A B                   exit 1 unless arrays A and
                                                  B hold the same values

As cellmap-data's writer does, each tile is written through zarr-python by
slice assignment, a[z0:z1, y0:y1, x0:x1] = p, into an array chunked as the
tiles (so that no chunk is read back), with numcodecs' zstd level 6 or
Blosc lz4 (level 5, byte shuffle, numcodecs' threads as it sets them). A
tile's prediction is its raw voxels over 255 as float32, or 1 where they
are above 128 as uint8: what peer-bench predict writes. The raw is read
whole and every tile's prediction made first, as a model's outputs; the
time is from creating the array to the last tile written.
"""

import sys
import time

import numpy as np
import zarr
from numcodecs import Blosc, Zstd

SIDE = 64


def write(src, out, dtype, codec):
    raw = zarr.open(f"{src}/raw", mode="r")[:]
    compressor = Zstd(level=6) if codec == "zstd6" else Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE)
    tiles = []
    for z in range(0, raw.shape[0], SIDE):
        for y in range(0, raw.shape[1], SIDE):
            for x in range(0, raw.shape[2], SIDE):
                r = raw[z : z + SIDE, y : y + SIDE, x : x + SIDE]
                p = (r / 255).astype(np.float32) if dtype == "float32" else (r > 128).astype(np.uint8)
                tiles.append(((slice(z, z + SIDE), slice(y, y + SIDE), slice(x, x + SIDE)), p))
    t0 = time.perf_counter()
    a = zarr.open(out, mode="w", shape=raw.shape, chunks=(SIDE,) * 3, dtype=dtype, compressor=compressor, fill_value=0)
    for at, p in tiles:
        a[at] = p
    n = raw.size * np.dtype(dtype).itemsize
    print(f"{n / 1e6 / (time.perf_counter() - t0):.1f}")


def same(a, b):
    x, y = zarr.open(a, mode="r")[:], zarr.open(b, mode="r")[:]
    if x.dtype != y.dtype or not np.array_equal(x, y):
        sys.exit(f"{a} and {b} differ: {x.dtype} {x.shape}, {y.dtype} {y.shape}")


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "write":
        write(*sys.argv[2:])
    elif len(sys.argv) == 4 and sys.argv[1] == "same":
        same(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
