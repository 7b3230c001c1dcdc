"""Predictions written from Python through the bridge: the example's
stand-in model in numpy over tiles read from Python, written by
CellMapPredictions, equal the Go writer's, and land where their OME-NGFF
metadata says (the example's own check)."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
import zarr

import _loadergen
import cellmap
from conftest import data

CLASSES = ("mito", "er", "nucleus")


def threshold(raw):
    """cellmap.Threshold over a batch: raw [n, 64, 64, 64] uint8 -> labels
    [n, 3, 32, 32, 32] float32, class c where the 2x2x2 sum s >= 1024 has
    (s - 1024) * 3 // 1024 == c."""
    n = len(raw)
    s = raw.astype(np.int64).reshape(n, 32, 2, 32, 2, 32, 2).sum(axis=(2, 4, 6))
    band = (s - 1024) * 3 // 1024
    return np.stack([(s >= 1024) & (band == c) for c in range(3)], axis=1).astype(np.float32)


def test_predictions_equal_go(tmp_path):
    meta = data("cellmap")["meta"]
    out = tmp_path / "predictions.zarr"
    with cellmap.CellMapPredictions(out, tiles=meta["predict_manifest"]) as p:
        with p.loader(workers=2) as loader:
            tiles = 0
            for b in loader.epoch(0):
                p.write(b, labels=torch.from_numpy(threshold(b.raw.numpy())))  # a torch tensor
                tiles += len(b)
        st = p.stats()
    assert st["tiles"] == tiles and st["chunks"] > 0, st
    for c in CLASSES:
        got = zarr.open_group(str(out / "labels" / c), mode="r")["s0"][...]
        want = zarr.open_group(os.path.join(meta["go_predictions"], "labels", c), mode="r")["s0"][...]
        assert np.array_equal(got, want), c
    check = os.path.join(os.environ["LOADERGEN_REPO"], "examples", "cellmap", "check_predictions.py")
    root = os.path.dirname(meta["predict_manifest"])
    r = subprocess.run([sys.executable, check, root, str(out)], capture_output=True, text=True)
    assert r.returncode == 0, r.stdout + r.stderr


def test_bad_writes(tmp_path):
    meta = data("cellmap")["meta"]
    p = cellmap.CellMapPredictions(tmp_path / "p.zarr", tiles=meta["predict_manifest"])
    with p.loader(workers=1) as loader:
        b = next(iter(loader.epoch(0)))
        labels = threshold(b.raw.numpy())
        with pytest.raises(ValueError, match="labels: float64"):
            p.write(b, labels=labels.astype(np.float64))
        with pytest.raises(ValueError, match="want float32"):
            p.write(b, labels=labels[:1])
        p.write(b, labels=labels)
        with pytest.raises(_loadergen.LoaderError, match="twice|written"):
            p.write(b, labels=labels)
        del b
    with pytest.raises(_loadergen.LoaderError, match="exists|overwrite"):
        cellmap.CellMapPredictions(tmp_path / "p.zarr", tiles=meta["predict_manifest"])
    p.close()
    with pytest.raises(_loadergen.ClosedError):
        p.write([0], labels=labels[:1])
