#!/usr/bin/env bash
# check-env.sh README SOURCE...
# Checks that the table of README's "Environment" section lists exactly the
# CUDAEMU_ variables the emulator's SOURCE files read (each named by a
# string literal of its own: getenv("CUDAEMU_X"), env_long("CUDAEMU_X", ...)).
set -euo pipefail
readme=$1
shift
read=$(grep -oh '"CUDAEMU_[A-Z_]*"' "$@" | tr -d '"' | sort -u)
listed=$(grep -o '^| `CUDAEMU_[A-Z_]*`' "$readme" | grep -o 'CUDAEMU_[A-Z_]*' | sort -u)
if [[ "$read" != "$listed" ]]; then
	echo "check-env: the variables the emulator reads differ from those $readme lists (< read, > listed):"
	diff <(echo "$read") <(echo "$listed") || true
	exit 1
fi
