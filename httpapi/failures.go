package httpapi

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
)

// failureReader is the Analytics reader's failure reads, when it has them
// (the ClickHouse reader does).
func (s *Server) failureReader() analytics.FailureReader {
	fr, _ := s.opts.Analytics.(analytics.FailureReader)
	return fr
}

var getUnknownToolsOp = metricRead("get-unknown-tools", "Tools agents asked for that the server does not have",
	"The names agents called that the MCP's server does not offer, over the range: items with `error_kind` `unknown_tool` "+
		"(a `tools/call`, `prompts/get` or `resources/read` of a name or URI the server does not have), and, when the SDK "+
		"reported the tool inventory (GET /v1/mcps/{id}/inventory), `tools/call` items whose name the inventory did not list "+
		"at any time in the range. `{items: [{name, calls, sessions, closest, clients: [{client_name, calls}], last_seen_at}]}`, "+
		"most calls first, at most 200 names. `sessions` is exact. Counted from raw events: a range holding more than 5,000,000 "+
		"events of the MCP is refused (422 `range_too_large`); ask for fewer days. `closest` is the real tool the name is probably a typo of: "+
		"the nearest name of the inventory (of the tools called successfully in the range when the MCP reports no inventory) "+
		"by optimal string alignment distance, case-insensitive, at most a third of the name's length (1 to 3 edits); a name "+
		"that is a real name with a namespace added or dropped (`weather.get_forecast`) is close too; null when nothing is "+
		"close. See docs/failures.md.")

func (s *Server) getUnknownTools(ctx context.Context, in *mcpRangeInput) (*bodyOf[analytics.UnknownTools], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	u, err := analytics.UnknownToolReport(ctx, s.failureReader(), s.opts.Inventory, in.ID, r)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.UnknownTools]{u}, nil
}

// addFailureTools adds the /mcp tools of the failure reads.
func (s *Server) addFailureTools(srv *mcp.Server) {
	if s.failureReader() == nil {
		return
	}
	addTool(s, srv, mcpTool[toolsArgs]{name: "list_unknown_tools", title: "Unknown tools", store: true, bounds: datesOnly,
		desc: "Names agents asked for that one MCP's server does not have (error_kind unknown_tool, or tool calls of names its " +
			"tool inventory never listed), most calls first, each with its calls, sessions, the real tool it probably meant " +
			"(closest, or none), its clients and its last call.",
		call: func(ctx context.Context, in toolsArgs) (any, string, error) {
			out, err := s.getUnknownTools(ctx, &mcpRangeInput{ID: in.MCPID, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			u := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "%d unknown names asked for %s to %s:\n", len(u.Items), u.From, u.To)
			for _, it := range u.Items {
				fmt.Fprintf(&b, "- %s: %d calls in %d sessions, probably meant %s, last %s", it.Name, it.Calls, it.Sessions, str(it.Closest), stamp(it.LastSeenAt))
				for _, c := range it.Clients {
					fmt.Fprintf(&b, "; %s %d", orNone(c.ClientName), c.Calls)
				}
				b.WriteByte('\n')
			}
			return u, b.String(), nil
		}})
}

// failureText is the overview's failure figures as a sentence.
func failureText(o *analytics.Overview) string {
	var b strings.Builder
	fmt.Fprintf(&b, " %s calls of unknown tools, %s repeated calls.", countOrTooMany(o.UnknownToolCalls), countOrTooMany(o.RepeatedCalls))
	for _, k := range o.ErrorKinds {
		fmt.Fprintf(&b, " %s: %d.", k.ErrorKind, k.Count)
	}
	return b.String()
}

// toolFailureText appends a tool's failure figures, one a line.
func toolFailureText(b *strings.Builder, t *analytics.ToolDetail) {
	for _, k := range t.ErrorKinds {
		fmt.Fprintf(b, "- error kind %s: %d\n", k.ErrorKind, k.Count)
	}
	for _, r := range t.Refusals {
		fmt.Fprintf(b, "- refused %d times: %q\n", r.Count, r.Message)
	}
	fmt.Fprintf(b, "Answer sizes: p50 %s, p95 %s, max %s bytes; %s repeated calls.\n", num(t.P50), num(t.P95), intOrNone(t.Max), countOrTooMany(t.RepeatedCalls))
}

// timelineFailureText appends an item's answer size and repeat number.
func timelineFailureText(b *strings.Builder, it analytics.TimelineItem) {
	if it.ResponseBytes != nil {
		fmt.Fprintf(b, " %d bytes", *it.ResponseBytes)
	}
	if it.Repeat > 0 {
		fmt.Fprintf(b, " (repeat %d)", it.Repeat)
	}
}

func num(v *float64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(*v, 'f', -1, 64)
}

// countOrTooMany shows a count read from raw events, or why it is null.
func countOrTooMany(v *int64) string {
	if v == nil {
		return "(too many events in the range to count)"
	}
	return strconv.FormatInt(*v, 10)
}

func intOrNone(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}
