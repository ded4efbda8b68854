package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify"
	"github.com/mcpscope/telemetry/internal/ids"
)

// OutboxStore is the durable outbox: the queued rows of deliveries, claimed
// with a lease by the outbox worker of every instance. Webhook URLs are
// opened here, for the sender only; nothing a route calls returns them.
type OutboxStore struct {
	db  *DB
	box *alerting.SecretBox
}

var _ notify.OutboxStore = (*OutboxStore)(nil)

// NewOutboxStore returns the outbox; box opens webhook URLs.
func NewOutboxStore(db *DB, box *alerting.SecretBox) *OutboxStore {
	return &OutboxStore{db: db, box: box}
}

// Claim implements notify.OutboxStore. The due rows are locked with
// SKIP LOCKED (another instance's claim in progress is passed over) and
// leased (a committed claim is passed over until its lease ends); the
// destination (the person's address, the sealed webhook and whether it is
// broken) and the MCP's name come in the same statement.
func (s *OutboxStore) Claim(ctx context.Context, owner string, channels []string, limit int, lease time.Duration) ([]notify.Due, error) {
	if len(channels) == 0 || limit < 1 {
		return nil, nil
	}
	rows, err := s.db.Pool.Query(ctx, `WITH c AS (
			SELECT id FROM deliveries
			WHERE status = 'queued' AND next_attempt_at <= now() AND channel = ANY($2)
				AND (lease_until IS NULL OR lease_until < now())
			ORDER BY next_attempt_at LIMIT $3 FOR UPDATE SKIP LOCKED),
		u AS (
			UPDATE deliveries d SET lease_owner = $1, lease_until = now() + $4 * interval '1 millisecond', claimed_at = now()
			FROM c WHERE d.id = c.id
			RETURNING d.id, d.account_id, d.channel, d.recipient_user_id, d.rule_id, d.rule_name, d.mcp_id, d.kind,
				d.title, d.body, d.summary, d.created_at, d.round_attempts, COALESCE(d.queued_at, d.created_at) AS queued_at,
				d.next_attempt_at, d.severity, d.episode_at, d.details)
		SELECT u.id, u.account_id, u.channel, u.rule_id, u.rule_name, u.mcp_id, u.kind, u.title, u.body, u.summary,
			u.created_at, u.round_attempts, u.queued_at, u.next_attempt_at,
			COALESCE(usr.email, ''), usr.email_verified_at IS NOT NULL,
			u.recipient_user_id IS NOT NULL AND mem.user_id IS NULL,
			w.url_ciphertext, w.broken_at IS NOT NULL, COALESCE(m.name, ''),
			u.severity, u.episode_at, u.details
		FROM u
		LEFT JOIN memberships mem ON mem.account_id = u.account_id AND mem.user_id = u.recipient_user_id
		LEFT JOIN users usr ON usr.id = mem.user_id
		LEFT JOIN webhook_connections w ON w.account_id = u.account_id AND w.channel = u.channel
		LEFT JOIN mcps m ON m.id = u.mcp_id
		ORDER BY u.next_attempt_at, u.id`, owner, channels, limit, lease.Milliseconds())
	if err != nil {
		return nil, wrap(err)
	}
	var out []notify.Due
	var d notify.Due
	var sealed []byte
	var verified bool
	var extra deliveryExtra
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.AccountID, &d.Channel, &d.Message.RuleID, &d.Message.RuleName, &d.Message.MCPID,
		&d.Message.Kind, &d.Message.Title, &d.Message.Body, &d.Message.Summary, &d.Message.At, &d.Attempts, &d.QueuedAt, &d.DueAt,
		&d.To, &verified, &d.NotMember, &sealed, &d.Broken, &d.Message.MCPName, &extra.severity, &extra.episodeAt, &extra.details}, func() error {
		d.Message.DeliveryID = d.ID
		extra.apply(&d.Message)
		d.Message.At, d.QueuedAt, d.DueAt = utc(d.Message.At), utc(d.QueuedAt), utc(d.DueAt)
		d.Undecryptable = false
		d.Unverified = d.Channel == alerting.ChannelEmail && d.To != "" && !verified
		if alerting.IsTeamChannel(d.Channel) {
			d.To = ""
			if sealed != nil {
				// A row that cannot be opened (another key, a restored or
				// damaged row) fails alone; the batch goes on.
				plain, err := s.box.Open(sealed, alerting.WebhookAssociatedData(d.AccountID, d.Channel))
				if err != nil {
					d.Undecryptable = true
				} else {
					d.To = string(plain)
				}
			}
		}
		out = append(out, d)
		sealed = nil
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	return out, nil
}

