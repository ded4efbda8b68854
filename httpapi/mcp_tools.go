package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
)

// The tools of /mcp. Each calls the API handler of the same read (so the
// figures, defaults, bounds and errors are the API's) and answers with a
// compact text for the model plus the API's JSON as structuredContent.

// mcpRangeArgs is the range every metric tool takes.
type mcpRangeArgs struct {
	From string `json:"from,omitempty" jsonschema:"First UTC day, YYYY-MM-DD, inclusive. Default: to minus 6 days."`
	To   string `json:"to,omitempty" jsonschema:"Last UTC day, YYYY-MM-DD, inclusive. Default: today (UTC)."`
}

func (a mcpRangeArgs) query() RangeQuery { return RangeQuery(a) }

type mcpIDArgs struct {
	MCPID string `json:"mcp_id" jsonschema:"The MCP's id (mcp_…), from list_mcps."`
}

type overviewArgs struct {
	mcpIDArgs
	Compare bool `json:"compare_previous,omitempty" jsonschema:"Also return the same figures over as many days just before from."`
	mcpRangeArgs
}

type toolsArgs struct {
	mcpIDArgs
	mcpRangeArgs
}

type toolArgs struct {
	mcpIDArgs
	Name string `json:"name" jsonschema:"The tool's name, as get_tools lists it."`
	mcpRangeArgs
}

type breakdownArgs struct {
	mcpIDArgs
	By         string `json:"by" jsonschema:"Dimension: tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, user_id, or attribute:<key>."`
	Tool       string `json:"tool,omitempty" jsonschema:"Only the calls of this tool."`
	Method     string `json:"method,omitempty" jsonschema:"Only the items of this MCP method, e.g. tools/call."`
	ClientName string `json:"client_name,omitempty" jsonschema:"Only the items of this client, e.g. claude-code."`
	Status     string `json:"status,omitempty" jsonschema:"ok or error: only successful or only failed items."`
	Limit      int    `json:"limit,omitempty" jsonschema:"Values listed (1 to 200, default 20); the rest are summed in other."`
	mcpRangeArgs
}

type sessionsArgs struct {
	mcpIDArgs
	Limit  int    `json:"limit,omitempty" jsonschema:"Sessions per page (1 to 500, default 50)."`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page."`
	mcpRangeArgs
}

type timelineArgs struct {
	mcpIDArgs
	SessionID string `json:"session_id" jsonschema:"The session's id, as list_sessions shows it."`
	Limit     int    `json:"limit,omitempty" jsonschema:"Items per page (1 to 1000, default 100)."`
	Cursor    string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page."`
	From      string `json:"from,omitempty" jsonschema:"Optional first UTC day, YYYY-MM-DD: only the session's items from that day on."`
	To        string `json:"to,omitempty" jsonschema:"Optional last UTC day, YYYY-MM-DD: only the session's items up to that day."`
}

type ruleHistoryArgs struct {
	RuleID string `json:"rule_id" jsonschema:"The rule's id (rul_…), from list_rules."`
	Limit  int    `json:"limit,omitempty" jsonschema:"Events per page (1 to 200, default 50)."`
	Cursor string `json:"cursor,omitempty" jsonschema:"next_cursor of the previous page."`
}

type topErrorsArgs struct {
	mcpIDArgs
	Tool string `json:"tool,omitempty" jsonschema:"Only this tool's errors."`
	mcpRangeArgs
}

// TopErrorsResult is top_errors' JSON: error kinds by count, most
// frequent first.
type TopErrorsResult struct {
	MCPID string          `json:"mcp_id"`
	From  string          `json:"from"`
	To    string          `json:"to"`
	Tool  *string         `json:"tool"`
	Items []TopErrorEntry `json:"items"`
}

// TopErrorEntry is one kind of error: its type, where it was raised, how
// often and its last message. LastSeenAt is null for one tool's errors
// (the tool read does not keep it).
type TopErrorEntry struct {
	ErrorType   string     `json:"error_type"`
	Method      string     `json:"method"`
	Name        string     `json:"name"`
	Count       int64      `json:"count"`
	LastMessage string     `json:"last_message"`
	LastSeenAt  *time.Time `json:"last_seen_at"`
}

const datePattern = `^\d{4}-\d{2}-\d{2}$`

// bound sets the schema constraints the API's own parameters carry.
func bound(limitMax, limitDefault int) func(*jsonschema.Schema) {
	return func(sc *jsonschema.Schema) {
		for name, p := range sc.Properties {
			switch name {
			case "from", "to":
				p.Pattern = datePattern
			case "limit":
				lo, hi := 1.0, float64(limitMax)
				p.Minimum, p.Maximum = &lo, &hi
				p.Default = []byte(strconv.Itoa(limitDefault))
			case "status":
				p.Enum = []any{"ok", "error"}
			}
		}
	}
}

