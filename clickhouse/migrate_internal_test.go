package clickhouse

import (
	"regexp"
	"strings"
	"testing"
)

// The migrations render for a single server and, templated, for a cluster:
// the same statements over local tables, plus a Distributed table for each
// and the same ALTER of each Distributed table as of its local one.
// dropView matches the statement that drops a view before its new
// definition.
var dropView = regexp.MustCompile(`^DROP TABLE IF EXISTS tdb\.[a-z_]+_mv$`)

// dropInput matches the drop of rollup_input, the Null table the rollups'
// views read: it holds no rows, so a migration that changes its columns
// drops it (on a cluster, its local table) and creates it again (009).
var dropInput = regexp.MustCompile(`^DROP TABLE IF EXISTS tdb\.rollup_input$`)

func TestLoadMigrations(t *testing.T) {
	t.Parallel()
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
		var local []string  // the cluster's statements without the Distributed ones
		var alters []string // the cluster's ALTERs of Distributed tables
		for _, c := range cluster[i].statements {
			if strings.Contains(c, "ENGINE = Distributed(") {
				continue
			}
			if strings.HasPrefix(c, "ALTER TABLE ") && !strings.HasPrefix(strings.Fields(c)[2], "tdb.") {
				t.Errorf("%s: an ALTER of no table of the database: %q", m.name, c)
			}
			if strings.HasPrefix(c, "ALTER TABLE ") && !strings.HasSuffix(strings.Fields(c)[2], "_local") {
				alters = append(alters, c)
				continue
			}
			local = append(local, c)
		}
		if len(local) != len(m.statements) {
			t.Fatalf("%s: %d statements, %d on a cluster besides Distributed tables", m.name, len(m.statements), len(local))
		}
		nAlters := 0
		for j, stmt := range m.statements {
			// Statements create tables and views, backfill a new rollup
			// from an older one (INSERT ... SELECT), add a column, or
			// drop a view (views are not local on a cluster: the same
			// statement).
			if dropView.MatchString(stmt) {
				if local[j] != stmt {
					t.Errorf("%s statement %d: a view dropped otherwise on a cluster: %q", m.name, j, local[j])
				}
				continue
			}
			if dropInput.MatchString(stmt) {
				if !strings.Contains(local[j], "_local") || strings.ReplaceAll(local[j], "_local", "") != stmt {
					t.Errorf("%s statement %d: the input table dropped otherwise on a cluster: %q", m.name, j, local[j])
				}
				continue
			}
			if strings.HasPrefix(stmt, "ALTER TABLE ") {
				if nAlters >= len(alters) || alters[nAlters] != stmt {
					t.Errorf("%s statement %d: no same ALTER of the Distributed table on a cluster: %q", m.name, j, stmt)
				}
				nAlters++
			} else if !(strings.HasPrefix(stmt, "CREATE ") || strings.HasPrefix(stmt, "INSERT INTO ")) || strings.Contains(stmt, ";") || strings.Contains(stmt, "ON CLUSTER") ||
				strings.Contains(stmt, "{{") || !strings.Contains(stmt, "tdb.") || strings.Contains(stmt, "_local") {
				t.Errorf("%s statement %d: %q", m.name, j, stmt)
			}
			if strings.HasPrefix(stmt, "CREATE TABLE") && !strings.HasSuffix(stmt, "ENGINE = Null") {
				tables++ // a Null table (no rows) needs no Distributed table
			}
			// On a cluster, every table that holds rows is the local one,
			// and every view reads and writes local tables: the statement
			// is the single server's with local names.
			if !strings.Contains(local[j], "_local") || strings.ReplaceAll(local[j], "_local", "") != stmt {
				t.Errorf("%s statement %d names no local table on a cluster: %q", m.name, j, local[j])
			}
		}
		if nAlters != len(alters) {
			t.Errorf("%s: %d ALTERs, %d of Distributed tables on a cluster", m.name, nAlters, len(alters))
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

// engine renders an engine for a single server.
func engine(name string, args ...string) string { return templateData{}.engine(name, args...) }
