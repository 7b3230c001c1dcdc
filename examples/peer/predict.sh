#!/usr/bin/env bash
# make predict-bench: predicting over whole volumes, side by side on one
# machine, on peer-bench's EM-like store (zstd level 6; SHAPE, default
# 256,512,512, uint8 raw and two class arrays chunked [64, 128, 128]).
#
# Reads: the loader over the store's tiles (dataset.yaml's tiles: the
# crops' 64^3 boxes, abutting, over the whole volume: 256 tiles) against
# the training loader's crops (512 an epoch), tiles/s against crops/s, cold
# (a fresh process, from opening the source, the default cache) and warm
# (the second pass, with a cache that holds the store: every chunk cached).
#
# Writes: the predictions of every tile (its raw over 255 as float32, or
# raw > 128 as uint8), written with zstd level 6 and with blosc-lz4, by the
# prediction writer (peer-bench predict: one goroutine calling Write in
# tile order, chunks of the tile grid) against zarr-python 2.13 writing
# the same predictions tile by tile, a[z0:z1, y0:y1, x0:x1] = p, into an
# array chunked as the tiles (predict_peer.py, cellmap-data's way). Both
# make every tile's prediction first, as a model's outputs (numpy's
# expressions in Python, a table look-up in Go), so that what is timed is
# the writing alone: from creating the arrays to the last chunk written;
# predict_peer.py same checks that the two wrote the same values. The
# writer's memory: the peak of the chunks it held (Stats().PartialPeak)
# and the growth of the process's peak resident memory over the write.
#
# Each figure is the median of RUNS (default 5) runs, alternating between
# the sides, each in a process of its own. Needs Debian's python3-zarr.
# PEER_DIR keeps the store between runs.
source "$(dirname "$0")/setup.sh"
python=/usr/bin/python3
$python -c 'import zarr, numcodecs' || { echo "make predict-bench needs Debian's python3-zarr"; exit 1; }
shape=${SHAPE:-256,512,512}
runs=${RUNS:-5}
store="$work/predict-${shape//,/x}.zarr"
[ -d "$store" ] || "$work/peer-bench" write -compressor zstd6 -shape "$shape" "$store"

# col N: field N of each line read.
col() { awk -v f="$1" '{ print $f }'; }

# Cold reads run at the default chunk cache, a user's first pass; warm
# ones with the cache holding the whole store from the start (a size set
# is held as set), so that the second pass is every chunk cached: the
# default grows only as re-reading pays for the memory.
cache=${LOADERGEN_ZARR_CACHE_MB:-4096}
cc="" tc="" cw="" tw=""
for _ in $(seq "$runs"); do
	cc="$cc $("$work/peer-bench" epoch "$store")"
	tc="$tc $("$work/peer-bench" tiles "$store" | col 1)"
	tw="$tw $(LOADERGEN_ZARR_CACHE_MB=$cache "$work/peer-bench" tiles "$store" | col 2)"
	cw="$cw $(LOADERGEN_ZARR_CACHE_MB=$cache "$work/peer-bench" warm "$store")"
done
printf '%-6s %10s %10s %8s\n' reads crops/s tiles/s tiles/crops
for what in cold warm; do
	if [ $what = cold ]; then c=$(echo $cc | median) t=$(echo $tc | median); else c=$(echo $cw | median) t=$(echo $tw | median); fi
	awk -v w=$what -v c="$c" -v t="$t" 'BEGIN { printf "%-6s %10.1f %10.1f %8.2f\n", w, c, t, t / c }'
done
echo "(cold: a fresh process from opening the source, every chunk decoded once, over an epoch's 512 crops or the volume's tiles of 64^3; warm: the second pass with the cache holding the store, every chunk cached)"
echo

printf '%-18s %10s %10s %8s %12s %10s %8s\n' writes go_MB/s py_MB/s go/py partial_MiB rss_MiB rss/part
for dtype in float32 uint8; do
	for codec in zstd6 blosc-lz4; do
		go="" py="" part="" rss=""
		for _ in $(seq "$runs"); do
			g=$("$work/peer-bench" predict -dtype $dtype -codec $codec "$store" "$work/go-pred.zarr")
			go="$go $(echo "$g" | col 1)" part="$part $(echo "$g" | col 2)" rss="$rss $(echo "$g" | col 3)"
			py="$py $($python examples/peer/predict_peer.py write "$store" "$work/py-pred.zarr" $dtype $codec)"
		done
		$python examples/peer/predict_peer.py same "$work/go-pred.zarr/pred/s0" "$work/py-pred.zarr"
		awk -v w="$dtype $codec" -v g="$(echo $go | median)" -v p="$(echo $py | median)" -v a="$(echo $part | median)" -v r="$(echo $rss | median)" \
			'BEGIN { printf "%-18s %10.1f %10.1f %8.2f %12.1f %10.1f %8.2f\n", w, g, p, g / p, a, r, r / a }'
	done
done
echo "(MB/s of predictions written, from creating the arrays to the last chunk; the same values on both sides)"
