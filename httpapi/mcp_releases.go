package httpapi

import (
	"context"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpscope/telemetry/analytics"
)

type compareReleasesArgs struct {
	mcpIDArgs
	Base string `json:"base,omitempty" jsonschema:"The base release's server_version. Default: the release first seen just before head."`
	Head string `json:"head,omitempty" jsonschema:"The head release's server_version. Default: the latest release."`
}

// addReleaseTools adds the /mcp tools of the release reads.
func (s *Server) addReleaseTools(srv *mcp.Server) {
	if s.releaseReader() == nil {
		return
	}
	addTool(s, srv, mcpTool[toolsArgs]{name: "list_releases", title: "Releases of an MCP", store: true, bounds: datesOnly,
		desc: "The releases (server_version values) of one MCP with an item in the range, newest first: when each was first and " +
			"last seen, and its calls, errors, error rate, p95 latency and errors by kind over the range. Answers 'what did I ship, and how did each release do?'.",
		call: func(ctx context.Context, in toolsArgs) (any, string, error) {
			out, err := s.listReleases(ctx, &mcpRangeInput{ID: in.MCPID, RangeQuery: in.query()})
			if err != nil {
				return nil, "", err
			}
			l := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "%d releases with traffic %s to %s, newest first:\n", len(l.Items), l.From, l.To)
			for _, r := range l.Items {
				fmt.Fprintf(&b, "- %s: first seen %s, last %s; %d calls, %d errors (%.2f%%), p95 %s ms", r.ServerVersion,
					stamp(r.FirstSeenAt), stamp(r.LastSeenAt), r.Calls, r.Errors, 100*r.ErrorRate, num(r.P95Ms))
				for _, k := range r.ErrorKinds {
					fmt.Fprintf(&b, "; %s %d", k.ErrorKind, k.Count)
				}
				b.WriteByte('\n')
			}
			return l, b.String(), nil
		}})
	addTool(s, srv, mcpTool[compareReleasesArgs]{name: "compare_releases", title: "Compare two releases", store: true,
		desc: "Compares two releases of one MCP (default: the latest against the one before) over matched windows (the head's first " +
			"24 hours against the base's last 24 hours) and gives a verdict: better, worse, same or insufficient (fewer than 100 calls " +
			"a side), with reasons (error rate by a two-proportion z-test at 95%, p95 beyond 25% and 25 ms, new error kinds, tools " +
			"that disappeared) for the release and each tool. Answers 'did my last release make things worse?'.",
		call: func(ctx context.Context, in compareReleasesArgs) (any, string, error) {
			out, err := s.compareReleases(ctx, &compareReleasesInput{ID: in.MCPID, Base: in.Base, Head: in.Head})
			if err != nil {
				return nil, "", err
			}
			c := out.Body
			var b strings.Builder
			fmt.Fprintf(&b, "%s against %s: %s.\n", c.Head.ServerVersion, c.Base.ServerVersion, c.Verdict)
			side := func(name string, f analytics.SideFigures) string {
				return fmt.Sprintf("%s %d calls, %.2f%% errors, p95 %s ms", name, f.Calls, 100*f.ErrorRate, num(f.P95Ms))
			}
			fmt.Fprintf(&b, "%s; %s.\n", side("base", c.Base.SideFigures), side("head", c.Head.SideFigures))
			for _, r := range c.Reasons {
				fmt.Fprintf(&b, "- %s%s: %s\n", r.Code, toolSuffix(r.Tool), r.Message)
			}
			for _, t := range c.Tools {
				fmt.Fprintf(&b, "tool %s: %s (%s; %s)\n", t.Name, t.Verdict, side("base", t.Base), side("head", t.Head))
			}
			return c, b.String(), nil
		}})
}

func toolSuffix(tool string) string {
	if tool == "" {
		return ""
	}
	return " (" + tool + ")"
}
