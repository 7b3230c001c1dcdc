#!/usr/bin/env bash
# make peer: the Go loader against PyTorch's DataLoader over zarr-python,
# side by side on one machine, for zstd level 6 and blosc-lz4 stores.
#
# For each store: the crops of epoch 0 (512 crops of 64^3 uint8 raw and two
# class arrays, mirrored, transposed and turned) are drawn by the Go loader;
# torch_peer.py checks its first 16 crops byte-equal to the Go loader's,
# then times one epoch of the same crops with num_workers 0 and 2. Each
# timing is one cold epoch in a fresh process, 3 runs, the median kept.
# Needs Debian's python3-zarr and python3-torch (apt-get install
# python3-zarr python3-torch). PEER_DIR keeps the stores between runs.
set -euo pipefail
cd "$(dirname "$0")/../.."
work=${PEER_DIR:-$(mktemp -d)}
mkdir -p "$work"
go build -o "$work/peer-bench" ./examples/peer/cmd/peer-bench
python=/usr/bin/python3
$python -c 'import zarr, torch' || { echo "make peer needs Debian's python3-zarr and python3-torch"; exit 1; }

median() { tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
runs() { local out=""; for _ in 1 2 3; do out="$out $("$@")"; done; echo $out | median; }

printf '%-10s %12s %12s %12s %12s %10s %10s\n' store torch_nw0 torch_nw2 go_loader go_boxes go/torch go/boxes
for comp in zstd6 blosc-lz4; do
	store="$work/$comp.zarr"
	[ -d "$store" ] || "$work/peer-bench" write -compressor "$comp" "$store"
	"$work/peer-bench" crops "$store" "$work/crops.json" "$work/crops.bin" 16
	t0=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 0)
	t2=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 2)
	go=$(runs "$work/peer-bench" epoch "$store")
	boxes=$(runs "$work/peer-bench" boxes "$store")
	awk -v c="$comp" -v t0="$t0" -v t2="$t2" -v g="$go" -v b="$boxes" 'BEGIN {
		best = t0 > t2 ? t0 : t2
		printf "%-10s %12.1f %12.1f %12.1f %12.1f %10.2f %10.2f\n", c, t0, t2, g, b, g / best, g / b
	}'
done
echo "(crops/s, median of 3 cold epochs each; go/torch against torch's better configuration)"
