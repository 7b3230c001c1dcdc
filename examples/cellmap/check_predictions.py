"""Checks the cellmap example's predictions against numpy.

usage: check_predictions.py DATA [PREDICTIONS]

DATA is the demo's data directory (synthetic.zarr), PREDICTIONS the zarr
store the predict step wrote (DATA/predictions.zarr by default). The stand-in
model (cellmap.Threshold) is computed here over the whole raw volume with
numpy, and each class's predictions, read with zarr-python, must equal it at
the raw voxels that their OME-NGFF scale and translation name.
"""

import sys

import numpy as np
import zarr

CLASSES = ["mito", "er", "nucleus"]


def transform(group):
    """The scale and translation of a multiscale group's first level, and
    the level's array."""
    ms = group.attrs["multiscales"][0]
    ds = ms["datasets"][0]
    ts = {t["type"]: t[t["type"]] for t in ds["coordinateTransformations"]}
    return np.array(ts["scale"]), np.array(ts.get("translation", [0, 0, 0])), group[ds["path"]]


def main():
    data = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else f"{data}/predictions.zarr"
    rs, rt, raw = transform(zarr.open_group(f"{data}/synthetic.zarr/em/raw", mode="r"))
    raw = raw[...].astype(np.int64)
    # The model over the whole volume: sums of 2 x 2 x 2 raw voxels, banded.
    z, y, x = (n // 2 for n in raw.shape)
    s = raw[: 2 * z, : 2 * y, : 2 * x].reshape(z, 2, y, 2, x, 2).sum(axis=(1, 3, 5))
    band = (s - 1024) * len(CLASSES) // 1024
    for c, name in enumerate(CLASSES):
        ps, pt, pred = transform(zarr.open_group(f"{out}/labels/{name}", mode="r"))
        pred = pred[...]
        assert np.all(ps == 2 * rs), (name, ps, rs)
        # The prediction voxel at pt covers raw voxels from pt - ps/4, the
        # first of its 2 x 2 x 2: in voxels of 16 nm, from there.
        start = np.round((pt - ps / 4 - rt) / ps).astype(int)
        want = ((s >= 1024) & (band == c)).astype(np.float32)
        want = want[start[0] : start[0] + pred.shape[0], start[1] : start[1] + pred.shape[1], start[2] : start[2] + pred.shape[2]]
        assert want.shape == pred.shape, (name, want.shape, pred.shape)
        if not np.array_equal(want, pred):
            bad = np.argwhere(want != pred)
            sys.exit(f"{name}: {len(bad)} voxels differ from numpy's, the first at {bad[0].tolist()}")
        print(f"{name}: {pred.shape} voxels at {pt.tolist()} nm equal numpy's ({int(pred.sum())} labelled)")


if __name__ == "__main__":
    main()
