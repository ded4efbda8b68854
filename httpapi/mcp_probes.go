package httpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// addProbeTools adds /mcp's list_probes: an MCP's probes with their
// status, last check, error, uptime and certificate warning.
func (s *Server) addProbeTools(srv *mcp.Server) {
	addTool(s, srv, mcpTool[mcpIDArgs]{name: "list_probes", title: "Probes",
		desc: "The probes of one MCP: the service's own checks of the server over MCP. Each with its status (up, down, unknown), last check, last error (kind: detail), latency, protocol version, uptime over 24h, 7d and 30d, and a TLS certificate warning. Tells a server that is down from one that is only quiet.",
		call: func(ctx context.Context, in mcpIDArgs) (any, string, error) {
			out, err := s.listProbes(ctx, &MCPPath{ID: in.MCPID})
			if err != nil {
				return nil, "", err
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d probes:\n", len(out.Body.Items))
			for _, p := range out.Body.Items {
				fmt.Fprintf(&b, "- %s %s: %s", p.ID, p.URL, p.Status)
				if p.LastCheckedAt != nil {
					fmt.Fprintf(&b, ", checked %s in %s", stamp(*p.LastCheckedAt), ms(p.LatencyMs))
				}
				if p.LastError != nil {
					fmt.Fprintf(&b, ", error %q", *p.LastError)
				}
				if p.DownSince != nil {
					fmt.Fprintf(&b, ", down since %s", stamp(*p.DownSince))
				}
				fmt.Fprintf(&b, ", protocol %s, uptime 24h %s 7d %s 30d %s", str(p.ProtocolVersion), share(p.Uptime.Day), share(p.Uptime.Week), share(p.Uptime.Month))
				if p.Warning != nil {
					fmt.Fprintf(&b, ", warning: %s", *p.Warning)
				}
				if !p.Enabled {
					b.WriteString(" (disabled)")
				}
				b.WriteByte('\n')
			}
			return out.Body, b.String(), nil
		}})
}

func share(v *float64) string {
	if v == nil {
		return "n/a"
	}
	return pct(*v)
}
