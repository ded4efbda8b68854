package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// timelineItem is the oracle's view of an item on a timeline.
func timelineItem(it analytics.Item) analytics.TimelineItem {
	opt := func(s string) *string {
		if s == "" {
			return nil
		}
		return &s
	}
	attrs := map[string]string{}
	for k, v := range it.Attributes {
		attrs[k] = v
	}
	return analytics.TimelineItem{ID: opt(it.ID), Timestamp: it.Timestamp, Method: it.Method, Name: opt(it.Name),
		DurationMs: it.DurationMs, Status: it.Status, ErrorType: opt(it.ErrorType), ErrorMessage: opt(it.ErrorMessage), Attributes: attrs,
		ErrorKind: opt(it.ErrorKind), ResponseBytes: it.ResponseBytes}
}

// timeline is the expected timeline (items sorted by time, then by their
// JSON, for a multiset comparison), or nil when it is a 404.
func (o oracle) timeline(mcp, session string, w analytics.TimeWindow) *analytics.SessionTimeline {
	r := analytics.Range{From: time.Unix(0, 0).UTC(), To: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)}
	var items []analytics.Item
	for _, it := range o.in(mcp, r, func(it analytics.Item) bool { return it.SessionID == session }) {
		if (w.From.IsZero() || !it.Timestamp.Before(w.From)) && (w.End.IsZero() || it.Timestamp.Before(w.End)) {
			items = append(items, it)
		}
	}
	if len(items) == 0 {
		return nil
	}
	sessions := oracle{rows: nil}
	for _, it := range items {
		sessions.rows = append(sessions.rows, analytics.StoredRow{MCPID: mcp, Item: it})
	}
	s := sessions.sessions(mcp, r)[0]
	t := &analytics.SessionTimeline{SessionID: session, StartedAt: s.StartedAt, LastSeenAt: s.LastSeenAt, Calls: s.Calls, Errors: s.Errors,
		ClientName: s.ClientName, ClientVersion: s.ClientVersion, UserID: s.UserID}
	for _, it := range items {
		t.Items = append(t.Items, timelineItem(it))
	}
	sortTimeline(t.Items)
	return t
}

func sortTimeline(items []analytics.TimelineItem) {
	sort.SliceStable(items, func(i, j int) bool {
		if !items[i].Timestamp.Equal(items[j].Timestamp) {
			return items[i].Timestamp.Before(items[j].Timestamp)
		}
		a, _ := json.Marshal(items[i])
		b, _ := json.Marshal(items[j])
		return string(a) < string(b)
	})
}

