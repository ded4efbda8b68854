package clickhouse_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
)

func testInsights(t *testing.T, db *clickhouse.DB, o oracle) {
	ctx := context.Background()
	for _, r := range append(ranges(), analytics.NewRange(day0.AddDate(0, 0, 7), day0.AddDate(0, 0, 7))) {
		for _, mcp := range []string{mcpA, mcpB} {
			got, err := db.Insights(ctx, mcp, r)
			if err != nil {
				t.Fatal(err)
			}
			where := mcp + " " + r.FromDate() + ".." + r.ToDate()
			if got.From != r.FromDate() || got.To != r.ToDate() {
				t.Errorf("%s: echo %q %q", where, got.From, got.To)
			}
			if got.SlowestTools.Limit != 10 || got.FailingTools.MinCalls != 10 || got.FailingTools.Limit != 10 ||
				got.TopErrors.Limit != 10 || got.Clients.Limit != 20 || got.IdleTools.LookbackDays != 28 {
				t.Errorf("%s: parameters %+v", where, got)
			}
			tools := toolAggs(o.in(mcp, r, isTool))

			// slowest: tools with durations; the p95 order of the oracle is
			// only approximate, so compare the set and each estimate.
			slow := map[string]toolAgg{}
			for _, ta := range tools {
				if len(ta.durations) > 0 {
					slow[ta.name] = ta
				}
			}
			if len(got.SlowestTools.Items) != min(len(slow), 10) {
				t.Errorf("%s: slowest %+v, want %d", where, got.SlowestTools.Items, len(slow))
			}
			for i, s := range got.SlowestTools.Items {
				w, ok := slow[s.Name]
				if !ok || s.Calls != w.calls {
					t.Errorf("%s: slow tool %+v", where, s)
				}
				pctl(t, where+" slow p95", w.durations, 0.95, &s.P95Ms)
				pctl(t, where+" slow p50", w.durations, 0.5, &s.P50Ms)
				if i > 0 && got.SlowestTools.Items[i-1].P95Ms < s.P95Ms {
					t.Errorf("%s: slowest not by p95", where)
				}
			}

			// failing: exact order.
			var failing []analytics.FailingTool
			for _, ta := range tools {
				if ta.calls >= 10 && ta.errors > 0 {
					failing = append(failing, analytics.FailingTool{Name: ta.name, Calls: ta.calls, Errors: ta.errors, ErrorRate: analytics.ErrorRate(ta.errors, ta.calls)})
				}
			}
			sort.SliceStable(failing, func(i, j int) bool {
				if failing[i].ErrorRate != failing[j].ErrorRate {
					return failing[i].ErrorRate > failing[j].ErrorRate
				}
				if failing[i].Calls != failing[j].Calls {
					return failing[i].Calls > failing[j].Calls
				}
				return failing[i].Name < failing[j].Name
			})
			sameJSON(t, where+" failing", got.FailingTools.Items, orEmpty(failing))

			// top errors: by (type, method, name), count desc, latest first.
			type key struct{ typ, method, name string }
			errs := map[key]*analytics.TopError{}
			for _, it := range o.in(mcp, r, nil) {
				if it.Status != analytics.StatusError {
					continue
				}
				k := key{it.ErrorType, it.Method, it.Name}
				e := errs[k]
				if e == nil {
					e = &analytics.TopError{ErrorType: it.ErrorType, Method: it.Method, Name: it.Name}
					errs[k] = e
				}
				e.Count++
				if it.Timestamp.After(e.LastSeenAt) {
					e.LastSeenAt, e.LastMessage = it.Timestamp, it.ErrorMessage
				}
			}
			var top []analytics.TopError
			for _, e := range errs {
				top = append(top, *e)
			}
			sort.Slice(top, func(i, j int) bool {
				if top[i].Count != top[j].Count {
					return top[i].Count > top[j].Count
				}
				return top[i].LastSeenAt.After(top[j].LastSeenAt)
			})
			sameJSON(t, where+" top errors", got.TopErrors.Items, orEmpty(capAt(top, 10)))

			// clients: calls and distinct sessions per (name, version).
			type ck struct{ name, version string }
			calls := map[ck]int64{}
			sessions := map[ck]map[string]bool{}
			protocols := map[ck]map[string]int64{}
			all := aggregate(o.in(mcp, r, nil))
			for _, it := range o.in(mcp, r, nil) {
				k := ck{it.ClientName, it.ClientVersion}
				calls[k]++
				if protocols[k] == nil {
					protocols[k] = map[string]int64{}
				}
				if it.ProtocolVersion != "" {
					protocols[k][it.ProtocolVersion]++
				}
				if sessions[k] == nil {
					sessions[k] = map[string]bool{}
				}
				sessions[k][it.SessionID] = true
			}
			var cl []analytics.ClientShare
			for k, n := range calls {
				s := int64(len(sessions[k]))
				pv := []string{}
				for p := range protocols[k] {
					pv = append(pv, p)
				}
				sort.Slice(pv, func(i, j int) bool {
					a, b := protocols[k][pv[i]], protocols[k][pv[j]]
					return a > b || a == b && pv[i] < pv[j]
				})
				cl = append(cl, analytics.ClientShare{ClientName: k.name, ClientVersion: k.version, Calls: n, Sessions: s,
					CallShare: analytics.Share(n, all.calls), SessionShare: analytics.Share(s, all.sessions), ProtocolVersions: pv})
			}
			sort.Slice(cl, func(i, j int) bool {
				if cl[i].Calls != cl[j].Calls {
					return cl[i].Calls > cl[j].Calls
				}
				if cl[i].ClientName != cl[j].ClientName {
					return cl[i].ClientName < cl[j].ClientName
				}
				return cl[i].ClientVersion < cl[j].ClientVersion
			})
			sameClients(t, where+" clients", got.Clients.Items, orEmpty(capAt(cl, 20)), all.sessions)

			// idle: called in the 28 days before, not in the range.
			inRange := map[string]bool{}
			for _, ta := range tools {
				inRange[ta.name] = true
			}
			var idle []analytics.IdleTool
			for _, ta := range toolAggs(o.in(mcp, r.Before(28), isTool)) {
				if !inRange[ta.name] {
					idle = append(idle, analytics.IdleTool{Name: ta.name, LastSeenAt: ta.last, CallsBefore: ta.calls})
				}
			}
			sameJSON(t, where+" idle", got.IdleTools.Items, orEmpty(idle))
		}
	}

	// Hand-checked: the week of mcp-a.
	in, _ := db.Insights(ctx, mcpA, week)
	if len(in.FailingTools.Items) != 2 || in.FailingTools.Items[0].Name != unicode || in.FailingTools.Items[0].ErrorRate != 0.25 {
		t.Errorf("failing = %+v", in.FailingTools.Items)
	}
	if len(in.SlowestTools.Items) != 2 || in.SlowestTools.Items[0].Name != "search_docs" || in.SlowestTools.Items[1].Name != "edge" {
		t.Errorf("slowest = %+v", in.SlowestTools.Items)
	}
	wantIdle := []analytics.IdleTool{{Name: "old_tool", LastSeenAt: day0.AddDate(0, 0, -19).Add(3 * time.Hour), CallsBefore: 4}}
	sameJSON(t, "idle", in.IdleTools.Items, wantIdle)
	if len(in.TopErrors.Items) != 3 || in.TopErrors.Items[2].Method != "resources/read" || in.TopErrors.Items[2].LastMessage != "no such resource 9" {
		t.Errorf("top errors = %+v", in.TopErrors.Items)
	}
	j, _ := json.Marshal(in)
	if !jsonHas(j, `"slowest_tools":{"limit":10,"items":[`, `"failing_tools":{"min_calls":10,"limit":10,"items":[`, `"nightly_as_of":null`) {
		t.Errorf("insights JSON: %s", j)
	}
	none, _ := db.Insights(ctx, "mcp-none", week)
	j, _ = json.Marshal(none)
	for _, list := range []string{"slowest_tools", "failing_tools", "top_errors", "clients", "idle_tools"} {
		if !jsonHas(j, `"`+list+`":{`) || jsonHas(j, `"items":null`) {
			t.Errorf("empty insights JSON: %s", j)
		}
	}
}

