#!/usr/bin/env bash
# dbctl.sh: install, start and stop the ClickHouse and PostgreSQL servers the
# project runs on, each on loopback with its data in one directory of ours.
#
#   scripts/dbctl.sh install
#   scripts/dbctl.sh install-browser   (chromium, for the dashboard's browser tests)
#   scripts/dbctl.sh start DIR CH_TCP_PORT PG_PORT [CH_HTTP_PORT]
#   scripts/dbctl.sh start-ch DIR CH_TCP_PORT [CH_HTTP_PORT]
#   scripts/dbctl.sh start-pg DIR PG_PORT
#   scripts/dbctl.sh start-cluster DIR NAME CH_TCP_PORT...
#   scripts/dbctl.sh start-replicated DIR NAME ZK_PORT SHARDS CH_TCP_PORT...
#   scripts/dbctl.sh start-zk DIR ZK_PORT
#   scripts/dbctl.sh kill-ch DIR | kill-pg DIR   (SIGKILL, for outage tests)
#   scripts/dbctl.sh stop DIR
#
# start-cluster runs one ClickHouse per port, in DIR/shard1, DIR/shard2, ...,
# each with a remote_servers configuration naming the cluster NAME of one
# shard per server (no replicas, so no ZooKeeper). start-replicated runs
# ZooKeeper (Debian's zookeeper 3.8, on loopback, data in DIR/zk) and one
# ClickHouse per port in DIR/node1, DIR/node2, ..., the ports split into
# SHARDS shards of equal replica counts in order (4 ports, 2 shards: nodes
# 1-2 are shard 1's replicas, 3-4 shard 2's), with the {shard} and
# {replica} macros, internal_replication and the distributed DDL queue;
# each server's interserver (replication) port is its TCP port + 10 (with
# CH_HTTP_OFFSET set, its HTTP port is its TCP port + that offset). stop
# DIR stops them too.
#
# Servers are found again only through DIR/*.pid: stop never touches a process
# it did not start. PostgreSQL refuses to run as root, so as root it runs as
# the unprivileged user "nobody".
set -euo pipefail

log() { printf '\033[1m[dbctl]\033[0m %s\n' "$*" >&2; }

as_root() {
	if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
		log "need root (or sudo) to run: $*"; exit 1; fi
}

