package clickhouse

import (
	"context"
	"fmt"
	"strings"

	"github.com/ClickHouse/clickhouse-go/v2"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// Schema renders the whole DDL the store would run for cfg, without a
// server: the database, the migrations record and every migration's
// statements, each ';'-terminated with database-qualified names, under
// comments naming their migration file. On a cluster without replication
// the statements are to be run on every host; on a replicated cluster the
// CREATE statements carry ON CLUSTER and run once, the INSERT ... SELECT
// backfills (which insert nothing on a fresh cluster) once per shard, and
// the ALTERs on every host. cfg is validated first (Addr is not needed).
func Schema(cfg Config) (string, error) {
	if len(cfg.Addr) == 0 {
		cfg.Addr = []string{"unused:9000"}
	}
	if err := cfg.Validate(); err != nil {
		return "", err
	}
	data := templateData{DB: cfg.Database, Cluster: cfg.Cluster, Replicated: cfg.Replicated, ZooKeeperPath: cfg.ZooKeeperPath}
	migs, err := loadMigrations(data)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	switch {
	case cfg.Replicated:
		fmt.Fprintf(&b, "-- telemetry schema, database %s, replicated cluster %s.\n", cfg.Database, QuoteString(cfg.Cluster))
		b.WriteString("-- Run once on any host: CREATE statements run ON CLUSTER (distributed DDL, ZooKeeper);\n")
		b.WriteString("-- run each INSERT once per shard (on a fresh cluster they insert nothing), each ALTER and DROP on every host.\n")
		b.WriteString("-- Tables are Replicated*MergeTree under " + cfg.ZooKeeperPath + "/" + cfg.Database + "/<table>, replica '{replica}'.\n")
		b.WriteString("-- On ClickHouse 18.x, set allow_experimental_low_cardinality_type = 1 in the servers' default profile.\n")
	case cfg.Cluster != "":
		fmt.Fprintf(&b, "-- telemetry schema, database %s, cluster %s without replication.\n", cfg.Database, QuoteString(cfg.Cluster))
		b.WriteString("-- Run every statement on every host of the cluster.\n")
	default:
		fmt.Fprintf(&b, "-- telemetry schema, database %s, single server.\n", cfg.Database)
	}
	if !cfg.Replicated {
		b.WriteString("-- On ClickHouse 18.x, run with SET allow_experimental_low_cardinality_type = 1.\n")
	}
	b.WriteString("-- Every statement is idempotent; telemetryd migrate records the versions it applies.\n")
	b.WriteString("-- ClickHouse 18.x does not parse ADD COLUMN IF NOT EXISTS: there, run such an ALTER without\n")
	b.WriteString("-- IF NOT EXISTS where the column is missing (telemetryd migrate does).\n\n")
	for _, stmt := range bookkeeping(data) {
		b.WriteString(stmt + ";\n\n")
	}
	for _, m := range migs {
		fmt.Fprintf(&b, "-- %s\n", m.name)
		for _, stmt := range m.statements {
			b.WriteString(stmt + ";\n\n")
		}
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// bookkeeping renders the statements run before the migrations: the
// database and the record of applied migrations (one per host: on a
// replicated cluster too, created ON CLUSTER).
func bookkeeping(d templateData) []string {
	stmts := []string{
		"CREATE DATABASE IF NOT EXISTS " + d.DB,
		"CREATE TABLE IF NOT EXISTS " + d.DB + ".schema_migrations\n(\n    version    UInt32,\n    name       String,\n    applied_at DateTime('UTC')\n)\nENGINE = MergeTree() ORDER BY version",
	}
	for i, s := range stmts {
		stmts[i], _ = d.finishStatement(s)
	}
	return stmts
}

// ddlContext adds the settings the server needs to create the tables: the
// one place that renders DDL settings per server version. LowCardinality
// is experimental on 18.x and must be allowed when a table using it is
// created; later servers made the setting obsolete, so it is sent only to
// the servers that need it. (ON CLUSTER DDL runs on each host with the
// settings of its default profile, where 18.x needs it too.)
func ddlContext(ctx context.Context, conn driver.Conn) (context.Context, error) {
	v, err := conn.ServerVersion()
	if err != nil {
		return ctx, err
	}
	if v.Version.Major < 19 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
			"allow_experimental_low_cardinality_type": 1,
		}))
	}
	return ctx, nil
}

