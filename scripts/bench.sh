#!/usr/bin/env bash
# bench.sh: start ClickHouse and PostgreSQL of our own in a temporary
# directory (like test.sh), run the Go benchmarks against them, print the
# figures and stop the servers. BENCH selects benchmarks (a -bench regexp,
# default all), BENCHTIME their length (default 3x: every benchmark here
# measures an operation of seconds at most).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
CH_PORT=${TEST_CH_PORT:-29000}
PG_PORT=${TEST_PG_PORT:-25432}
dir=$(mktemp -d /tmp/telemetry-bench.XXXXXX)
cleanup() { scripts/dbctl.sh stop "$dir" || true; rm -rf "$dir"; }
trap cleanup EXIT
scripts/dbctl.sh start "$dir" "$CH_PORT" "$PG_PORT"
export TELEMETRY_TEST_CLICKHOUSE_ADDR=127.0.0.1:$CH_PORT
export TELEMETRY_TEST_POSTGRES_URL="postgres://telemetry@127.0.0.1:$PG_PORT/telemetry?sslmode=disable"
"$GO" test -run='^$' -bench="${BENCH:-.}" -benchtime="${BENCHTIME:-3x}" -timeout 60m ./...
