package clickhouse

import (
	"strings"
	"testing"
)

// The migrations render for a single server and, templated, for a cluster.
func TestLoadMigrations(t *testing.T) {
	single, err := loadMigrations(templateData{DB: "tdb"})
	if err != nil {
		t.Fatal(err)
	}
	cluster, err := loadMigrations(templateData{DB: "tdb", Cluster: "c1"})
	if err != nil {
		t.Fatal(err)
	}
	if len(single) != 3 || len(single) != len(cluster) {
		t.Fatalf("%d and %d migrations", len(single), len(cluster))
	}
	for i, m := range single {
		if m.version != uint32(i+1) || len(m.statements) != len(cluster[i].statements) {
			t.Errorf("migration %s: version %d, %d statements", m.name, m.version, len(m.statements))
		}
		for j, stmt := range m.statements {
			if !strings.HasPrefix(stmt, "CREATE ") || strings.Contains(stmt, ";") || strings.Contains(stmt, "ON CLUSTER") ||
				strings.Contains(stmt, "{{") || !strings.Contains(stmt, "tdb.") {
				t.Errorf("%s statement %d: %q", m.name, j, stmt)
			}
			c := cluster[i].statements[j]
			if !strings.Contains(c, "ON CLUSTER c1") {
				t.Errorf("%s statement %d on a cluster: %q", m.name, j, c)
			}
			if strings.Contains(stmt, "ENGINE =") && !strings.Contains(c, "ENGINE = Replicated") {
				t.Errorf("%s statement %d: engine not replicated on a cluster: %q", m.name, j, c)
			}
		}
	}
	if got := engine("c1", "ReplacingMergeTree", "version"); got != "ReplicatedReplacingMergeTree('/clickhouse/tables/{shard}/{database}/{table}', '{replica}', version)" {
		t.Errorf("engine = %s", got)
	}
	if got := engine("", "ReplacingMergeTree", "version"); got != "ReplacingMergeTree(version)" {
		t.Errorf("engine = %s", got)
	}
}
