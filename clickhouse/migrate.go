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
)

// migrations are numbered files (NNN_name.sql) of ';'-terminated
// statements, each idempotent (IF NOT EXISTS), templated with the database
// name ({{.DB}}), the ON CLUSTER clause ({{.OnCluster}}) and the engine
// ({{engine "AggregatingMergeTree"}}, replicated on a cluster).
//
//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one parsed migration file.
type migration struct {
	version    uint32
	name       string
	statements []string
}

// Migrate creates or completes the schema. Applied versions are recorded in
// schema_migrations and skipped; a file interrupted half-way is simply run
// again, its statements being idempotent. Concurrent runs are harmless.
func (db *DB) Migrate(ctx context.Context) error {
	migs, err := loadMigrations(templateData{DB: db.db, Cluster: db.cluster})
	if err != nil {
		return err
	}
	// LowCardinality is experimental on 18.x and must be allowed when a
	// table using it is created. Later servers made the setting obsolete;
	// it is sent only to the servers that need it.
	if v, err := db.conn.ServerVersion(); err != nil {
		return wrapErr("migrate", err)
	} else if v.Version.Major < 19 {
		ctx = clickhouse.Context(ctx, clickhouse.WithSettings(clickhouse.Settings{
			"allow_experimental_low_cardinality_type": 1,
		}))
	}
	if err := db.conn.Exec(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s.schema_migrations%s
		(version UInt32, name String, applied_at DateTime('UTC'))
		ENGINE = %s ORDER BY version`, db.db, db.onCluster(), engine(db.cluster, "MergeTree"))); err != nil {
		return wrapErr("migrate", err)
	}
	applied := map[uint32]bool{}
	rows, err := db.conn.Query(ctx, "SELECT DISTINCT version FROM "+db.db+".schema_migrations")
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
			if err := db.conn.Exec(ctx, stmt); err != nil {
				return wrapErr("migrate "+m.name, err)
			}
		}
		if err := db.conn.Exec(ctx, "INSERT INTO "+db.db+".schema_migrations (version, name, applied_at) SELECT ?, ?, now()",
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

// OnCluster renders the ON CLUSTER clause, empty on a single server.
func (d templateData) OnCluster() string {
	if d.Cluster == "" {
		return ""
	}
	return "ON CLUSTER " + d.Cluster
}

// engine renders a table engine: name(args...) on a single server, its
// replicated variant on a cluster (path and replica from the server's
// macros).
func engine(cluster, name string, args ...string) string {
	if cluster != "" {
		name = "Replicated" + name
		args = append([]string{"'/clickhouse/tables/{shard}/{database}/{table}'", "'{replica}'"}, args...)
	}
	return name + "(" + strings.Join(args, ", ") + ")"
}

func loadMigrations(data templateData) ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	funcs := template.FuncMap{"engine": func(name string, args ...string) string { return engine(data.Cluster, name, args...) }}
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
