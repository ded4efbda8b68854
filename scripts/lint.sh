#!/usr/bin/env bash
# lint.sh: gofmt, go vet and staticcheck over the module; run by `make lint`
# and by `make test` (scripts/test.sh) before the tests.
#
# staticcheck is pinned (STATICCHECK_VERSION) and run with `go run`, so it
# comes from the Go module proxy and is built once into the Go build cache;
# it runs its default checks (no staticcheck.conf: none is disabled).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
STATICCHECK_VERSION=${STATICCHECK_VERSION:-v0.8.2}

echo "== gofmt"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard '*.go')
else
	mapfile -t files < <(find . -name '*.go' -not -path './.data/*' -not -path '*/node_modules/*')
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
unformatted=$(gofmt -l "${existing[@]}")
if [ -n "$unformatted" ]; then
	echo "gofmt: not formatted (run make fmt):" >&2
	echo "$unformatted" >&2
	exit 1
fi

echo "== go vet"
"$GO" vet ./...

echo "== test kit imported by tests only"
# internal/testkit holds what tests (and the benchmark, cmd/bench, which
# seeds and stubs like a test) use and production never does: no other
# package may import it outside its _test.go files.
leaks=$("$GO" list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... |
	awk '$1 !~ /\/internal\/testkit\// && $1 !~ /\/cmd\/bench$/ { for (i = 2; i <= NF; i++) if ($i ~ /\/internal\/testkit\//) print $1 " imports " $i }')
if [ -n "$leaks" ]; then
	echo "production packages import the test kit (internal/testkit):" >&2
	echo "$leaks" >&2
	exit 1
fi

echo "== functions over 80 lines"
# Tables (functions mostly made of composite literals) are left out.
"$GO" run ./scripts/funclen -max 80 -fail

echo "== staticcheck $STATICCHECK_VERSION"
"$GO" run "honnef.co/go/tools/cmd/staticcheck@$STATICCHECK_VERSION" ./...
