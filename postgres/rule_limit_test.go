package postgres_test

import (
	"context"
	"sync"
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
)

// An account cannot hold more rules than the cap, even when creations
// race; deleting one makes room.
func TestRulesPerAccountCap(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	_, db := testdb.Postgres(t)
	team := testdb.NewTeam(t, db, 1)
	mcp := team.MCPID
	svc := postgres.NewRuleService(db)
	svc.MaxPerAccount = 3
	rule := alerting.RuleCreate{Name: "r", Metric: alerting.MetricCalls, Comparator: alerting.CompLT, Threshold: 1,
		WindowMinutes: 5, Channels: []string{alerting.ChannelInApp}}
	var wg sync.WaitGroup
	var mu sync.Mutex
	created, limited := 0, 0
	for i := 0; i < 6; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := svc.CreateRule(ctx, team.AccountID, mcp, rule)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case telemetry.ErrorCode(err) == telemetry.ELIMITREACHED:
				limited++
			default:
				t.Errorf("creation: %v", err)
			}
		}()
	}
	wg.Wait()
	if created != 3 || limited != 3 {
		t.Fatalf("six racing creations under a cap of 3: %d created, %d limited", created, limited)
	}
	rules, err := svc.Rules(ctx, team.AccountID, mcp)
	if err != nil || len(rules) != 3 {
		t.Fatalf("%d rules, %v", len(rules), err)
	}
	if err := svc.DeleteRule(ctx, team.AccountID, rules[0].ID); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateRule(ctx, team.AccountID, mcp, rule); err != nil {
		t.Fatalf("after a deletion: %v", err)
	}
}
