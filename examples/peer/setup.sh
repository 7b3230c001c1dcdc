# Sourced by the peer scripts (codecs.sh, run.sh, remote.sh): from the
# repository's root, the work directory (PEER_DIR, kept between runs, or a
# new temporary one) with peer-bench built into it, and median.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
work=${PEER_DIR:-$(mktemp -d)}
mkdir -p "$work"
go build -o "$work/peer-bench" ./examples/peer/cmd/peer-bench

# median reads numbers, one per word, and prints their median.
median() { tr ' ' '\n' | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}'; }
