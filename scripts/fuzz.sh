#!/usr/bin/env bash
# fuzz.sh [N]x: run every Go fuzz target of the repository briefly (N executions each).
# Each package's test binary is built once, instrumented for fuzzing (go
# test -c -fuzz), and run once per target, as go test -fuzz would run it
# (in the package's directory, with the go command's fuzz cache): one
# link per package instead of one per target.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
t=${1:-20000x} # an execution count, not a duration: a -fuzztime deadline can end a slow input with a spurious "context deadline exceeded" on a loaded machine
bin=$(mktemp -d /tmp/telemetry-fuzz.XXXXXX)
trap 'rm -rf "$bin"' EXIT
cache=$("$GO" env GOCACHE)/fuzz
module=$("$GO" list -m)
for dir in $(grep -rl --include='*_test.go' '^func Fuzz' . | grep -v node_modules | xargs -n1 dirname | sort -u); do
	dir=${dir#./}
	fns=$(cat "$dir"/*_test.go | grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/^func //')
	exe=$bin/$(echo "$dir" | tr / _).test
	out=$("$GO" test -c -fuzz="^$(echo "$fns" | head -1)\$" -o "$exe" "./$dir" 2>&1) || { echo "$out"; exit 1; }
	for fn in $fns; do
		echo "fuzz ./$dir $fn ($t)"
		out=$(cd "$dir" && "$exe" -test.run='^$' -test.fuzz="^${fn}\$" -test.fuzztime="$t" -test.paniconexit0 \
			-test.fuzzcachedir="$cache/$module/$dir" 2>&1) || { echo "$out"; exit 1; }
	done
done
