# Sourced by the peer scripts (codecs.sh, run.sh, remote.sh): from the
# repository's root, the work directory (PEER_DIR, kept between runs, or a
# new temporary one, removed on exit by peer_cleanup) with peer-bench built
# into it, and median. A script that sets its own EXIT trap calls
# peer_cleanup from it.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ -n "${PEER_DIR:-}" ]; then
	work=$PEER_DIR
	peer_cleanup() { :; }
else
	work=$(mktemp -d)
	peer_cleanup() { rm -rf "$work"; }
fi
trap peer_cleanup EXIT
mkdir -p "$work"
go build -o "$work/peer-bench" ./examples/peer/cmd/peer-bench

# median reads numbers, one per word, and prints their median.
median() { tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