// walkTimeline reads every page of a timeline and checks that the pages
// agree on the figures and that items come oldest first.
func walkTimeline(t *testing.T, db *clickhouse.DB, mcp, session string, w analytics.TimeWindow, limit int) (*analytics.SessionTimeline, error) {
	t.Helper()
	var all *analytics.SessionTimeline
	cursor := ""
	for page := 0; page < 10000; page++ {
		p, err := db.SessionTimeline(context.Background(), mcp, session, w, limit, cursor)
		if err != nil {
			return nil, err
		}
		want := limit
		if limit == 0 {
			want = analytics.DefaultTimelineLimit
		}
		if len(p.Items) > want || (p.NextCursor != nil && len(p.Items) != want) {
			t.Fatalf("page %d: %d items with cursor %v", page, len(p.Items), p.NextCursor)
		}
		if all == nil {
			all = p
		} else {
			head, prev := *p, *all
			head.Items, prev.Items, head.NextCursor, prev.NextCursor = nil, nil, nil, nil
			sameJSON(t, fmt.Sprintf("page %d figures", page), head, prev)
			all.Items = append(all.Items, p.Items...)
		}
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	for i := 1; i < len(all.Items); i++ {
		if all.Items[i].Timestamp.Before(all.Items[i-1].Timestamp) {
			t.Fatalf("item %d at %v before item %d at %v", i, all.Items[i].Timestamp, i-1, all.Items[i-1].Timestamp)
		}
	}
	all.NextCursor = nil
	sortTimeline(all.Items)
	return all, nil
}

// TestSessionTimeline checks timelines against the oracle: whole sessions
// and windows of them, across midnight, at every page size, including a
// session with many items in one millisecond (some identical in every
// field) and hostile ids and strings.
func TestSessionTimeline(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	rows := fixtureRows()
	// Hostile session: 9 items in one millisecond (three pairs identical
	// in every field, so only a skip count can page them), and more
	// around it; ids, names and attributes with quotes, backslashes, '?'
	// and unicode.
	hostile := `s'"\?%2F/🚀`
	at := day0.AddDate(0, 0, 2).Add(23*time.Hour + 59*time.Minute + 59*time.Second + 999*time.Millisecond)
	seq := uint64(len(rows))
	addRow := func(it analytics.Item) {
		seq++
		it.SessionID = hostile
		it.Normalize()
		rows = append(rows, analytics.StoredRow{AccountID: acct1, MCPID: mcpA, Node: "node-1", Seq: seq, ReceivedAt: it.Timestamp.Add(time.Second), Item: it})
	}
	for i := 0; i < 9; i++ {
		it := analytics.Item{Timestamp: at, Method: analytics.MethodToolsCall, Name: `t'?\` + fmt.Sprint(i/2),
			Attributes: map[string]string{`k'?"`: `v\` + fmt.Sprint(i/2)}}
		if i%2 == 0 {
			it.ErrorType, it.ErrorMessage = `E'?`, `msg "?" \`
		}
		addRow(it)
		seq-- // the pairs share a log record too
		if i%2 == 1 {
			seq++
		}
	}
	for i := 0; i < 5; i++ {
		addRow(analytics.Item{ID: fmt.Sprintf(`id'%d?`, i), Timestamp: at.Add(time.Duration(i-2) * time.Millisecond * 700),
			Method: "resources/read", Name: resource, DurationMs: ms(float64(i)), ClientName: `c'?`, ClientVersion: "1", UserID: `u"?`})
	}
	third := len(rows) / 3
	for _, part := range [][]analytics.StoredRow{rows[:third], rows[third : 2*third], rows[2*third:]} {
		if err := db.InsertRows(ctx, part); err != nil {
			t.Fatal(err)
		}
	}
	o := oracle{rows: rows}
	if w := o.timeline(mcpA, hostile, analytics.TimeWindow{}); len(w.Items) != 14 {
		t.Fatalf("hostile session of %d items", len(w.Items))
	}
	d := func(n int) time.Time { return day0.AddDate(0, 0, n) }
	windows := []analytics.TimeWindow{
		{},
		{From: d(2), End: d(3)}, // 03-03 only
		{From: d(3)},            // from 03-04
		{End: d(3)},             // up to 03-03
		{From: d(4), End: d(5)}, // 03-05
		{From: d(100)},          // nothing
	}
	check := func(t *testing.T) {
		for _, session := range []string{"a-s1", "a-s2", "a-midnight", "a-out", "a-old", hostile, "b-s1", "nope"} {
			for _, mcp := range []string{mcpA, mcpB} {
				if mcp == mcpB && session != "a-s1" && session != "b-s1" {
					continue // another MCP's session is not there: checked once
				}
				parallel(t, mcp+" "+session, func(t *testing.T) {
					for wi, w := range windows {
						want := o.timeline(mcp, session, w)
						limits := []int{0, 3, 1000}
						if session == hostile {
							limits = append(limits, 1, 2)
						}
						for _, limit := range limits {
							what := fmt.Sprintf("%s %s window %d limit %d", mcp, session, wi, limit)
							got, err := walkTimeline(t, db, mcp, session, w, limit)
							if want == nil {
								if telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
									t.Errorf("%s: got %v, %v, want not_found", what, got, err)
								}
								continue
							}
							if err != nil {
								t.Fatalf("%s: %v", what, err)
							}
							sameJSON(t, what, got, want)
						}
					}
				})
			}
		}
		_, err := db.SessionTimeline(ctx, mcpA, "a-s1", analytics.TimeWindow{}, 10, "garbage")
		wantCode(t, err, telemetry.EBADREQUEST)
		_, err = db.SessionTimeline(ctx, mcpA, "a-s1", analytics.TimeWindow{}, 1001, "")
		wantCode(t, err, telemetry.EINVALID)
	}
	t.Run("unmerged", check)
	for _, table := range []string{"events", "session_span"} {
		if err := db.OptimizeFinal(ctx, table); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("merged", check)
}