pg_bindir() {
	local d
	for d in /usr/lib/postgresql/15/bin /usr/lib/postgresql/*/bin; do
		[ -x "$d/initdb" ] && { echo "$d"; return; }
	done
	command -v initdb >/dev/null && dirname "$(command -v initdb)"
}

install() {
	local pkgs=()
	command -v clickhouse-server >/dev/null || pkgs+=(clickhouse-server clickhouse-client)
	[ -n "$(pg_bindir)" ] || pkgs+=(postgresql-15)
	if [ "${WITH_ZOOKEEPER:-}" = 1 ] && [ ! -f /usr/share/java/zookeeper.jar ]; then pkgs+=(zookeeper); fi
	# The README's walk-through (and its test, cmd/telemetryd/readme_test.go).
	command -v curl >/dev/null || pkgs+=(curl)
	command -v jq >/dev/null || pkgs+=(jq)
	if [ ${#pkgs[@]} -eq 0 ]; then return; fi
	log "installing ${pkgs[*]} (Debian packages)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	# The packages' own services must not start: we run our own instances.
	as_root env DEBIAN_FRONTEND=noninteractive RUNLEVEL=1 apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
}

# install_browser installs Debian's chromium for the dashboard's browser
# tests (cmd/telemetryd/browser_test.go), with the fonts its screenshots
# need, when no chromium is on the PATH.
install_browser() {
	command -v chromium >/dev/null && return
	command -v chromium-browser >/dev/null && return
	log "installing chromium (Debian package, for the browser tests)"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-liberation >/dev/null
}

ch_config() { # DIR PORT [HTTP_PORT]
	local dir=$1 port=$2 http=""
	# The HTTP interface only for the ClickHouse 26 proof's TSV answers
	# (clickhouse-go itself cannot use it on 18.16).
	[ -n "${3:-}" ] && http="<http_port>$3</http_port>"
	mkdir -p "$dir/ch/data" "$dir/ch/tmp" "$dir/ch/user_files" "$dir/ch/format_schemas" "$dir/ch/log"
	cat >"$dir/ch/config.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <logger><level>warning</level><log>$dir/ch/log/server.log</log><errorlog>$dir/ch/log/error.log</errorlog><size>100M</size><count>2</count></logger>
  <tcp_port>$port</tcp_port>$http
  <listen_host>127.0.0.1</listen_host>
  <max_connections>1024</max_connections>
  <keep_alive_timeout>3</keep_alive_timeout>
  <max_concurrent_queries>100</max_concurrent_queries>
  <uncompressed_cache_size>1073741824</uncompressed_cache_size>
  <mark_cache_size>536870912</mark_cache_size>
  <path>$dir/ch/data/</path>
  <tmp_path>$dir/ch/tmp/</tmp_path>
  <user_files_path>$dir/ch/user_files/</user_files_path>
  <format_schema_path>$dir/ch/format_schemas/</format_schema_path>
  <users_config>$dir/ch/users.xml</users_config>
  <default_profile>default</default_profile>
  <default_database>default</default_database>
  <timezone>UTC</timezone>
  <mlock_executable>false</mlock_executable>
  <builtin_dictionaries_reload_interval>3600</builtin_dictionaries_reload_interval>
  <max_session_timeout>3600</max_session_timeout>
  <default_session_timeout>60</default_session_timeout>
  <remote_servers incl="clickhouse_remote_servers" optional="true" />
  <include_from>$dir/ch/remote_servers.xml</include_from>
  <!-- Parts of 10 MB and more (merged ones) in ZSTD, inserts in LZ4:
       docs/operations.md "Compression", docs/capacity.md. -->
  <compression><case><min_part_size>10000000</min_part_size><min_part_size_ratio>0.01</min_part_size_ratio><method>zstd</method></case></compression>
</yandex>
XML
	cat >"$dir/ch/users.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <profiles><default><max_memory_usage>4000000000</max_memory_usage><load_balancing>random</load_balancing></default></profiles>
  <users><default><password></password><networks><ip>127.0.0.1</ip><ip>::1</ip></networks><profile>default</profile><quota>default</quota></default></users>
  <quotas><default><interval><duration>3600</duration><queries>0</queries><errors>0</errors><result_rows>0</result_rows><read_rows>0</read_rows><execution_time>0</execution_time></interval></default></quotas>
</yandex>
XML
	[ -f "$dir/ch/remote_servers.xml" ] || echo '<?xml version="1.0"?><yandex><clickhouse_remote_servers></clickhouse_remote_servers></yandex>' >"$dir/ch/remote_servers.xml"
}

wait_port() { # PORT NAME PIDFILE; DBCTL_WAIT_SECONDS [120]: a server loading
	# many parts on a busy machine can take minutes to open its port
	local i wait=${DBCTL_WAIT_SECONDS:-120}
	for i in $(seq 1 $((wait * 5))); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; then return 0; fi
		if [ -f "$3" ] && ! kill -0 "$(cat "$3")" 2>/dev/null; then log "$2 exited during start-up"; return 1; fi
		sleep 0.2
	done
	log "$2 did not open port $1 within $wait s"; return 1
}

alive() { [ -f "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null; }

start_ch() { # DIR PORT [HTTP_PORT]
	local dir=$1 port=$2 pidf=$1/ch.pid
	if alive "$pidf"; then log "ClickHouse already running (pid $(cat "$pidf"))"; return; fi
	ch_config "$dir" "$port" "${3:-}"
	log "starting ClickHouse on 127.0.0.1:$port (data in $dir/ch)"
	nohup clickhouse-server --config-file="$dir/ch/config.xml" >"$dir/ch/log/stdout.log" 2>&1 &
	echo $! >"$pidf"
	wait_port "$port" ClickHouse "$pidf" || { tail -n 20 "$dir/ch/log/error.log" "$dir/ch/log/stdout.log" >&2 || true; exit 1; }
}

start_pg() { # DIR PORT
	local dir=$1 port=$2 bin pgdata=$1/pg run=()
	bin=$(pg_bindir)
	if [ "$(id -u)" = 0 ]; then run=(runuser -u nobody --); fi
	mkdir -p "$pgdata"
	if [ "$(id -u)" = 0 ]; then chown nobody "$pgdata"; chmod 700 "$pgdata"; fi
	if [ ! -f "$pgdata/PG_VERSION" ]; then
		log "initialising PostgreSQL in $pgdata"
		"${run[@]}" "$bin/initdb" -D "$pgdata" -U telemetry --auth=trust -E UTF8 --locale=C.UTF-8 >/dev/null
	fi
	if [ -f "$pgdata/postmaster.pid" ] && kill -0 "$(head -1 "$pgdata/postmaster.pid")" 2>/dev/null; then
		log "PostgreSQL already running"; head -1 "$pgdata/postmaster.pid" >"$dir/pg.pid"; return
	fi
	log "starting PostgreSQL on 127.0.0.1:$port (data in $pgdata)"
	"${run[@]}" "$bin/pg_ctl" -D "$pgdata" -l "$pgdata/server.log" -w -t 60 \
		-o "-c listen_addresses=127.0.0.1 -p $port -k $pgdata -c fsync=on -c max_connections=200" start >/dev/null
	head -1 "$pgdata/postmaster.pid" >"$dir/pg.pid"
	"${run[@]}" "$bin/psql" -h 127.0.0.1 -p "$port" -U telemetry -d postgres -tAc \
		"SELECT 1 FROM pg_database WHERE datname='telemetry'" | grep -q 1 ||
		"${run[@]}" "$bin/createdb" -h 127.0.0.1 -p "$port" -U telemetry telemetry
}

start_cluster() { # DIR NAME PORT...
	local dir=$1 name=$2 port i=0 shards=""
	shift 2
	for port in "$@"; do
		shards+="<shard><replica><host>127.0.0.1</host><port>$port</port></replica></shard>"
	done
	for port in "$@"; do
		i=$((i + 1))
		mkdir -p "$dir/shard$i/ch"
		echo "<?xml version=\"1.0\"?><yandex><clickhouse_remote_servers><$name>$shards</$name></clickhouse_remote_servers></yandex>" \
			>"$dir/shard$i/ch/remote_servers.xml"
		start_ch "$dir/shard$i" "$port"
	done
}

start_zk() { # DIR PORT: a standalone ZooKeeper on loopback, data in DIR/zk
	local dir=$1 port=$2 pidf=$1/zk.pid
	if alive "$pidf"; then log "ZooKeeper already running (pid $(cat "$pidf"))"; return; fi
	WITH_ZOOKEEPER=1 install
	mkdir -p "$dir/zk/data"
	# No admin server (it would take port 8080) and no JMX port.
	cat >"$dir/zk/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$dir/zk/data
clientPort=$port
clientPortAddress=127.0.0.1
admin.enableServer=false
4lw.commands.whitelist=ruok,srvr
maxClientCnxns=200
CFG
	log "starting ZooKeeper on 127.0.0.1:$port (data in $dir/zk)"
	nohup java -Xmx256m -cp /etc/zookeeper/conf:/usr/share/java/zookeeper.jar \
		org.apache.zookeeper.server.quorum.QuorumPeerMain "$dir/zk/zoo.cfg" >"$dir/zk/zookeeper.log" 2>&1 &
	echo $! >"$pidf"
	wait_port "$port" ZooKeeper "$pidf" || { tail -n 20 "$dir/zk/zookeeper.log" >&2 || true; exit 1; }
}

start_replicated() { # DIR NAME ZK_PORT SHARDS PORT...
	local dir=$1 name=$2 zk=$3 shards=$4 port i=0 per xml="" s r
	shift 4
	per=$(($# / shards))
	[ $((per * shards)) -eq $# ] && [ "$per" -ge 1 ] || { log "$# ports do not split into $shards shards"; exit 2; }
	start_zk "$dir" "$zk"
	local ports=("$@")
	for s in $(seq 1 "$shards"); do
		xml+="<shard><internal_replication>true</internal_replication>"
		for r in $(seq 1 "$per"); do
			xml+="<replica><host>127.0.0.1</host><port>${ports[$(((s - 1) * per + r - 1))]}</port></replica>"
		done
		xml+="</shard>"
	done
	for port in "$@"; do
		i=$((i + 1))
		s=$(((i - 1) / per + 1))
		r=$(((i - 1) % per + 1))
		mkdir -p "$dir/node$i/ch/config.d" "$dir/node$i/ch/users.d"
		echo "<?xml version=\"1.0\"?><yandex><clickhouse_remote_servers><$name>$xml</$name></clickhouse_remote_servers></yandex>" \
			>"$dir/node$i/ch/remote_servers.xml"
		cat >"$dir/node$i/ch/config.d/replication.xml" <<XML
<?xml version="1.0"?>
<yandex>
  <zookeeper><node><host>127.0.0.1</host><port>$zk</port></node><session_timeout_ms>10000</session_timeout_ms></zookeeper>
  <macros><shard>$s</shard><replica>s${s}r$r</replica></macros>
  <interserver_http_host>127.0.0.1</interserver_http_host>
  <interserver_http_port>$((port + 10))</interserver_http_port>
  <distributed_ddl><path>/clickhouse/task_queue/ddl</path></distributed_ddl>
</yandex>
XML
		# ON CLUSTER DDL runs with the default profile's settings: 18.x
		# needs LowCardinality allowed there (an obsolete no-op later).
		# Replicas in order: reads and inserts go to a shard's first live
		# replica, so a read follows the inserts before it.
		cat >"$dir/node$i/ch/users.d/replicated.xml" <<XML
<?xml version="1.0"?>
<yandex><profiles><default><allow_experimental_low_cardinality_type>1</allow_experimental_low_cardinality_type><load_balancing>in_order</load_balancing></default></profiles></yandex>
XML
		start_ch "$dir/node$i" "$port" "${CH_HTTP_OFFSET:+$((port + CH_HTTP_OFFSET))}"
	done
}

stop_pid() { # PIDFILE: stop that process (only it) and wait for its exit
	local pidf=$1 pid i
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	if kill -0 "$pid" 2>/dev/null; then
		log "stopping $(basename "$pidf" .pid) (pid $pid)"
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 1 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
		if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; sleep 0.5; fi
	fi
	rm -f "$pidf"
}

kill_pg() { # DIR: SIGKILL the postmaster and its children (a crash; the next start recovers)
	local pidf=$1/pg.pid pid kids i
	[ -f "$pidf" ] || return 0
	pid=$(cat "$pidf")
	kids=$(pgrep -P "$pid" || true)
	# shellcheck disable=SC2086
	kill -KILL "$pid" $kids 2>/dev/null || true
	for i in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	rm -f "$pidf"
}

stop() { # DIR
	local shard
	stop_pid "$1/ch.pid"
	for shard in "$1"/shard*/ "$1"/node*/; do
		[ -d "$shard" ] && stop_pid "$shard/ch.pid"
	done
	stop_pid "$1/zk.pid"
	stop_pid "$1/pg.pid"
}

