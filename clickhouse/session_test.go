package clickhouse_test

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

// oracleSessions is the expected full sessions list of an MCP over a range.
func (o oracle) sessions(mcp string, r analytics.Range) []analytics.Session {
	type first struct {
		at  time.Time
		val string
	}
	by := map[string]*analytics.Session{}
	client, version, user := map[string]first{}, map[string]first{}, map[string]first{}
	earlier := func(m map[string]first, id string, at time.Time, v string) {
		if f, ok := m[id]; v != "" && (!ok || at.Before(f.at)) {
			m[id] = first{at, v}
		}
	}
	for _, it := range o.in(mcp, r, nil) {
		s := by[it.SessionID]
		if s == nil {
			s = &analytics.Session{SessionID: it.SessionID, StartedAt: it.Timestamp, LastSeenAt: it.Timestamp}
			by[it.SessionID] = s
		}
		s.Calls++
		if it.Status == analytics.StatusError {
			s.Errors++
		}
		if it.Timestamp.Before(s.StartedAt) {
			s.StartedAt = it.Timestamp
		}
		if it.Timestamp.After(s.LastSeenAt) {
			s.LastSeenAt = it.Timestamp
		}
		earlier(client, it.SessionID, it.Timestamp, it.ClientName)
		if it.ClientName != "" {
			earlier(version, it.SessionID, it.Timestamp, it.ClientVersion+"\x00")
		}
		earlier(user, it.SessionID, it.Timestamp, it.UserID)
	}
	out := []analytics.Session{}
	for id, s := range by {
		if f, ok := client[id]; ok {
			s.ClientName = strp(f.val)
		}
		if f, ok := version[id]; ok && f.val != "\x00" {
			s.ClientVersion = strp(f.val[:len(f.val)-1])
		}
		if f, ok := user[id]; ok {
			s.UserID = strp(f.val)
		}
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool {
		if !out[i].StartedAt.Equal(out[j].StartedAt) {
			return out[i].StartedAt.After(out[j].StartedAt)
		}
		return out[i].SessionID > out[j].SessionID
	})
	return out
}

// walkSessions reads every page; between pages it calls between (if set).
func walkSessions(t *testing.T, db *clickhouse.DB, mcp string, r analytics.Range, limit int, between func(page int)) []analytics.Session {
	t.Helper()
	all := []analytics.Session{}
	cursor := ""
	for page := 0; ; page++ {
		p, err := db.Sessions(context.Background(), mcp, r, limit, cursor)
		if err != nil {
			t.Fatalf("page %d: %v", page, err)
		}
		if p.From != r.FromDate() || p.To != r.ToDate() || p.Items == nil {
			t.Fatalf("page %d: %+v", page, p)
		}
		want := limit
		if limit == 0 {
			want = analytics.DefaultSessionLimit
		}
		if len(p.Items) > want || (p.NextCursor != nil && len(p.Items) != want) {
			t.Fatalf("page %d: %d items with cursor %v", page, len(p.Items), p.NextCursor)
		}
		all = append(all, p.Items...)
		if p.NextCursor == nil {
			return all
		}
		cursor = *p.NextCursor
		if between != nil {
			between(page)
		}
	}
}

func testSessions(t *testing.T, db *clickhouse.DB, o oracle) {
	for _, mcp := range []string{mcpA, mcpB, "mcp-none"} {
		for _, limit := range []int{0, 1, 3, 500} {
			parallel(t, fmt.Sprintf("%s limit %d", mcp, limit), func(t *testing.T) {
				for _, r := range ranges() {
					got := walkSessions(t, db, mcp, r, limit, nil)
					sameJSON(t, fmt.Sprintf("%s %s..%s limit %d sessions", mcp, r.FromDate(), r.ToDate(), limit), got, o.sessions(mcp, r))
				}
			})
		}
	}
	// A session across midnight, read for the second day only: its part of
	// that day.
	p, _ := db.Sessions(context.Background(), mcpA, analytics.NewRange(day0.AddDate(0, 0, 3), day0.AddDate(0, 0, 3)), 500, "")
	for _, s := range p.Items {
		if s.SessionID == "a-midnight" && (!s.StartedAt.Equal(day0.AddDate(0, 0, 3)) || s.Calls != 1 || *s.UserID != "u-mid" || s.ClientName != nil) {
			t.Errorf("a-midnight on 03-04 = %+v", s)
		}
	}
	ctx := context.Background()
	_, err := db.Sessions(ctx, mcpA, week, 10, "not a cursor!")
	wantCode(t, err, telemetry.EBADREQUEST)
	_, err = db.Sessions(ctx, mcpA, week, 501, "")
	wantCode(t, err, telemetry.EINVALID)
}

