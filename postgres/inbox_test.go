package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// seedDeliveries writes n firings of a rule straight into deliveries, one
// second apart, oldest first: for each, an in_app and an email row per
// person in users and one slack row. Returns the in_app ids per person,
// newest first.
func seedDeliveries(t *testing.T, db *postgres.DB, tm testdb.Team, users []string, n int, start time.Time) map[string][]string {
	t.Helper()
	inbox := map[string][]string{}
	for i := 0; i < n; i++ {
		at := start.Add(time.Duration(i) * time.Second)
		title := fmt.Sprintf("Firing %d", i)
		for _, u := range users {
			id := fmt.Sprintf("dlv_%s_%03d_%s", tm.AccountID[4:10], i, u[4:10])
			testdb.Exec(t, db, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel, recipient_user_id, status, title, body, created_at)
				VALUES ($1, $2, 'rul_x', 'Errors', $3, 'in_app', $4, 'delivered', $5, 'body', $6),
				       ($1 || 'e', $2, 'rul_x', 'Errors', $3, 'email', $4, 'queued', $5, 'body', $6)`, id, tm.AccountID, tm.MCPID, u, title, at)
			inbox[u] = append([]string{id}, inbox[u]...)
		}
		testdb.Exec(t, db, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel, status, title, body, created_at, next_attempt_at)
			VALUES ($1, $2, 'rul_x', 'Errors', $3, 'slack', 'queued', $4, 'body', $5, $5)`,
			fmt.Sprintf("dlv_%s_%03d_slack", tm.AccountID[4:10], i), tm.AccountID, tm.MCPID, title, at)
	}
	return inbox
}

func inboxIDs(p alerting.InboxPage) []string {
	var out []string
	for _, it := range p.Items {
		out = append(out, it.ID)
	}
	return out
}

func TestInboxNewestFirstWithCursorPagination(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 2)
	s := newStores(t, db, nil)
	ctx := context.Background()
	want := seedDeliveries(t, db, tm, tm.Users, 7, time.Now().Add(-time.Hour))[tm.Users[0]]

	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		p, err := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 3, Cursor: cursor})
		if err != nil {
			t.Fatal(err)
		}
		if p.UnreadCount != 7 || pages > 3 {
			t.Fatalf("page %d: %+v", pages, p)
		}
		for _, it := range p.Items {
			if it.Read || it.ReadAt != nil || it.RuleName != "Errors" || it.CreatedAt.Location() != time.UTC {
				t.Fatalf("item %+v", it)
			}
		}
		got = append(got, inboxIDs(p)...)
		if p.NextCursor == nil {
			break
		}
		cursor = *p.NextCursor
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", got, want)
	}
	if _, err := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 3, Cursor: "garbage"}); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
		t.Fatalf("bad cursor: %v", err)
	}
	// Another account of the same person shows nothing of this one.
	other := testdb.NewTeam(t, db, 1)
	testdb.Exec(t, db, `INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, 'member')`, other.AccountID, tm.Users[0])
	p, err := s.Inbox.Inbox(ctx, other.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 3})
	if err != nil || len(p.Items) != 0 || p.UnreadCount != 0 || p.NextCursor != nil || p.Items == nil {
		t.Fatalf("other account inbox %+v, %v", p, err)
	}
}

