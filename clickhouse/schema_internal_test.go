package clickhouse

import (
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files of testdata/ from the rendering")

// The rendered DDL of the three topologies is kept in testdata/ for review:
// a change of a migration or of the rendering shows up as a diff there
// (go test ./clickhouse -run TestSchemaGolden -update rewrites them).
func TestSchemaGolden(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		file string
		cfg  Config
	}{
		{"schema_single.sql", Config{Database: "telemetry"}},
		{"schema_cluster.sql", Config{Database: "telemetry", Cluster: "telemetry"}},
		{"schema_replicated.sql", Config{Database: "telemetry", Cluster: "telemetry", Replicated: true}},
	} {
		got, err := Schema(c.cfg)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		path := filepath.Join("testdata", c.file)
		if *updateGolden {
			if err := os.WriteFile(path, []byte(got+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./clickhouse -run TestSchemaGolden -update writes it)", err)
		}
		if got+"\n" != string(want) {
			t.Errorf("%s differs from the rendering (rerun with -update and review the diff)", path)
		}
	}
}

// On a replicated cluster every table that holds rows is replicated under
// its own ZooKeeper path (per shard through {shard}), every CREATE runs ON
// CLUSTER, and nothing else changes: the statements are the cluster's with
// those two differences.
func TestReplicatedRendering(t *testing.T) {
	t.Parallel()
	cluster, err := loadMigrations(templateData{DB: "tdb", Cluster: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	repl, err := loadMigrations(templateData{DB: "tdb", Cluster: "c-1", Replicated: true, ZooKeeperPath: "/ch/{shard}/"})
	if err != nil {
		t.Fatal(err)
	}
	engineRe := regexp.MustCompile(`ENGINE = Replicated(\w*MergeTree)\('/ch/\{shard\}/tdb/(\w+)', '\{replica\}'(, )?`)
	paths := map[string]bool{}
	tables := 0
	for i, m := range repl {
		if len(m.statements) != len(cluster[i].statements) {
			t.Fatalf("%s: %d statements, %d on a cluster", m.name, len(m.statements), len(cluster[i].statements))
		}
		for j, stmt := range m.statements {
			plain := cluster[i].statements[j]
			if strings.HasPrefix(stmt, "INSERT") || strings.HasPrefix(stmt, "ALTER") || strings.HasPrefix(stmt, "DROP") {
				// Backfills run once per shard, ALTERs and view drops on
				// every host (migrateReplicated): none carries ON CLUSTER.
				if stmt != plain {
					t.Errorf("%s statement %d: an INSERT or ALTER changed: %q", m.name, j, stmt)
				}
				continue
			}
			name := createdObject.FindStringSubmatch(plain)
			if name == nil {
				t.Fatalf("%s statement %d creates nothing: %q", m.name, j, plain)
			}
			if !strings.Contains(stmt, name[0]+" ON CLUSTER 'c-1'") {
				t.Errorf("%s statement %d: no ON CLUSTER after %s: %q", m.name, j, name[1], stmt)
			}
			stmt = strings.Replace(stmt, " ON CLUSTER 'c-1'", "", 1)
			if e := engineRe.FindStringSubmatch(stmt); e != nil {
				tables++
				if "tdb."+e[2] != name[1] || paths[e[2]] {
					t.Errorf("%s statement %d: path of table %s is %q (or shared)", m.name, j, name[1], e[2])
				}
				paths[e[2]] = true
				if !strings.HasSuffix(name[1], "_local") {
					t.Errorf("%s: replicated table %s is not a local one", m.name, name[1])
				}
				stmt = engineRe.ReplaceAllString(stmt, "ENGINE = $1(")
			} else if strings.Contains(stmt, "MergeTree(") {
				t.Errorf("%s statement %d: a MergeTree that is not replicated: %q", m.name, j, stmt)
			}
			if stmt != plain {
				t.Errorf("%s statement %d differs beyond engine and ON CLUSTER:\n%s\n%s", m.name, j, stmt, plain)
			}
		}
	}
	// Every MergeTree-family table of the migrations (the base table and
	// each rollup) is replicated.
	if want := strings.Count(strings.Join(allMigrationText(t), "\n"), `{{engine "`); tables != want || tables < 18 {
		t.Errorf("%d replicated tables, want %d (every engine of the migrations)", tables, want)
	}
	for _, stmt := range bookkeeping(templateData{DB: "tdb", Cluster: "c-1", Replicated: true}) {
		if !strings.Contains(stmt, " ON CLUSTER 'c-1'") {
			t.Errorf("bookkeeping without ON CLUSTER: %q", stmt)
		}
	}
}

func TestReplicatedConfig(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		cfg Config
		ok  bool
	}{
		{Config{Addr: []string{"h:9000"}, Replicated: true}, false},
		{Config{Addr: []string{"h:9000"}, Cluster: "c", Replicated: true}, true},
		{Config{Addr: []string{"h:9000"}, Cluster: "c", Replicated: true, ZooKeeperPath: "/x/{shard}"}, true},
		{Config{Addr: []string{"h:9000"}, Cluster: "c", Replicated: true, ZooKeeperPath: "/x/tables"}, false},
		{Config{Addr: []string{"h:9000"}, Cluster: "c", Replicated: true, ZooKeeperPath: "x/{shard}"}, false},
		{Config{Addr: []string{"h:9000"}, Cluster: "c", Replicated: true, ZooKeeperPath: "/x/{shard}'"}, false},
	} {
		err := c.cfg.Validate()
		if (err == nil) != c.ok {
			t.Errorf("%+v: %v", c.cfg, err)
		}
		if err == nil && c.cfg.ZooKeeperPath == "" {
			t.Errorf("no default path")
		}
	}
}

// allMigrationText returns the text of every migration file.
func allMigrationText(t *testing.T) []string {
	t.Helper()
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil || len(names) == 0 {
		t.Fatalf("migrations: %v %v", names, err)
	}
	var out []string
	for _, n := range names {
		b, err := migrationFiles.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(b))
	}
	return out
}
