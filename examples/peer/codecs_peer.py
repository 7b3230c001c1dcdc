"""zarr-python's side of the whole-array decode comparison (codecs.sh).

usage: codecs_peer.py write SRC DIR   rewrite the array SRC with numcodecs as
                                      DIR/zstd6.zarr and DIR/blosc-lz4.zarr
       codecs_peer.py read ARRAY      a[:] on one thread: prints MB/s

The stores are written by zarr-python itself (chunks [64, 128, 128], zstd
level 6, and Blosc lz4 level 5 with byte shuffle, numcodecs' defaults), so
that the Go reader is measured on what users' stores hold. Reads run on one
thread: numcodecs' Blosc is told to use one, and zarr-python 2 decodes the
chunks of a[:] one after another.
"""

import sys
import time

import numcodecs
import zarr
from numcodecs import Blosc, Zstd


def write(src, dst):
    data = zarr.open(src, mode="r")[:]
    for name, compressor in (("zstd6", Zstd(level=6)), ("blosc-lz4", Blosc(cname="lz4", clevel=5, shuffle=Blosc.SHUFFLE))):
        store = zarr.DirectoryStore(f"{dst}/{name}.zarr", dimension_separator="/")
        a = zarr.create(data.shape, chunks=(64, 128, 128), dtype=data.dtype, compressor=compressor, store=store, overwrite=True)
        a[:] = data


def read(path):
    numcodecs.blosc.use_threads = False
    numcodecs.blosc.set_nthreads(1)
    t0 = time.perf_counter()
    a = zarr.open(path, mode="r")
    n = a[:].nbytes
    print(f"{n / 1e6 / (time.perf_counter() - t0):.1f}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "write":
        write(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "read":
        read(sys.argv[2])
    else:
        sys.exit(__doc__)