// TestSessionsPaginationWhileIngesting walks the pages while new items
// arrive between them: new sessions (newer, and one older than the cursor),
// and new items of sessions already listed or still to come. Every session
// that existed before the walk must be visited exactly once.
func TestSessionsPaginationWhileIngesting(t *testing.T) {
	t.Parallel()
	db := openTestDB(t)
	ctx := context.Background()
	base := day0.Add(6 * time.Hour)
	r := analytics.NewRange(day0, day0.AddDate(0, 0, 11))
	var rows, inserted []analytics.StoredRow
	seq := uint64(0)
	add := func(session string, at time.Time) {
		seq++
		row := itemSpec{account: acct1, mcp: "mcp-p", ts: at, session: session,
			method: analytics.MethodToolsCall, name: "t"}.row(seq)
		rows = append(rows, row)
		inserted = append(inserted, row)
	}
	// 37 sessions, 6 hours apart over 9 days; two share a start time (tie
	// broken by id); every fifth lasts two more days.
	start := func(i int) time.Time {
		if i == 20 {
			i = 19
		}
		return base.Add(time.Duration(i) * 6 * time.Hour)
	}
	for i := 0; i < 37; i++ {
		id := fmt.Sprintf("p-%02d", i)
		add(id, start(i))
		add(id, start(i).Add(30*time.Second))
		if i%5 == 0 {
			add(id, start(i).AddDate(0, 0, 2))
		}
	}
	if err := db.InsertRows(ctx, rows); err != nil {
		t.Fatal(err)
	}
	before := map[string]bool{}
	for i := 0; i < 37; i++ {
		before[fmt.Sprintf("p-%02d", i)] = true
	}
	got := walkSessions(t, db, "mcp-p", r, 4, func(page int) {
		rows = rows[:0]
		add(fmt.Sprintf("new-late-%d", page), start(40).Add(time.Duration(page)*time.Minute)) // newer than all
		add(fmt.Sprintf("new-mid-%d", page), start(17).Add(10*time.Second))                   // among the old ones
		for i := 0; i < 37; i += 3 {                                                          // more calls in known sessions
			add(fmt.Sprintf("p-%02d", i), start(i).Add(time.Duration(page+1)*time.Second+45*time.Second))
			add(fmt.Sprintf("p-%02d", i), start(i).AddDate(0, 0, 1))
		}
		if err := db.InsertRows(ctx, rows); err != nil {
			t.Fatal(err)
		}
	})
	seen := map[string]int{}
	for i, s := range got {
		seen[s.SessionID]++
		if i > 0 {
			prev := got[i-1]
			if prev.StartedAt.Before(s.StartedAt) || (prev.StartedAt.Equal(s.StartedAt) && prev.SessionID <= s.SessionID) {
				t.Errorf("order broken at %d: %s %v then %s %v", i, prev.SessionID, prev.StartedAt, s.SessionID, s.StartedAt)
			}
		}
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("session %s visited %d times", id, n)
		}
	}
	for id := range before {
		if seen[id] != 1 {
			t.Errorf("session %s visited %d times, want once", id, seen[id])
		}
	}
	// Once the data is still, a fresh walk is exactly the oracle's list.
	sameJSON(t, "final walk", walkSessions(t, db, "mcp-p", r, 7, nil), oracle{rows: inserted}.sessions("mcp-p", r))
}
