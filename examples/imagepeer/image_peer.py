"""PyTorch's side of the GPU image peer (examples/imagepeer, .ci/gpu-suite).

usage: image_peer.py DIR WORKERS MODE EPOCHS

Reads the .npy files that `image-peer write` made (image, mask, label) with
PyTorch's DataLoader, batch 32, shuffled, pin_memory=True, and moves every
batch to the GPU with .to("cuda", non_blocking=True), as the usual training
loop does. MODE "sample" reads one sample per __getitem__ and lets the
default collate stack them; "batched" reads a batch per call (a
BatchSampler, fancy indexing of the memory-mapped arrays). One warm-up
epoch, then EPOCHS timed; the span ends after torch.cuda.synchronize().
Prints "N samples/s X GB/s" with the same staged bytes per sample as the
Go loader (image, mask and label).
"""

import sys
import time

import numpy as np
import torch
from torch.utils.data import BatchSampler, DataLoader, Dataset, RandomSampler

BATCH = 32


class Files(Dataset):
    """The three arrays, memory-mapped in each worker on first use."""

    def __init__(self, root):
        self.root = root
        self.arrays = None
        self.n = len(np.load(f"{root}/label.npy", mmap_mode="r"))

    def open(self):
        if self.arrays is None:
            self.arrays = [np.load(f"{self.root}/{k}.npy", mmap_mode="r") for k in ("image", "mask", "label")]
        return self.arrays

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        image, mask, label = self.open()
        if isinstance(i, list):
            idx = np.sort(np.asarray(i))
            return torch.from_numpy(image[idx]), torch.from_numpy(mask[idx]), torch.from_numpy(label[idx])
        return torch.from_numpy(np.array(image[i])), torch.from_numpy(np.array(mask[i])), int(label[i])


def loader(ds, workers, mode):
    common = dict(num_workers=workers, pin_memory=True, persistent_workers=workers > 0)
    if mode == "batched":
        sampler = BatchSampler(RandomSampler(ds), BATCH, drop_last=False)
        return DataLoader(ds, batch_size=None, sampler=sampler, **common)
    return DataLoader(ds, batch_size=BATCH, shuffle=True, **common)


def epoch(dl, dev):
    n = 0
    for image, mask, label in dl:
        image = image.to(dev, non_blocking=True)
        mask = mask.to(dev, non_blocking=True)
        label = label.to(dev, non_blocking=True)
        n += image.shape[0]
    torch.cuda.synchronize()
    return n


def main():
    if len(sys.argv) != 5 or sys.argv[3] not in ("sample", "batched"):
        sys.exit(__doc__)
    root, workers, mode, epochs = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    dev = torch.device("cuda")
    ds = Files(root)
    dl = loader(ds, workers, mode)
    epoch(dl, dev)
    t0 = time.perf_counter()
    n = sum(epoch(dl, dev) for _ in range(epochs))
    sec = time.perf_counter() - t0
    sample_bytes = 3 * 224 * 224 * 4 + 224 * 224 + 8
    print(f"{n / sec:.0f} samples/s {n * sample_bytes / sec / 1e9:.2f} GB/s")


if __name__ == "__main__":
    main()