// sameClients compares client shares: everything exactly but the
// distinct sessions (see distinct) and the session shares, which may be off
// only as far as their estimated numerator and denominator (the range's
// sessions, allSessions) can be.
func sameClients(t *testing.T, what string, got, want []analytics.ClientShare, allSessions int64) {
	t.Helper()
	if len(got) != len(want) {
		sameJSON(t, what, got, want)
		return
	}
	blank := func(cs []analytics.ClientShare) []analytics.ClientShare {
		out := append([]analytics.ClientShare(nil), cs...)
		for i := range out {
			out[i].Sessions, out[i].SessionShare = 0, 0
		}
		return out
	}
	sameJSON(t, what+" (but sessions)", blank(got), blank(want))
	for i, g := range got {
		w := want[i]
		where := fmt.Sprintf("%s [%s %s]", what, w.ClientName, w.ClientVersion)
		distinct(t, where+" sessions", g.Sessions, w.Sessions)
		if w.Sessions <= hllExact && allSessions <= hllExact {
			eqF(t, where+" session_share", g.SessionShare, w.SessionShare)
			continue
		}
		s, all := float64(w.Sessions), float64(allSessions)
		lo := (s - hllTolerance(w.Sessions)) / (all + hllTolerance(allSessions))
		hi := (s + hllTolerance(w.Sessions)) / max(1, all-hllTolerance(allSessions))
		within(t, where+" session_share", g.SessionShare, max(0, lo), min(1, hi))
	}
}

func sameJSON(t *testing.T, what string, got, want any) {
	t.Helper()
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Errorf("%s:\n got %s\nwant %s", what, gj, wj)
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func capAt[T any](s []T, n int) []T {
	if len(s) > n {
		return s[:n]
	}
	return s
}
