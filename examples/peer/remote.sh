#!/usr/bin/env bash
# make remote-bench: the volume loader reading make peer's big stores from
# an S3 server on the loopback (versitygw, make versitygw) against reading
# them from local disk, side by side: one epoch per fresh process (the
# chunk cache at 32 MiB, as make peer's big case; the page cache as the
# machine has it, so both sides read files from memory and the ratio is
# the cost of S3 requests), alternating local and S3, 3 runs each, medians.
# With LATENCY set (make remote-bench LATENCY=20ms), each round also reads
# the S3 store through a proxy that delays every request by LATENCY
# (delayproxy), with read-ahead on and off (LOADERGEN_READAHEAD_MB=0),
# and the ratios are to the S3 rate without latency.
# With IMAGES=1, it runs the image demo (imagenet-demo, make demo-images'
# shards, written when absent) instead: its first epoch in a fresh process
# from local disk and over S3 (and through the proxy with LATENCY), images
# per second, medians of 3.
# With COLD=1 (root only), the page cache is dropped before every epoch, so
# both sides read the store from the disk: local disk as a volume bigger
# than memory meets it, and the server reading its files cold.
# PEER_DIR keeps the stores between runs (make peer writes them too).
source "$(dirname "$0")/setup.sh"
vgw=$(command -v versitygw || echo "$(go env GOPATH)/bin/versitygw")
[ -x "$vgw" ] || { echo "make remote-bench needs versitygw: make versitygw"; exit 1; }
latency=${LATENCY:-}
cold=${COLD:-}
if [ -n "$cold" ] && ! [ -w /proc/sys/vm/drop_caches ]; then
	echo "make remote-bench COLD=1 drops the page cache: it needs root (write access to /proc/sys/vm/drop_caches)"
	exit 1
fi
# chill drops the page cache when COLD is set.
chill() { [ -z "$cold" ] || { sync && echo 1 >/proc/sys/vm/drop_caches; }; }

root=$(mktemp -d)
ln -s "$(cd "$work" && pwd)" "$root/peerwork" # the bucket "peerwork" is the work directory
images=.demo-data/imagenet
mkdir -p "$images"
ln -s "$(cd "$images" && pwd)" "$root/imgs" # the bucket "imgs" is the image demo's shards
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$vgw" --access bench --secret bench-secret --port "127.0.0.1:$port" --keep-alive --quiet posix --bucketlinks "$root" >"$root.log" 2>&1 &
pids=$!
trap 'kill $pids; rm -rf "$root" "$root.log"; peer_cleanup' EXIT
for _ in $(seq 100); do (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null && break; sleep 0.1; done
if [ -n "$latency" ]; then
	go build -o "$work/delayproxy" ./internal/testenv/remotetest/cmd/delayproxy
	coproc proxy { exec "$work/delayproxy" -latency "$latency" "127.0.0.1:$port"; }
	pids="$pids $proxy_PID"
	read -r slow <&"${proxy[0]}"
fi

export AWS_ENDPOINT_URL_S3=http://127.0.0.1:$port AWS_ACCESS_KEY_ID=bench AWS_SECRET_ACCESS_KEY=bench-secret \
	AWS_REGION=us-east-1 AWS_EC2_METADATA_DISABLED=true LOADERGEN_ZARR_CACHE_MB=32

# slow runs one epoch through the delay proxy, with the environment given.
slow() { chill; env AWS_ENDPOINT_URL_S3="http://$slow" "$@" "$work/peer-bench" epoch "s3://peerwork/$store"; }

if [ -n "${IMAGES:-}" ]; then
	go build -o "$work/imagenet-demo" ./examples/imagenet/cmd/imagenet-demo
	# first prints the images per second of the first epoch of the demo over root $1.
	first() { chill; "$work/imagenet-demo" -data "$images" -root "$1" -epochs 1 | awk '/^epoch 0/ {print $(NF-1)}'; }
	first "$images" >/dev/null # writes the shards when absent
	l="" s="" d=""
	for _ in 1 2 3; do
		l="$l $(first "$images")"
		s="$s $(first s3://imgs)"
		[ -z "$latency" ] || d="$d $(AWS_ENDPOINT_URL_S3="http://$slow" first s3://imgs)"
	done
	l=$(echo $l | median) s=$(echo $s | median)
	printf '%-16s %10s %10s %8s' "" local s3 s3/local
	[ -z "$latency" ] && echo || printf ' %12s %8s\n' "+$latency" "/s3"
	awk -v l="$l" -v s="$s" 'BEGIN { printf "%-16s %10.1f %10.1f %8.2f", "images", l, s, s / l }'
	[ -z "$latency" ] && echo || { d=$(echo $d | median); awk -v s="$s" -v d="$d" 'BEGIN { printf " %12.1f %8.2f\n", d, d / s }'; }
	echo "(images/s of the first epoch in a fresh process, median of 3, the columns alternating${cold:+; the page cache dropped before each})"
	exit 0
fi
if [ -z "$latency" ]; then
	printf '%-16s %10s %10s %8s\n' store local s3 s3/local
else
	printf '%-16s %10s %10s %8s %12s %8s %12s %8s\n' store local s3 s3/local "+$latency" "/s3" "+$latency,ra=0" "/s3"
fi
for comp in zstd6 blosc-lz4; do
	store="big-$comp.zarr"
	[ -d "$work/$store" ] || "$work/peer-bench" write -compressor "$comp" -shape 256,1024,1024 "$work/$store"
	l="" s="" d="" o=""
	for _ in 1 2 3; do
		chill
		l="$l $("$work/peer-bench" epoch "$work/$store")"
		chill
		s="$s $("$work/peer-bench" epoch "s3://peerwork/$store")"
		if [ -n "$latency" ]; then
			d="$d $(slow)"
			o="$o $(slow LOADERGEN_READAHEAD_MB=0)"
		fi
	done
	l=$(echo $l | median) s=$(echo $s | median)
	if [ -z "$latency" ]; then
		awk -v c="$comp" -v l="$l" -v s="$s" 'BEGIN { printf "%-16s %10.1f %10.1f %8.2f\n", c, l, s, s / l }'
	else
		d=$(echo $d | median) o=$(echo $o | median)
		awk -v c="$comp" -v l="$l" -v s="$s" -v d="$d" -v o="$o" \
			'BEGIN { printf "%-16s %10.1f %10.1f %8.2f %12.1f %8.2f %12.1f %8.2f\n", c, l, s, s / l, d, d / s, o, o / s }'
	fi
done
echo "(crops/s of one epoch in a fresh process, median of 3, the columns alternating${cold:+; the page cache dropped before each})"