// migrateReplicated migrates a replicated cluster: each CREATE once, ON
// CLUSTER, through the store's connection (the server waits until every
// host has run it, distributed_ddl_task_timeout at most, and fails if one
// did not); each INSERT backfill once per shard, on its first replica that
// answers (replication copies it to the others); each ALTER (and DROP of a
// view) on every host in turn, where its column is missing (a replicated table's ALTER reaches
// the shard's other replicas through ZooKeeper, and the host that already
// has the column skips it). A version counts as
// applied when every host records it, and is recorded on every host.
func (db *Migrator) migrateReplicated(ctx context.Context, migs []migration) error {
	ctx, err := ddlContext(ctx, db.conn)
	if err != nil {
		return wrapErr("migrate", err)
	}
	for _, stmt := range bookkeeping(db.templateData()) {
		if err := db.conn.Exec(ctx, stmt); err != nil {
			return wrapErr("migrate", err)
		}
	}
	shards, err := db.shardReplicas(ctx)
	if err != nil {
		return err
	}
	applied := map[uint32]int{}
	hosts := 0
	err = db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		hosts++
		vs, err := appliedVersions(ctx, conn, db.db)
		for v := range vs {
			applied[v]++
		}
		return err
	})
	if err != nil {
		return wrapErr("migrate", err)
	}
	for _, m := range migs {
		if applied[m.version] == hosts {
			continue
		}
		for _, stmt := range m.statements {
			switch {
			case strings.HasPrefix(stmt, "CREATE "):
				err = db.conn.Exec(ctx, stmt)
			case strings.HasPrefix(stmt, "ALTER "), strings.HasPrefix(stmt, "DROP "):
				err = db.onEveryHost(ctx, func(_ context.Context, conn driver.Conn) error {
					hctx, err := ddlContext(ctx, conn)
					if err == nil {
						err = execMigration(hctx, conn, stmt)
					}
					return err
				})
			default:
				err = onOneReplicaPerShard(ctx, db.cfg, shards, stmt)
			}
			if err != nil {
				return wrapErr("migrate "+m.name, err)
			}
		}
		err := db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
			return recordVersion(ctx, conn, db.db, m)
		})
		if err != nil {
			return wrapErr("migrate "+m.name, err)
		}
	}
	return nil
}

// shardReplicas lists the hosts of the cluster by shard.
func (db *core) shardReplicas(ctx context.Context) ([][]string, error) {
	type host struct {
		shard uint32
		name  string
		port  uint16
	}
	var rows []host
	err := db.query(ctx, "cluster shards", "SELECT shard_num, host_name, port FROM system.clusters WHERE cluster = ? ORDER BY shard_num, replica_num",
		[]any{db.cluster}, func() []any { h := appendRow(&rows); return []any{&h.shard, &h.name, &h.port} })
	if err != nil {
		return nil, err
	}
	var shards [][]string
	for i, h := range rows {
		if i == 0 || h.shard != rows[i-1].shard {
			shards = append(shards, nil)
		}
		shards[len(shards)-1] = append(shards[len(shards)-1], fmt.Sprintf("%s:%d", h.name, h.port))
	}
	return shards, nil
}

// onOneReplicaPerShard runs stmt once on each shard, on the first of its
// replicas that takes it.
func onOneReplicaPerShard(ctx context.Context, cfg Config, shards [][]string, stmt string) error {
	for _, replicas := range shards {
		var err error
		for _, h := range replicas {
			var conn driver.Conn
			if conn, err = dial(cfg, []string{h}, 1); err != nil {
				continue
			}
			var cctx context.Context
			if cctx, err = ddlContext(ctx, conn); err == nil {
				err = conn.Exec(cctx, stmt)
			}
			conn.Close()
			if err == nil {
				break
			}
			err = fmt.Errorf("host %s: %w", h, err)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

func appliedVersions(ctx context.Context, conn driver.Conn, database string) (map[uint32]bool, error) {
	applied := map[uint32]bool{}
	rows, err := conn.Query(ctx, "SELECT DISTINCT version FROM "+database+".schema_migrations")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			return nil, err
		}
		applied[v] = true
	}
	return applied, rows.Err()
}

func recordVersion(ctx context.Context, conn driver.Conn, database string, m migration) error {
	return conn.Exec(ctx, "INSERT INTO "+database+".schema_migrations (version, name, applied_at) SELECT ?, ?, now()", m.version, m.name)
}
