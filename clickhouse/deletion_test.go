package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/ingest"
)

// A person's item received before a deletion but stored after its
// mutations started (from some instance's write-ahead log) is not theirs
// to change: the deletion runs them again once they are done, and returns
// only when no item of the person received before it is left.
func TestDeletionRunsAgainForRowsStoredLate(t *testing.T) {
	db := openTestDB(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	row := func(i int, user string) ingest.Row {
		s := itemSpec{account: acct1, mcp: "mcp_del", ts: now.Add(-time.Duration(i) * time.Minute), session: "s-" + user,
			method: analytics.MethodToolsCall, name: "search", dur: ms(10), client: "cursor", clientVer: "1.0", user: user,
			id: fmt.Sprint("i", i), received: now.Add(-time.Hour)}
		return s.row(uint64(i + 1))
	}
	if err := db.InsertRows(ctx, []ingest.Row{row(0, "grace"), row(1, "grace"), row(2, "u-2")}); err != nil {
		t.Fatal(err)
	}
	late := false
	db.SetAfterMutations(func() {
		if !late {
			late = true
			if err := db.InsertRows(ctx, []ingest.Row{row(3, "grace")}); err != nil {
				t.Error(err)
			}
		}
	})
	dctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := db.DeleteUserTelemetry(dctx, "mcp_del", "grace"); err != nil {
		t.Fatalf("the deletion did not end: %v", err)
	}
	users := map[string]int{}
	err := db.Export(ctx, "mcp_del", analytics.NewRange(now.AddDate(0, 0, -1), now), func(it *analytics.ExportedItem) error {
		users[it.UserID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !late || len(users) != 1 || users["u-2"] != 1 {
		t.Errorf("after the deletion (late row stored: %v) the export holds items of %v", late, users)
	}
}
