"""Tensors point into the staging slots, and a slot returns to the loader
only when its batch and every tensor taken from it are gone."""

import ctypes
import gc

import numpy as np
import pytest
import torch

import _loadergen
from conftest import data, describe, digest, open_loader


def dlpack_data(tensor):
    """The data address of a fresh DLPack capsule of tensor, and the capsule."""
    capsule = tensor.__dlpack__()
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.argtypes, get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    m = _loadergen._DLManagedTensor.from_address(get(capsule, b"dltensor"))
    return m.dl_tensor.data, m, capsule


def test_no_copy(name):
    with open_loader(name) as loader:
        for b in loader.epoch(0):
            for k in b.keys():
                addr, m, capsule = dlpack_data(getattr(b, k))
                assert m.dl_tensor.device.device_type == 1 and not m.dl_tensor.strides  # NULL: C order
                t = torch.utils.dlpack.from_dlpack(capsule)
                a = getattr(b, k).numpy()
                assert t.data_ptr() == addr == a.ctypes.data, k
            # A write through torch shows in numpy's (read-only) view: the
            # same memory.
            k = b.keys()[0]
            a, t = getattr(b, k).numpy(), getattr(b, k).torch()
            t.reshape(-1)[0] = 1
            assert a.reshape(-1)[0] == 1
            break


def test_batch_torch_holds_its_slot(name):
    # b.torch() and b.numpy() take every key in one call: the tensors point
    # into the slot, and each holds it after the batch is gone.
    with open_loader(name) as loader:
        it = iter(loader.epoch(0))
        b = next(it)
        t, a = b.torch(), b.numpy()
        assert list(t) == list(a) == list(b.keys())
        for k in b.keys():
            assert t[k].data_ptr() == a[k].ctypes.data == getattr(b, k).numpy().ctypes.data, k
            assert tuple(t[k].shape) == a[k].shape == getattr(b, k).shape, k
        del a
        want = {k: v.clone() for k, v in t.items()}
        del b
        it.close()  # the epoch stops: the batches queued behind b go back
        assert loader.stats()["kept"] == 1
        last = t.pop(list(t)[-1])
        assert loader.stats()["kept"] == 1
        t.clear()
        assert loader.stats()["kept"] == 1
        assert last.numpy().tobytes() == want[list(want)[-1]].numpy().tobytes()  # NaN: bytes, not values
        del last
        assert loader.stats()["kept"] == 0


def test_kept_tensor_outlives_the_loop():
    want = data("tokens")["epochs"][0]
    # Three slots: batch 0 kept, the loop's variable holding the last batch
    # while the next is staged in the third.
    with open_loader("tokens", prefetch=2) as loader:
        kept = None
        for i, b in enumerate(loader.epoch(0)):
            if i == 0:
                kept = (b.tokens.torch(), b.tokens_lengths.numpy(), b.indices)
            assert describe(b) == want[i]
            assert digest(kept[0].numpy()) == want[0]["keys"]["tokens"]
        del b
        assert loader.stats()["kept"] == 1
        del kept
        assert loader.stats()["kept"] == 0
        assert [describe(b) for b in loader.epoch(0)] == want


def test_held_slots_raise():
    with open_loader("tokens", prefetch=1) as loader:
        kept = []
        with pytest.raises(_loadergen.SlotsHeldError, match="every staging slot"):
            for b in loader.epoch(0):
                kept.append(b)
        del kept, b
        assert sum(1 for _ in loader.epoch(0)) == len(loader)


def test_cycles_are_collected():
    """A batch kept only by a reference cycle is collected when the loader
    would otherwise wait: no error."""
    gc.disable()
    try:
        with open_loader("tokens", prefetch=1) as loader:
            n = 0
            for b in loader.epoch(0):
                cycle = [b]
                cycle.append(cycle)
                n += 1
            assert n == len(loader)
    finally:
        gc.enable()


def test_close_with_kept_tensors():
    want = data("tokens")["epochs"][0]
    loader = open_loader("tokens")
    b = next(iter(loader.epoch(0)))
    t = b.tokens.numpy()
    loader.close()
    with pytest.raises(_loadergen.ClosedError):
        next(iter(loader.epoch(0)))
    assert digest(t) == want[0]["keys"]["tokens"]  # still valid after close
    del b, t


def test_unconsumed_capsule_releases():
    with open_loader("tokens", prefetch=1) as loader:
        for b in loader.epoch(0):
            b.tokens.__dlpack__()  # never consumed: its destructor releases
        del b
        assert loader.stats()["kept"] == 0


def test_breaking_out_releases_the_staged_batches():
    """The batches staged for Python that the loop never took are released
    when it stops: none stays held, and the next epoch has every slot."""
    with open_loader("tokens", prefetch=3) as loader:
        for b in loader.epoch(0):
            break
        del b
        assert loader.stats()["kept"] == 0
        assert sum(1 for _ in loader.epoch(1)) == len(loader)
