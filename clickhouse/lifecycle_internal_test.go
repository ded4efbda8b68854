package clickhouse

import (
	"fmt"
	"strings"
	"testing"
)

// A table of tenants' rows whose shape retention does not know fails the
// derivation instead of being left out.
func TestLifecycleRefusesUnknownShapes(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, columns, engine string }{
		{"no partitions", "mcp_id String, day Date", "MergeTree() ORDER BY mcp_id"},
		{"odd partitions", "mcp_id String, day Date", "MergeTree()\nPARTITION BY toMonday(day)\nORDER BY mcp_id"},
		{"string column", "account_id String, day String", "MergeTree()\nPARTITION BY toYYYYMM(day)\nORDER BY account_id"},
	} {
		if _, err := deriveTable("x", c.columns, c.engine); err == nil {
			t.Errorf("%s: derived", c.name)
		}
	}
	all, err := tables()
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range all {
		if tb.perMCP() && tb.timeKind == "" {
			t.Errorf("%s: retention does not cut it", tb.name)
		}
	}
}

// Long session ids go in statements under max_query_size, every id once.
func TestInChunksStaysUnderMaxQuerySize(t *testing.T) {
	t.Parallel()
	var ids []string
	for i := range 3000 {
		ids = append(ids, fmt.Sprintf("%04d", i)+strings.Repeat(`'\€`, 41))
	}
	stmts := inChunks("ALTER TABLE db.session_daily DELETE WHERE mcp_id = 'm' AND session_id IN ", "", ids)
	if len(stmts) < 2 {
		t.Fatalf("%d statements", len(stmts))
	}
	n := 0
	for _, s := range stmts {
		if len(s) > maxStatementBytes {
			t.Errorf("a statement of %d bytes", len(s))
		}
		n += strings.Count(s, `€', `) + 1
	}
	if n != len(ids) {
		t.Errorf("%d ids in the statements, want %d", n, len(ids))
	}
	if inChunks("x", "", nil) != nil {
		t.Error("statements for no ids")
	}
}