// Record implements notify.OutboxStore: the outcomes in one statement
// (columns unnested from arrays), the channels' health in a second, one
// transaction.
func (s *OutboxStore) Record(ctx context.Context, owner string, outcomes []notify.Outcome) error {
	if len(outcomes) == 0 {
		return nil
	}
	n := len(outcomes)
	idsArr, statuses, attempted, at, next, errs, mids := make([]string, n), make([]string, n), make([]bool, n), make([]time.Time, n), make([]*time.Time, n), make([]*string, n), make([]*string, n)
	type dest struct{ account, channel string }
	type health struct {
		sent, failed *time.Time
		err          *string
	}
	healths := map[dest]*health{}
	for i, o := range outcomes {
		idsArr[i], statuses[i], attempted[i], at[i] = o.ID, o.Status, o.Attempted, o.At
		if !o.NextAttempt.IsZero() {
			t := o.NextAttempt
			next[i] = &t
		}
		if o.Error != "" {
			e := o.Error
			errs[i] = &e
		}
		if o.MessageID != "" {
			m := o.MessageID
			mids[i] = &m
		}
		if alerting.IsTeamChannel(o.Channel) {
			k := dest{o.AccountID, o.Channel}
			h := healths[k]
			if h == nil {
				h = &health{}
				healths[k] = h
			}
			t := o.At
			if o.Status == alerting.StatusSent {
				h.sent = &t
			} else if o.Error != "" {
				h.failed, h.err = &t, errs[i]
			}
		}
	}
	b := &pgx.Batch{}
	b.Queue(`UPDATE deliveries d SET status = o.status,
			attempts = d.attempts + o.attempted::int, round_attempts = d.round_attempts + o.attempted::int,
			last_attempt_at = CASE WHEN o.attempted THEN o.at ELSE d.last_attempt_at END,
			next_attempt_at = o.next, last_error = o.err,
			sent_at = CASE WHEN o.status = 'sent' THEN o.at END,
			message_id = COALESCE(o.mid, d.message_id),
			lease_owner = NULL, lease_until = NULL
		FROM unnest($2::text[], $3::text[], $4::bool[], $5::timestamptz[], $6::timestamptz[], $7::text[], $8::text[])
			AS o(id, status, attempted, at, next, err, mid)
		WHERE d.id = o.id AND d.lease_owner = $1`, owner, idsArr, statuses, attempted, at, next, errs, mids)
	for k, h := range healths {
		b.Queue(`UPDATE webhook_connections SET
				last_sent_at = COALESCE($3, last_sent_at),
				last_failed_at = COALESCE($4, last_failed_at),
				last_error = CASE WHEN $4::timestamptz IS NOT NULL THEN $5 ELSE last_error END
			WHERE account_id = $1 AND channel = $2`, k.account, k.channel, h.sent, h.failed, h.err)
	}
	return wrap(pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	}))
}

// Release implements notify.OutboxStore.
func (s *OutboxStore) Release(ctx context.Context, owner string, deliveryIDs []string, at time.Time) error {
	_, err := s.db.Pool.Exec(ctx, `UPDATE deliveries SET lease_owner = NULL, lease_until = NULL, next_attempt_at = $3
		WHERE id = ANY($2) AND lease_owner = $1`, owner, deliveryIDs, at)
	return wrap(err)
}

