"""Epochs from Python equal the Go loader's, byte for byte."""

import numpy as np
import torch

from conftest import FIXTURES, data, describe, open_loader


def test_epochs_equal_go(name):
    with open_loader(name) as loader:
        assert len(loader) == len(data(name)["epochs"][0])
        for e, want in enumerate(data(name)["epochs"]):
            got = [describe(b) for b in loader.epoch(e)]
            assert got == want, f"{name} epoch {e}"


def test_epoch_from_resumes(name):
    want = data(name)["epochs"][1]
    with open_loader(name, workers=1) as loader:
        ep = loader.epoch_from(1, 2)
        assert len(ep) == len(want) - 2
        assert [describe(b) for b in ep] == want[2:]


def test_len_and_tqdm_total(name):
    with open_loader(name) as loader:
        ep = loader.epoch(0)
        assert len(ep) == len(loader) == len(data(name)["epochs"][0])
        assert sum(1 for _ in ep) == len(ep)


def test_batch_shapes_and_dtypes():
    with open_loader("cellmap") as loader:
        b = next(iter(loader.epoch(0)))
        assert b.raw.dtype == "uint8" and b.raw.shape == (len(b), 64, 64, 64)
        assert b.labels.shape == (len(b), 3, 32, 32, 32)
        t = b.torch()
        assert t["raw"].dtype == torch.uint8 and t["labels"].dtype == torch.float32
        assert tuple(t["labels"].shape) == b.labels.shape
        n = b.numpy()
        assert n["labels"].dtype == np.float32
        assert type(loader).classes == ("mito", "er", "nucleus")


def test_ragged_lengths():
    with open_loader("tokens") as loader:
        for b in loader.epoch(0):
            toks, lengths = b.tokens.numpy(), b.tokens_lengths.numpy()
            for row, (i, n) in enumerate(zip(b.indices, lengths)):
                assert n == 1 + (i * 37) % 512
                assert (toks[row, :n] == i * 1000 + np.arange(n)).all()
                assert (toks[row, n:] == 0).all()


def test_crop_equals_go():
    want = data("cellmap")["meta"]["crops_epoch_1"]
    with open_loader("cellmap") as loader:
        assert [loader.crop(1, i) for i in range(3)] == want


def test_stats_and_plan():
    with open_loader("tokens") as loader:
        for _ in loader.epoch(0):
            pass
        s = loader.stats()
        assert s["batches"] == len(loader) and s["samples"] == 100
        p = loader.plan()
        assert p["name"] == "Tokens" and p["batch_size"] == 32
        assert [k["name"] for k in p["keys"]] == ["tokens", "tokens.lengths", "label"]
