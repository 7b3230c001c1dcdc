#!/usr/bin/env bash
# make codecs (and make bench): whole-array decode on one thread, the Go
# reader against zarr-python's a[:] with numcodecs, on stores that
# zarr-python writes (zstd level 6, and Blosc lz4 with byte shuffle) from
# peer-bench's EM-like raw volume (256 x 512 x 512 uint8, chunks
# [64, 128, 128]). Runs alternate, 5 of each in processes of their own
# (the files stay in the page cache; no chunk cache in either), and the
# medians are compared. Needs Debian's python3-zarr. PEER_DIR keeps the
# stores between runs.
source "$(dirname "$0")/setup.sh"
python=/usr/bin/python3
$python -c 'import zarr, numcodecs' || { echo "make codecs needs Debian's python3-zarr"; exit 1; }
[ -d "$work/zstd6.zarr" ] || "$work/peer-bench" write -compressor zstd6 "$work/zstd6.zarr"
[ -d "$work/codecs/blosc-lz4.zarr" ] || $python examples/peer/codecs_peer.py write "$work/zstd6.zarr/raw" "$work/codecs"

printf '%-10s %10s %12s %8s\n' store go_MB/s python_MB/s go/py
for comp in zstd6 blosc-lz4; do
	store="$work/codecs/$comp.zarr"
	go="" py=""
	for _ in 1 2 3 4 5; do
		go="$go $("$work/peer-bench" whole "$store")"
		py="$py $($python examples/peer/codecs_peer.py read "$store")"
	done
	g=$(echo $go | median) p=$(echo $py | median)
	awk -v c="$comp" -v g="$g" -v p="$p" 'BEGIN { printf "%-10s %10.1f %12.1f %8.2f\n", c, g, p, g / p }'
done
echo "(decoded MB/s of a whole-array read on one thread, median of 5 alternating runs; the Go reader as built: libzstd through cgo unless CGO_ENABLED=0)"
