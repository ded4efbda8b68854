#!/usr/bin/env bash
# fuzz.sh [N]x: run every Go fuzz target of the repository briefly (N executions each).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
t=${1:-20000x} # an execution count, not a duration: a -fuzztime deadline can end a slow input with a spurious "context deadline exceeded" on a loaded machine
grep -rl --include='*_test.go' '^func Fuzz' . | while read -r f; do
	pkg=./$(dirname "${f#./}")
	for fn in $(grep -o '^func Fuzz[A-Za-z0-9_]*' "$f" | sed 's/^func //'); do
		echo "fuzz $pkg $fn ($t)"
		out=$("$GO" test -run='^$' -fuzz="^${fn}\$" -fuzztime="$t" "$pkg" 2>&1) || { echo "$out"; exit 1; }
	done
done
