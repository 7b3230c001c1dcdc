#!/usr/bin/env python3
"""Regenerate the .npy fixtures of runtime/npy's tests with real numpy.

Run from anywhere: python3 testdata/npy/make_fixtures.py
The tests only read the files written here; they never run this script.
Every accepted fixture holds arange values (a bool one holds i % 3 == 0).
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
