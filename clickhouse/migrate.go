package clickhouse

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"
)

// migrations are numbered files (NNN_name.sql) of ';'-terminated
// statements, each idempotent (IF NOT EXISTS), templated with the database
// name ({{.DB}}) and, for cluster mode, with:
//
//   - {{local "events"}}: the table holding rows (db.events on a single
//     server, db.events_local on a cluster);
//   - {{distributed "events" "cityHash64(mcp_id)"}}: nothing on a single
//     server, on a cluster a statement creating the Distributed table
//     db.events over the local ones (the sharding key, optional, is needed
//     only by tables written through the Distributed table);
//   - {{alterDistributed "events" "ADD COLUMN ..."}}: nothing on a single
//     server, on a cluster the same change to the Distributed table (whose
//     columns must follow its local tables');
//   - {{engine "AggregatingMergeTree"}}: the table engine; with
//     Config.Replicated, its Replicated variant under the ZooKeeper path
//     prefix, the table's database and name, and the {replica} macro.
//
// On a single server they render the statements this package always ran.
// With Config.Replicated every CREATE also carries ON CLUSTER (rendered
// after the template, in finishStatement): one statement through the
// distributed DDL queue creates the object on every host.
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one parsed migration file.
type migration struct {
	version    uint32
	name       string
	statements []string
}

// Migrate creates or completes the schema, on every host of a cluster.
// Applied versions are recorded in each host's schema_migrations and
// skipped; a file interrupted half-way is simply run again, its statements
// being idempotent. Concurrent runs are harmless.
func (db *Migrator) Migrate(ctx context.Context) error {
	migs, err := loadMigrations(db.templateData())
	if err != nil {
		return err
	}
	if db.cfg.Replicated {
		return db.migrateReplicated(ctx, migs)
	}
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db.db); err != nil {
			return wrapErr("create database", err)
		}
		return migrateHost(ctx, conn, db.db, migs)
	})
}

func migrateHost(ctx context.Context, conn driver.Conn, database string, migs []migration) error {
	ctx, err := ddlContext(ctx, conn)
	if err != nil {
		return wrapErr("migrate", err)
	}
	for _, stmt := range bookkeeping(templateData{DB: database})[1:] {
		if err := conn.Exec(ctx, stmt); err != nil {
			return wrapErr("migrate", err)
		}
	}
	applied, err := appliedVersions(ctx, conn, database)
	if err != nil {
		return wrapErr("migrate", err)
	}
	for _, m := range migs {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.statements {
			if err := execMigration(ctx, conn, stmt); err != nil {
				return wrapErr("migrate "+m.name, err)
			}
		}
		if err := recordVersion(ctx, conn, database, m); err != nil {
			return wrapErr("migrate "+m.name, err)
		}
	}
	return nil
}

// templateData is what the migrations are rendered with: the topology of
// Config (see Schema).
type templateData struct {
	DB      string
	Cluster string
	// Replicated renders Replicated*MergeTree engines under ZooKeeperPath
	// and ON CLUSTER DDL (Cluster is then set).
	Replicated    bool
	ZooKeeperPath string
}

func (db *core) templateData() templateData {
	return templateData{DB: db.db, Cluster: db.cluster, Replicated: db.cfg.Replicated, ZooKeeperPath: db.cfg.ZooKeeperPath}
}

// local renders the qualified name of the table that holds rows.
func (d templateData) local(name string) string {
	if d.Cluster == "" {
		return d.DB + "." + name
	}
	return d.DB + "." + name + "_local"
}

// distributed renders, on a cluster, the statement creating the
// Distributed table name over the local tables, with an optional sharding
// key; nothing on a single server. Names are quoted as strings: a cluster
// name may hold '-' or '.'.
func (d templateData) distributed(name string, shardingKey ...string) string {
	if d.Cluster == "" {
		return ""
	}
	args := []string{QuoteString(d.Cluster), QuoteString(d.DB), QuoteString(name + "_local")}
	args = append(args, shardingKey...)
	return fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s.%s AS %s ENGINE = Distributed(%s);",
		d.DB, name, d.local(name), strings.Join(args, ", "))
}

// alterDistributed renders, on a cluster, the ALTER TABLE that applies
// change to the Distributed table name too; nothing on a single server.
func (d templateData) alterDistributed(name, change string) string {
	if d.Cluster == "" {
		return ""
	}
	return fmt.Sprintf("ALTER TABLE %s.%s %s;", d.DB, name, change)
}

// addColumnIfMissing matches the one ALTER the migrations use: adding a
// column to a table that may already have it.
var addColumnIfMissing = regexp.MustCompile(`^ALTER TABLE ([A-Za-z0-9_]+)\.([A-Za-z0-9_]+) ADD COLUMN IF NOT EXISTS ([A-Za-z0-9_]+) `)

