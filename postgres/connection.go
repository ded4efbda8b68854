package postgres

import (
	"context"
	"fmt"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

var _ alerting.ConnectionService = (*ChannelService)(nil)

// Connect implements alerting.ConnectionService. The secret is sealed
// bound to account and channel, so a ciphertext copied to another row
// does not open; the channel id was checked against the registry, which
// is what stands in for the CHECK constraint migration 019 dropped.
func (s *ChannelService) Connect(ctx context.Context, accountID, userID, channel string, body map[string]string) (alerting.ConnectionResult, error) {
	in, err := alerting.TeamIntegration(channel)
	if err != nil {
		return alerting.ConnectionResult{}, err
	}
	sealed, err := in.Connection.Open(ctx, body, s.ConnectEnv)
	if err != nil {
		return alerting.ConnectionResult{}, err
	}
	if err := s.store(ctx, accountID, userID, channel, sealed, true); err != nil {
		return alerting.ConnectionResult{}, err
	}
	return result(channel, sealed), nil
}

// RotateSecret implements alerting.ConnectionService. The connection's
// health is kept: the destination is the same.
func (s *ChannelService) RotateSecret(ctx context.Context, accountID, userID, channel string) (alerting.ConnectionResult, error) {
	in, err := alerting.TeamIntegration(channel)
	if err != nil {
		return alerting.ConnectionResult{}, err
	}
	if in.Connection.Rotate == nil {
		return alerting.ConnectionResult{}, telemetry.FieldError(telemetry.EINVALID, "path.channel", "%s has no signing secret to rotate.", channel)
	}
	stored, err := s.WebhookURL(ctx, accountID, channel)
	if err != nil {
		return alerting.ConnectionResult{}, err
	}
	sealed, err := in.Connection.Rotate(stored)
	if err != nil {
		return alerting.ConnectionResult{}, err
	}
	if err := s.store(ctx, accountID, userID, channel, sealed, false); err != nil {
		return alerting.ConnectionResult{}, err
	}
	return result(channel, sealed), nil
}

func result(channel string, sealed alerting.Sealed) alerting.ConnectionResult {
	r := alerting.ConnectionResult{Channel: channel, Connected: true, Hint: sealed.Hint}
	if v, ok := sealed.Shown["signing_secret"]; ok {
		r.SigningSecret = &v
	}
	return r
}

// store seals and writes a connection; fresh (a new destination) clears
// its health and broken mark, a rotation keeps them.
func (s *ChannelService) store(ctx context.Context, accountID, userID, channel string, sealed alerting.Sealed, fresh bool) error {
	ct, err := s.box.Seal([]byte(sealed.Secret), alerting.WebhookAssociatedData(accountID, channel))
	if err != nil {
		return fmt.Errorf("postgres: sealing the connection of %s/%s: %w", accountID, channel, err)
	}
	if !fresh {
		tag, err := s.db.Pool.Exec(ctx, `UPDATE webhook_connections SET url_ciphertext = $3, hint = $4
			WHERE account_id = $1 AND channel = $2`, accountID, channel, ct, sealed.Hint)
		if err == nil && tag.RowsAffected() == 0 {
			return notFound("Connection")
		}
		return wrap(err)
	}
	_, err = s.db.Pool.Exec(ctx, `INSERT INTO webhook_connections (account_id, channel, url_ciphertext, hint, created_by)
		VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (account_id, channel) DO UPDATE SET url_ciphertext = $3, hint = $4, created_by = $5, created_at = now(),
			broken_at = NULL, last_sent_at = NULL, last_failed_at = NULL, last_error = NULL`,
		accountID, channel, ct, sealed.Hint, userID)
	return wrap(err)
}
