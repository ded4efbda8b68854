package clickhouse_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// TestToolChangeImpact reads a change of search made 6 s into
// failureRows' day, read 6 s after it: the client that called search
// before (cursor, 4 calls), and matched 6 s windows: 4 calls without
// error before, 3 refused (invalid_params) after. Proven on ClickHouse 26.
func TestToolChangeImpact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDB(t, true)
	at := time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)
	if err := db.InsertRows(ctx, failureRows(mcpA, at)); err != nil {
		t.Fatal(err)
	}
	change := at.Add(6 * time.Second)
	imp, err := db.ToolChangeImpact(ctx, mcpA, "search", change, change.Add(6*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	if want := []analytics.AffectedClient{{ClientName: "cursor", CallsBefore: 4}}; !reflect.DeepEqual(imp.AffectedClients, want) {
		t.Errorf("affected clients %+v, want %+v", imp.AffectedClients, want)
	}
	b, a := imp.Before, imp.After
	if b.Calls != 4 || b.Errors != 0 || len(b.ErrorKinds) != 0 || !b.From.Equal(at) || !b.To.Equal(change) {
		t.Errorf("before %+v", b)
	}
	if a.Calls != 3 || a.Errors != 3 || a.ErrorRate != 1 || a.ErrorKinds[analytics.ErrorKindInvalidParams] != 3 || !a.To.Equal(change.Add(6*time.Second)) {
		t.Errorf("after %+v", a)
	}
	// A change read at its own time has empty windows and reads only
	// the clients.
	imp, err = db.ToolChangeImpact(ctx, mcpA, "search", change, change)
	if err != nil || imp.After.Calls != 0 || imp.Before.Calls != 0 || len(imp.AffectedClients) != 1 {
		t.Errorf("at the change: %v %+v", err, imp)
	}

	// The inventory read's batch: the same change, one of another tool
	// and one of search before any call (no clients), in one read.
	got, err := db.AffectedClients(ctx, mcpA, []analytics.InventoryChange{
		{Tool: "search", At: change}, {Tool: "nothing", At: change}, {Tool: "search", At: at},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]analytics.AffectedClient{{{ClientName: "cursor", CallsBefore: 4}}, {}, {}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("batch %+v, want %+v", got, want)
	}
	// A list of 1,000 changes of tools with the longest names is read in
	// as many statements as keep each under max_query_size.
	long := []analytics.InventoryChange{}
	for i := range analytics.MaxInventoryChanges - 1 {
		long = append(long, analytics.InventoryChange{Tool: fmt.Sprintf("%03d%s", i, strings.Repeat("é", analytics.MaxInventoryNameLen-3)), At: change})
	}
	long = append(long, analytics.InventoryChange{Tool: "search", At: change})
	got, err = db.AffectedClients(ctx, mcpA, long)
	if err != nil {
		t.Fatal(err)
	}
	for i, clients := range got {
		if want := (i == len(long)-1); (len(clients) == 1 && clients[0] == analytics.AffectedClient{ClientName: "cursor", CallsBefore: 4}) != want || (!want && len(clients) != 0) {
			t.Fatalf("long list, change %d (%.10s): %+v", i, long[i].Tool, clients)
		}
	}
}
