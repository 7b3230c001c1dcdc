"""Fixtures of the Python bridge's tests: TestPython (python_test.go) builds
the package of three generated loaders, writes their data and the Go
loaders' epochs, and names them in LOADERGEN_FIXTURES."""

import hashlib
import json
import os
import sys

import numpy as np
import pytest

FIXTURES = json.load(open(os.environ["LOADERGEN_FIXTURES"]))
sys.path.insert(0, FIXTURES["dist"])

import cellmap  # noqa: E402
import photos  # noqa: E402
import tokens  # noqa: E402

LOADERS = {"tokens": tokens.TokensLoader, "photos": photos.PhotosLoader, "cellmap": cellmap.CellMapLoader}


@pytest.fixture(params=sorted(LOADERS))
def name(request):
    return request.param


def data(name):
    return FIXTURES["datasets"][name]


def open_loader(name, **options):
    d = data(name)
    options.setdefault("workers", d["workers"])
    return LOADERS[name](**{d["source"]: d["location"]}, **options)


def digest(array):
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def describe(batch):
    """A batch as the Go side describes it: indices and each key's SHA-256."""
    arrays = batch.numpy()
    names = {k: batch_key_name(batch, k) for k in batch.keys()}
    return {"indices": batch.indices.tolist(), "keys": {names[k]: digest(a) for k, a in arrays.items()}}


def batch_key_name(batch, attr):
    return getattr(type(batch), attr).name
