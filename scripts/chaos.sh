#!/usr/bin/env bash
# chaos.sh: the randomized fault harness (docs/chaos.md). Builds telemetryd
# and cmd/chaos, gives the first instance's write-ahead log a 64 MiB
# filesystem of its own (tmpfs, else a loop-mounted ext4 image; without
# either, the run has no disk-full faults), and runs the harness with
# ClickHouse and PostgreSQL of its own in a temporary directory.
#
#   CHAOS_MINUTES=10 CHAOS_SEED=42 scripts/chaos.sh
#
# Ports (defaults): CHAOS_CH_PORT 31000, CHAOS_CH_HTTP_PORT 31123,
# CHAOS_PG_PORT 31432, CHAOS_HTTP_PORTS 31080,31081 (below the kernel's
# ephemeral range, 32768 and up, so that no client connection holds one
# when a server restarts on it). CHAOS_CLUSTER=replicated runs ClickHouse as
# `make test-cluster`'s replicated topology instead (two shards of two
# replicas, ZooKeeper; CHAOS_CH_PORTS 31141-31144, HTTP on each + 20,
# CHAOS_ZK_PORT 31181), with kill-replica faults. The work directory
# (logs of every instance start) is kept when the run fails, or with
# CHAOS_KEEP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
command -v node >/dev/null || { echo "chaos: node is needed for the TypeScript SDK client" >&2; exit 2; }
scripts/dbctl.sh install
dir=$(mktemp -d /tmp/telemetry-chaos.XXXXXX)
chmod 755 "$dir"
mnt=""
status=1
as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi; }
cleanup() {
	scripts/dbctl.sh stop "$dir/db" >/dev/null 2>&1 || true
	if [ -n "$mnt" ]; then as_root umount "$mnt" || true; fi
	if [ "$status" = 0 ] && [ "${CHAOS_KEEP:-}" != 1 ]; then rm -rf "$dir"; else echo "chaos: logs kept in $dir"; fi
}
trap cleanup EXIT
echo "== build"
"$GO" build -o "$dir/telemetryd" ./cmd/telemetryd
"$GO" build -o "$dir/chaos" ./cmd/chaos
mkdir -p "$dir/walfs"
if as_root mount -t tmpfs -o size=64m,mode=0755 tmpfs "$dir/walfs" 2>/dev/null; then
	mnt=$dir/walfs
elif truncate -s 64M "$dir/wal.img" && mkfs.ext4 -q -F "$dir/wal.img" 2>/dev/null &&
	as_root mount -o loop "$dir/wal.img" "$dir/walfs" 2>/dev/null; then
	mnt=$dir/walfs
else
	echo "chaos: warning: no size-limited filesystem could be mounted (tmpfs or loop); no disk-full faults" >&2
fi
echo "== chaos"
set +e
CHAOS_DIR=$dir CHAOS_BIN=$dir/telemetryd CHAOS_REPO=$PWD CHAOS_WAL_FS=$mnt "$dir/chaos"
status=$?
set -e
exit $status
