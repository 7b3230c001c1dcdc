#!/usr/bin/env bash
# check-symbols.sh LIB SYMBOLS
# Checks that LIB exports exactly the cu* symbols listed in SYMBOLS. The
# cuda binaries need no check of their own: they link the driver stub of
# internal/cudastub, built from the same list, so a call to a driver
# function missing from SYMBOLS fails to link.
set -euo pipefail
lib=$1 list=$2
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^cu/ {print $3}' | sort)
listed=$(awk '/^cu/ {print $1}' "$list" | sort)
if [[ "$exported" != "$listed" ]]; then
	echo "check-symbols: $lib exports differ from $list (< exported, > listed):"
	diff <(echo "$exported") <(echo "$listed") || true
	exit 1
fi
