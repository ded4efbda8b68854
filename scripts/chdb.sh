#!/usr/bin/env bash
# chdb.sh: install ClickHouse 26 as a library (libchdb.so from the npm
# package @chdb/lib-linux-x64-gnu, version pinned in
# scripts/chdb/package-lock.json) under .data/chdb when it is missing, and
# print the path of libchdb.so. The ClickHouse 26 proof test
# (clickhouse/proof26_test.go) loads it from TELEMETRY_TEST_LIBCHDB.
# About 177 MB to download once (566 MB unpacked); later runs reuse it.
set -euo pipefail
cd "$(dirname "$0")/.."
dest=.data/chdb
lib=$dest/node_modules/@chdb/lib-linux-x64-gnu/libchdb.so
if [ ! -f "$lib" ] || ! cmp -s scripts/chdb/package-lock.json "$dest/package-lock.json"; then
	command -v npm >/dev/null || { echo "chdb.sh: npm is needed to install libchdb" >&2; exit 1; }
	mkdir -p "$dest"
	cp scripts/chdb/package.json scripts/chdb/package-lock.json "$dest/"
	echo "[chdb] installing @chdb/lib-linux-x64-gnu (ClickHouse 26, ~177 MB) under $dest" >&2
	(cd "$dest" && npm ci --no-audit --no-fund --ignore-scripts --cache "$PWD/../npm-cache" >&2)
fi
[ -f "$lib" ] || lib=$(find "$dest/node_modules/@chdb" -name 'libchdb.so' | head -1)
[ -f "$lib" ] || { echo "chdb.sh: libchdb.so not found under $dest" >&2; exit 1; }
echo "$(cd "$(dirname "$lib")" && pwd)/libchdb.so"
