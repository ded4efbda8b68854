#!/usr/bin/env bash
# fuzz.sh DURATION: run every Go fuzz target of the repository briefly.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
t=${1:-10s}
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
	pkg=./$(dirname "${f#./}")
	for fn in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
		echo "fuzz $pkg $fn ($t)"
		out=$("$GO" test -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" "$pkg" 2>&1) || { echo "$out"; exit 1; }
	done
done
