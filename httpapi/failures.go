package httpapi

import (
	"context"

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
		"most calls first, at most 200 names. `sessions` is exact. `closest` is the real tool the name is probably a typo of: "+
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
