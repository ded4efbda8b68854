package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/ids"
)

// SeedChatDeliveries creates accounts, each with a Slack webhook (the URL
// hookURL(i) gives, sealed with box) and perAccount queued Slack
// deliveries due at once, titled "Firing: seed <account>/<n>". It is for
// the outbox tests and the delivery bench only, and returns the account
// ids.
func SeedChatDeliveries(ctx context.Context, db *DB, box *alerting.SecretBox, accounts, perAccount int, hookURL func(i int) string) ([]string, error) {
	now := time.Now()
	accIDs, sealed, hints := make([]string, accounts), make([][]byte, accounts), make([]string, accounts)
	var dAcc, dIDs, dTitles []string
	for i := range accIDs {
		accIDs[i] = ids.New(prefixAccount)
		u, err := alerting.ValidateWebhookURL(alerting.ChannelSlack, hookURL(i))
		if err != nil {
			return nil, err
		}
		if sealed[i], err = box.Seal([]byte(u.String()), alerting.WebhookAssociatedData(accIDs[i], alerting.ChannelSlack)); err != nil {
			return nil, err
		}
		hints[i] = alerting.WebhookHint(u)
		for n := 0; n < perAccount; n++ {
			dAcc, dIDs, dTitles = append(dAcc, accIDs[i]), append(dIDs, ids.New(prefixDelivery)), append(dTitles, fmt.Sprintf("Firing: seed %d/%d", i, n))
		}
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO accounts (id, name) SELECT unnest($1::text[]), 'seed'`, accIDs); err != nil {
		return nil, wrap(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO webhook_connections (account_id, channel, url_ciphertext, hint)
		SELECT a, 'slack', c, h FROM unnest($1::text[], $2::bytea[], $3::text[]) AS w(a, c, h)`, accIDs, sealed, hints); err != nil {
		return nil, wrap(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel, status,
			title, body, created_at, next_attempt_at, queued_at)
		SELECT d.id, d.acc, 'rul_seed', 'seed', 'mcp_seed', 'slack', 'queued', d.title, 'seeded', $1, $1, $1
		FROM unnest($2::text[], $3::text[], $4::text[]) AS d(id, acc, title)`, now, dIDs, dAcc, dTitles); err != nil {
		return nil, wrap(err)
	}
	return accIDs, nil
}
