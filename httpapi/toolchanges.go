package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

type toolChangeInput struct {
	ID       string `path:"id" maxLength:"64" doc:"The MCP's id."`
	ChangeID string `path:"change_id" maxLength:"20" doc:"The change's id, as GET /v1/mcps/{id}/inventory lists it."`
}

var getToolChangeOp = huma.Operation{OperationID: "get-tool-change", Summary: "A tool change, graded, with who it hit",
	Tags: []string{"Metrics"}, Errors: []int{404, 422, 503},
	Description: "One change of the MCP's tool inventory (see GET /v1/mcps/{id}/inventory): `id`, `at`, `tool`, `kind`, `server_version`, " +
		"`schema_hash`, `severity` (`breaking`, `risky` or `benign`; null for changes recorded before grading) and `reasons` " +
		"(`[{code, message}]`, the worst first), with `before_definition` and `after_definition` (the tool's definitions as the SDK " +
		"reported them, null when not reported), `diff` (a line diff of their canonical pretty JSON: lines start with two spaces when kept, " +
		"`- ` removed, `+ ` added; at most 2,000 lines), `affected_clients` (`[{client_name, calls_before}]`: the clients that called the " +
		"tool in the 7 days before the change, most calls first, at most 100) and `before` and `after` (`{from, to, calls, errors, " +
		"error_rate, error_kinds}` of the tool's calls over matched windows: after from the change to now, at most 7 days; before as " +
		"long, ending at the change). 404 for a change of another MCP or none. See docs/tool-changes.md.",
}

func (s *Server) getToolChange(ctx context.Context, in *toolChangeInput) (*bodyOf[analytics.ToolChangeDetail], error) {
	p := principal(ctx)
	if _, err := s.opts.MCPs.FindMCP(ctx, p.AccountID, in.ID); err != nil {
		return nil, err
	}
	c, before, after, err := s.opts.ToolChanges.ToolChange(ctx, in.ID, in.ChangeID)
	if err != nil {
		return nil, err
	}
	imp, err := s.opts.ChangeImpact.ToolChangeImpact(ctx, in.ID, c.Tool, c.At, time.Now())
	if err != nil {
		return nil, err
	}
	c.AffectedClients = imp.AffectedClients
	d := &analytics.ToolChangeDetail{InventoryChange: c, ToolChangeImpact: imp, Diff: analytics.DefinitionDiff(before, after)}
	for _, def := range []struct {
		raw []byte
		to  *any
	}{{before, &d.BeforeDefinition}, {after, &d.AfterDefinition}} {
		if def.raw != nil {
			*def.to = json.RawMessage(def.raw)
		}
	}
	return &bodyOf[analytics.ToolChangeDetail]{d}, nil
}

type toolChangesArgs struct {
	mcpIDArgs
	MinSeverity string `json:"min_severity,omitempty" jsonschema:"breaking, risky or benign: only the changes at least that severe. Default: every change."`
	mcpRangeArgs
}

// addToolChangeTools adds /mcp's list_tool_changes: the inventory's
// changes of a range, graded, as GET /v1/mcps/{id}/inventory lists them.
func (s *Server) addToolChangeTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[toolChangesArgs]{name: "list_tool_changes", title: "Tool changes", store: true, bounds: datesOnly,
		desc: "The changes of one MCP's tool set over a range of UTC days, newest first: each tool added, removed or changed, with its " +
			"severity (breaking, risky, benign) and reasons (e.g. required_added, read_only_dropped, model_instructions), the server version " +
			"that showed it and its id (GET /v1/mcps/{id}/inventory/changes/{change_id} has the diff and the clients it hit). " +
			"Tells what a release broke or made risky for the agents calling it.",
		call: func(ctx context.Context, in toolChangesArgs) (any, string, error) {
			if in.MinSeverity != "" && !analytics.ValidChangeSeverity(in.MinSeverity) {
				return nil, "", telemetry.FieldError(telemetry.EINVALID, "min_severity", "min_severity must be breaking, risky or benign.")
			}
			r, err := s.mcpRange(ctx, in.MCPID, in.query())
			if err != nil {
				return nil, "", err
			}
			inv, err := s.opts.Inventory.Inventory(ctx, in.MCPID, r)
			if err != nil {
				return nil, "", err
			}
			changes := []analytics.InventoryChange{}
			for _, c := range inv.Changes {
				if in.MinSeverity == "" || c.Severity != nil && analytics.SeverityRank(*c.Severity) >= analytics.SeverityRank(in.MinSeverity) {
					changes = append(changes, c)
				}
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d tool changes from %s to %s:\n", len(changes), inv.From, inv.To)
			for _, c := range changes {
				fmt.Fprintf(&b, "- %s %s %s (version %s, id %s)", stamp(c.At), c.Tool, c.Kind, str(c.ServerVersion), c.ID)
				if c.Severity != nil {
					fmt.Fprintf(&b, ": %s", *c.Severity)
				}
				for _, r := range c.Reasons {
					fmt.Fprintf(&b, "; %s: %s", r.Code, r.Message)
				}
				b.WriteByte('\n')
			}
			return map[string]any{"from": inv.From, "to": inv.To, "changes": changes}, b.String(), nil
		}})
}
