package clickhouse

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// A marker goes to the shard its slot names: the Go hash that picks its
// suffix is the server's cityHash64, the events table's sharding key.
func TestMarkerSlotsFollowTheServersHash(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{Addr: []string{testenv.ClickHouseAddr(t)}, Database: "default"})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	for slots := uint64(1); slots <= 4; slots++ {
		for slot := range slots {
			id := markerID(day, "node-a", "1-9,12-12", slot, slots)
			var h uint64
			if err := db.conn.QueryRow(ctx, "SELECT cityHash64(?)", id).Scan(&h); err != nil {
				t.Fatal(err)
			}
			if h%slots != slot {
				t.Errorf("%s: the server's cityHash64 puts it in slot %d of %d, want %d", id, h%slots, slots, slot)
			}
		}
	}
}

func TestMarkerRowsAndRuns(t *testing.T) {
	t.Parallel()
	day := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	row := func(node string, seq uint64, ts time.Time) analytics.StoredRow {
		return analytics.StoredRow{Node: node, Seq: seq, Item: analytics.Item{Timestamp: ts}}
	}
	rows := []analytics.StoredRow{row("n", 7, day.Add(time.Hour)), row("n", 3, day.Add(2*time.Hour)), row("n", 4, day.Add(-time.Hour)),
		row("n", 5, day), row("n", 3, day), row("m", 1, day)}
	var ids []string
	for _, r := range markerRows(rows, 2) {
		if r.Seq != 0 || r.AccountID != "" || !r.Item.Timestamp.Equal(analytics.UTCDay(r.Item.Timestamp)) {
			t.Errorf("marker %+v: want seq 0, no account, the day's first second", r)
		}
		ids = append(ids, r.MCPID[:strings.LastIndexByte(r.MCPID, '.')])
	}
	want := []string{"~wal/20261125/m/1-1/0", "~wal/20261125/m/1-1/1", "~wal/20261124/n/4-4/0", "~wal/20261124/n/4-4/1",
		"~wal/20261125/n/3-3,5-5,7-7/0", "~wal/20261125/n/3-3,5-5,7-7/1"}
	if !reflect.DeepEqual(ids, want) {
		t.Errorf("markers %v, want %v", ids, want)
	}
	if again := markerRows(rows, 2); !reflect.DeepEqual(again, markerRows(rows, 2)) {
		t.Error("markers are not deterministic")
	}
	block, runs, ok := parseMarker("~wal/20261125/n/3-3,5-9/1.4", markerDayPrefix(day, "n"))
	if !ok || block != "~wal/20261125/n/3-3,5-9" || !reflect.DeepEqual(runs, []run{{3, 3}, {5, 9}}) {
		t.Errorf("parse: %q %v %v", block, runs, ok)
	}
	for _, bad := range []string{"~wal/20261125/n/3-/0.0", "~wal/20261125/n/x/1-2/0.0", "~wal/20261125/n/9-3/0.0", "~wal/20261125/nn/1-2/0.0"} {
		if _, _, ok := parseMarker(bad, markerDayPrefix(day, "n")); ok {
			t.Errorf("parse %q: accepted", bad)
		}
	}
	if got := formatRuns([]uint64{9, 1, 2, 3, 3, 7}); got != "1-3,7-7,9-9" {
		t.Errorf("runs %q", got)
	}
}
