#!/usr/bin/python3
"""The Python side of make peer-python: generated loaders used from Python
(the package loadergen python writes) against PyTorch's DataLoader, on the
data and schemas of make peer, make peer-images and a tabular-rows case.

Usage:
  python_peer.py DIST volumes STORE          one cold epoch (this process): crops/s
  python_peer.py DIST images ROOT EPOCHS     img/s of each epoch
  python_peer.py DIST rows DIR EPOCHS        rows/s of each epoch, loader and torch, and
                                             the Python side's cost per batch and key

Every batch's keys are taken as torch tensors (torch.from_dlpack), as a
training loop takes them. Rates are printed one per line as NAME VALUE.
"""
import os
import sys
import time

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

sys.path.insert(0, sys.argv[1])
mode = sys.argv[2]
torch.set_num_threads(1)


def volumes(store):
    import peer

    manifest = os.path.join(os.path.dirname(store), os.path.basename(store) + ".csv")
    with open(manifest, "w") as f:
        f.write(f"raw,labels\n{store},{store}\n")
    t0 = time.perf_counter()  # from opening the source, as peer-bench epoch times it
    n = 0
    with peer.PeerLoader(volumes=manifest) as loader:
        for b in loader.epoch(0):
            b.torch()
            n += len(b)
        print(f"python {n / (time.perf_counter() - t0):.1f}")


def images(root, epochs):
    import imagenet

    with imagenet.ImageNetLoader(records=root, device="cpu") as loader:
        for e in range(epochs):
            t0, n = time.perf_counter(), 0
            for b in loader.epoch(e):
                b.torch()
                n += len(b)
            print(f"python_epoch{e} {n / (time.perf_counter() - t0):.0f}", flush=True)


ROWS = 200_000


class Rows(Dataset):
    """Rows by index, as a map-style dataset returns them; with a batch
    sampler, __getitem__ takes a batch of indices (numpy fancy indexing)."""

    def __init__(self, features, label):
        self.features, self.label = torch.from_numpy(features), torch.from_numpy(label)

    def __len__(self):
        return len(self.label)

    def __getitem__(self, i):
        return self.features[i], self.label[i]


def rate(batches, epochs, what):
    """Prints the best of epochs epochs' rows/s; batches() yields one
    epoch's (features, label) tensors."""
    best = 0
    for _ in range(epochs):
        t0 = time.perf_counter()
        n = sum(len(label) for _, label in batches())
        best = max(best, n / (time.perf_counter() - t0))
    print(f"{what} {best:.0f}", flush=True)


def taken(loader, epoch):
    """An epoch of loader's batches, each key taken as a torch tensor."""
    for b in loader.epoch(epoch):
        t = b.torch()
        yield t["features"], t["label"]


def rows(root, epochs):
    import rows as rows_module

    if not os.path.exists(os.path.join(root, "label.npy")):
        os.makedirs(root, exist_ok=True)
        rng = np.random.default_rng(1)
        np.save(os.path.join(root, "features.npy"), rng.standard_normal((ROWS, 32), dtype=np.float32))
        np.save(os.path.join(root, "label.npy"), rng.integers(0, 10, ROWS, dtype=np.int64))
    features = np.load(os.path.join(root, "features.npy"), mmap_mode="r")
    label = np.load(os.path.join(root, "label.npy"), mmap_mode="r")
    ds = Rows(np.array(features), np.array(label))
    for workers in (0, 2):
        per_item = DataLoader(ds, batch_size=256, shuffle=True, num_workers=workers, persistent_workers=workers > 0)
        rate(lambda: per_item, epochs, f"torch_items_workers{workers}")
        batched = DataLoader(ds, batch_size=None, num_workers=workers, persistent_workers=workers > 0,
                             sampler=BatchSampler(RandomSampler(ds), 256, drop_last=False))
        rate(lambda: batched, epochs, f"torch_batches_workers{workers}")
    with rows_module.RowsLoader(files=root) as loader:
        e = iter(range(1 << 30))
        rate(lambda: taken(loader, next(e)), epochs, "python")
        # The Python side's cost: batches only, then every key taken.
        for take in (False, True):
            t0, nb = time.perf_counter(), 0
            for _ in range(epochs):
                for b in loader.epoch(next(e)):
                    nb += 1
                    if take:
                        b.torch()
            per = (time.perf_counter() - t0) / nb
            print(f"{'python_batch_keys' if take else 'python_batch'}_us {per * 1e6:.2f}", flush=True)
        # A key's own cost, away from the loader's timing: every key of one
        # held batch taken again and again (call, capsule, from_dlpack, the
        # tensor's death and its deleter).
        b = next(iter(loader.epoch(next(e))))
        t0, n = time.perf_counter(), 20000
        for _ in range(n):
            b.torch()
        print(f"python_key_us {(time.perf_counter() - t0) / n / len(b.keys()) * 1e6:.2f}", flush=True)
        del b
        print(f"keys {len(rows_module.RowsBatch._keys)}")


if mode == "volumes":
    volumes(sys.argv[3])
elif mode == "images":
    images(sys.argv[3], int(sys.argv[4]))
elif mode == "rows":
    rows(sys.argv[3], int(sys.argv[4]))
else:
    sys.exit(f"python_peer.py: unknown mode {mode!r}")