func datesOnly(sc *jsonschema.Schema) { bound(0, 0)(sc) }

func (s *Server) addMCPTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[struct{}]{name: "list_mcps", title: "List MCPs",
		desc: "Lists the MCP servers of your account with their ids, names and descriptions. Call it first: every other tool takes an mcp_id.",
		call: func(ctx context.Context, _ struct{}) (any, string, error) {
			out, err := s.listMCPs(ctx, nil)
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d MCPs:\n", len(out.Body.Items))
			for _, m := range out.Body.Items {
				fmt.Fprintf(&b, "- %s %q", m.ID, m.Name)
				if m.Description != "" {
					fmt.Fprintf(&b, ": %s", m.Description)
				}
				b.WriteByte('\n')
			}
			return out.Body, b.String(), nil
		}})

	if s.opts.Analytics != nil {
		s.addMetricTools(srv)
		s.addFailureTools(srv)
		s.addReleaseTools(srv)
	}
	if s.opts.Rules != nil {
		s.addRuleTools(srv)
	}
	if s.opts.Probes != nil {
		s.addProbeTools(srv)
	}
	if s.opts.SLOs != nil && s.opts.SLI != nil {
		s.addSLOTools(srv)
	}
	if s.opts.Inventory != nil && s.opts.Analytics != nil && s.opts.MCPs != nil {
		s.addToolChangeTools(srv)
	}
}

