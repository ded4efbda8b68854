package clickhouse

import (
	"strings"
	"testing"
)

// The migrations render for a single server and, templated, for a cluster:
// the same statements over local tables, plus a Distributed table for each.
func TestLoadMigrations(t *testing.T) {
	single, err := loadMigrations(templateData{DB: "tdb"})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := loadMigrations(templateData{DB: "tdb", Cluster: "c-1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(single) < 5 || len(single) != len(cluster) { // 001..005 at least
		t.Fatalf("%d and %d migrations", len(single), len(cluster))
	}
	tables := 0
	for i, m := range single {
		if m.version != uint32(i+1) {
			t.Errorf("migration %s: version %d", m.name, m.version)
		}
		var local []string // the cluster's statements without the Distributed ones
		for _, c := range cluster[i].statements {
			if strings.Contains(c, "ENGINE = Distributed(") {
				continue
			}
			local = append(local, c)
		}
		if len(local) != len(m.statements) {
			t.Fatalf("%s: %d statements, %d on a cluster besides Distributed tables", m.name, len(m.statements), len(local))
		}
		for j, stmt := range m.statements {
			// Statements create tables and views, or backfill a new
			// rollup from an older one (INSERT ... SELECT).
			if !(strings.HasPrefix(stmt, "CREATE ") || strings.HasPrefix(stmt, "INSERT INTO ")) || strings.Contains(stmt, ";") || strings.Contains(stmt, "ON CLUSTER") ||
				strings.Contains(stmt, "{{") || !strings.Contains(stmt, "tdb.") || strings.Contains(stmt, "_local") {
				t.Errorf("%s statement %d: %q", m.name, j, stmt)
			}
			if strings.HasPrefix(stmt, "CREATE TABLE") {
				tables++
			}
			// On a cluster, every table that holds rows is the local one,
			// and every view reads and writes local tables: the statement
			// is the single server's with local names.
			if !strings.Contains(local[j], "_local") || strings.ReplaceAll(local[j], "_local", "") != stmt {
				t.Errorf("%s statement %d names no local table on a cluster: %q", m.name, j, local[j])
			}
		}
	}
	var dist []string
	for _, m := range cluster {
		for _, c := range m.statements {
			if strings.Contains(c, "ENGINE = Distributed(") {
				dist = append(dist, c)
			}
		}
	}
	if len(dist) != tables {
		t.Errorf("%d Distributed tables for %d tables", len(dist), tables)
	}
	if want := "CREATE TABLE IF NOT EXISTS tdb.events AS tdb.events_local ENGINE = Distributed('c-1', 'tdb', 'events_local', cityHash64(mcp_id))"; dist[0] != want {
		t.Errorf("events on a cluster:\n%s\nwant\n%s", dist[0], want)
	}
	if got := engine("ReplacingMergeTree", "version"); got != "ReplacingMergeTree(version)" {
		t.Errorf("engine = %s", got)
	}
}
