package clickhouse_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	chgo "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// TestExportMatchesDriver checks the export's own connection (blocks
// decoded in place, package native) against the driver reading the same
// rows one by one, over a seeded history plus hostile rows (quotes, line
// breaks, invalid UTF-8, several attributes, none, ties on the time),
// compressed and not, in chunks of a day and of the default size; and
// that an export stopped by its callback ends its query on the server.
func TestExportMatchesDriver(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	end := time.Date(2026, 5, 10, 0, 0, 0, 0, time.UTC)
	const mcp = "seed-mcp-0000"
	if err := chtest.SeedHistory(ctx, db, chtest.SeedOptions{Events: 30000, Days: 3, End: end, MCPs: 2, BigMCPShare: 0.5}); err != nil {
		t.Fatal(err)
	}
	var rows []analytics.StoredRow
	at := time.Date(2026, 5, 9, 10, 0, 0, 120e6, time.UTC)
	dur := 182.5
	for i, h := range []struct{ id, text, client string }{
		{"h1", `quote " and \ backslash`, "cli,ent"},
		{"h0", "line\nbreak\r\n and tab\t", "x"},
		{"h2", "bad \xff utf8 and 搜索 🚀 \u2028", ""},
		{"", "", "claude-desktop"},
	} {
		it := analytics.Item{ID: h.id, Timestamp: at, SessionID: "s-1", Method: "tools/call", Name: h.text, ErrorMessage: h.text,
			ClientName: h.client, ClientVersion: h.text, ServerVersion: "1.0", ProtocolVersion: h.client, UserID: h.text,
			Attributes: map[string]string{"a": "1", "b\"": "", "c\n": "z\xff"}}
		if i%2 == 0 {
			it.DurationMs, it.ErrorType = &dur, "Timeout"+h.client
		}
		if i == 3 {
			it.Attributes = nil
		}
		it.Normalize()
		rows = append(rows, analytics.StoredRow{AccountID: "seed-account", MCPID: mcp, Node: "test", ReceivedAt: at.Add(time.Second), Item: it})
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	r := analytics.NewRange(end.AddDate(0, 0, -2), end)
	want := driverExport(t, db, mcp, r)
	if len(want) < 10000 {
		t.Fatalf("the oracle read %d rows", len(want))
	}
	for _, compress := range []bool{false, true} {
		for _, chunk := range []uint64{1, 0} {
			t.Run(fmt.Sprintf("compress=%v/chunk=%d", compress, chunk), func(t *testing.T) {
				db.SetExportCompression(compress)
				db.SetExportChunkRows(chunk)
				var got []analytics.ExportedItem
				err := db.Export(ctx, mcp, r, func(it *analytics.ExportedItem) error {
					got = append(got, cloneItem(it))
					return nil
				})
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != len(want) {
					t.Fatalf("exported %d items, the driver reads %d", len(got), len(want))
				}
				for i := range got {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("item %d:\n got %+v\nwant %+v", i, got[i], want[i])
					}
				}
			})
		}
	}

	if os.Getenv(clickhouse.EnvLibCHDB) != "" && testenv.ClickHouseCluster() == "" {
		// The proof decoded each chunk's answer from ClickHouse 26 too.
		if n := clickhouse.ExportRowsProvenOn26(db.Database()); n < int64(4*len(want)) {
			t.Errorf("the export's decoders read %d rows from ClickHouse 26, want at least %d", n, 4*len(want))
		}
	}

	stop := errors.New("stop")
	n := 0
	err := db.Export(ctx, mcp, r, func(*analytics.ExportedItem) error {
		if n++; n == 100 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) {
		t.Fatalf("stopped export: %v", err)
	}
	conn := driverConn(t)
	for deadline := time.Now().Add(10 * time.Second); ; {
		var running uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id LIKE 'export-%' AND position(query, concat(?, '.events')) > 0",
			db.Database()).Scan(&running); err != nil {
			t.Fatal(err)
		}
		if running == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d export queries still run after the export stopped", running)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func driverConn(t *testing.T) chgo.Conn {
	conn, err := chgo.Open(&chgo.Options{Addr: []string{testenv.ClickHouseAddr(t)}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// driverExport reads the export's rows through the driver, row by row, as
// the export did before it had a connection of its own.
func driverExport(t *testing.T, db *clickhouse.DB, mcp string, r analytics.Range) []analytics.ExportedItem {
	rows, err := driverConn(t).Query(context.Background(), `SELECT ts, ts_ms, received_at, `+clickhouse.EventID+`, session_id, method, name, duration_ms,
		has_duration, is_error, error_type, error_message, client_name, client_version, server_version, user_id, attr_keys, attr_values, protocol_version,
		CAST(error_kind AS String), response_bytes, args_hash
		FROM `+db.Database()+`.events WHERE mcp_id = ? AND ts >= ? AND ts < ? ORDER BY ts, ts_ms, `+clickhouse.EventID+`, session_id`, mcp, r.Lower(), r.End())
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var items []analytics.ExportedItem
	for rows.Next() {
		var (
			it            analytics.ExportedItem
			ts            time.Time
			ms            uint16
			hasDur, isErr uint8
		)
		if err := rows.Scan(&ts, &ms, &it.ReceivedAt, &it.ID, &it.SessionID, &it.Method, &it.Name, &it.DurationMs, &hasDur, &isErr,
			&it.ErrorType, &it.ErrorMessage, &it.ClientName, &it.ClientVersion, &it.ServerVersion, &it.UserID, &it.AttrKeys, &it.AttrValues, &it.ProtocolVersion,
			&it.ErrorKind, &it.ResponseBytes, &it.ArgsHash); err != nil {
			t.Fatal(err)
		}
		it.Timestamp = ts.Add(time.Duration(ms) * time.Millisecond).UTC()
		it.ReceivedAt = it.ReceivedAt.UTC()
		it.HasDuration = hasDur == 1
		it.Status = analytics.StatusOK
		if isErr == 1 {
			it.Status = analytics.StatusError
		}
		items = append(items, cloneItem(&it))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return items
}

// cloneItem copies an item out of the export's reused buffers.
func cloneItem(it *analytics.ExportedItem) analytics.ExportedItem {
	c := *it
	for _, s := range []*string{&c.ID, &c.SessionID, &c.Method, &c.Name, &c.Status, &c.ErrorType, &c.ErrorMessage,
		&c.ClientName, &c.ClientVersion, &c.ServerVersion, &c.UserID, &c.ProtocolVersion, &c.ErrorKind, &c.ArgsHash} {
		*s = strings.Clone(*s)
	}
	c.AttrKeys, c.AttrValues = nil, nil
	for _, k := range it.AttrKeys {
		c.AttrKeys = append(c.AttrKeys, strings.Clone(k))
	}
	for _, v := range it.AttrValues {
		c.AttrValues = append(c.AttrValues, strings.Clone(v))
	}
	if len(c.AttrKeys) == 0 {
		c.AttrKeys, c.AttrValues = nil, nil
	}
	c.Timestamp, c.ReceivedAt = c.Timestamp.UTC(), c.ReceivedAt.UTC()
	return c
}