// execMigration runs one migration statement on conn. ClickHouse 18.16
// does not parse ADD COLUMN IF NOT EXISTS (later servers do): such a
// statement runs without the clause, and only when the host's table lacks
// the column, which keeps it idempotent on every version.
func execMigration(ctx context.Context, conn driver.Conn, stmt string) error {
	m := addColumnIfMissing.FindStringSubmatch(stmt)
	if m == nil {
		return conn.Exec(ctx, stmt)
	}
	var n uint64
	if err := conn.QueryRow(ctx, "SELECT count() FROM system.columns WHERE database = ? AND table = ? AND name = ?", m[1], m[2], m[3]).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return nil
	}
	return conn.Exec(ctx, strings.Replace(stmt, " ADD COLUMN IF NOT EXISTS ", " ADD COLUMN ", 1))
}

// tableMarker stands for the name of the table being created in a rendered
// engine; finishStatement replaces it, once the statement is split out,
// with the name the statement creates (so that {{engine}} needs no table
// argument and every migration file keeps its one-argument form).
const tableMarker = "\x00table\x00"

// engine renders a table engine: name(args...), or on a replicated cluster
// Replicated<name>('<zookeeper path>/<db>/<table>', '{replica}', args...):
// the path holds the {shard} macro (Config.Validate insists), so the
// replicas of one shard share it and the shards do not; {replica} names
// each replica of the shard (macros of the servers' configuration).
func (d templateData) engine(name string, args ...string) string {
	if !d.Replicated {
		return name + "(" + strings.Join(args, ", ") + ")"
	}
	path := QuoteString(strings.TrimSuffix(d.ZooKeeperPath, "/") + "/" + d.DB + "/" + tableMarker)
	return "Replicated" + name + "(" + strings.Join(append([]string{path, "'{replica}'"}, args...), ", ") + ")"
}

var createdObject = regexp.MustCompile(`^CREATE (?:TABLE|MATERIALIZED VIEW|VIEW|DATABASE) IF NOT EXISTS ([A-Za-z0-9_.]+)`)

// finishStatement completes a rendered statement: the name of the table it
// creates in place of tableMarker, and, on a replicated cluster, ON
// CLUSTER after the name of what a CREATE creates, so that the server
// receiving it queues it for every host of the cluster (distributed DDL,
// hence ZooKeeper). Statements other than CREATE (the INSERT ... SELECT
// backfills) are run once per shard by migrateReplicated instead.
func (d templateData) finishStatement(stmt string) (string, error) {
	m := createdObject.FindStringSubmatchIndex(stmt)
	if strings.Contains(stmt, tableMarker) {
		if m == nil || !strings.HasPrefix(stmt, "CREATE TABLE") {
			return "", fmt.Errorf("an engine outside CREATE TABLE: %.60q", stmt)
		}
		full := stmt[m[2]:m[3]]
		stmt = strings.ReplaceAll(stmt, tableMarker, full[strings.LastIndexByte(full, '.')+1:])
	}
	if d.Replicated && m != nil {
		stmt = stmt[:m[1]] + " ON CLUSTER " + QuoteString(d.Cluster) + stmt[m[1]:]
	}
	return stmt, nil
}

func loadMigrations(data templateData) ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	funcs := template.FuncMap{"engine": data.engine, "local": data.local, "distributed": data.distributed,
		"alterDistributed": data.alterDistributed}
	var migs []migration
	for _, path := range names {
		base := strings.TrimPrefix(path, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.ParseUint(num, 10, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("clickhouse: migration %s: name must start with a number and '_'", base)
		}
		src, err := migrationFiles.ReadFile(path)
		if err != nil {
			return nil, err
		}
		tmpl, err := template.New(base).Funcs(funcs).Option("missingkey=error").Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("clickhouse: migration %s: %w", base, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, data); err != nil {
			return nil, fmt.Errorf("clickhouse: migration %s: %w", base, err)
		}
		stmts := splitStatements(out.String())
		for i, stmt := range stmts {
			if stmts[i], err = data.finishStatement(stmt); err != nil {
				return nil, fmt.Errorf("clickhouse: migration %s: %w", base, err)
			}
		}
		migs = append(migs, migration{version: uint32(v), name: base, statements: stmts})
	}
	return migs, nil
}

// splitStatements drops comment lines and splits at semicolons that end a
// line (the migrations hold no string literal with such a semicolon).
func splitStatements(sql string) []string {
	var stmts []string
	var cur strings.Builder
	for _, line := range strings.Split(sql, "\n") {
		trimmed := strings.TrimSpace(line)
		if trimmed == "" || strings.HasPrefix(trimmed, "--") {
			continue
		}
		cur.WriteString(line)
		cur.WriteByte('\n')
		if strings.HasSuffix(trimmed, ";") {
			stmts = append(stmts, strings.TrimSuffix(strings.TrimSpace(cur.String()), ";"))
			cur.Reset()
		}
	}
	if s := strings.TrimSpace(cur.String()); s != "" {
		stmts = append(stmts, s)
	}
	return stmts
}

// QuoteString renders s as a ClickHouse string literal.
func QuoteString(s string) string {
	return "'" + quoteReplacer.Replace(s) + "'"
}

var quoteReplacer = strings.NewReplacer(`\`, `\\`, `'`, `\'`)
