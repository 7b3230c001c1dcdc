#!/usr/bin/env bash
# check-symbols.sh LIB SYMBOLS [BINARY...]
# Checks that LIB exports exactly the cu* symbols listed in SYMBOLS, and that
# every cu* symbol each BINARY imports is among them (so LD_BIND_NOW=1 works).
# Binaries that do not exist (an unexpanded glob) are skipped.
set -euo pipefail
lib=$1 list=$2
shift 2
exported=$(nm -D --defined-only "$lib" | awk '$2 == "T" && $3 ~ /^cu/ {print $3}' | sort)
listed=$(awk '/^cu/ {print $1}' "$list" | sort)
if [[ "$exported" != "$listed" ]]; then
	echo "check-symbols: $lib exports differ from $list (< exported, > listed):"
	diff <(echo "$exported") <(echo "$listed") || true
	exit 1
fi
status=0
for bin in "$@"; do
	[[ -e "$bin" ]] || continue
	missing=$(nm -D --undefined-only "$bin" | awk '$2 ~ /^cu/ {print $2}' | sort | comm -23 - <(echo "$exported"))
	if [[ -n "$missing" ]]; then
		echo "check-symbols: $bin imports cu* symbols $lib does not export:" $missing
		status=1
	fi
done
exit $status