// MarkBroken implements notify.OutboxStore: the connection is marked
// broken once (a second report while broken changes nothing), and each
// owner and admin gets an inbox item, tied to the rule whose delivery
// found out.
func (s *OutboxStore) MarkBroken(ctx context.Context, accountID, channel string, d notify.Due) error {
	return wrap(pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhook_connections SET broken_at = now(), last_failed_at = now(), last_error = $3
			WHERE account_id = $1 AND channel = $2 AND broken_at IS NULL`, accountID, channel, alerting.ErrCodeRevoked)
		if err != nil || tag.RowsAffected() == 0 {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT user_id FROM memberships WHERE account_id = $1 AND role IN ('owner', 'admin') ORDER BY user_id`, accountID)
		if err != nil {
			return err
		}
		admins, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil || len(admins) == 0 {
			return err
		}
		dids := make([]string, len(admins))
		for i := range dids {
			dids[i] = ids.New(prefixDelivery)
		}
		title, body := alerting.BrokenNotice(channel)
		_, err = tx.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel,
				recipient_user_id, status, title, body, kind)
			SELECT a.id, $1, $2, $3, $4, 'in_app', a.uid, 'delivered', $5, $6, 'notice'
			FROM unnest($7::text[], $8::text[]) AS a(id, uid)`,
			accountID, d.Message.RuleID, d.Message.RuleName, d.Message.MCPID, title, body, dids, admins)
		return err
	}))
}

// QueueStats implements notify.OutboxStore.
func (s *OutboxStore) QueueStats(ctx context.Context, channels []string) (int, time.Duration, error) {
	var depth int
	var oldest float64
	err := s.db.Pool.QueryRow(ctx, `SELECT count(*),
			COALESCE(extract(epoch FROM now() - min(next_attempt_at) FILTER (WHERE next_attempt_at <= now())), 0)
		FROM deliveries WHERE status = 'queued' AND channel = ANY($1)`, channels).Scan(&depth, &oldest)
	if err != nil {
		return 0, 0, wrap(err)
	}
	return depth, time.Duration(oldest * float64(time.Second)), nil
}

var _ alerting.TestStore = (*OutboxStore)(nil)

// Destination implements alerting.TestStore: the person's address only
// while they are a member, and refused (address_unverified) until it is
// verified; a webhook that cannot be opened answers undecryptable.
func (s *OutboxStore) Destination(ctx context.Context, accountID, userID, channel string) (string, string, error) {
	if !alerting.IsTeamChannel(channel) {
		var email string
		var verified bool
		err := s.db.Pool.QueryRow(ctx, `SELECT u.email, u.email_verified_at IS NOT NULL FROM users u
			JOIN memberships m ON m.user_id = u.id
			WHERE u.id = $1 AND m.account_id = $2`, userID, accountID).Scan(&email, &verified)
		if isNotFound(err) {
			return "", alerting.ErrCodeNotMember, nil
		}
		if err == nil && !verified {
			return "", alerting.ErrCodeUnverified, nil
		}
		return email, "", wrap(err)
	}
	var sealed []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT url_ciphertext FROM webhook_connections WHERE account_id = $1 AND channel = $2`,
		accountID, channel).Scan(&sealed)
	if isNotFound(err) {
		return "", alerting.ErrCodeNotConnected, nil
	}
	if err != nil {
		return "", "", wrap(err)
	}
	plain, err := s.box.Open(sealed, alerting.WebhookAssociatedData(accountID, channel))
	if err != nil {
		return "", alerting.ErrCodeUndecryptable, nil
	}
	return string(plain), "", nil
}

// RecordTest implements alerting.TestStore.
func (s *OutboxStore) RecordTest(ctx context.Context, accountID, channel string, at time.Time, errCode string) error {
	var err error
	if errCode == "" {
		_, err = s.db.Pool.Exec(ctx, `UPDATE webhook_connections SET last_sent_at = $3, broken_at = NULL
			WHERE account_id = $1 AND channel = $2`, accountID, channel, at)
	} else {
		_, err = s.db.Pool.Exec(ctx, `UPDATE webhook_connections SET last_failed_at = $3, last_error = $4
			WHERE account_id = $1 AND channel = $2`, accountID, channel, at, errCode)
	}
	return wrap(err)
}

// EmailSpent implements notify.OutboxStore (the partial index
// deliveries_email_attempts_idx answers it).
func (s *OutboxStore) EmailSpent(ctx context.Context, accountIDs []string, since time.Time) (map[string]notify.EmailSpend, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT account_id, count(*), min(last_attempt_at) FROM deliveries
		WHERE channel = 'email' AND last_attempt_at IS NOT NULL AND last_attempt_at > $2 AND account_id = ANY($1)
		GROUP BY account_id`, accountIDs, since)
	if err != nil {
		return nil, wrap(err)
	}
	out := map[string]notify.EmailSpend{}
	var id string
	var sp notify.EmailSpend
	_, err = pgx.ForEachRow(rows, []any{&id, &sp.Count, &sp.Oldest}, func() error {
		out[id] = sp
		return nil
	})
	return out, wrap(err)
}
