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
	return SeedDeliveries(ctx, db, box, alerting.ChannelSlack, accounts, perAccount, func(i int) map[string]string {
		return map[string]string{"url": hookURL(i)}
	})
}

// SeedDeliveries is SeedChatDeliveries for any team channel of the
// registry: each account is connected with connect(i), the channel's own
// connect body, checked and sealed as the connect route does.
func SeedDeliveries(ctx context.Context, db *DB, box *alerting.SecretBox, channel string, accounts, perAccount int, connect func(i int) map[string]string) ([]string, error) {
	in, ok := alerting.LookupIntegration(channel)
	if !ok || in.Connection == nil {
		return nil, fmt.Errorf("seed: %s is not a team channel of the registry", channel)
	}
	now := time.Now()
	accIDs, sealed, hints := make([]string, accounts), make([][]byte, accounts), make([]string, accounts)
	var dAcc, dIDs, dTitles []string
	for i := range accIDs {
		accIDs[i] = ids.New(prefixAccount)
		c, err := in.Connection.Open(ctx, connect(i), alerting.ConnectEnv{})
		if err != nil {
			return nil, err
		}
		if sealed[i], err = box.Seal([]byte(c.Secret), alerting.WebhookAssociatedData(accIDs[i], channel)); err != nil {
			return nil, err
		}
		hints[i] = c.Hint
		for n := 0; n < perAccount; n++ {
			dAcc, dIDs, dTitles = append(dAcc, accIDs[i]), append(dIDs, ids.New(prefixDelivery)), append(dTitles, fmt.Sprintf("Firing: seed %d/%d", i, n))
		}
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO accounts (id, name) SELECT unnest($1::text[]), 'seed'`, accIDs); err != nil {
		return nil, wrap(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO webhook_connections (account_id, channel, url_ciphertext, hint)
		SELECT a, $4, c, h FROM unnest($1::text[], $2::bytea[], $3::text[]) AS w(a, c, h)`, accIDs, sealed, hints, channel); err != nil {
		return nil, wrap(err)
	}
	if _, err := db.Pool.Exec(ctx, `INSERT INTO deliveries (id, account_id, rule_id, rule_name, mcp_id, channel, status,
			title, body, created_at, next_attempt_at, queued_at)
		SELECT d.id, d.acc, 'rul_seed', 'seed', 'mcp_seed', $5, 'queued', d.title, 'seeded', $1, $1, $1
		FROM unnest($2::text[], $3::text[], $4::text[]) AS d(id, acc, title)`, now, dIDs, dAcc, dTitles, channel); err != nil {
		return nil, wrap(err)
	}
	return accIDs, nil
}
