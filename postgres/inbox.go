package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// InboxService reads and marks a person's in-app deliveries: the inbox is
// the deliveries table itself (channel in_app, one recipient), not a copy.
type InboxService struct {
	db *DB
}

var _ alerting.InboxService = (*InboxService)(nil)

// NewInboxService returns the inbox store.
func NewInboxService(db *DB) *InboxService { return &InboxService{db: db} }

// Inbox implements alerting.InboxService. The page and the unread count are
// read in one batch (one round trip, one snapshot), walking the inbox index
// newest first from the cursor.
func (s *InboxService) Inbox(ctx context.Context, accountID, userID string, f alerting.InboxFilter) (alerting.InboxPage, error) {
	cur, err := alerting.ParseDeliveryCursor(f.Cursor)
	if err != nil {
		return alerting.InboxPage{}, err
	}
	q := sqlBuilder{args: []any{userID, accountID}}
	q.sql.WriteString(`SELECT id, rule_id, rule_name, mcp_id, title, body, created_at, read_at FROM deliveries
		WHERE recipient_user_id = $1 AND account_id = $2 AND channel = 'in_app'`)
	if f.Unread {
		q.sql.WriteString(` AND read_at IS NULL`)
	}
	q.after(cur)
	q.page(f.Limit)

	page := alerting.InboxPage{Items: []alerting.InboxItem{}}
	b := &pgx.Batch{}
	b.Queue(q.sql.String(), q.args...).Query(func(rows pgx.Rows) error {
		var it alerting.InboxItem
		_, err := pgx.ForEachRow(rows, []any{&it.ID, &it.RuleID, &it.RuleName, &it.MCPID, &it.Title, &it.Body, &it.CreatedAt, &it.ReadAt}, func() error {
			it.CreatedAt, it.ReadAt = utc(it.CreatedAt), utcPtr(it.ReadAt)
			it.Read = it.ReadAt != nil
			page.Items = append(page.Items, it)
			return nil
		})
		return err
	})
	b.Queue(`SELECT count(*) FROM deliveries
		WHERE recipient_user_id = $1 AND account_id = $2 AND channel = 'in_app' AND read_at IS NULL`, userID, accountID).
		QueryRow(func(row pgx.Row) error { return row.Scan(&page.UnreadCount) })
	if err := s.db.Pool.SendBatch(ctx, b).Close(); err != nil {
		return alerting.InboxPage{}, wrap(err)
	}
	page.Items, page.NextCursor = trimPage(page.Items, f.Limit, func(it alerting.InboxItem) alerting.DeliveryCursor {
		return alerting.DeliveryCursor{CreatedAt: it.CreatedAt, ID: it.ID}
	})
	return page, nil
}

// MarkRead implements alerting.InboxService. Ids that cannot be ours are
// dropped before the query; the rest are matched against the person's own
// unread items, so another person's id changes nothing.
func (s *InboxService) MarkRead(ctx context.Context, accountID, userID string, ids []string, all bool) (int, error) {
	q := `UPDATE deliveries SET read_at = now()
		WHERE recipient_user_id = $1 AND account_id = $2 AND channel = 'in_app' AND read_at IS NULL`
	args := []any{userID, accountID}
	if !all {
		keep := make([]string, 0, len(ids))
		for _, id := range ids {
			if alerting.PlausibleID(id) {
				keep = append(keep, id)
			}
		}
		if len(keep) == 0 {
			return 0, nil
		}
		q += ` AND id = ANY($3)`
		args = append(args, keep)
	}
	tag, err := s.db.Pool.Exec(ctx, q, args...)
	if err != nil {
		return 0, wrap(err)
	}
	return int(tag.RowsAffected()), nil
}

// NotificationService reads the account's delivery log.
type NotificationService struct {
	db *DB
}

var _ alerting.NotificationService = (*NotificationService)(nil)

// NewNotificationService returns the delivery log store.
func NewNotificationService(db *DB) *NotificationService { return &NotificationService{db: db} }

