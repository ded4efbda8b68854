package postgres_test

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
)

func TestRuleLifecycle(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	ctx := context.Background()

	rules, err := s.Rules.Rules(ctx, tm.AccountID, tm.MCPID)
	if err != nil || rules == nil || len(rules) != 0 {
		t.Fatalf("no rules yet: %v, %v", rules, err)
	}
	// Seed §2: a rule may name a channel nobody connected.
	c := errorRule(alerting.ChannelDiscord, alerting.ChannelInApp)
	c.Tool = ptr("search_docs")
	r, err := s.Rules.CreateRule(ctx, tm.AccountID, tm.MCPID, c)
	if err != nil {
		t.Fatal(err)
	}
	if r.ID == "" || r.MCPID != tm.MCPID || r.State != alerting.StateOK || !r.Enabled || r.LastFiredAt != nil ||
		*r.Tool != "search_docs" || len(r.Channels) != 2 || r.CreatedAt.Location() != time.UTC || time.Since(r.CreatedAt) > time.Minute {
		t.Fatalf("created %+v", r)
	}
	second, _ := s.Rules.CreateRule(ctx, tm.AccountID, tm.MCPID, errorRule(alerting.ChannelEmail))
	rules, _ = s.Rules.Rules(ctx, tm.AccountID, tm.MCPID)
	if len(rules) != 2 || rules[0].ID != r.ID || rules[1].ID != second.ID {
		t.Fatalf("rules oldest first: %+v", rules)
	}

	// A change of what the rule measures puts it back to ok; a rename keeps
	// the state.
	testdb.Exec(t, db, `UPDATE rules SET state = 'firing' WHERE id = $1`, r.ID)
	up, err := s.Rules.UpdateRule(ctx, tm.AccountID, r.ID, alerting.RuleUpdate{Name: ptr("Renamed")})
	if err != nil || up.Name != "Renamed" || up.State != alerting.StateFiring || *up.Tool != "search_docs" {
		t.Fatalf("rename: %+v, %v", up, err)
	}
	up, err = s.Rules.UpdateRule(ctx, tm.AccountID, r.ID, alerting.RuleUpdate{Threshold: ptr(0.5), Tool: alerting.NullableString{Set: true}})
	if err != nil || up.Threshold != 0.5 || up.Tool != nil || up.State != alerting.StateOK || up.Name != "Renamed" {
		t.Fatalf("redefine: %+v, %v", up, err)
	}
	if _, err := s.Rules.UpdateRule(ctx, tm.AccountID, r.ID, alerting.RuleUpdate{Threshold: ptr(2.0)}); telemetry.ErrorCode(err) != telemetry.EINVALID {
		t.Fatalf("error_rate threshold 2: %v", err)
	}
	got, _ := s.Rules.Rule(ctx, tm.AccountID, r.ID)
	if got.Threshold != 0.5 {
		t.Fatalf("an invalid update was stored: %+v", got)
	}

	if err := s.Rules.DeleteRule(ctx, tm.AccountID, r.ID); err != nil {
		t.Fatal(err)
	}
	if err := s.Rules.DeleteRule(ctx, tm.AccountID, r.ID); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := s.Rules.Rule(ctx, tm.AccountID, r.ID); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
		t.Fatalf("read after delete: %v", err)
	}
}

func TestRuleCreateValidates(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	c := errorRule()
	if _, err := s.Rules.CreateRule(context.Background(), tm.AccountID, tm.MCPID, c); telemetry.ErrorCode(err) != telemetry.EINVALID {
		t.Fatalf("no channels: %v", err)
	}
	c = errorRule(alerting.ChannelInApp)
	c.Name = "a\x00b"
	if _, err := s.Rules.CreateRule(context.Background(), tm.AccountID, tm.MCPID, c); telemetry.ErrorCode(err) != telemetry.EINVALID {
		t.Fatalf("NUL in name: %v", err)
	}
}

// Another account's rules and MCPs do not exist for the caller: every
// method answers not found and changes nothing.
func TestRulesOfAnotherAccountAreNotFound(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	mine, theirs := testdb.NewTeam(t, db, 1), testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	ctx := context.Background()
	r, err := s.Rules.CreateRule(ctx, theirs.AccountID, theirs.MCPID, errorRule(alerting.ChannelInApp))
	if err != nil {
		t.Fatal(err)
	}
	nf := func(what string, err error) {
		t.Helper()
		if telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
			t.Errorf("%s: %v, want not found", what, err)
		}
	}
	for _, mcp := range []string{theirs.MCPID, "mcp_unknown", "", "a/b", "x\x00y"} {
		_, err := s.Rules.CreateRule(ctx, mine.AccountID, mcp, errorRule(alerting.ChannelInApp))
		nf("create on "+mcp, err)
		_, err = s.Rules.Rules(ctx, mine.AccountID, mcp)
		nf("list on "+mcp, err)
	}
	for _, id := range []string{r.ID, "rul_unknown", "", "x\x00y"} {
		_, err := s.Rules.Rule(ctx, mine.AccountID, id)
		nf("read "+id, err)
		_, err = s.Rules.UpdateRule(ctx, mine.AccountID, id, alerting.RuleUpdate{Name: ptr("mine now")})
		nf("update "+id, err)
		nf("delete "+id, s.Rules.DeleteRule(ctx, mine.AccountID, id))
	}
	got, err := s.Rules.Rule(ctx, theirs.AccountID, r.ID)
	if err != nil || got.Name != "Errors" {
		t.Fatalf("their rule changed: %+v, %v", got, err)
	}
}

// Contract: deleting an MCP removes its rules.
func TestDeletingAnMCPRemovesItsRules(t *testing.T) {
	t.Parallel()
	_, db := testdb.Postgres(t)
	tm := testdb.NewTeam(t, db, 1)
	s := newStores(t, db, nil)
	ctx := context.Background()
	keep := testdb.AddMCP(t, db, tm.AccountID)
	gone, _ := s.Rules.CreateRule(ctx, tm.AccountID, tm.MCPID, errorRule(alerting.ChannelInApp))
	kept, _ := s.Rules.CreateRule(ctx, tm.AccountID, keep, errorRule(alerting.ChannelInApp))
	testdb.Exec(t, db, `DELETE FROM mcps WHERE id = $1`, tm.MCPID)
	if _, err := s.Rules.Rule(ctx, tm.AccountID, gone.ID); telemetry.ErrorCode(err) != telemetry.ENOTFOUND {
		t.Fatalf("rule of the deleted MCP: %v", err)
	}
	if _, err := s.Rules.Rule(ctx, tm.AccountID, kept.ID); err != nil {
		t.Fatalf("rule of another MCP: %v", err)
	}
}
