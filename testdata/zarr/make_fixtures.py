#!/usr/bin/python3
"""Regenerate the zarr fixtures of runtime/zarr's tests.

Needs Debian's python3-zarr (2.13) and python3-numcodecs (0.11), which link the
system's c-blosc, lz4, zstd and zlib, and the zstd command (package zstd):

    apt-get install python3-zarr python3-numcodecs zstd
    /usr/bin/python3 testdata/zarr/make_fixtures.py

Zarr v2 arrays are written by zarr itself. Debian's zarr writes only a draft of
v3, so v3 arrays are assembled here from chunk bytes that numcodecs (and the
zstd command, for frames without a content size, as TensorStore writes them)
encode, with zarr.json files written as the v3 specification describes them.

Every array's content as numpy reads it (fill values included) is saved next
to the stores as expected/<case>.npy, little-endian and C order, and
cases.json lists every case for the Go tests. The tests never run this script.
"""
import json
import os
import shutil
import struct
import subprocess

import numcodecs
import numpy as np
import zarr

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = []


def pattern(shape, dtype, seed):
    """Smooth data with some noise: compressible, but not trivially."""
    rng = np.random.default_rng(seed)
    idx = np.indices(shape).astype(np.int64)
    base = np.zeros(shape, dtype=np.int64)
    for k, ax in enumerate(idx):
        base += ax * (3 + 4 * k)
    base = base % 251 + rng.integers(0, 4, size=shape)
    dt = np.dtype(dtype)
    if dt.kind == "b":
        return base % 3 == 0
    if dt.kind == "f":
        return (base / 3.0 - 20.0).astype(dt)
    if dt.kind == "i":
        return (base - 100).astype(dt)
    return base.astype(dt)


def save_expected(name, a):
    a = np.asarray(a)
    native = a.astype(a.dtype.newbyteorder("<"), copy=False)
    os.makedirs(os.path.join(HERE, "expected"), exist_ok=True)
    np.save(os.path.join(HERE, "expected", name + ".npy"), np.ascontiguousarray(native))


def dtype_name(dt):
    dt = np.dtype(dt)
    return "bool" if dt.kind == "b" else dt.newbyteorder("=").name


def case(name, path, dtype, **extra):
    assert all(c["name"] != name for c in CASES), name
    CASES.append(dict(name=name, path=path, dtype=dtype_name(dtype), **extra))


# ------------------------------------------------------------ blosc frames

SH, NOSH, BITSH = numcodecs.Blosc.SHUFFLE, numcodecs.Blosc.NOSHUFFLE, numcodecs.Blosc.BITSHUFFLE

# Frames for runtime/zarr/blosc: blosc/<name>.raw holds data and
# blosc/<name>_<cname>_<shuffle>_<blocksize>.blosc a frame of it.
# small: 256 elements, the seeds of the fuzz test.
# u2: 4096 elements in one block, so the bit shuffle applies (it needs a
# multiple of 8 elements). u4: 80000 bytes with a forced block size, which
# c-blosc raises to 64 KiB except for zstd: several blocks, the last one short
# (and so never split). u8_odd: 1001 elements, which the bit shuffle leaves
# as they are.
blosc_dir = os.path.join(HERE, "blosc")
shutil.rmtree(blosc_dir, ignore_errors=True)
os.makedirs(blosc_dir)


def frames(name, raw, cnames, shuffles, blocksize):
    raw.tofile(os.path.join(blosc_dir, name + ".raw"))
    for cname in cnames:
        for shuffle, sname in shuffles:
            frame = numcodecs.Blosc(cname=cname, clevel=5, shuffle=shuffle, blocksize=blocksize).encode(raw)
            with open(os.path.join(blosc_dir, f"{name}_{cname}_{sname}_{blocksize}.blosc"), "wb") as f:
                f.write(frame)


ALL_SHUFFLES = [(NOSH, "noshuffle"), (SH, "shuffle"), (BITSH, "bitshuffle")]
frames("u2", pattern((4096,), "u2", 90), ["blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"],
       ALL_SHUFFLES, 0)