cmd=${1:-}
case "$cmd" in
install) install ;;
install-browser) install_browser ;;
start)
	[ $# -eq 4 ] || [ $# -eq 5 ] || { echo "usage: $0 start DIR CH_TCP_PORT PG_PORT [CH_HTTP_PORT]" >&2; exit 2; }
	install
	dir=$(mkdir -p "$2" && cd "$2" && pwd)
	chmod 755 "$dir"
	start_ch "$dir" "$3" "${5:-}"
	start_pg "$dir" "$4"
	;;
start-ch) dir=$(mkdir -p "$2" && cd "$2" && pwd); start_ch "$dir" "$3" "${4:-}" ;;
start-pg) dir=$(mkdir -p "$2" && cd "$2" && pwd); chmod 755 "$dir"; start_pg "$dir" "$3" ;;
start-cluster)
	[ $# -ge 4 ] || { echo "usage: $0 start-cluster DIR NAME CH_TCP_PORT..." >&2; exit 2; }
	dir=$(mkdir -p "$2" && cd "$2" && pwd)
	name=$3
	shift 3
	start_cluster "$dir" "$name" "$@"
	;;
start-replicated)
	[ $# -ge 6 ] || { echo "usage: $0 start-replicated DIR NAME ZK_PORT SHARDS CH_TCP_PORT..." >&2; exit 2; }
	install
	dir=$(mkdir -p "$2" && cd "$2" && pwd)
	name=$3 zkport=$4 nshards=$5
	shift 5
	start_replicated "$dir" "$name" "$zkport" "$nshards" "$@"
	;;
start-zk) dir=$(mkdir -p "$2" && cd "$2" && pwd); start_zk "$dir" "$3" ;;
kill-ch) pidf="$(cd "$2" && pwd)/ch.pid"; [ -f "$pidf" ] && kill -KILL "$(cat "$pidf")" && rm -f "$pidf" ;;
kill-pg) kill_pg "$(cd "$2" && pwd)" ;;
stop-ch) stop_pid "$(cd "$2" && pwd)/ch.pid" ;;
stop) [ $# -eq 2 ] || { echo "usage: $0 stop DIR" >&2; exit 2; }; [ -d "$2" ] && stop "$(cd "$2" && pwd)" ;;
*) echo "usage: $0 install | install-browser | start DIR CH_TCP_PORT PG_PORT | start-ch DIR PORT | start-pg DIR PORT | start-cluster DIR NAME PORT... | start-replicated DIR NAME ZK_PORT SHARDS PORT... | start-zk DIR PORT | kill-ch DIR | kill-pg DIR | stop DIR" >&2; exit 2 ;;
esac