// Notifications implements alerting.NotificationService.
func (s *NotificationService) Notifications(ctx context.Context, accountID string, f alerting.NotificationFilter) (alerting.NotificationPage, error) {
	cur, err := alerting.ParseDeliveryCursor(f.Cursor)
	if err != nil {
		return alerting.NotificationPage{}, err
	}
	q := sqlBuilder{args: []any{accountID}}
	q.sql.WriteString(`SELECT ` + notificationColumns + ` FROM deliveries WHERE account_id = $1`)
	if f.Channel != "" {
		q.sql.WriteString(` AND channel = ` + q.arg(f.Channel))
	}
	if f.Status != "" {
		q.sql.WriteString(` AND status = ` + q.arg(f.Status))
	}
	if f.Severity != "" {
		q.sql.WriteString(` AND severity = ` + q.arg(f.Severity))
	}
	q.after(cur)
	q.page(f.Limit)
	rows, err := s.db.Pool.Query(ctx, q.sql.String(), q.args...)
	if err != nil {
		return alerting.NotificationPage{}, wrap(err)
	}
	page := alerting.NotificationPage{Items: []alerting.Notification{}}
	var n alerting.Notification
	_, err = pgx.ForEachRow(rows, notificationFields(&n), func() error {
		page.Items = append(page.Items, n.UTC())
		return nil
	})
	if err != nil {
		return alerting.NotificationPage{}, wrap(err)
	}
	page.Items, page.NextCursor = trimPage(page.Items, f.Limit, func(n alerting.Notification) alerting.DeliveryCursor {
		return alerting.DeliveryCursor{CreatedAt: n.CreatedAt, ID: n.ID}
	})
	return page, nil
}

const notificationColumns = `id, rule_id, mcp_id, channel, recipient_user_id, status, title, created_at,
	attempts, last_attempt_at, next_attempt_at, last_error, sent_at, message_id, severity`

func notificationFields(n *alerting.Notification) []any {
	return []any{&n.ID, &n.RuleID, &n.MCPID, &n.Channel, &n.RecipientUserID, &n.Status, &n.Title, &n.CreatedAt,
		&n.Attempts, &n.LastAttemptAt, &n.NextAttemptAt, &n.LastError, &n.SentAt, &n.MessageID, &n.Severity}
}

// RetryNotification implements alerting.NotificationService. The retry
// starts a new round (queued_at, round_attempts) so the delivery gets the
// whole retry policy again; attempts keeps counting every attempt.
func (s *NotificationService) RetryNotification(ctx context.Context, accountID, id string) (alerting.Notification, error) {
	var n alerting.Notification
	err := s.db.Pool.QueryRow(ctx, `UPDATE deliveries SET status = 'queued', next_attempt_at = now(), queued_at = now(),
			round_attempts = 0, lease_owner = NULL, lease_until = NULL
		WHERE account_id = $1 AND id = $2 AND status = 'failed' AND channel <> 'in_app'
		RETURNING `+notificationColumns, accountID, id).Scan(notificationFields(&n)...)
	if err == nil {
		return n.UTC(), nil
	}
	if !isNotFound(err) {
		return n, wrap(err)
	}
	var status string
	err = s.db.Pool.QueryRow(ctx, `SELECT status FROM deliveries WHERE account_id = $1 AND id = $2`, accountID, id).Scan(&status)
	if isNotFound(err) {
		return n, notFound("Delivery")
	}
	if err != nil {
		return n, wrap(err)
	}
	return n, telemetry.Errorf(telemetry.ECONFLICT, "Only a failed email, Slack or Discord delivery can be retried; this one is %s.", status)
}

// sqlBuilder assembles a delivery list query from fixed fragments and
// numbered parameters. Conditions are added only when used, rather than
// written as "$n IS NULL OR ...", so every plan can walk the index.
type sqlBuilder struct {
	sql  strings.Builder
	args []any
}

func (q *sqlBuilder) arg(v any) string {
	q.args = append(q.args, v)
	return "$" + strconv.Itoa(len(q.args))
}

// after keeps the rows strictly after the cursor in the newest-first order.
func (q *sqlBuilder) after(c *alerting.DeliveryCursor) {
	if c != nil {
		q.sql.WriteString(` AND (created_at, id) < (` + q.arg(c.CreatedAt) + `, ` + q.arg(c.ID) + `)`)
	}
}

// page orders newest first and reads one row more than the page, which
// tells whether there is a next page.
func (q *sqlBuilder) page(limit int) {
	q.sql.WriteString(` ORDER BY created_at DESC, id DESC LIMIT ` + q.arg(limit+1))
}

// trimPage cuts the extra row page read and returns the cursor of the last
// kept item, or nil when there was no extra row (the last page).
func trimPage[T any](items []T, limit int, key func(T) alerting.DeliveryCursor) ([]T, *string) {
	if len(items) <= limit {
		return items, nil
	}
	items = items[:limit]
	next := key(items[limit-1]).Encode()
	return items, &next
}