frames("u4", pattern((20000,), "u4", 92), ["blosclz", "lz4", "zstd"], ALL_SHUFFLES[1:], 1000)
frames("u8_odd", pattern((1001,), "u8", 93), ["lz4"], ALL_SHUFFLES[1:], 0)
# Small frames seed the fuzzer, which slows to a crawl on inputs of many kB.
frames("small", pattern((256,), "u2", 94), ["blosclz", "lz4", "snappy", "zlib", "zstd"], ALL_SHUFFLES, 0)
rand = np.random.default_rng(91).integers(0, 256, size=3000, dtype=np.uint8)
rand.tofile(os.path.join(blosc_dir, "random.raw"))
with open(os.path.join(blosc_dir, "random_lz4_shuffle_memcpy.blosc"), "wb") as f:
    f.write(numcodecs.Blosc(cname="lz4", clevel=5, shuffle=1).encode(rand))
with open(os.path.join(blosc_dir, "random_lz4_shuffle_clevel0.blosc"), "wb") as f:
    f.write(numcodecs.Blosc(cname="lz4", clevel=0, shuffle=1).encode(rand))

# ---------------------------------------------------------------- zarr v2


def v2(name, data, chunks, compressor, order="C", fill_value=0, separator=".",
       skip=(), filters=None, expect_error=None):
    """Write data with zarr; chunks whose index is in skip are never written."""
    path = os.path.join("v2", name)
    store = os.path.join(HERE, path)
    z = zarr.open(zarr.DirectoryStore(store, dimension_separator=separator), mode="w",
                  shape=data.shape, chunks=chunks, dtype=data.dtype,
                  compressor=compressor, order=order, fill_value=fill_value,
                  filters=filters)
    grid = [range(0, s, c) for s, c in zip(data.shape, chunks)]
    for start in np.ndindex(*[len(g) for g in grid]):
        if start in skip:
            continue
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(start, chunks))
        z[sl] = data[sl]
    if expect_error:
        case(name, path, data.dtype, error=expect_error)
        return
    save_expected(name, z[...])
    case(name, path, data.dtype)


def blosc(cname, shuffle, clevel=5, blocksize=0):
    return numcodecs.Blosc(cname=cname, clevel=clevel, shuffle=shuffle, blocksize=blocksize)


# Chunks of 2048 elements: blosc splits blocks into typesize streams when a
# block holds at least 128 elements, so these cover split and unsplit blocks.
BIG, BIGC = (12, 20, 20), (8, 16, 16)
SMALL, SMALLC = (9, 11, 7), (4, 5, 3)

v2("blosc_lz4_shuffle_u1", pattern(BIG, "u1", 1), BIGC, blosc("lz4", SH))
v2("blosc_lz4_shuffle_u2_blocks", pattern(BIG, "u2", 2), BIGC, blosc("lz4", SH, blocksize=1000))
v2("blosc_lz4hc_noshuffle_i4", pattern(BIG, "i4", 3), BIGC, blosc("lz4hc", NOSH, clevel=9))
v2("blosc_blosclz_shuffle_f4", pattern(BIG, "f4", 4), BIGC, blosc("blosclz", SH, clevel=9))
v2("blosc_blosclz_bitshuffle_u2", pattern(BIG, "u2", 5), BIGC, blosc("blosclz", BITSH))
v2("blosc_blosclz_noshuffle_u1_long", np.repeat(pattern((12, 20, 5), "u1", 6), 4, axis=2),
   BIGC, blosc("blosclz", NOSH, clevel=9))
v2("blosc_zstd_bitshuffle_f8", pattern(BIG, "f8", 7), BIGC, blosc("zstd", BITSH))
v2("blosc_zstd_shuffle_u8_blocks", pattern(BIG, "u8", 8), BIGC, blosc("zstd", SH, blocksize=4096))
v2("blosc_zlib_shuffle_i2", pattern(BIG, "i2", 9), BIGC, blosc("zlib", SH))
v2("blosc_snappy_shuffle_u4", pattern(BIG, "u4", 10), BIGC, blosc("snappy", SH))
v2("blosc_lz4_bitshuffle_i8_odd", pattern(SMALL, "i8", 11), SMALLC, blosc("lz4", BITSH))
v2("blosc_lz4_memcpy_random_u1",
   np.random.default_rng(12).integers(0, 256, size=BIG, dtype=np.uint8), BIGC, blosc("lz4", SH))
