#!/usr/bin/env bash
# test.sh: start ClickHouse and PostgreSQL of our own in a temporary
# directory, run the linters (scripts/lint.sh) and every test against them,
# stop them even when the tests fail.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
CH_PORT=${TEST_CH_PORT:-29000}
PG_PORT=${TEST_PG_PORT:-25432}
CH_HTTP_PORT=${TEST_CH_HTTP_PORT:-29123}
dir=$(mktemp -d /tmp/telemetry-test.XXXXXX)
fuzzpid=""
cleanup() {
	if [ -n "$fuzzpid" ]; then kill "$fuzzpid" 2>/dev/null || true; fi
	scripts/dbctl.sh stop "$dir" || true
	rm -rf "$dir"
}
trap cleanup EXIT
scripts/dbctl.sh start "$dir" "$CH_PORT" "$PG_PORT" "$CH_HTTP_PORT"
# The ClickHouse 26 proof (clickhouse/proof26_test.go): libchdb.so,
# installed under .data/chdb when missing, and 18.16's HTTP interface for
# its TSV answers. Required in CI.
if lib=$(scripts/chdb.sh); then
	export TELEMETRY_TEST_LIBCHDB=$lib
	export TELEMETRY_TEST_CLICKHOUSE_HTTP=127.0.0.1:$CH_HTTP_PORT
else
	[ "${CI:-}" = true ] && { echo "libchdb could not be installed: the ClickHouse 26 proof cannot run" >&2; exit 1; }
	echo "warning: libchdb could not be installed; the ClickHouse 26 proof will be skipped" >&2
fi
# The dashboard's browser tests need chromium. They skip without it, except
# in CI (CI=true), where they fail: a fresh machine must run them.
if ! scripts/dbctl.sh install-browser; then
	[ "${CI:-}" = true ] && { echo "chromium could not be installed" >&2; exit 1; }
	echo "warning: chromium could not be installed; the browser tests will be skipped" >&2
fi
export TELEMETRY_TEST_CLICKHOUSE_ADDR=127.0.0.1:$CH_PORT
export TELEMETRY_TEST_POSTGRES_URL="postgres://telemetry@127.0.0.1:$PG_PORT/telemetry?sslmode=disable"
export TELEMETRY_TEST_DBCTL_DIR=$dir # lets outage tests stop and start ClickHouse
# The Node suites (sdk/typescript, e2e/node, e2e/mcp-client) and the SMTP
# server and the signed-webhook receiver of the delivery tests (e2e/maildev:
# MailDev, e2e/webhooks: standardwebhooks; cmd/telemetryd
# TestDeliveryEndToEnd) run inside go test against the service (cmd/telemetryd
# TestTypeScriptSDK, TestInstrumentationPackagesEndToEnd); their
# dependencies are installed here, from the lockfiles, when missing.
for pkg in sdk/typescript e2e/node e2e/mcp-client e2e/maildev e2e/webhooks; do
	if [ ! -d "$pkg/node_modules" ]; then
		if ! command -v npm >/dev/null; then
			[ "${CI:-}" = true ] && { echo "npm is needed for the Node test suites" >&2; exit 1; }
			echo "warning: npm missing; the Node test suites will be skipped" >&2
			continue
		fi
		echo "== npm ci ($pkg)"
		(cd "$pkg" && npm ci --no-audit --no-fund --cache "$PWD/../../.data/npm-cache")
	fi
done
GO="$GO" scripts/lint.sh # gofmt, go vet, staticcheck
# Up to 4 packages at once (go test's default is one per core): the two
# long ones (clickhouse, cmd/telemetryd) run their own tests in parallel
# (testenv.RaiseParallel), and the short ones need not queue behind them.
echo "== go test"
"$GO" test -count=1 -timeout 30m -p "${TEST_PACKAGES:-4}" ${GOTEST_FLAGS:-} ./...
echo "== go test (mcpgo against the Go MCP SDK of the old protocol)"
(cd mcpgo/compat && "$GO" vet ./... && "$GO" test -count=1 ./...)
# The short fuzz run goes beside the chaos run, which lasts its minutes
# whatever else the machine does; its output is printed after it.
fuzzlog=$dir/fuzz.log
if [ -x scripts/fuzz.sh ]; then
	echo "== fuzz (short), beside the chaos run"
	scripts/fuzz.sh "${FUZZTIME:-20000x}" >"$fuzzlog" 2>&1 &
	fuzzpid=$!
fi
# The randomized fault harness, short (docs/chaos.md): servers and
# instances of its own on the CHAOS_* ports; a failure prints the seed
# that replays it.
if command -v node >/dev/null; then
	echo "== chaos (${CHAOS_TEST_MINUTES:-2} minutes)"
	CHAOS_MINUTES=${CHAOS_TEST_MINUTES:-2} GO="$GO" scripts/chaos.sh
else
	[ "${CI:-}" = true ] && { echo "node is needed for the chaos harness's TypeScript SDK client" >&2; exit 1; }
	echo "warning: node missing; the chaos harness is skipped" >&2
fi
if [ -n "$fuzzpid" ]; then
	echo "== fuzz (short)"
	status=0
	wait "$fuzzpid" || status=$?
	fuzzpid=""
	cat "$fuzzlog"
	[ "$status" = 0 ] || { echo "fuzz failed" >&2; exit 1; }
fi
echo "== all tests passed"