func (s *Server) addMetricTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[overviewArgs]{name: "get_overview", title: "MCP overview", store: true, bounds: datesOnly,
		desc: "Headline figures of one MCP over a range of UTC days: calls (all methods), errors, error rate, sessions, users, latency " +
			"(avg, p50, p95, p99 in ms), errors by kind, unknown-tool and repeated calls, and a daily series. Use it for 'how is my server doing this week?'.",
		call: func(ctx context.Context, in overviewArgs) (any, string, error) {
			q := &overviewInput{ID: in.MCPID, RangeQuery: in.query()}
			if in.Compare {
				q.Compare = analytics.ComparePrevious
			}
			out, err := s.getOverview(ctx, q)
			if err != nil {
				return nil, "", err
			}
			o := out.Body
			text := fmt.Sprintf("MCP %s, %s to %s: %d calls, %d errors (%s), %d sessions, %d users; latency avg %s, p50 %s, p95 %s, p99 %s.",
				o.MCPID, o.From, o.To, o.Calls, o.Errors, pct(o.ErrorRate), o.Sessions, o.Users, ms(o.AvgMs), ms(o.P50Ms), ms(o.P95Ms), ms(o.P99Ms))
			text += failureText(o)
			if p := o.Previous; p != nil {
				text += fmt.Sprintf("\nPrevious period %s to %s: %d calls, %d errors (%s), p95 %s.", p.From, p.To, p.Calls, p.Errors, pct(p.ErrorRate), ms(p.P95Ms))
			}
			return o, text, nil
		}})

	addTool(s, srv, mcpTool[toolsArgs]{name: "get_tools", title: "Tools of an MCP", store: true, bounds: datesOnly,
		desc: "Every tool of one MCP called in the range, by calls descending, with errors, error rate, latency (avg, p50, p95 ms) and sessions.",
		call: func(ctx context.Context, in toolsArgs) (any, string, error) {
			out, err := s.listTools(ctx, &toolsInput{ID: in.MCPID, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			l := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "%d tools called %s to %s (calls, errors, error rate, p95):\n", len(l.Items), l.From, l.To)
			for _, t := range l.Items {
				fmt.Fprintf(&b, "- %s: %d calls, %d errors (%s), p95 %s\n", t.Name, t.Calls, t.Errors, pct(t.ErrorRate), ms(t.P95Ms))
			}
			return l, b.String(), nil
		}})

	addTool(s, srv, mcpTool[toolArgs]{name: "get_tool", title: "One tool", store: true, bounds: datesOnly,
		desc: "One tool of one MCP over the range: calls, errors, latency (avg, p50, p95, p99 ms), daily series, its error types with the last message, its clients, errors by kind, most frequent refused arguments, answer sizes and repeated calls.",
		call: func(ctx context.Context, in toolArgs) (any, string, error) {
			out, err := s.getTool(ctx, &toolInput{ID: in.MCPID, Name: in.Name, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			t := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "Tool %s, %s to %s: %d calls, %d errors (%s); latency avg %s, p50 %s, p95 %s, p99 %s.\n",
				t.Name, t.From, t.To, t.Calls, t.Errors, pct(t.ErrorRate), ms(t.AvgMs), ms(t.P50Ms), ms(t.P95Ms), ms(t.P99Ms))
			for _, e := range t.ErrorTypes {
				fmt.Fprintf(&b, "- error %s: %d, last message %q\n", orNone(e.ErrorType), e.Count, e.LastMessage)
			}
			for _, c := range t.Clients {
				fmt.Fprintf(&b, "- client %s: %d calls\n", orNone(c.ClientName), c.Calls)
			}
			toolFailureText(&b, t)
			return t, b.String(), nil
		}})

	addTool(s, srv, mcpTool[breakdownArgs]{name: "get_breakdown", title: "Breakdown", store: true, bounds: bound(analytics.MaxBreakdownLimit, analytics.DefaultBreakdownLimit),
		desc: "One MCP's figures split by one dimension (by: tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, user_id " +
			"or attribute:<key>), optionally filtered by tool, method, client_name and status. Answers e.g. 'which clients fail most?' (by=client_name, status=error).",
		call: func(ctx context.Context, in breakdownArgs) (any, string, error) {
			out, err := s.getBreakdown(ctx, &breakdownInput{ID: in.MCPID, By: in.By, Tool: in.Tool, Method: in.Method, ClientName: in.ClientName,
				Status: in.Status, Limit: in.Limit, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			d := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "By %s, %s to %s (calls, errors, error rate, p95, sessions, users):\n", d.By, d.From, d.To)
			for _, it := range d.Items {
				fmt.Fprintf(&b, "- %s: %s\n", orNone(it.Value), figures(it.Figures))
			}
			if d.Other != nil {
				fmt.Fprintf(&b, "- (other values): %s\n", figures(*d.Other))
			}
			return d, b.String(), nil
		}})

	addTool(s, srv, mcpTool[sessionsArgs]{name: "list_sessions", title: "Sessions", store: true, bounds: bound(analytics.MaxSessionLimit, analytics.DefaultSessionLimit),
		desc: "Sessions of one MCP active in the range, most recent first, with calls, errors, client and user. Page with cursor (next_cursor).",
		call: func(ctx context.Context, in sessionsArgs) (any, string, error) {
			out, err := s.listSessions(ctx, &sessionsInput{ID: in.MCPID, Limit: in.Limit, Cursor: in.Cursor, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			p := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "%d sessions %s to %s:\n", len(p.Items), p.From, p.To)
			for _, x := range p.Items {
				fmt.Fprintf(&b, "- %s: %s to %s, %d calls, %d errors, client %s %s, user %s\n", x.SessionID, stamp(x.StartedAt), stamp(x.LastSeenAt),
					x.Calls, x.Errors, str(x.ClientName), str(x.ClientVersion), str(x.UserID))
			}
			if p.NextCursor != nil {
				fmt.Fprintf(&b, "More: cursor %s\n", *p.NextCursor)
			}
			return p, b.String(), nil
		}})

	addTool(s, srv, mcpTool[timelineArgs]{name: "get_session_timeline", title: "Session timeline", store: true, bounds: bound(analytics.MaxTimelineLimit, analytics.DefaultTimelineLimit),
		desc: "What happened in one session of one MCP, oldest first: each item's time, method, tool, duration, status, error and its kind, answer size, and repeat (n: the nth same call in a row). Page with cursor (next_cursor).",
		call: func(ctx context.Context, in timelineArgs) (any, string, error) {
			out, err := s.getSessionTimeline(ctx, &timelineInput{ID: in.MCPID, SessionID: in.SessionID, Limit: in.Limit, Cursor: in.Cursor, From: in.From, To: in.To})
			if err != nil {
				return nil, "", err
			}
			t := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "Session %s: %s to %s, %d calls, %d errors, client %s %s, user %s.\n", t.SessionID, stamp(t.StartedAt), stamp(t.LastSeenAt),
				t.Calls, t.Errors, str(t.ClientName), str(t.ClientVersion), str(t.UserID))
			for _, it := range t.Items {
				fmt.Fprintf(&b, "- %s %s %s %s %s", stamp(it.Timestamp), it.Method, str(it.Name), ms(it.DurationMs), it.Status)
				if it.Status == analytics.StatusError {
					fmt.Fprintf(&b, " %s %s: %s", str(it.ErrorKind), str(it.ErrorType), str(it.ErrorMessage))
				}
				timelineFailureText(&b, it)
				b.WriteByte('\n')
			}
			if t.NextCursor != nil {
				fmt.Fprintf(&b, "More: cursor %s\n", *t.NextCursor)
			}
			return t, b.String(), nil
		}})

	addTool(s, srv, mcpTool[topErrorsArgs]{name: "top_errors", title: "Top errors", store: true, bounds: datesOnly,
		desc: "The most frequent errors of one MCP in the range: error type, method, tool, count and last message, most frequent first " +
			"(at most 10 for the whole MCP; every type for one tool). Answers 'which tools failed most this week, and why?'.",
		call: func(ctx context.Context, in topErrorsArgs) (any, string, error) {
			res := TopErrorsResult{MCPID: in.MCPID, Items: []TopErrorEntry{}}
			if in.Tool != "" {
				out, err := s.getTool(ctx, &toolInput{ID: in.MCPID, Name: in.Tool, RangeQuery: in.query()})
				if err != nil {
					return nil, "", err
				}
				res.From, res.To, res.Tool = out.Body.From, out.Body.To, &in.Tool
				for _, e := range out.Body.ErrorTypes {
					res.Items = append(res.Items, TopErrorEntry{ErrorType: e.ErrorType, Method: analytics.MethodToolsCall, Name: in.Tool,
						Count: e.Count, LastMessage: e.LastMessage})
				}
			} else {
				out, err := s.getInsights(ctx, &mcpRangeInput{ID: in.MCPID, RangeQuery: in.query()})
				if err != nil {
					return nil, "", err
				}
				res.From, res.To = out.Body.From, out.Body.To
				for _, e := range out.Body.TopErrors.Items {
					at := e.LastSeenAt
					res.Items = append(res.Items, TopErrorEntry{ErrorType: e.ErrorType, Method: e.Method, Name: e.Name, Count: e.Count,
						LastMessage: e.LastMessage, LastSeenAt: &at})
				}
			}
			var b strings.Builder
			kinds := "error kinds"
			if len(res.Items) == 1 {
				kinds = "error kind"
			}
			fmt.Fprintf(&b, "%d %s %s to %s, most frequent first:\n", len(res.Items), kinds, res.From, res.To)
			for _, e := range res.Items {
				fmt.Fprintf(&b, "- %d× %s on %s %s, last message %q\n", e.Count, orNone(e.ErrorType), e.Method, orNone(e.Name), e.LastMessage)
			}
			return res, b.String(), nil
		}})
}

func (s *Server) addRuleTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[mcpIDArgs]{name: "list_rules", title: "Alert rules",
		desc: "The alert rules of one MCP with their metric, threshold, window, state (ok or firing) and when each last fired.",
		call: func(ctx context.Context, in mcpIDArgs) (any, string, error) {
			out, err := s.listRules(ctx, &mcpRulesInput{MCPID: in.MCPID})
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d rules:\n", len(out.Body.Items))
			for _, r := range out.Body.Items {
				fired := "never fired"
				if r.LastFiredAt != nil {
					fired = "last fired " + stamp(*r.LastFiredAt)
				}
				fmt.Fprintf(&b, "- %s %q: %s %s %s %g over %d min, %s, %s%s\n", r.ID, r.Name, r.Metric, ruleTool(r), r.Comparator, r.Threshold,
					r.WindowMinutes, r.State, fired, map[bool]string{true: "", false: " (disabled)"}[r.Enabled])
			}
			return out.Body, b.String(), nil
		}})

	addTool(s, srv, mcpTool[ruleHistoryArgs]{name: "get_rule_history", title: "Alert rule history", bounds: bound(200, 50),
		desc: "When one alert rule fired and resolved, newest first, with the measured value and the threshold. Page with cursor (next_cursor).",
		call: func(ctx context.Context, in ruleHistoryArgs) (any, string, error) {
			out, err := s.listRuleEvents(ctx, &ruleEventsInput{RuleID: in.RuleID, PageQuery: PageQuery{Limit: in.Limit, Cursor: in.Cursor}})
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d events, newest first:\n", len(out.Body.Items))
			for _, e := range out.Body.Items {
				v := "no value"
				if e.Value != nil {
					v = strconv.FormatFloat(*e.Value, 'g', 6, 64)
				}
				why := ""
				if e.Reason != nil {
					why = " (rule " + *e.Reason + ")"
				}
				fmt.Fprintf(&b, "- %s %s%s: value %s, threshold %g\n", stamp(e.At), e.Kind, why, v, e.Threshold)
			}
			if out.Body.NextCursor != nil {
				fmt.Fprintf(&b, "More: cursor %s\n", *out.Body.NextCursor)
			}
			return out.Body, b.String(), nil
		}})
}

func ruleTool(r alerting.Rule) string {
	if r.Tool == nil {
		return "(all tools)"
	}
	return "of " + *r.Tool
}

func figures(f analytics.Figures) string {
	return fmt.Sprintf("%d calls, %d errors (%s), p95 %s, %d sessions, %d users", f.Calls, f.Errors, pct(f.ErrorRate), ms(f.P95Ms), f.Sessions, f.Users)
}

func pct(r float64) string { return strconv.FormatFloat(100*r, 'f', 2, 64) + "%" }

func ms(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return strconv.FormatFloat(*v, 'f', 1, 64) + " ms"
}

func str(v *string) string {
	if v == nil {
		return "-"
	}
	return *v
}

func orNone(v string) string {
	if v == "" {
		return "(none)"
	}
	return v
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }
