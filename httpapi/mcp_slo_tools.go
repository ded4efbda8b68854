package httpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/alerting"
)

type sloArgs struct {
	SLOID string `json:"slo_id" jsonschema:"The SLO's id (slo_…), from list_slos."`
}

// addSLOTools serves list_slos and get_slo: the SLO reads' JSON, with a
// line per SLO saying its objective, state, budget and burn.
func (s *Server) addSLOTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[mcpIDArgs]{name: "list_slos", title: "Service level objectives",
		desc: "The service level objectives of one MCP, each with its SLI, error budget (total, spent, remaining), burn rates over 5m, 30m, 1h, 6h and 3d, and state (ok, ticket or page).",
		call: func(ctx context.Context, in mcpIDArgs) (any, string, error) {
			out, err := s.listSLOs(ctx, &mcpRulesInput{MCPID: in.MCPID})
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d SLOs:\n", len(out.Body.Items))
			for _, st := range out.Body.Items {
				b.WriteString(sloLine(st))
			}
			return out.Body, b.String(), nil
		}})
	addTool(s, srv, mcpTool[sloArgs]{name: "get_slo", title: "Service level objective",
		desc: "One service level objective with its SLI, error budget, burn rates, state (ok, ticket or page), how long the budget lasts at this rate, and its daily series over the window.",
		call: func(ctx context.Context, in sloArgs) (any, string, error) {
			out, err := s.getSLO(ctx, &sloInput{SLOID: in.SLOID})
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			b.WriteString(sloLine(out.Body))
			fmt.Fprintf(&b, "Daily series over %d days: day, calls, bad, burn rate.\n", out.Body.WindowDays)
			for _, p := range out.Body.Series {
				if p.Total > 0 {
					fmt.Fprintf(&b, "- %s: %d calls, %d bad, burn %.2f\n", p.Day.Format("2006-01-02"), p.Total, p.Bad, p.BurnRate)
				}
			}
			return out.Body, b.String(), nil
		}})
}

func sloLine(st alerting.SLOStatus) string {
	sli := "no calls"
	if st.SLI != nil {
		sli = fmt.Sprintf("SLI %.3f%%", 100**st.SLI)
	}
	return fmt.Sprintf("- %s %q: %s; %s; %s; burn 5m %.1f, 1h %.1f, 6h %.1f, 3d %.1f; state %s\n", st.ID, st.Name, st.ObjectiveText(), sli,
		alerting.SLOBudgetText(st.SLO, st.SLOFigures), st.BurnRates[alerting.Burn5m], st.BurnRates[alerting.Burn1h],
		st.BurnRates[alerting.Burn6h], st.BurnRates[alerting.Burn3d], st.State)
}