v2("blosc_clevel0_f2", pattern(SMALL, "f2", 13), SMALLC, blosc("lz4", SH, clevel=0))
v2("zstd6_u1_slash", pattern(BIG, "u1", 14), BIGC, numcodecs.Zstd(level=6), separator="/")
v2("gzip_i8", pattern(SMALL, "i8", 15), SMALLC, numcodecs.GZip(level=5))
v2("zlib_u8", pattern(SMALL, "u8", 16), SMALLC, numcodecs.Zlib(level=5))
v2("lz4_f2", pattern(SMALL, "f2", 17), SMALLC, numcodecs.LZ4())
v2("raw_bool", pattern(SMALL, "?", 18), SMALLC, None)
v2("raw_i1_1d", pattern((23,), "i1", 19), (5,), None)
v2("order_f_blosc_i2", pattern(SMALL, "i2", 20), SMALLC, blosc("lz4", SH), order="F")
v2("order_f_raw_f8_2d", pattern((9, 13), "f8", 21), (4, 5), None, order="F")
v2("bigendian_f4_zstd", pattern(SMALL, ">f4", 22), SMALLC, numcodecs.Zstd(level=3))
v2("bigendian_i2_raw_f", pattern(SMALL, ">i2", 23), SMALLC, None, order="F")
v2("bigendian_u8_blosc", pattern(SMALL, ">u8", 24), SMALLC, blosc("lz4", SH))
v2("missing_nan_f4", pattern(SMALL, "f4", 25), SMALLC, blosc("lz4", SH), fill_value=np.nan,
   skip={(0, 0, 0), (1, 1, 1), (2, 2, 2)})
v2("missing_inf_f8", pattern(SMALL, "f8", 26), SMALLC, None, fill_value=np.inf, skip={(0, 1, 0)})
v2("missing_neginf_f2", pattern(SMALL, "f2", 27), SMALLC, None, fill_value=-np.inf,
   skip={(1, 0, 2)})
v2("missing_fill7_u2_slash", pattern(SMALL, "u2", 28), SMALLC, numcodecs.Zstd(level=1),
   fill_value=7, separator="/", skip={(2, 1, 0), (0, 2, 1)})
# zarr-python reads missing chunks of a null fill_value as uninitialized
# memory, so this array has all its chunks.
v2("nullfill_i4", pattern(SMALL, "i4", 29), SMALLC, None, fill_value=None)
v2("fill_true_bool", pattern(SMALL, "?", 30), SMALLC, None, fill_value=True, skip={(0, 0, 0)})
v2("fourd_u1", pattern((3, 5, 6, 7), "u1", 31), (2, 2, 4, 3), blosc("lz4", SH))
v2("filter_delta_i2", pattern(SMALL, "i2", 32), SMALLC, None, filters=[numcodecs.Delta(dtype="i2")],
   expect_error='filter "delta" is not supported')

# A group with consolidated metadata, whose arrays' own .zarray files are
# removed so that only .zmetadata can describe them.
grp_path = os.path.join(HERE, "v2", "consolidated")
shutil.rmtree(grp_path, ignore_errors=True)
g = zarr.open_group(grp_path, mode="w")
a = g.create_dataset("a/raw", data=pattern(SMALL, "u2", 34), chunks=SMALLC,
                     compressor=blosc("lz4", SH))
g.attrs["note"] = "consolidated"
zarr.consolidate_metadata(grp_path)
os.remove(os.path.join(grp_path, "a", "raw", ".zarray"))
save_expected("consolidated_a_raw", a[...])
case("consolidated_a_raw", "v2/consolidated", "uint16", array="a/raw")


# ------------------------------------------------------- OME-NGFF 0.4 (v2)


def ngff_axes(n):
    return [{"name": a, "type": "space", "unit": "nanometer"} for a in "zyx"[-n:]]


ome4 = os.path.join(HERE, "v2", "ome_0.4")
shutil.rmtree(ome4, ignore_errors=True)
root = zarr.open_group(ome4, mode="w")
full = pattern((16, 24, 32), "u1", 35)
levels = []
for lvl in range(3):
    f = 2 ** lvl
    arr = full[::f, ::f, ::f]
    root.create_dataset(f"s{lvl}", data=arr, chunks=(8, 8, 8), compressor=numcodecs.Zstd(level=3))
    save_expected(f"ome_0.4_s{lvl}", arr)
    levels.append({"path": f"s{lvl}", "coordinateTransformations": [
        {"type": "scale", "scale": [4.0 * f, 4.0 * f, 4.0 * f]},
        {"type": "translation", "translation": [2.0 * (f - 1), 2.0 * (f - 1), 2.0 * (f - 1)]}]})
