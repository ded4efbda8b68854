package clickhouse_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// TestCompactIDsUpgrade upgrades an installation holding items to
// migration 013 in place: the ids stored before it (UUIDs and others, as
// strings) and after it (UUIDs in id_uuid) all read back as they came, in
// the duplicate filter's start-up scan and in its event_ids check.
func TestCompactIDsUpgrade(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := openDBAt(t, true, 10)
	now := time.Now().UTC().Truncate(time.Second)
	const oldUUID, newUUID = "0f8fad5b-d9cb-469f-a165-70867728950e", "3b241101-e2bb-4255-8caf-4136c566a962"
	for _, id := range []string{oldUUID, "plain-old"} {
		if err := db.ExecWrite(ctx, fmt.Sprintf(`INSERT INTO %s.events (account_id, mcp_id, ts, received_at, id, session_id, method)
			SELECT 'a', 'mcp-u', toDateTime(%d, 'UTC'), toDateTime(%d, 'UTC'), '%s', 's', 'tools/list'`, db.Database(), now.Unix(), now.Unix(), id)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrator.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Migrator.Migrate(ctx); err != nil { // idempotent
		t.Fatal(err)
	}
	var rows []analytics.StoredRow
	for i, id := range []string{newUUID, "plain-new", "3B241101-E2BB-4255-8CAF-4136C566A962"} {
		rows = append(rows, analytics.StoredRow{AccountID: "a", MCPID: "mcp-u", Node: "n", Seq: uint64(i + 1), ReceivedAt: now,
			Item: analytics.Item{ID: id, Timestamp: now, SessionID: "s", Method: "tools/list", Status: analytics.StatusOK}})
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	want := []string{oldUUID, newUUID, "3B241101-E2BB-4255-8CAF-4136C566A962", "plain-new", "plain-old"}
	slices.Sort(want)
	var recent []string
	if err := db.RecentIDs(ctx, now.Add(-time.Hour), func(mcpID, id string, _ time.Time) { recent = append(recent, id) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(recent)
	if !slices.Equal(recent, want) {
		t.Errorf("RecentIDs after the upgrade: %q, want %q", recent, want)
	}
	// event_ids holds the ids of both sides of the upgrade with the same
	// hashes (007's view before, 013's after).
	var stored []string
	ask := map[string][]string{"mcp-u": append(slices.Clone(want), "absent")}
	if err := db.StoredIDs(ctx, now.Add(-time.Hour), ask, func(_, id string, _ time.Time) { stored = append(stored, id) }); err != nil {
		t.Fatal(err)
	}
	slices.Sort(stored)
	if !slices.Equal(stored, want) {
		t.Errorf("StoredIDs: %q, want %q", stored, want)
	}
	// Only the canonical UUID went to id_uuid.
	var compact uint64
	q := fmt.Sprintf("SELECT count() FROM %s.events WHERE id = '' AND %s = '%s'", db.Database(), clickhouse.EventID, newUUID)
	if err := driverConn(t).QueryRow(ctx, q).Scan(&compact); err != nil {
		t.Fatal(err)
	}
	if compact != 1 {
		t.Errorf("%d rows of %s stored in id_uuid, want 1", compact, newUUID)
	}
}
