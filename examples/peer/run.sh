#!/usr/bin/env bash
# make peer: the Go loader against PyTorch's DataLoader over zarr-python,
# side by side on one machine, for zstd level 6 and blosc-lz4 stores, each
# small (256 x 512 x 512 per array, every chunk cached) and big (256 x 1024
# x 1024, the Go chunk cache at 32 MiB: 4 % of the decoded store).
#
# For each store: the crops of epoch 0 (512 crops of 64^3 uint8 raw and two
# class arrays, mirrored, transposed and turned) are drawn by the Go loader;
# torch_peer.py checks its first 16 crops byte-equal to the Go loader's,
# then times one epoch of the same crops with num_workers 0 and 2. Each
# timing is one cold epoch in a fresh process, 3 runs, the median kept.
# Then the first epoch at default settings, on the big stores: the default
# chunk cache against one fixed at 32 MiB and torch, for the epoch's first
# 64 crops and for all 512.
# Needs Debian's python3-zarr and python3-torch (apt-get install
# python3-zarr python3-torch). PEER_DIR keeps the stores between runs.
#
# Then the rotated case, on the big stores: 256 crops of examples/peer/turned
# (64^3, turned by z in [-180, 180] and y, x in [-15, 15] degrees, raw
# trilinear into float32, the class arrays nearest) against cellmap-data's
# method in torch_turned.py (zarr-python reads the enlarged box, torch's
# affine_grid and grid_sample turn it), which first checks its crops
# against the Go loader's; and the Go loader's cost of turning (turned
# against the same crops unturned, flat) and of the four value
# augmentations on raw (augmented against flat).
source "$(dirname "$0")/setup.sh"
python=/usr/bin/python3
$python -c 'import zarr, torch' || { echo "make peer needs Debian's python3-zarr and python3-torch"; exit 1; }

runs() { local out=""; for _ in 1 2 3; do out="$out $("$@")"; done; echo $out | median; }

# compare STORE_LABEL SHAPE: the table's rows for the store of that shape,
# written once per compressor (the Go side's chunk cache is whatever
# LOADERGEN_ZARR_CACHE_MB says; zarr-python has none).
compare() {
	local label=$1 shape=$2
	for comp in zstd6 blosc-lz4; do
		store="$work/$label-$comp.zarr"
		[ -d "$store" ] || "$work/peer-bench" write -compressor "$comp" -shape "$shape" "$store"
		"$work/peer-bench" crops "$store" "$work/crops.json" "$work/crops.bin" 16
		t0=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 0)
		t2=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 2)
		go=$(runs "$work/peer-bench" epoch "$store")
		boxes=$(runs "$work/peer-bench" boxes "$store")
		awk -v c="$label $comp" -v t0="$t0" -v t2="$t2" -v g="$go" -v b="$boxes" 'BEGIN {
			best = t0 > t2 ? t0 : t2
			printf "%-16s %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f\n", c, t0, t2, g, b, g / best, g / b
		}'
	done
}

printf '%-16s %10s %10s %10s %10s %9s %9s\n' store torch_nw0 torch_nw2 go_loader go_boxes go/torch go/boxes
# The small store: 3 x 64 MiB, every chunk in the default cache (4 GiB).
compare small 256,512,512
# The big store: 3 x 256 MiB with the Go chunk cache at 32 MiB, 4 % of the
# decoded store, what a 100 GB dataset gets from the default 4 GiB.
LOADERGEN_ZARR_CACHE_MB=32 compare big 256,1024,1024
echo "(crops/s, median of 3 cold epochs each; go/torch against torch's better configuration)"

# The first epoch at default settings: a fresh process, the
# default chunk cache (4 GiB, growing from 16 MiB as re-reading evicted
# chunks pays for the memory) against the cache fixed at 32 MiB, and zarr-python +
# DataLoader, on the epoch's first 64 crops and on all 512, the big stores.
echo
printf '%-16s %6s %10s %10s %10s %10s %12s\n' store crops torch_best go_default go_32MiB default/32 default/torch
for comp in zstd6 blosc-lz4; do
	store="$work/big-$comp.zarr"
	"$work/peer-bench" crops "$store" "$work/crops.json" "$work/crops.bin" 16
	for n in 64 512; do
		t0=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 0 "$n")
		t2=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 2 "$n")
		def=$(runs "$work/peer-bench" epoch -crops "$n" "$store")
		small=$(LOADERGEN_ZARR_CACHE_MB=32 runs "$work/peer-bench" epoch -crops "$n" "$store")
		awk -v c="big $comp" -v n="$n" -v t0="$t0" -v t2="$t2" -v d="$def" -v m="$small" 'BEGIN {
			best = t0 > t2 ? t0 : t2
			printf "%-16s %6d %10.1f %10.1f %10.1f %10.2f %12.2f\n", c, n, best, d, m, d / m, d / best
		}'
	done
done
echo "(crops/s of the first crops of a cold epoch in a fresh process, median of 3)"

# turned STORE_LABEL: the rotated case's rows for the big stores.
turned() {
	local label=$1
	for comp in zstd6 blosc-lz4; do
		store="$work/$label-$comp.zarr"
		"$work/peer-bench" turned-crops "$store" "$work/turned.json" "$work/turned.bin" 8
		t0=$(runs $python examples/peer/torch_turned.py "$store" "$work/turned.json" "$work/turned.bin" 0)
		t2=$(runs $python examples/peer/torch_turned.py "$store" "$work/turned.json" "$work/turned.bin" 2)
		rot=$(runs "$work/peer-bench" turned-epoch "$store" turned)
		flat=$(runs "$work/peer-bench" turned-epoch "$store" flat)
		aug=$(runs "$work/peer-bench" turned-epoch "$store" augmented)
		awk -v c="$label $comp" -v t0="$t0" -v t2="$t2" -v r="$rot" -v f="$flat" -v a="$aug" 'BEGIN {
			best = t0 > t2 ? t0 : t2
			printf "%-16s %10.1f %10.1f %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f\n", c, t0, t2, r, f, a, r / best, f / r, a / f
		}'
	done
}

echo
printf '%-16s %10s %10s %10s %10s %10s %9s %9s %9s\n' store cellmap_nw0 cellmap_nw2 go_turned go_flat go_augment turned/cm flat/turned aug/flat
LOADERGEN_ZARR_CACHE_MB=32 turned big
echo "(crops/s, median of 3 cold epochs each; turned/cm against cellmap-data's method in its better configuration; targets: turned/cm >= 3, flat/turned <= 2.5, aug/flat >= 0.6)"
