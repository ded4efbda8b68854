package clickhouse

import (
	"bytes"
	"context"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/ClickHouse/clickhouse-go/v2"
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
//   - {{engine "AggregatingMergeTree"}}: the table engine.
//
// On a single server they render the statements this package always ran.
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
func (db *DB) Migrate(ctx context.Context) error {
	migs, err := loadMigrations(templateData{DB: db.db, Cluster: db.cluster})
	if err != nil {
		return err
	}
	return db.onEveryHost(ctx, func(ctx context.Context, conn driver.Conn) error {
		if err := conn.Exec(ctx, "CREATE DATABASE IF NOT EXISTS "+db.db); err != nil {
			return wrapErr("create database", err)
		}
		return migrateHost(ctx, conn, db.db, migs)
	})
}

func migrateHost(ctx context.Context, conn driver.Conn, database string, migs []migration) error {
	// LowCardinality is experimental on 18.x and must be allowed when a
	// table using it is created. Later servers made the setting obsolete;
	// it is sent only to the servers that need it.
	if v, err := conn.ServerVersion(); err != nil {
		return wrapErr("migrate", err)
	} else if v.Version.Major < 19 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
			"allow_experimental_low_cardinality_type": 1,
		}))
	}
	if err := conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.schema_migrations
		(version UInt32, name String, applied_at DateTime('UTC'))
		ENGINE = MergeTree() ORDER BY version`, database)); err != nil {
		return wrapErr("migrate", err)
	}
	applied := map[uint32]bool{}
	rows, err := conn.Query(ctx, "SELECT DISTINCT version FROM "+database+".schema_migrations")
	if err != nil {
		return wrapErr("migrate", err)
	}
	for rows.Next() {
		var v uint32
		if err := rows.Scan(&v); err != nil {
			rows.Close()
			return wrapErr("migrate", err)
		}
		applied[v] = true
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return wrapErr("migrate", err)
	}
	for _, m := range migs {
		if applied[m.version] {
			continue
		}
		for _, stmt := range m.statements {
			if err := conn.Exec(ctx, stmt); err != nil {
				return wrapErr("migrate "+m.name, err)
			}
		}
		if err := conn.Exec(ctx, "INSERT INTO "+database+".schema_migrations (version, name, applied_at) SELECT ?, ?, now()",
			m.version, m.name); err != nil {
			return wrapErr("migrate "+m.name, err)
		}
	}
	return nil
}

type templateData struct {
	DB      string
	Cluster string
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

// engine renders a table engine: name(args...). Tables are not replicated
// (a shard is one server); replicated engines would be rendered here.
func engine(name string, args ...string) string {
	return name + "(" + strings.Join(args, ", ") + ")"
}

func loadMigrations(data templateData) ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	funcs := template.FuncMap{"engine": engine, "local": data.local, "distributed": data.distributed}
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
		migs = append(migs, migration{version: uint32(v), name: base, statements: splitStatements(out.String())})
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
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}
