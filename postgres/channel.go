package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// ChannelService stores each person's channel preferences and the account's
// team-chat webhooks. Webhook URLs are sealed with box before they reach the
// database and are never read back by any method a route calls.
type ChannelService struct {
	db  *DB
	box *alerting.SecretBox
	// Sending is what the installation sends (the catalogue's delivers).
	Sending alerting.Sending
	// ConnectEnv is what connection checks may need (the resolver of
	// the check of internal addresses).
	ConnectEnv alerting.ConnectEnv
}

var _ alerting.ChannelService = (*ChannelService)(nil)

// NewChannelService returns the channel store; box seals webhook URLs.
func NewChannelService(db *DB, box *alerting.SecretBox) *ChannelService {
	return &ChannelService{db: db, box: box}
}

// Channels implements alerting.ChannelService: the hints and the
// preferences come back in one round trip.
func (s *ChannelService) Channels(ctx context.Context, accountID, userID string) ([]alerting.Channel, alerting.Preferences, error) {
	return s.read(ctx, nil, accountID, userID)
}

// UpdatePreferences implements alerting.ChannelService. The merge happens in
// the upsert (COALESCE with the stored value), so two concurrent updates of
// different switches both take effect.
func (s *ChannelService) UpdatePreferences(ctx context.Context, accountID, userID string, upd alerting.PreferencesUpdate) ([]alerting.Channel, alerting.Preferences, error) {
	if upd.InApp == nil && upd.Email == nil {
		return s.read(ctx, nil, accountID, userID)
	}
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO channel_preferences (account_id, user_id, in_app, email)
		VALUES ($1, $2, COALESCE($3, true), COALESCE($4, true))
		ON CONFLICT (account_id, user_id) DO UPDATE SET
			in_app = COALESCE($3, channel_preferences.in_app),
			email = COALESCE($4, channel_preferences.email),
			updated_at = now()`, accountID, userID, upd.InApp, upd.Email)
	return s.read(ctx, b, accountID, userID)
}

// read runs the queries of b (if any), then reads the account's webhook
// hints and the person's preferences, all in one batch, which PostgreSQL
// runs as one transaction.
func (s *ChannelService) read(ctx context.Context, b *pgx.Batch, accountID, userID string) ([]alerting.Channel, alerting.Preferences, error) {
	if b == nil {
		b = &pgx.Batch{}
	}
	conns := map[string]alerting.Connection{}
	prefs := alerting.DefaultPreferences()
	b.Queue(`SELECT channel, hint, last_sent_at, last_failed_at, last_error, broken_at IS NOT NULL
		FROM webhook_connections WHERE account_id = $1`, accountID).Query(func(rows pgx.Rows) error {
		var ch string
		var c alerting.Connection
		_, err := pgx.ForEachRow(rows, []any{&ch, &c.Hint, &c.Health.LastSentAt, &c.Health.LastFailedAt, &c.Health.LastError, &c.Health.Broken}, func() error {
			c.Health.LastSentAt, c.Health.LastFailedAt = utcPtr(c.Health.LastSentAt), utcPtr(c.Health.LastFailedAt)
			conns[ch] = c
			c = alerting.Connection{}
			return nil
		})
		return err
	})
	b.Queue(`SELECT in_app, email FROM channel_preferences WHERE account_id = $1 AND user_id = $2`, accountID, userID).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&prefs.InApp, &prefs.Email}, func() error { return nil })
		return err
	})
	if err := s.db.Pool.SendBatch(ctx, b).Close(); err != nil {
		return nil, alerting.Preferences{}, wrap(err)
	}
	return alerting.BuildChannels(conns, s.Sending), prefs, nil
}

// ConnectWebhook implements alerting.ChannelService. The canonical URL is
// sealed bound to account and channel, so a ciphertext copied to another
// row does not open.
func (s *ChannelService) ConnectWebhook(ctx context.Context, accountID, userID, channel, rawURL string) (string, error) {
	in, err := alerting.TeamIntegration(channel)
	if err != nil {
		return "", err
	}
	if !in.Connection.URLKind {
		return "", telemetry.FieldError(telemetry.EINVALID, "path.channel",
			"%s is not connected with a webhook URL; use PUT /v1/account/channels/%s/connection.", channel, channel)
	}
	r, err := s.Connect(ctx, accountID, userID, channel, map[string]string{"url": rawURL})
	return r.Hint, err
}

// DisconnectWebhook implements alerting.ChannelService.
func (s *ChannelService) DisconnectWebhook(ctx context.Context, accountID, channel string) error {
	if err := alerting.CheckTeamChannel(channel); err != nil {
		return err
	}
	_, err := s.db.Pool.Exec(ctx, `DELETE FROM webhook_connections WHERE account_id = $1 AND channel = $2`, accountID, channel)
	return wrap(err)
}

// WebhookURL opens the stored webhook of a team channel. No route calls it:
// it is for the sender that will post queued deliveries. Returns ENOTFOUND
// when the channel is not connected.
func (s *ChannelService) WebhookURL(ctx context.Context, accountID, channel string) (string, error) {
	var sealed []byte
	err := s.db.Pool.QueryRow(ctx, `SELECT url_ciphertext FROM webhook_connections WHERE account_id = $1 AND channel = $2`,
		accountID, channel).Scan(&sealed)
	if err != nil {
		if isNotFound(err) {
			return "", notFound("Webhook")
		}
		return "", wrap(err)
	}
	plain, err := s.box.Open(sealed, alerting.WebhookAssociatedData(accountID, channel))
	if err != nil {
		return "", fmt.Errorf("postgres: webhook of %s/%s: %w", accountID, channel, err)
	}
	return string(plain), nil
}
