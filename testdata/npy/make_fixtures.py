#!/usr/bin/env python3
"""Regenerate the .npy fixtures of runtime/npy's tests with real numpy.

Run from anywhere: python3 testdata/npy/make_fixtures.py
The tests only read the files written here; they never run this script.
Every accepted fixture holds arange values (a bool one holds i % 3 == 0,
an offsets one the running sum of its samples' row counts).
"""
import os

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


def save(name, a):
    np.save(os.path.join(HERE, name), a)


def write(name, a, version):
    with open(os.path.join(HERE, name), "wb") as f:
        np.lib.format.write_array(f, a, version=version)


# Files loadergen accepts.
save("u8_4x2x3.npy", np.arange(24, dtype=np.uint8).reshape(4, 2, 3))
save("f4_3x2x2x2.npy", np.arange(24, dtype=np.float32).reshape(3, 2, 2, 2))
save("b1_5x2.npy", (np.arange(10) % 3 == 0).reshape(5, 2))
save("f2_4x3.npy", np.arange(12, dtype=np.float16).reshape(4, 3))
save("i2_6.npy", np.arange(6, dtype=np.int16))
write("i8_3x2_v2.npy", np.arange(6, dtype=np.int64).reshape(3, 2), (2, 0))
write("u2_2x3_v3.npy", np.arange(6, dtype=np.uint16).reshape(2, 3), (3, 0))
# Raw 16-bit words as numpy stores a dtype it has no name for (bfloat16).
save("v2_3x2.npy", np.arange(6, dtype="<u2").reshape(3, 2).view("V2"))

# Files loadergen refuses.
save("fortran_f4_2x3.npy", np.asfortranarray(np.arange(6, dtype=np.float32).reshape(2, 3)))
save("bigendian_f4_3x2.npy", np.arange(6, dtype=">f4").reshape(3, 2))
save("scalar_f4.npy", np.float32(1.5))
save("structured_3.npy", np.zeros(3, dtype=[("a", "<f4"), ("b", "<i2")]))
save("object_2.npy", np.array([None, 1], dtype=object))

# Ragged (CSR) files: every sample's rows back to back, and the int64 row
# offsets of each sample. The tokens' samples have 3, 0, 5, 1 and 4 rows,
# the boxes' 2, 1, 0 and 3.
save("csr_tokens.npy", np.arange(13, dtype=np.int32))
save("csr_tokens_offsets.npy", np.cumsum([0, 3, 0, 5, 1, 4], dtype=np.int64))
save("csr_boxes.npy", np.arange(24, dtype=np.float32).reshape(6, 4))
save("csr_boxes_offsets.npy", np.cumsum([0, 2, 1, 0, 3], dtype=np.int64))

# Offsets loadergen refuses, for csr_tokens.npy.
save("csr_offsets_decreasing.npy", np.array([0, 3, 2, 8, 9, 13], dtype=np.int64))
save("csr_offsets_last.npy", np.array([0, 3, 3, 8, 9, 12], dtype=np.int64))
save("csr_offsets_first.npy", np.array([1, 3, 3, 8, 9, 13], dtype=np.int64))
save("csr_offsets_i4.npy", np.array([0, 3, 3, 8, 9, 13], dtype=np.int32))
save("csr_offsets_2d.npy", np.array([[0, 3, 3], [8, 9, 13]], dtype=np.int64))
