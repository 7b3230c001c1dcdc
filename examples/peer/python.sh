#!/usr/bin/env bash
# make peer-python: the generated loaders used from Python (the package
# loadergen python writes; every batch's keys taken with torch.from_dlpack)
# against the same loaders from Go and against PyTorch's DataLoader, side
# by side in one run, on make peer's big stores, make peer-images' JPEGs
# and a tabular-rows case (golden/rows: 200,000 rows of 32 float32 and an
# int64 label, batch 256). The ratio that matters is python/go: from Python
# each loader keeps that share of its rate from Go, and of its lead over
# PyTorch. Needs Debian's python3-zarr, python3-torch and
# python3-torchvision. PEER_DIR keeps the data between runs.
source "$(dirname "$0")/setup.sh"
python=/usr/bin/python3
$python -c 'import zarr, torch, torchvision' || { echo "make peer-python needs Debian's python3-zarr, python3-torch and python3-torchvision"; exit 1; }
dist="$work/pydist"
go run ./cmd/loadergen python -o "$dist" ./examples/peer ./examples/imagenet ./golden/rows >/dev/null
go build -o "$work/imagenet-demo" ./examples/imagenet/cmd/imagenet-demo

runs() { local out=""; for _ in 1 2 3; do out="$out $("$@")"; done; echo $out | median; }
# field NAME: the value of line "NAME VALUE" on stdin.
field() { awk -v k="$1" '$1 == k {print $2}'; }

echo "volumes: crops/s, median of 3 cold epochs each in a fresh process; the chunk cache at 32 MiB"
printf '%-16s %10s %10s %10s %9s %9s %9s\n' store torch_best go python go/torch py/torch py/go
export LOADERGEN_ZARR_CACHE_MB=32
for comp in zstd6 blosc-lz4; do
	store="$work/big-$comp.zarr"
	[ -d "$store" ] || "$work/peer-bench" write -compressor "$comp" -shape 256,1024,1024 "$store"
	"$work/peer-bench" crops "$store" "$work/crops.json" "$work/crops.bin" 16
	t0=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 0)
	t2=$(runs $python examples/peer/torch_peer.py "$store" "$work/crops.json" "$work/crops.bin" 2)
	go=$(runs "$work/peer-bench" epoch "$store")
	py=$(runs sh -c "$python examples/peer/python_peer.py '$dist' volumes '$store' | awk '\$1 == \"python\" {print \$2}'")
	awk -v c="big $comp" -v t0="$t0" -v t2="$t2" -v g="$go" -v p="$py" 'BEGIN {
		t = t0 > t2 ? t0 : t2
		printf "%-16s %10.1f %10.1f %10.1f %9.2f %9.2f %9.2f\n", c, t, g, p, g / t, p / t, p / g
	}'
done
unset LOADERGEN_ZARR_CACHE_MB

echo
echo "images: img/s, the mean of epochs 1 and 2 of 3 (epoch 0 warms the page cache); torchvision: its better of workers 0 and 2"
images=.demo-data/imagenet
go=$("$work/imagenet-demo" -data "$images" -epochs 3 | awk '/^epoch [12]:/ {s += $(NF-1)} END {print s / 2}')
tv=$($python examples/imagenet/peer.py "$images/folder" 3 | awk '/epoch [12]:/ {w = $2; s[w] += $(NF-1)} END {for (w in s) if (s[w] / 2 > b) b = s[w] / 2; print b}')
py=$($python examples/peer/python_peer.py "$dist" images "$images" 3 | awk '/^python_epoch[12] / {s += $2} END {print s / 2}')
printf '%-16s %10s %10s %10s %9s %9s %9s\n' data torch_best go python go/torch py/torch py/go
awk -v t="$tv" -v g="$go" -v p="$py" 'BEGIN { printf "%-16s %10.0f %10.0f %10.0f %9.2f %9.2f %9.2f\n", "imagenet jpegs", t, g, p, g / t, p / t, p / g }'

echo
echo "rows: rows/s, the best of 5 epochs; torch: the best of a per-row and a batched dataset, workers 0 and 2"
out=$($python examples/peer/python_peer.py "$dist" rows "$work/rows" 5)
go=$("$work/peer-bench" rows "$work/rows" 5)
tb=$(echo "$out" | awk '/^torch_/ {if ($2 > b) b = $2} END {print b}')
py=$(echo "$out" | field python)
printf '%-16s %10s %10s %10s %9s %9s %9s\n' data torch_best go python go/torch py/torch py/go
awk -v t="$tb" -v g="$go" -v p="$py" 'BEGIN { printf "%-16s %10.0f %10.0f %10.0f %9.2f %9.2f %9.2f\n", "rows", t, g, p, g / t, p / t, p / g }'
echo "$out" | grep '^torch_'
keys=$(echo "$out" | field keys)
batch=$(echo "$out" | field python_batch_us)
taken=$(echo "$out" | field python_batch_keys_us)
key=$(echo "$out" | field python_key_us)
awk -v g="$go" -v b="$batch" -v t="$taken" -v k="$keys" -v key="$key" 'BEGIN {
	gb = 256 / g * 1e6
	printf "per batch: Go %.1f us; Python %.1f us, %.1f us with its %d keys taken (torch.from_dlpack)\n", gb, b, t, k
	printf "per key, every key of one held batch taken 20000 times (call, capsule, from_dlpack, deleter): %.2f us\n", key
}'
