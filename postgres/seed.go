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
	var accountIDs []string
	now := time.Now()
	for i := 0; i < accounts; i++ {
		acc := ids.New(prefixAccount)
		accountIDs = append(accountIDs, acc)
		u, err := alerting.ValidateWebhookURL(alerting.ChannelSlack, hookURL(i))
		if err != nil {
			return nil, err
		}
		sealed, err := box.Seal([]byte(u.String()), alerting.WebhookAssociatedData(acc, alerting.ChannelSlack))
		if err != nil {
			return nil, err
		}
		dids, titles := make([]string, perAccount), make([]string, perAccount)
		for n := range dids {
			dids[n], titles[n] = ids.New(prefixDelivery), fmt.Sprintf("Firing: seed %d/%d", i, n)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO accounts (id, name) VALUES ($1, 'seed')`, acc); err != nil {
			return nil, wrap(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO webhook_connections (account_id, channel, url_ciphertext, hint)
			VALUES ($1, 'slack', $2, $3)`, acc, sealed, alerting.WebhookHint(u)); err != nil {
			return nil, wrap(err)
		}
		if _, err := db.Pool.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel, status,
				title, body, created_at, next_attempt_at, queued_at)
			SELECT d.id, $1, 'rul_seed', 'seed', 'mcp_seed', 'slack', 'queued', d.title, 'seeded', $2, $2, $2
			FROM unnest($3::text[], $4::text[]) AS d(id, title)`, acc, now, dids, titles); err != nil {
			return nil, wrap(err)
		}
	}
	return accountIDs, nil
}
