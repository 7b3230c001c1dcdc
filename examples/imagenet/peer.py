"""torchvision's ImageFolder + PIL + the transforms of dataset.yaml
(RandomResizedCrop 224, RandomHorizontalFlip, ToTensor, Normalize) in a
DataLoader of batch 64, on the class folders imagenet-demo writes beside
its shards (the same JPEGs): make peer-images. Prints img/s per epoch for
workers 0 and 2; the first epoch warms the page cache."""
import sys
import time

import torch
from torch.utils.data import DataLoader
from torchvision import datasets, transforms

root, epochs = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(1)
tf = transforms.Compose([
    transforms.RandomResizedCrop(224),
    transforms.RandomHorizontalFlip(),
    transforms.ToTensor(),
    transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225]),
])
ds = datasets.ImageFolder(root, transform=tf)
for workers in (0, 2):
    dl = DataLoader(ds, batch_size=64, shuffle=True, num_workers=workers, persistent_workers=workers > 0)
    for epoch in range(epochs):
        t0 = time.perf_counter()
        n = sum(len(labels) for _, labels in dl)
        dt = time.perf_counter() - t0
        print(f"torchvision workers={workers} epoch {epoch}: {n} images in {dt:.3f}s: {n / dt:.0f} img/s", flush=True)
