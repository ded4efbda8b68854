package clickhouse_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// A person's item received before a deletion but stored after its
// mutations started (from some instance's write-ahead log) is not theirs
// to change: the deletion runs them again once they are done, and returns
// only when no item of the person received before it is left, including
// one stored just after the polls first found none left (within the grace
// period: another instance's flush lag).
func TestDeletionRunsAgainForRowsStoredLate(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name  string
		grace time.Duration
		when  func(left uint64) bool // the poll after which the late row is stored
	}{
		{"during the mutations", 2 * time.Second, func(uint64) bool { return true }},
		{"once none is left", 2 * time.Second, func(left uint64) bool { return left == 0 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			db := openTestDB(t, func(cfg *clickhouse.Config) { cfg.DeletionGrace = c.grace })
			ctx := context.Background()
			now := time.Now().UTC().Truncate(time.Second)
			row := func(i int, user string) analytics.StoredRow {
				s := itemSpec{account: acct1, mcp: "mcp_del", ts: now.Add(-time.Duration(i) * time.Minute), session: "s-" + user,
					method: analytics.MethodToolsCall, name: "search", dur: ms(10), client: "cursor", clientVer: "1.0", user: user,
					id: fmt.Sprint("i", i), received: now.Add(-time.Hour)}
				return s.row(uint64(i + 1))
			}
			if err := db.InsertRows(ctx, []analytics.StoredRow{row(0, "grace"), row(1, "grace"), row(2, "u-2")}); err != nil {
				t.Fatal(err)
			}
			late := false
			db.SetDeletionPolled(func(left uint64) {
				if !late && c.when(left) {
					late = true
					if err := db.InsertRows(ctx, []analytics.StoredRow{row(3, "grace")}); err != nil {
						t.Error(err)
					}
				}
			})
			// Mutations wait for the background pool, which the package's
			// parallel tests' merges share: a deadline for a hang only.
			dctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
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
		})
	}
}