root.attrs["multiscales"] = [{
    "version": "0.4", "name": "raw", "axes": ngff_axes(3), "datasets": levels,
    "coordinateTransformations": [{"type": "scale", "scale": [1.0, 1.0, 1.0]},
                                  {"type": "translation", "translation": [100.0, 200.0, 300.0]}]}]
case("ome_0.4", "v2/ome_0.4", "uint8", multiscale=[
    {"path": f"s{l}", "scale": [4.0 * 2 ** l] * 3,
     "translation": [100.0 + 2.0 * (2 ** l - 1), 200.0 + 2.0 * (2 ** l - 1), 300.0 + 2.0 * (2 ** l - 1)],
     "expected": f"ome_0.4_s{l}"} for l in range(3)])


# ---------------------------------------------------------------- zarr v3


def crc32c(data):
    poly, crc = 0x82F63B78, 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (poly & -(crc & 1))
    return crc ^ 0xFFFFFFFF


assert crc32c(b"123456789") == 0xE3069283


def zstd_no_content_size(b):
    out = subprocess.run(["zstd", "-q", "-c", "-3"], input=b, stdout=subprocess.PIPE, check=True).stdout
    assert out[4] & 0xC0 == 0, "frame should have no content size"
    return out


def encode_bytes_codecs(b, codecs, itemsize):
    """Apply the bytes->bytes codecs of a v3 chain in order."""
    for c in codecs:
        n, cfg = c["name"], c.get("configuration", {})
        if n == "gzip":
            b = numcodecs.GZip(level=cfg["level"]).encode(b)
        elif n == "zstd":
            b = zstd_no_content_size(b) if cfg.get("no_content_size") else \
                numcodecs.Zstd(level=cfg["level"]).encode(b)
        elif n == "blosc":
            shuffle = {"noshuffle": NOSH, "shuffle": SH, "bitshuffle": BITSH}[cfg["shuffle"]]
            arr = np.frombuffer(b, dtype=f"u{itemsize}" if itemsize in (1, 2, 4, 8) else "u1")
            b = blosc(cfg["cname"], shuffle, cfg["clevel"]).encode(arr)
        elif n == "crc32c":
            b = bytes(b) + struct.pack("<I", crc32c(bytes(b)))
        else:
            raise ValueError(n)
    return bytes(b)


def public(codecs):
    """The codec list as zarr.json spells it (our private hints removed)."""
    out = []
    for c in codecs:
        c = json.loads(json.dumps(c))
        cfg = c.get("configuration")
        if cfg is not None:
            cfg.pop("no_content_size", None)
            if c["name"] == "sharding_indexed":
                cfg["codecs"] = public(cfg["codecs"])
                cfg["index_codecs"] = public(cfg["index_codecs"])
        out.append(c)
    return out


def encode_chunk(chunk, codecs):
    """Encode one chunk through a chain without sharding."""
    a = chunk
    i = 0
    while codecs[i]["name"] == "transpose":
        a = np.transpose(a, codecs[i]["configuration"]["order"])
        i += 1
    bc = codecs[i]
    assert bc["name"] == "bytes", bc
    endian = bc.get("configuration", {}).get("endian", "little")
    dt = a.dtype.newbyteorder("<" if endian == "little" else ">")
    b = np.ascontiguousarray(a.astype(dt)).tobytes()
    return encode_bytes_codecs(b, codecs[i + 1:], a.dtype.itemsize)


def chunk_key(idx, encoding):
    name = encoding["name"]
    sep = encoding.get("configuration", {}).get("separator", "/" if name == "default" else ".")
    if name == "default":
        return sep.join(["c"] + [str(i) for i in idx])
    return sep.join(str(i) for i in idx) if idx else "0"


