#!/usr/bin/env bash
# bench.sh: measure the service on this machine and print the figures.
#
# Starts ClickHouse and PostgreSQL of its own in a temporary directory (ports
# 39100 and 35532, not those of `make run` or `make test`), starts
# bin/telemetryd on port 38080, signs up and creates an MCP and ingest keys
# through the API, then runs:
#   1. ingest at full load (gzip batches of 500 over 8 connections), then at
#      half that rate, through the Go client; items/s, p50/p99 (from the
#      encoded body's send to the answer; the p99 with the client's encoding
#      and gzip too), peak RSS,
#      CPU seconds per million items of telemetryd and of ClickHouse (from
#      /proc, until every item is stored); then the bytes on disk per stored
#      item of events and every rollup (as ingested and after OPTIMIZE FINAL);
#   1a. restart to ready (stop, start, time to the first 202, with the ids
#      of the last 24 h in ClickHouse counted, and until its item is stored:
#      the flusher runs once the filter loaded), then full load with the
#      in-memory filter and, side by side, with ingest.shared_dedup (the
#      cross-instance duplicate check's cost, goal >= 0.8x);
#   1d. soak: BENCH_SOAK_MINUTES at half the full-load rate (a 20 s full
#      load first when the ingest part was skipped), printing the service's
#      RSS and its duplicate filter's size every BENCH_SOAK_EVERY;
#   1b. hostile load: normal ingest from one key alone, then beside 20 gzip
#      bombs and 20 OTLP empty-span bodies posted in a loop with another key
#      (BENCH_HOSTILE_SECONDS each): its p99 both ways, peak RSS, statuses;
#   2. the direct insert: the same rows straight into ClickHouse in batches
#      of the flusher's size;
#   2c. chstore, ClickHouse per item: BENCH_CH_ROWS rows inserted straight
#      into ClickHouse (as the direct insert), then until its merges
#      settle: ClickHouse's CPU s per million items (/proc) and the bytes
#      per item of every table after OPTIMIZE FINAL, with the baseline
#      build in rounds of alternating order (BENCH_CH_ROUNDS);
#   with BENCH_BASELINE (a git revision), parts 1 and 2 also run that
#   revision's telemetryd (with this build's load generator) and bench tool
#   (built once into .data/bench/baseline/<commit>/), in databases of their
#   own on the same servers, alternately with this build's: the summary
#   prints the ingest goals beside the baseline's figures with the ratio;
#   3. the reads: seeds BENCH_EVENTS events over 365 days (half of them in one
#      MCP) and times every read endpoint through HTTP and as raw aggregates;
#   1c. redaction: the service's CPU per MiB of payload with the worst custom
#      patterns validation accepts, on payloads shaped against them and the
#      built-in ones (and with redaction off, for comparison);
#   3a. the export: GET /v1/mcps/{id}/export of the seeded MCP (ndjson and csv)
#      streamed to a client on this machine: rows/s and the service's peak RSS
#      (the service restarted first, so the peak is the export's own); then
#      again after storing an item with a 512 KiB attribute first in the range;
#   3b. delivery: per team channel (slack, pagerduty, teams, google_chat,
#      webhook), 10,000 deliveries over 1,000 destinations drained
#      by the outbox to a local sink (the TLS stand-in of the tests):
#      deliveries/s; then the same beside one destination that never
#      answers: p99 of due → sent of the others (BENCH_DELIVERIES);
#   3c. probes: BENCH_PROBES probes at 60 s (accounts of 20, through the
#      API) against MCP servers on loopback (go-sdk with and without
#      sessions, slow, failing, hanging, refused), BENCH_PROBE_MINUTES
#      measured after a 70 s warm-up: CPU per check of the service,
#      ClickHouse, PostgreSQL (idle CPU subtracted) and the servers; checks
#      done against expected, checks per second, time between checks of a
#      probe, check latency;
#   4. the alerting Go benchmarks (evaluation pass, fan-out), or those BENCH_GO
#      names;
# and prints a summary against the goals. Everything it started is stopped on
# exit, even on failure or Ctrl-C.
#
# Environment (defaults in brackets):
#   BENCH_EVENTS [100000000]   events to seed for the reads. The full run
#                              took 11.5 minutes on the 2-core machine (seeding
#                              100 M events about 4, the raw aggregates over the
#                              50 M-event MCP about 5); 5000000 gives a
#                              4-minute run
#   BENCH_DAYS [365]           days of seeded history
#   BENCH_INGEST_SECONDS [30]  length of each ingest run
#   BENCH_CONNS [8]            load generator connections
#   BENCH_INGEST_ROUNDS [2]    with a baseline, the ingest runs alternate
#                              between the two builds in this many rounds
#                              (baseline first in odd rounds, this build first
#                              in even ones); the summary shows their mean
#   BENCH_DIRECT_ROWS [2000000] rows of the direct insert
#   BENCH_BASELINE [5d337ea]   a git revision whose ingest and direct insert run
#                              beside this build's ("" or "none": not run)
#   BENCH_FLUSH_ROWS [50000]   rows per insert of this build's direct insert:
#                              its ingest.flush_max_rows default
#   BENCH_BASE_FLUSH_ROWS [50000] the same for the baseline build
#   BENCH_DIRECT_ROUNDS [2]    with a baseline, the direct insert alternates
#                              between the two builds in this many rounds
#                              (in alternating order, as the ingest runs)
#   BENCH_SOAK_MINUTES [30]    length of the soak part
#   BENCH_SOAK_EVERY [60s]     how often it prints RSS and the filter's size
#   BENCH_SOAK_OUTAGE [5]      minutes ClickHouse is stopped in the middle of
#                              the soak (0: none; never past half the soak):
#                              the backlog grows in the log meanwhile and the
#                              RSS must stay under 512 MiB (goal 4)
#   BENCH_RELEASE_EVENTS [50000000] events of the release comparison's MCP (30 days, 6 releases;
#                              seeding runs every view: about 9,000 events/s on a busy 2-core host)
#   BENCH_SKIP                 space-separated parts to skip: ingest edges soak hostile redaction direct chstore reads releases export delivery probes alerting
#   BENCH_ONLY                 space-separated parts to run (the others are skipped), e.g. "chstore"
#   BENCH_CH_ROWS [1000000]    rows of each chstore round
#   BENCH_CH_ROUNDS [2]        chstore rounds (each: both builds, alternating order)
#   BENCH_DELIVERIES [10000]   chat deliveries of the delivery part
#   BENCH_EXPORT_BASELINE      a telemetryd binary (e.g. built from an older
#                              commit) whose export runs first, side by side
#                              with bin/telemetryd's, on the same data
#   BENCH_ALERTING_BASELINE    a test binary of ./postgres built from a baseline
#                              commit (go test -c -o FILE ./postgres): its
#                              EvaluatePass and FanOut benchmarks run after
#                              this build's, and the summary prints the ratios
#   BENCH_GO                   a -bench regexp: run these Go benchmarks of every
#                              package instead of the alerting ones ("." for all)
#   BENCHTIME [3x]             their -benchtime
#   BENCH_GO_COUNT [1]         their -count; the summary takes each figure's median
#   BENCH_PROBES [1000]        probes of the probes part (BENCH_ONLY=probes: about 7 minutes)
#   BENCH_PROBE_MINUTES [3]    minutes it measures
#   BENCH_PROBE_PORT [HTTP+10] first of the 6 ports of its MCP servers
#   BENCH_KEEP=1               keep the temporary directory (databases, logs)
#   BENCH_CH_PORT [39100] BENCH_PG_PORT [35532] BENCH_HTTP_PORT [38080]
# The figures are also saved under .data/bench/<time>/; when the ingest part
# ran, also as docs/bench/latest.jsonl, from which docs/capacity.md is
# regenerated (go run ./cmd/bench capacity).
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
CH_PORT=${BENCH_CH_PORT:-39100}
PG_PORT=${BENCH_PG_PORT:-35532}
HTTP_PORT=${BENCH_HTTP_PORT:-38080}
EVENTS=${BENCH_EVENTS:-100000000}
DAYS=${BENCH_DAYS:-365}
SECONDS_PER_RUN=${BENCH_INGEST_SECONDS:-30}
CONNS=${BENCH_CONNS:-8}
DIRECT_ROWS=${BENCH_DIRECT_ROWS:-2000000}
INGEST_ROUNDS=${BENCH_INGEST_ROUNDS:-2}
FLUSH_ROWS=${BENCH_FLUSH_ROWS:-50000}
BASE_FLUSH_ROWS=${BENCH_BASE_FLUSH_ROWS:-50000}
SKIP=" ${BENCH_SKIP:-} "
BASELINE=${BENCH_BASELINE-5d337ea}
[ "$BASELINE" = none ] && BASELINE=
ENDPOINT=http://127.0.0.1:$HTTP_PORT
CH=127.0.0.1:$CH_PORT
PG_URL="postgres://telemetry@127.0.0.1:$PG_PORT/telemetry?sslmode=disable"