// POST /v1/account/inbox/read: listed ids or all; another person's,
// unknown and malformed ids are ignored; the answer counts the items that
// went from unread to read.
func TestMarkReadIgnoresOtherPeoplesIDs(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 2)
	s := newStores(t, db, nil)
	ctx := context.Background()
	inbox := seedDeliveries(t, db, tm, tm.Users, 5, time.Now().Add(-time.Hour))
	me, them := inbox[tm.Users[0]], inbox[tm.Users[1]]

	n, err := s.Inbox.MarkRead(ctx, tm.AccountID, tm.Users[0], []string{me[0], me[1], them[0], "dlv_unknown", "", "not an id\x00", me[0] + "e"}, false)
	if err != nil || n != 2 {
		t.Fatalf("mark read: %d, %v", n, err)
	}
	// Marking again changes nothing.
	if n, _ := s.Inbox.MarkRead(ctx, tm.AccountID, tm.Users[0], []string{me[0]}, false); n != 0 {
		t.Fatalf("re-marking counted %d", n)
	}
	p, _ := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 10})
	if p.UnreadCount != 3 || !p.Items[0].Read || p.Items[0].ReadAt == nil || !p.Items[1].Read || p.Items[2].Read {
		t.Fatalf("after marking: %+v", p)
	}
	unread, _ := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 2, Unread: true})
	if fmt.Sprint(inboxIDs(unread)) != fmt.Sprint(me[2:4]) || unread.NextCursor == nil || unread.UnreadCount != 3 {
		t.Fatalf("unread page %+v", unread)
	}
	rest, _ := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[0], alerting.InboxFilter{Limit: 2, Unread: true, Cursor: *unread.NextCursor})
	if fmt.Sprint(inboxIDs(rest)) != fmt.Sprint(me[4:]) || rest.NextCursor != nil {
		t.Fatalf("second unread page %+v", rest)
	}
	if p, _ := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[1], alerting.InboxFilter{Limit: 10}); p.UnreadCount != 5 {
		t.Fatalf("the other person's items were marked: %+v", p)
	}

	if n, err := s.Inbox.MarkRead(ctx, tm.AccountID, tm.Users[0], nil, true); err != nil || n != 3 {
		t.Fatalf("all: %d, %v", n, err)
	}
	if n, _ := s.Inbox.MarkRead(ctx, tm.AccountID, tm.Users[0], []string{}, false); n != 0 {
		t.Fatalf("empty ids: %d", n)
	}
	if p, _ := s.Inbox.Inbox(ctx, tm.AccountID, tm.Users[1], alerting.InboxFilter{Limit: 10}); p.UnreadCount != 5 {
		t.Fatalf("all marked another person's items: %+v", p)
	}
	var queuedRead int
	_ = db.Pool.QueryRow(ctx, `SELECT count(*) FROM deliveries WHERE channel <> 'in_app' AND read_at IS NOT NULL`).Scan(&queuedRead)
	if queuedRead != 0 {
		t.Fatalf("%d non-inbox deliveries marked read", queuedRead)
	}
}

func TestNotificationsLogFiltersAndPages(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 2)
	s := newStores(t, db, nil)
	ctx := context.Background()
	seedDeliveries(t, db, tm, tm.Users, 3, time.Now().Add(-time.Hour)) // 3 x (2 in_app + 2 email + 1 slack)
	other := testdb.NewTeam(t, db, 1)
	seedDeliveries(t, db, other, other.Users, 2, time.Now().Add(-time.Hour))

	count := func(f alerting.NotificationFilter) (int, []alerting.Notification) {
		t.Helper()
		var all []alerting.Notification
		for pages := 0; ; pages++ {
			if err := f.Validate(); err != nil {
				t.Fatal(err)
			}
			p, err := s.Log.Notifications(ctx, tm.AccountID, f)
			if err != nil || pages > 20 {
				t.Fatalf("notifications: %v", err)
			}
			all = append(all, p.Items...)
			if p.NextCursor == nil {
				return len(all), all
			}
			f.Cursor = *p.NextCursor
		}
	}
	n, all := count(alerting.NotificationFilter{Limit: 4})
	if n != 15 {
		t.Fatalf("%d deliveries, want 15", n)
	}
	for i := 1; i < len(all); i++ {
		if all[i].CreatedAt.After(all[i-1].CreatedAt) {
			t.Fatalf("not newest first at %d", i)
		}
	}
	for _, it := range all {
		if (it.Channel == alerting.ChannelSlack) != (it.RecipientUserID == nil) {
			t.Fatalf("recipient of %+v", it)
		}
	}
	if n, _ := count(alerting.NotificationFilter{Channel: "slack", Limit: 2}); n != 3 {
		t.Fatalf("slack: %d", n)
	}
	if n, _ := count(alerting.NotificationFilter{Status: "queued"}); n != 9 {
		t.Fatalf("queued: %d", n)
	}
	if n, _ := count(alerting.NotificationFilter{Status: "delivered", Channel: "email"}); n != 0 {
		t.Fatalf("delivered email: %d", n)
	}
}