def padded(data, start, shape, fill):
    out = np.full(shape, fill, dtype=data.dtype)
    src = tuple(slice(s, min(s + n, d)) for s, n, d in zip(start, shape, data.shape))
    dst = tuple(slice(0, x.stop - x.start) for x in src)
    out[dst] = data[src]
    return out


def encode_shard(shard, cfg, fill, skip_empty):
    inner = cfg["chunk_shape"]
    grid = [s // c for s, c in zip(shard.shape, inner)]
    n = int(np.prod(grid))
    index = np.full(grid + [2], 2 ** 64 - 1, dtype=np.uint64)
    index_bytes = len(encode_bytes_codecs(b"\0" * (16 * n), cfg["index_codecs"][1:], 8))
    at_start = cfg.get("index_location", "end") == "start"
    body = b""
    base = index_bytes if at_start else 0
    for idx in np.ndindex(*grid):
        sl = tuple(slice(i * c, (i + 1) * c) for i, c in zip(idx, inner))
        part = shard[sl]
        if skip_empty and np.all(part == fill):
            continue
        enc = encode_chunk(part, cfg["codecs"])
        index[idx] = (base + len(body), len(enc))
        body += enc
    ib = encode_bytes_codecs(index.astype("<u8").tobytes(), cfg["index_codecs"][1:], 8)
    return ib + body if at_start else body + ib


def v3(name, data, chunk_shape, codecs, fill_value=0, fill_json=None,
       key_encoding=None, skip=(), attributes=None, base=None, expected=None):
    """Assemble a v3 array; chunks in skip are not written."""
    key_encoding = key_encoding or {"name": "default", "configuration": {"separator": "/"}}
    path = os.path.join("v3", name) if base is None else os.path.join(base, name)
    store = os.path.join(HERE, path)
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    shard = codecs[0] if codecs[0]["name"] == "sharding_indexed" else None
    stored = np.full(data.shape, fill_value, dtype=data.dtype)
    grid = [-(-s // c) for s, c in zip(data.shape, chunk_shape)]
    for idx in np.ndindex(*grid):
        start = [i * c for i, c in zip(idx, chunk_shape)]
        chunk = padded(data, start, chunk_shape, fill_value)
        if idx in skip:
            continue
        sl = tuple(slice(s, s + c) for s, c in zip(start, chunk_shape))
        stored[sl] = data[sl]
        if shard:
            enc = encode_shard(chunk, shard["configuration"], fill_value, True)
        else:
            enc = encode_chunk(chunk, codecs)
        key = os.path.join(store, chunk_key(list(idx), key_encoding))
        os.makedirs(os.path.dirname(key), exist_ok=True)
        with open(key, "wb") as f:
            f.write(enc)
    meta = {
        "zarr_format": 3, "node_type": "array", "shape": list(data.shape),
        "data_type": dtype_name(data.dtype),
        "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": list(chunk_shape)}},
        "chunk_key_encoding": key_encoding,
        "fill_value": fill_json if fill_json is not None else fill_value.item()
        if hasattr(fill_value, "item") else fill_value,
        "codecs": public(codecs), "attributes": attributes or {},
    }
    with open(os.path.join(store, "zarr.json"), "w") as f:
        json.dump(meta, f, indent=2)
    if expected is not None:
        save_expected(expected, stored)
    elif base is None:
        save_expected("v3_" + name, stored)
        case("v3_" + name, path, data.dtype)


LE = {"name": "bytes", "configuration": {"endian": "little"}}
BE = {"name": "bytes", "configuration": {"endian": "big"}}
CRC = {"name": "crc32c"}


def bl(cname, shuffle, clevel=5, typesize=1):
    return {"name": "blosc", "configuration": {"cname": cname, "clevel": clevel, "shuffle": shuffle,
                                               "typesize": typesize, "blocksize": 0}}


v3("bytes_u2", pattern(SMALL, "u2", 40), SMALLC, [LE])
v3("bytes_be_f4_zstd", pattern(SMALL, "f4", 41), SMALLC,
   [BE, {"name": "zstd", "configuration": {"level": 3, "checksum": False}}])
v3("zstd_no_content_size_u1", pattern(BIG, "u1", 42), BIGC,
   [LE, {"name": "zstd", "configuration": {"level": 3, "checksum": False, "no_content_size": True}}])
v3("transpose_blosc_i4", pattern(SMALL, "i4", 43), SMALLC,
   [{"name": "transpose", "configuration": {"order": [2, 0, 1]}}, LE, bl("lz4", "shuffle", typesize=4)])
v3("gzip_crc32c_f8", pattern(SMALL, "f8", 44), SMALLC,
   [LE, {"name": "gzip", "configuration": {"level": 5}}, CRC])
v3("v2_keys_dot_i2", pattern(SMALL, "i2", 45), SMALLC, [LE],
   key_encoding={"name": "v2", "configuration": {"separator": "."}})
v3("missing_nan_f4", pattern(SMALL, "f4", 46), SMALLC, [LE], fill_value=np.float32(np.nan),
   fill_json="NaN", skip={(1, 1, 1)})
v3("hexfill_f4", pattern(SMALL, "f4", 47), SMALLC, [LE], fill_value=np.float32(-2.5),
   fill_json="0xc0200000", skip={(0, 0, 0)})
v3("bool_fill_true", pattern(SMALL, "?", 48), SMALLC, [LE], fill_value=np.bool_(True),
   fill_json=True, skip={(2, 0, 1)})
# Shards of 2x2x2 inner chunks; some inner chunks are all fill, so stored as empty.
sh_data = pattern((16, 20, 12), "u2", 49)
sh_data[0:4, 0:5, 0:3] = 0
sh_data[8:12, 5:10, 6:9] = 0
SHARD_END = {"name": "sharding_indexed", "configuration": {
    "chunk_shape": [4, 5, 3], "codecs": [LE, bl("zstd", "bitshuffle", typesize=2)],
    "index_codecs": [LE, CRC], "index_location": "end"}}
v3("sharded_end_u2", sh_data, (8, 10, 6), [SHARD_END], skip={(1, 1, 1)})
SHARD_START = {"name": "sharding_indexed", "configuration": {
    "chunk_shape": [4, 5, 3],
    "codecs": [{"name": "transpose", "configuration": {"order": [1, 2, 0]}}, BE,
               {"name": "gzip", "configuration": {"level": 1}}],
    "index_codecs": [LE, CRC], "index_location": "start"}}
v3("sharded_start_u2", sh_data, (8, 10, 6), [SHARD_START])
SHARD_EDGE = {"name": "sharding_indexed", "configuration": {
    "chunk_shape": [3, 4], "codecs": [LE], "index_codecs": [LE], "index_location": "end"}}
v3("sharded_edge_noncrc_i8", pattern((10, 13), "i8", 50), (6, 8), [SHARD_EDGE])

# OME-NGFF 0.5: a v3 group whose attributes hold "ome".
ome5 = os.path.join(HERE, "v3", "ome_0.5")
shutil.rmtree(ome5, ignore_errors=True)
os.makedirs(ome5)
full5 = pattern((12, 16), "f4", 51)
ds5 = []
for lvl in range(2):
    f = 2 ** lvl
    v3(f"s{lvl}", full5[::f, ::f], (4, 4), [LE, {"name": "zstd", "configuration": {"level": 1}}],
       base="v3/ome_0.5", expected=f"ome_0.5_s{lvl}")
    ds5.append({"path": f"s{lvl}", "coordinateTransformations": [
        {"type": "scale", "scale": [0.5 * f, 0.25 * f]},
        {"type": "translation", "translation": [0.0, 0.125 * (f - 1)]}]})
with open(os.path.join(ome5, "zarr.json"), "w") as fp:
    json.dump({"zarr_format": 3, "node_type": "group", "attributes": {"ome": {
        "version": "0.5", "multiscales": [{
            "name": "image", "axes": [{"name": "y", "type": "space", "unit": "micrometer"},
                                      {"name": "x", "type": "space", "unit": "micrometer"}],
            "datasets": ds5}]}}}, fp, indent=2)
case("ome_0.5", "v3/ome_0.5", "float32", multiscale=[
    {"path": f"s{l}", "scale": [0.5 * 2 ** l, 0.25 * 2 ** l], "translation": [0.0, 0.125 * (2 ** l - 1)],
     "expected": f"ome_0.5_s{l}"} for l in range(2)])

with open(os.path.join(HERE, "cases.json"), "w") as f:
    json.dump(CASES, f, indent=1)
    f.write("\n")
