#!/usr/bin/env bash
# test-cluster.sh: `make test-cluster`. Starts two ClickHouse shards (two
# clickhouse-server processes on loopback with a remote_servers
# configuration naming both) and one PostgreSQL in a temporary directory,
# builds telemetryd, then runs
#   - the store tests (package clickhouse) in cluster mode, and
#   - the cluster test: two telemetryd instances on the shards and one on a
#     single server, the same data ingested through both sides, every metric
#     read compared, /metrics checked to move; and the data-lifecycle tests
#     (export, deleting a person's data and an MCP's, retention, redaction),
# then, on a replicated topology (ZooKeeper from Debian on loopback, two
# shards of two replicas each), the store tests with replicated tables and
# the cluster tests again, with the replica-loss test (SIGKILL of a replica
# under ingest) and the data-lifecycle tests, and stops the servers even when the tests fail.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
CH_PORT1=${TEST_CLUSTER_CH_PORT1:-29101}
CH_PORT2=${TEST_CLUSTER_CH_PORT2:-29102}
PG_PORT=${TEST_CLUSTER_PG_PORT:-25532}
CLUSTER=telemetry_test
# The replicated topology: four servers (interserver ports +10) and ZooKeeper.
R_PORTS=${TEST_REPLICATED_CH_PORTS:-"29141 29142 29143 29144"}
ZK_PORT=${TEST_REPLICATED_ZK_PORT:-29181}
R_CLUSTER=telemetry_repl
dir=$(mktemp -d /tmp/telemetry-cluster.XXXXXX)
rdir=$(mktemp -d /tmp/telemetry-replicated.XXXXXX)
cleanup() { scripts/dbctl.sh stop "$dir" || true; scripts/dbctl.sh stop "$rdir" || true; rm -rf "$dir" "$rdir"; }
trap cleanup EXIT
scripts/dbctl.sh install
scripts/dbctl.sh start-cluster "$dir" "$CLUSTER" "$CH_PORT1" "$CH_PORT2"
scripts/dbctl.sh start-pg "$dir" "$PG_PORT"
echo "== go build"
"$GO" build -o "$dir/telemetryd" ./cmd/telemetryd
export TELEMETRY_TEST_CLICKHOUSE_ADDR=127.0.0.1:$CH_PORT1
export TELEMETRY_TEST_CLICKHOUSE_CLUSTER=$CLUSTER
export TELEMETRY_TEST_POSTGRES_URL="postgres://telemetry@127.0.0.1:$PG_PORT/telemetry?sslmode=disable"
export TELEMETRY_TEST_CLUSTER_BIN=$dir/telemetryd
export TELEMETRY_TEST_CLUSTER_DIR=$dir # lets a test stop and start a shard
# One test at a time on the clusters (-parallel 1; make test runs them
# side by side on one server): four ClickHouse servers and ZooKeeper
# already fill two cores, and replication waits are bounded.
CLUSTER_PARALLEL=${CLUSTER_TEST_PARALLEL:-1}
echo "== go test (cluster mode: two shards)"
"$GO" test -count=1 -timeout 25m -parallel "$CLUSTER_PARALLEL" ${GOTEST_FLAGS:-} ./clickhouse
"$GO" test -count=1 -timeout 25m -parallel "$CLUSTER_PARALLEL" ${GOTEST_FLAGS:-} -run 'TestCluster|TestTwoInstances|TestIngestAndReadBackThroughTheAPI|TestExport|TestDeletePersonAndMCP|TestDeletionWaitsForTheLog|TestRetention|TestRedactionEndToEnd' ./cmd/telemetryd
scripts/dbctl.sh stop "$dir"
scripts/dbctl.sh start-pg "$dir" "$PG_PORT"
# shellcheck disable=SC2086 # the ports are words
scripts/dbctl.sh start-replicated "$rdir" "$R_CLUSTER" "$ZK_PORT" 2 $R_PORTS
read -r first_port _ <<<"$R_PORTS"
export TELEMETRY_TEST_CLICKHOUSE_ADDR=127.0.0.1:$first_port
export TELEMETRY_TEST_CLICKHOUSE_CLUSTER=$R_CLUSTER
export TELEMETRY_TEST_CLICKHOUSE_REPLICATED=1
export TELEMETRY_TEST_CLUSTER_DIR=$rdir # lets a test kill and restart a replica
echo "== go test (replicated: two shards of two replicas, ZooKeeper)"
"$GO" test -count=1 -timeout 30m -parallel "$CLUSTER_PARALLEL" ${GOTEST_FLAGS:-} ./clickhouse
"$GO" test -count=1 -timeout 30m -parallel "$CLUSTER_PARALLEL" ${GOTEST_FLAGS:-} -run 'TestReplicaLoss|TestClusterMatchesSingleServer|TestTwoInstances|TestIngestAndReadBackThroughTheAPI|TestExport|TestDeletePersonAndMCP|TestDeletionWaitsForTheLog|TestRetention|TestRedactionEndToEnd' ./cmd/telemetryd
echo "== cluster tests passed"
