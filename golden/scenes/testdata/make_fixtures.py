#!/usr/bin/env python3
"""Write the shards of golden/scenes with Python's tarfile, numpy and PIL.

Run from anywhere: /usr/bin/python3 golden/scenes/testdata/make_fixtures.py
(Debian's python3-numpy and python3-pil). The tests only read the shards
written here; they never run this script.

Sample i (key "%06d" % i; samples 0-4 in scenes-0.tar, 5-9 in scenes-1.tar):
  KEY.jpg        a 24 x 20 gradient photo
  KEY.depth.npy  float32 (6, 8): i * 1000 + arange(48)
  KEY.npy        int16 (3,): [i, -i, 7 * i]
  KEY.cls        i % 3, as text
  KEY.json       metadata no key reads
Sample 6's depth is written in .npy format version 2.0 and sample 8's
members are named KEY.Depth.NPY and KEY.NPY, as WebDataset allows.
"""
import io
import os
import tarfile

import numpy as np
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLES, PER_SHARD = 10, 5


def npy(a, version=None):
    b = io.BytesIO()
    if version is None:
        np.save(b, a)
    else:
        np.lib.format.write_array(b, a, version=version)
    return b.getvalue()


def photo(i):
    y, x = np.mgrid[0:20, 0:24]
    rgb = np.stack([x * 10 + i, y * 12, np.full_like(x, 40 * (i % 5))], axis=-1)
    b = io.BytesIO()
    Image.fromarray(rgb.astype(np.uint8)).save(b, "JPEG", quality=95)
    return b.getvalue()


def add(tar, name, data):
    info = tarfile.TarInfo(name)
    info.size, info.mtime, info.mode = len(data), 0, 0o644
    tar.addfile(info, io.BytesIO(data))


for shard in range(SAMPLES // PER_SHARD):
    path = os.path.join(HERE, "scenes-%d.tar" % shard)
    with tarfile.open(path, "w", format=tarfile.USTAR_FORMAT) as tar:
        add(tar, "__meta__", b"written by make_fixtures.py")
        for i in range(shard * PER_SHARD, (shard + 1) * PER_SHARD):
            key = "%06d" % i
            depth = i * 1000 + np.arange(48, dtype=np.float32).reshape(6, 8)
            pose = np.array([i, -i, 7 * i], dtype=np.int16)
            depth_ext, pose_ext = ("Depth.NPY", "NPY") if i == 8 else ("depth.npy", "npy")
            add(tar, key + ".jpg", photo(i))
            add(tar, key + "." + depth_ext, npy(depth, (2, 0) if i == 6 else None))
            add(tar, key + "." + pose_ext, npy(pose))
            add(tar, key + ".cls", b"%d" % (i % 3))
            add(tar, key + ".json", b'{"scene": %d}' % i)
