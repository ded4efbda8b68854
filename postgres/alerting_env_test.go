package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/postgres"
)

// deliveryRow is a delivery as the tests inspect it.
type deliveryRow struct {
	RuleID, RuleName, Channel, Status string
	Recipient                         *string
}

func (d deliveryRow) String() string {
	r := "team"
	if d.Recipient != nil {
		r = *d.Recipient
	}
	return fmt.Sprintf("%s/%s/%s", d.Channel, r, d.Status)
}

// deliveries returns every delivery of a rule.
func deliveries(t testing.TB, db *postgres.DB, ruleID string) []deliveryRow {
	t.Helper()
	rows, err := db.Pool.Query(context.Background(), `SELECT rule_id, rule_name, channel, status, recipient_user_id
		FROM deliveries WHERE rule_id = $1 ORDER BY channel, recipient_user_id`, ruleID)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[deliveryRow])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// countBy counts deliveries by channel.
func countBy(ds []deliveryRow) map[string]int {
	out := map[string]int{}
	for _, d := range ds {
		out[d.Channel]++
	}
	return out
}

// testBox is a SecretBox with a fixed test key.
func testBox(t testing.TB) *alerting.SecretBox {
	t.Helper()
	key := make([]byte, alerting.SecretKeyLen)
	for i := range key {
		key[i] = byte(i + 1)
	}
	box, err := alerting.NewSecretBox(key)
	if err != nil {
		t.Fatal(err)
	}
	return box
}

// stores are the alerting stores on one database.
type stores struct {
	Channels *postgres.ChannelService
	Rules    *postgres.RuleService
	Inbox    *postgres.InboxService
	Log      *postgres.NotificationService
	Eval     *alerting.RuleEvaluator
	Store    *postgres.EvaluationStore
}

func newStores(t testing.TB, db *postgres.DB, cdb *clickhouse.DB) stores {
	s := stores{
		Channels: postgres.NewChannelService(db, testBox(t)),
		Rules:    postgres.NewRuleService(db),
		Inbox:    postgres.NewInboxService(db),
		Log:      postgres.NewNotificationService(db),
		Store:    postgres.NewEvaluationStore(db),
	}
	if cdb != nil {
		s.Eval = alerting.NewRuleEvaluator(s.Store, cdb.Reads, db.TransitionConcurrency())
	}
	return s
}

const (
	slackURL   = "https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnopqrstuvwx"
	discordURL = "https://discord.com/api/webhooks/123456789012345678/abcdefghijklmnopqrstuvwxyz-_0123456789"
)

// errorRule is a rule that fires when the MCP's error rate over 5 minutes
// is above 10%.
func errorRule(channels ...string) alerting.RuleCreate {
	return alerting.RuleCreate{Name: "Errors", Metric: alerting.MetricErrorRate, Comparator: alerting.CompGT,
		Threshold: 0.1, WindowMinutes: 5, Channels: channels}
}

func ptr[T any](v T) *T { return &v }

// fireMeasured applies the ok -> firing transition the evaluator decides
// for r as it was loaded, measured at value, with the evaluator's fan-out:
// tests use it to write a transition computed before a concurrent change
// of the rule.
func fireMeasured(ctx context.Context, s *postgres.EvaluationStore, accountID string, r alerting.Rule, value float64, now time.Time) (bool, error) {
	applied, _, err := s.Transition(ctx, alerting.EvalRule{Rule: r, AccountID: accountID},
		alerting.StateChange{Next: alerting.StateFiring, Value: &value, At: now},
		func(rule alerting.Rule, audience []alerting.Member, connected map[string]bool) []alerting.PlannedDelivery {
			return alerting.PlanFanOut(rule, value, audience, connected)
		})
	return applied, err
}
