package httpapi

import (
	"context"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/analytics"
)

// releaseReader is the Analytics reader's release reads, when it has them
// (the ClickHouse reader does).
func (s *Server) releaseReader() analytics.ReleaseReader {
	rr, _ := s.opts.Analytics.(analytics.ReleaseReader)
	return rr
}

const releasesDoc = "A release is a `server_version` the MCP's items carried (items without one are in no release). "

var listReleasesOp = metricRead("list-releases", "Releases of an MCP",
	releasesDoc+"`{mcp_id, from, to, items: [{server_version, first_seen_at, last_seen_at, calls, errors, error_rate, p95_ms, "+
		"error_kinds: [{error_kind, count}]}]}`: the releases with an item in the range, newest (latest `first_seen_at`) first, "+
		"at most 200 (the 200 first seen last). `first_seen_at` and `last_seen_at` are the release's first and last item over "+
		"everything stored (to the millisecond), not only the range; `calls` (items of any method), `errors`, `error_rate`, "+
		"`p95_ms` (of the items carrying `duration_ms`; null when none does) and `error_kinds` (errors by kind, most frequent "+
		"first) cover the range's hours. The overview and the tool detail list the releases first seen in their range as "+
		"`releases: [{server_version, first_seen_at}]`, oldest first, to mark them on the series. See docs/releases.md.")

func (s *Server) listReleases(ctx context.Context, in *mcpRangeInput) (*bodyOf[analytics.ReleaseList], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	items, err := s.releaseReader().Releases(ctx, in.ID, r)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.ReleaseList]{&analytics.ReleaseList{MCPID: in.ID, From: r.FromDate(), To: r.ToDate(), Items: items}}, nil
}

type compareReleasesInput struct {
	ID   string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Base string `query:"base" maxLength:"256" doc:"The base release's server_version. Default: the release first seen just before head."`
	Head string `query:"head" maxLength:"256" doc:"The head release's server_version. Default: the latest release (last first seen)."`
}

const statisticsDoc = "\n\nThe windows are matched: the head's first 24 hours from the hour of its first item (`head.window_from` to " +
	"`head.window_to`; fewer while they are still to come), against the base's last 24 hours of traffic up to the hour the head " +
	"appeared (ending after the hour of the base's last item, or after the hour of the head's first item when the base kept serving " +
	"during a rollout; each window counts its own release's items only, from the hourly release rollup). " +
	"Each tool called in either window, and the release as a whole (every item), is judged:\n\n" +
	"- `insufficient` when either side has fewer than 100 calls (reason `insufficient_calls`);\n" +
	"- error rate: a pooled two-proportion z-test, two-sided at 95% confidence (|z| ≥ 1.96), reported when the rates also " +
	"differ by at least half a percentage point: `error_rate_up` (worse) or `error_rate_down` (better);\n" +
	"- latency: with at least 100 calls carrying `duration_ms` on each side, p95 more than 25% and 25 ms above the base's is " +
	"`p95_up` (worse), as far below `p95_down` (better);\n" +
	"- an error kind with at least 5 errors in the head's window and none in the base's: `new_error_kind` (worse);\n" +
	"- a tool with at least 100 calls in the base's window and none in the head's (which has at least 100): " +
	"`tool_disappeared` (worse); a tool called only by the head: `new_tool` (`same`: nothing to compare).\n\n" +
	"A side is worse with one worse reason, better with a better one and no worse one, `same` otherwise. The release's verdict " +
	"is `insufficient` when either whole window has fewer than 100 calls; otherwise `worse` when the whole window or any tool " +
	"is, `better` when one is better and none worse, else `same`. Reasons are `{code, tool, message}` (tool absent for the " +
	"release as a whole). See docs/releases.md."

var compareReleasesOp = huma.Operation{OperationID: "compare-releases", Summary: "Compare two releases with a verdict",
	Description: "`{mcp_id, base, head, verdict, reasons, tools}`: `base` and `head` are `{server_version, first_seen_at, " +
		"last_seen_at, window_from, window_to, calls, errors, error_rate, p95_ms}` (figures over the matched window); `verdict` " +
		"is `better`, `worse`, `same` or `insufficient`; `tools: [{name, base: {calls, errors, error_rate, p95_ms}, head: {...}, " +
		"verdict, reasons}]`, worse first, at most 500 tools. Errors: 404 `not_found` for an MCP that is not the caller's, a " +
		"version the MCP never had (among its 200 latest releases) or a head without a release before it; 422 `invalid` when " +
		"base was not first seen before head." + statisticsDoc,
	Tags: []string{"Releases"}, Errors: []int{404, 422, 503}}

func (s *Server) compareReleases(ctx context.Context, in *compareReleasesInput) (*bodyOf[analytics.ReleaseComparison], error) {
	if err := s.ownMCP(ctx, in.ID); err != nil {
		return nil, err
	}
	c, err := analytics.ReleaseComparer{Reader: s.releaseReader()}.Compare(ctx, in.ID, in.Base, in.Head)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.ReleaseComparison]{c}, nil
}

type releaseVerdictInput struct {
	ID            string `path:"id" maxLength:"64" doc:"The MCP's id."`
	ServerVersion string `path:"server_version" maxLength:"256" doc:"The release's server_version, percent-encoded."`
}

var releaseVerdictOp = huma.Operation{OperationID: "get-release-verdict", Summary: "A release's verdict, for a CI",
	Description: "`{server_version, verdict, reasons, compared_with, comparison}`: the release against the one first seen " +
		"just before it (`compared_with`; null for the MCP's first release), as GET /v1/mcps/{id}/releases/compare answers " +
		"(`comparison`): `fail` when the comparison is `worse`, `pending` while it is `insufficient` (fewer than 100 calls in " +
		"either matched window), `pass` when `same` or `better`. The first release is `pending` until its first 24 hours hold " +
		"100 calls, then `pass` (reason `first_release`). The verdict is computed at each read, so a CI polls it until it is " +
		"not `pending` (with a timeout of its own): `pass` at 100 calls may still turn `fail` as the head's window fills. " +
		"Readable with a personal access token (`Authorization: Bearer pat_...`). Errors: 404 `not_found` for an MCP that " +
		"is not the caller's or a version it never had." + statisticsDoc,
	Tags: []string{"Releases"}, Errors: []int{404, 503}}

func (s *Server) getReleaseVerdict(ctx context.Context, in *releaseVerdictInput) (*bodyOf[analytics.ReleaseVerdict], error) {
	if err := s.ownMCP(ctx, in.ID); err != nil {
		return nil, err
	}
	v, err := analytics.ReleaseComparer{Reader: s.releaseReader()}.Verdict(ctx, in.ID, in.ServerVersion)
	if err != nil {
		return nil, err
	}
	return &bodyOf[analytics.ReleaseVerdict]{v}, nil
}

// ownMCP checks that the MCP is the caller's (another account's is 404).
func (s *Server) ownMCP(ctx context.Context, mcpID string) error {
	_, err := s.opts.MCPs.FindMCP(ctx, principal(ctx).AccountID, mcpID)
	return err
}