step() { printf '\n\033[1m== %s\033[0m (%s)\n' "$*" "$(date -u +%H:%M:%S)"; }
want() { [[ $SKIP != *" $1 "* ]] && { [ -z "${BENCH_ONLY:-}" ] || [[ " $BENCH_ONLY " == *" $1 "* ]]; }; }

dir=$(mktemp -d /tmp/telemetry-bench.XXXXXX)
chmod 755 "$dir" # PostgreSQL runs as nobody when we are root
results=$dir/results.jsonl
svc_pid=
stop_service() {
	if [ -n "$svc_pid" ] && kill -0 "$svc_pid" 2>/dev/null; then
		echo "stopping telemetryd (pid $svc_pid)"
		kill -TERM "$svc_pid" 2>/dev/null || true
		wait "$svc_pid" 2>/dev/null || true
	fi
	svc_pid=
}
cleanup() {
	local rc=$?
	stop_service
	scripts/dbctl.sh stop "$dir/db" || true
	if [ -n "${BENCH_KEEP:-}" ]; then echo "kept $dir"; else rm -rf "$dir"; fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

loadavg() { echo "$(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg) (other work on the machine skews every figure)"; }
step "building"
loadavg
[ -x bin/telemetryd ] || "$GO" build -o bin/telemetryd ./cmd/telemetryd
"$GO" build -o "$dir/bench" ./cmd/bench
bench=$dir/bench

# The baseline build: BENCH_BASELINE's telemetryd and bench tool, built from
# `git archive` of that revision once and kept by commit.
base_dir= base_results=$dir/baseline.jsonl
if [ -n "$BASELINE" ] && { want ingest || want direct || want chstore; }; then
	base_rev=$(git rev-parse --verify "$BASELINE^{commit}")
	base_dir=.data/bench/baseline/$base_rev
	if [ ! -x "$base_dir/telemetryd" ] || [ ! -x "$base_dir/bench" ]; then
		echo "building the baseline $BASELINE ($base_rev) into $base_dir"
		src=$(mktemp -d /tmp/telemetry-baseline.XXXXXX)
		git archive "$base_rev" | tar -x -C "$src"
		mkdir -p "$base_dir"
		(cd "$src" && "$GO" build -o "$OLDPWD/$base_dir/telemetryd" ./cmd/telemetryd && "$GO" build -o "$OLDPWD/$base_dir/bench" ./cmd/bench)
		rm -rf "$src"
	fi
	echo "baseline: $BASELINE ($base_rev), $base_dir"
fi

step "starting ClickHouse (:$CH_PORT) and PostgreSQL (:$PG_PORT) in $dir/db"
# ClickHouse 18.16 cannot bind its port while connections of a previous run
# linger in TIME-WAIT (up to a minute): wait them out.
for i in $(seq 1 90); do
	command -v ss >/dev/null && ss -tan | grep -q "127.0.0.1:$CH_PORT " || break
	[ "$i" = 1 ] && echo "waiting for port $CH_PORT to be released by a previous run"
	sleep 1
done
if ! scripts/dbctl.sh start "$dir/db" "$CH_PORT" "$PG_PORT"; then
	tail -n 20 "$dir"/db/pg/server.log "$dir"/db/ch/log/error.log 2>/dev/null || true
	exit 1
fi

# start_service [VAR=value ...]: starts telemetryd (svc_bin, or
# bin/telemetryd) with extra environment
# and waits until it answers; the start time is in $svc_started.
start_service() {
	svc_started=$(date +%s.%N)
	env TELEMETRY_CLICKHOUSE_ADDR=$CH \
		TELEMETRY_POSTGRES_URL=$PG_URL \
		TELEMETRY_SERVER_ADDR=127.0.0.1:$HTTP_PORT \
		TELEMETRY_SERVER_BASE_URL=$ENDPOINT \
		TELEMETRY_INGEST_WAL_DIR=$dir/wal \
		TELEMETRY_INGEST_RATE_LIMIT_PER_MINUTE=10000000 \
		TELEMETRY_ALERTING_SECRET_KEY_FILE=$dir/secret.key \
		TELEMETRY_LOG_LEVEL=warn \
		"$@" "${svc_bin:-bin/telemetryd}" serve >>"$dir/telemetryd.log" 2>&1 &
	svc_pid=$!
	for i in $(seq 1 300); do
		if curl -sS -o /dev/null "$ENDPOINT/health" 2>/dev/null; then break; fi
		if ! kill -0 "$svc_pid" 2>/dev/null; then
			echo "telemetryd exited during start-up:"; tail -30 "$dir/telemetryd.log"; exit 1
		fi
		[ "$i" = 300 ] && { echo "telemetryd not answering after 60 s"; tail -30 "$dir/telemetryd.log"; exit 1; }
		sleep 0.05
	done
	echo "telemetryd is up (pid $svc_pid)"
}

step "starting telemetryd on $ENDPOINT"
start_service

step "signing up, creating the MCPs and an ingest key through the API"
setup=$("$bench" setup -endpoint "$ENDPOINT" -keys 2)
eval "$setup"
echo "account $BENCH_ACCOUNT, load MCP $BENCH_LOAD_MCP, history MCP $BENCH_HISTORY_MCP"

# ingest_runs this|base: a full then a half load of one build, into its
# own databases (and log) for the baseline; the service is left running
# this build.
base_setup=
ingest_runs() {
	if [ "$1" = base ]; then
		step "ingest of the baseline build ($BASELINE): full then half load for ${SECONDS_PER_RUN}s each"
		stop_service
		svc_bin=$base_dir/telemetryd start_service TELEMETRY_CLICKHOUSE_DATABASE=telemetry_baseline \
			TELEMETRY_POSTGRES_URL="${PG_URL/\/telemetry\?//telemetry_baseline?}" TELEMETRY_INGEST_WAL_DIR=$dir/wal-baseline
		if [ -z "$base_setup" ]; then
			base_setup=$("$bench" setup -endpoint "$ENDPOINT" -keys 2 | sed 's/^BENCH_/BASE_/')
		fi
		eval "$base_setup"
		for half in "" -half; do
			"$bench" ingest -endpoint "$ENDPOINT" -keys "$BASE_KEYS" -conns "$CONNS" -warmup 5s -duration "${SECONDS_PER_RUN}s" \
				-pid "$svc_pid" -chpid "$dir/db/ch.pid" -clickhouse "$CH" -database telemetry_baseline -mcp "$BASE_LOAD_MCP" \
				-label "$([ -n "$half" ] && echo half || echo full) load" $half -out "$base_results"
		done
		stop_service
		start_service
		return
	fi
	step "ingest: full load for ${SECONDS_PER_RUN}s"
	"$bench" ingest -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -warmup 5s -duration "${SECONDS_PER_RUN}s" \
		-pid "$svc_pid" -chpid "$dir/db/ch.pid" -clickhouse "$CH" -mcp "$BENCH_LOAD_MCP" -label "full load" -out "$results"
	step "ingest: half load for ${SECONDS_PER_RUN}s"
	"$bench" ingest -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -warmup 5s -duration "${SECONDS_PER_RUN}s" \
		-pid "$svc_pid" -chpid "$dir/db/ch.pid" -clickhouse "$CH" -mcp "$BENCH_LOAD_MCP" -label "half load" -half -out "$results"
}

if want ingest; then
	if [ -n "$base_dir" ]; then
		# Beside the baseline, in rounds of alternating order (the
		# baseline first, then this build first, ...): the build that runs
		# first on a quiet server tends to be faster. The summary shows the
		# mean of the rounds.
		psql "$PG_URL" -qc "DROP DATABASE IF EXISTS telemetry_baseline" -c "CREATE DATABASE telemetry_baseline" >/dev/null
		for round in $(seq 1 "$INGEST_ROUNDS"); do
			if [ $((round % 2)) = 1 ]; then ingest_runs base; ingest_runs this; else ingest_runs this; ingest_runs base; fi
		done
	else
		ingest_runs this
	fi
	step "storage: bytes on disk per stored item, as ingested and after OPTIMIZE FINAL"
	"$bench" storage -clickhouse "$CH" -database telemetry -out "$results"
fi

if want edges; then
	step "restart to ready: stop, start, time until the first 202 and until its item is stored"
	stop_service
	start_service
	"$bench" ready -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -since "$svc_started" -clickhouse "$CH" -out "$results"
	step "ingest with the in-memory duplicate filter for ${SECONDS_PER_RUN}s (beside the shared one, next)"
	"$bench" ingest -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -warmup 5s -duration "${SECONDS_PER_RUN}s" \
		-pid "$svc_pid" -clickhouse "$CH" -mcp "$BENCH_LOAD_MCP" -label "full load, in-memory dedup" -out "$results"
	step "ingest with the cross-instance duplicate check (ingest.shared_dedup) for ${SECONDS_PER_RUN}s"
	stop_service
	start_service TELEMETRY_INGEST_SHARED_DEDUP=true
	"$bench" ingest -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -warmup 5s -duration "${SECONDS_PER_RUN}s" \
		-pid "$svc_pid" -clickhouse "$CH" -mcp "$BENCH_LOAD_MCP" -label "full load, shared dedup" -out "$results"
	stop_service
	start_service
fi

if want soak; then
	step "soak: ${BENCH_SOAK_MINUTES:-30} minutes at half capacity, RSS and the duplicate filter's size over time"
	if ! grep -q '"name":"full load","metric":"items_per_s"' "$results" 2>/dev/null; then
		"$bench" ingest -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -warmup 5s -duration 20s \
			-pid "$svc_pid" -label "full load" -out "$results"
	fi
	stop_service
	start_service
	soak_min=${BENCH_SOAK_MINUTES:-30} outage_min=${BENCH_SOAK_OUTAGE:-5}
	# ClickHouse stopped for outage_min minutes in the middle (at most half
	# the soak): the backlog waits in the log, the filter must not follow it.
	outage_s=$(awk -v o="$outage_min" -v m="$soak_min" 'BEGIN { o = (o > m / 2) ? m / 2 : o; printf "%d", o * 60 }')
	"$bench" soak -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -conns "$CONNS" -duration "${soak_min}m" \
		-every "${BENCH_SOAK_EVERY:-60s}" -pid "$svc_pid" -outage "${outage_s}s" -out "$results" &
	soak_pid=$!
	if [ "$outage_s" -gt 0 ]; then
		sleep "$(awk -v m="$soak_min" -v o="$outage_s" 'BEGIN { printf "%d", (m * 60 - o) / 2 }')"
		echo "soak: stopping ClickHouse for $outage_s s ($(date -u +%H:%M:%S))"
		scripts/dbctl.sh stop-ch "$dir/db"
		sleep "$outage_s"
		echo "soak: starting ClickHouse again ($(date -u +%H:%M:%S))"
		scripts/dbctl.sh start-ch "$dir/db" "$CH_PORT"
	fi
	wait "$soak_pid"
fi

if want hostile; then
	step "hostile load: gzip bombs and OTLP empty-span bodies beside normal ingest"
	"$bench" hostile -endpoint "$ENDPOINT" -keys "$BENCH_KEYS" -duration "${BENCH_HOSTILE_SECONDS:-20}s" -pid "$svc_pid" -out "$results"
fi

if want redaction; then
	step "redaction: the service's CPU per MiB of payload under the worst patterns validation accepts"
	"$bench" redaction -endpoint "$ENDPOINT" -token "$BENCH_TOKEN" -mcp "$BENCH_LOAD_MCP" -key "${BENCH_KEYS%%,*}" -pid "$svc_pid" -out "$results"
fi

if want direct; then
	if [ -n "$base_dir" ]; then
		# Alternately, in rounds of alternating order, so that a change of
		# the machine's load and the order weigh on both builds alike; the
		# summary takes the mean.
		rounds=${BENCH_DIRECT_ROUNDS:-2}
		n=$((DIRECT_ROWS / rounds))
		direct_base() {
			"$bench" cpuof -chpid "$dir/db/ch.pid" -items "$n" -out "$base_results" -- \
				"$base_dir/bench" direct -clickhouse "$CH" -database bench_direct_baseline -rows "$n" -batch "$BASE_FLUSH_ROWS" -out "$base_results"
		}
		direct_this() {
			"$bench" cpuof -chpid "$dir/db/ch.pid" -items "$n" -out "$results" -- \
				"$bench" direct -clickhouse "$CH" -database bench_direct -rows "$n" -batch "$FLUSH_ROWS" -out "$results"
		}
		for round in $(seq 1 "$rounds"); do
			if [ $((round % 2)) = 1 ]; then
				step "direct insert, round $round of $rounds: $n rows by the baseline build ($BASELINE), then by this one"
				direct_base; direct_this
			else
				step "direct insert, round $round of $rounds: $n rows by this build, then by the baseline ($BASELINE)"
				direct_this; direct_base
			fi
		done
	else
		step "direct insert: $DIRECT_ROWS rows"
		"$bench" direct -clickhouse "$CH" -database bench_direct -rows "$DIRECT_ROWS" -batch "$FLUSH_ROWS" -out "$results"
	fi
fi

if want chstore; then
	# ClickHouse's own cost per item (docs/benchmarks.md, "ClickHouse CPU
	# and bytes per item"): each build's direct insert into a database of
	# its own, its merges waited for, then OPTIMIZE FINAL for the bytes.
	ch_rows=${BENCH_CH_ROWS:-1000000}
	chstore_run() { # this|base ROUND
		local b=$bench out=$results db=chstore_$2
		if [ "$1" = base ]; then b=$base_dir/bench out=$base_results db=chstore_baseline_$2; fi
		step "chstore, round $2: $ch_rows rows by $([ "$1" = base ] && echo "the baseline build ($BASELINE)" || echo "this build"), until merged"
		"$bench" cpuof -chpid "$dir/db/ch.pid" -items "$ch_rows" -settle "$CH" -section chstore -name "insert, views and merges" -out "$out" -- \
			"$b" direct -clickhouse "$CH" -database "$db" -rows "$ch_rows" -batch "$FLUSH_ROWS"
		"$bench" storage -clickhouse "$CH" -database "$db" -section chstore -out "$out" | tail -n 3
	}
	for round in $(seq 1 "${BENCH_CH_ROUNDS:-2}"); do
		if [ -z "$base_dir" ]; then chstore_run this "$round"
		elif [ $((round % 2)) = 1 ]; then chstore_run base "$round"; chstore_run this "$round"
		else chstore_run this "$round"; chstore_run base "$round"; fi
	done
fi

if want reads; then
	step "reads: seeding $EVENTS events over $DAYS days, then timing every read endpoint"
	"$bench" reads -endpoint "$ENDPOINT" -token "$BENCH_TOKEN" -mcp "$BENCH_HISTORY_MCP" -account "$BENCH_ACCOUNT" \
		-clickhouse "$CH" -database telemetry -events "$EVENTS" -days "$DAYS" -out "$results"
fi

if want releases; then
	step "releases: seeding ${BENCH_RELEASE_EVENTS:-50000000} events of one MCP over 30 days in 6 releases, then timing the comparison"
	"$bench" releases -clickhouse "$CH" -database bench_releases -events "${BENCH_RELEASE_EVENTS:-50000000}" -days 30 -out "$results"
fi

if want export; then
	step "export: GET /v1/mcps/{id}/export of the seeded MCP over $DAYS days, streamed to a client here"
	if [ -n "${BENCH_EXPORT_BASELINE:-}" ]; then
		echo "baseline: $BENCH_EXPORT_BASELINE (its figures are not in the summary)"
		stop_service
		svc_bin=$BENCH_EXPORT_BASELINE start_service TELEMETRY_EXPORT_PER_MINUTE=100
		"$bench" export -endpoint "$ENDPOINT" -token "$BENCH_TOKEN" -mcp "$BENCH_HISTORY_MCP" -clickhouse "$CH" -database telemetry \
			-days "$DAYS" -pid "$svc_pid" -out "$dir/export-baseline.jsonl"
		echo "this build: bin/telemetryd"
	fi
	stop_service
	start_service TELEMETRY_EXPORT_PER_MINUTE=100
	"$bench" export -endpoint "$ENDPOINT" -token "$BENCH_TOKEN" -mcp "$BENCH_HISTORY_MCP" -clickhouse "$CH" -database telemetry \
		-days "$DAYS" -pid "$svc_pid" -out "$results"
	step "export with a 512 KiB attribute in the first row of the first block: the service's peak RSS"
	stop_service
	start_service TELEMETRY_EXPORT_PER_MINUTE=100
	"$bench" export -endpoint "$ENDPOINT" -token "$BENCH_TOKEN" -mcp "$BENCH_HISTORY_MCP" -clickhouse "$CH" -database telemetry \
		-days "$DAYS" -pid "$svc_pid" -big-attribute -out "$results"
fi

if want probes; then
	# The prober at scale (docs/probes.md): BENCH_PROBES probes at 60 s over
	# accounts of 20 (probes.max_per_account), against MCP servers that
	# bench probes starts on BENCH_PROBE_PORT and the 5 ports after it.
	step "probes: ${BENCH_PROBES:-1000} probes at 60 s against local MCP servers, ${BENCH_PROBE_MINUTES:-3} minutes after a 70 s warm-up"
	stop_service
	start_service TELEMETRY_PROBES_ALLOW_PRIVATE=true TELEMETRY_AUTH_CLIENT_MAX_ATTEMPTS=100000
	"$bench" probes -endpoint "$ENDPOINT" -pid "$svc_pid" -chpid "$dir/db/ch.pid" -pgpid "$dir/db/pg.pid" -clickhouse "$CH" \
		-n "${BENCH_PROBES:-1000}" -minutes "${BENCH_PROBE_MINUTES:-3}" -port "${BENCH_PROBE_PORT:-$((HTTP_PORT + 10))}" -out "$results"
fi

stop_service # the alerting benchmarks use databases of their own on the same servers

if want delivery; then
	step "delivery: ${BENCH_DELIVERIES:-10000} deliveries per team channel drained to a local sink, then beside a destination that hangs"
	psql "$PG_URL" -qc "DROP DATABASE IF EXISTS bench_delivery" -c "CREATE DATABASE bench_delivery" >/dev/null
	"$bench" delivery -pg "$(sed 's#/telemetry?#/bench_delivery?#' <<<"$PG_URL")" -n "${BENCH_DELIVERIES:-10000}" -out "$results"
fi

alerting=$dir/alerting.txt alerting_base=$dir/alerting-baseline.txt
: >"$alerting"
: >"$alerting_base"
if want alerting; then
	step "Go benchmarks: ${BENCH_GO:-the alerting evaluation pass and fan-out}"
	if [ -n "${BENCH_GO:-}" ]; then
		pkgs=./...
	else
		pkgs=$(grep -rlE '^func Benchmark(EvaluatePass|FanOut)' --include='*_test.go' --exclude-dir=.data --exclude-dir=node_modules . | xargs -r -n1 dirname | sort -u)
	fi
	if [ -z "$pkgs" ]; then
		echo "no BenchmarkEvaluatePass or BenchmarkFanOut found: skipped"
	else
		TELEMETRY_TEST_CLICKHOUSE_ADDR=$CH TELEMETRY_TEST_POSTGRES_URL=$PG_URL \
			"$GO" test -run '^$' -bench "${BENCH_GO:-EvaluatePass|FanOut}" -benchtime "${BENCHTIME:-3x}" -count "${BENCH_GO_COUNT:-1}" -timeout 60m $pkgs | tee "$alerting"
	fi
	if [ -n "${BENCH_ALERTING_BASELINE:-}" ] && [ -z "${BENCH_GO:-}" ]; then
		echo "baseline: $BENCH_ALERTING_BASELINE"
		base_test=$(realpath "$BENCH_ALERTING_BASELINE")
		(cd postgres && TELEMETRY_TEST_CLICKHOUSE_ADDR=$CH TELEMETRY_TEST_POSTGRES_URL=$PG_URL "$base_test" \
			-test.run '^$' -test.bench 'EvaluatePass|FanOut' -test.benchtime "${BENCHTIME:-3x}" -test.count "${BENCH_GO_COUNT:-1}" -test.timeout 60m) | tee "$alerting_base"
	fi
fi

step "summary"
loadavg
saved=.data/bench/$(date -u +%Y%m%dT%H%M%SZ)
mkdir -p "$saved"
cp "$results" "$alerting" "$alerting_base" "$saved/"
base_args=()
if [ -s "$base_results" ]; then
	cp "$base_results" "$saved/"
	base_args=(-baseline "$base_results" -baseline-name "$BASELINE")
fi
"$bench" summary -in "$results" -gobench "$alerting" -gobench-baseline "$alerting_base" "${base_args[@]}" | tee "$saved/summary.txt"
echo "figures saved in $saved"
if want ingest; then
	# The capacity model (docs/capacity.md) is generated from the latest
	# run's figures, committed beside it.
	mkdir -p docs/bench
	cp "$results" docs/bench/latest.jsonl
	"$bench" capacity -in docs/bench/latest.jsonl -out docs/capacity.md
	echo "docs/bench/latest.jsonl and docs/capacity.md updated: commit them together"
fi
