package analytics

import (
	"strings"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Breakdown dimensions (the by parameter). The first seven are read from
// rollups when no filter but status is given; ByUserID, attribute:<key>
// and the filters tool, method and client_name scan the matching raw
// events, within MaxRawBreakdownRows.
const (
	ByTool          = "tool"
	ByMethod        = "method"
	ByClientName    = "client_name"
	ByClientVersion = "client_version"
	ByServerVersion = "server_version"
	// ByProtocolVersion is the MCP protocol revision of the items.
	ByProtocolVersion = "protocol_version"
	ByErrorType       = "error_type"
	// ByErrorKind is the error kind (error items only; docs/failures.md).
	ByErrorKind = "error_kind"
	ByUserID    = "user_id"
	// ByAttributePrefix starts an attribute dimension: attribute:region.
	ByAttributePrefix = "attribute:"
)

// Breakdown limits.
const (
	DefaultBreakdownLimit = 20
	MaxBreakdownLimit     = 200
	// MaxAttributeKeyLen bounds the key of an attribute dimension.
	MaxAttributeKeyLen = 256
	// MaxRawBreakdownRows is the row budget of the breakdowns that scan raw
	// events (user_id, attribute:<key>, or filtered by tool, method or
	// client_name): more matching events in the range are refused with
	// ERANGETOOLARGE (about a second of scan on two cores); narrow the
	// range.
	MaxRawBreakdownRows = 10_000_000
)

// BreakdownQuery is what a breakdown groups by and the filters it applies.
// Empty filters filter nothing.
type BreakdownQuery struct {
	By string
	// AttributeKey is the key of an attribute:<key> dimension.
	AttributeKey string
	Tool         string // tools/call items of this tool only
	Method       string
	ClientName   string
	Status       string // ok or error
	Limit        int
	// Only, when set, restricts the read to these values (the previous
	// period of a comparison): every one of them that has items, no
	// limit, no other.
	Only []string
}

// Raw reports whether the dimension has no rollup (it is read from raw
// events whatever the filters).
func (q BreakdownQuery) Raw() bool { return q.By == ByUserID || q.AttributeKey != "" }

// ParseBreakdownQuery validates the parameters of a breakdown: by is one
// of the dimensions (EINVALID on query.by otherwise), status ok or error
// or empty (query.status), limit 0 (DefaultBreakdownLimit) or
// 1..MaxBreakdownLimit (query.limit).
func ParseBreakdownQuery(by, tool, method, clientName, status string, limit int) (BreakdownQuery, error) {
	q := BreakdownQuery{By: by, Tool: tool, Method: method, ClientName: clientName, Status: status, Limit: limit}
	switch by {
	case ByTool, ByMethod, ByClientName, ByClientVersion, ByServerVersion, ByProtocolVersion, ByErrorType, ByErrorKind, ByUserID:
	default:
		key, ok := strings.CutPrefix(by, ByAttributePrefix)
		if !ok || key == "" || utf8.RuneCountInString(key) > MaxAttributeKeyLen || !utf8.ValidString(key) {
			return q, telemetry.FieldError(telemetry.EINVALID, "query.by",
				"by must be one of tool, method, client_name, client_version, server_version, protocol_version, error_type, error_kind, user_id or attribute:<key> (a key of 1 to %d characters).", MaxAttributeKeyLen)
		}
		q.AttributeKey = key
	}
	if status != "" && status != StatusOK && status != StatusError {
		return q, telemetry.FieldError(telemetry.EINVALID, "query.status", "status must be ok or error.")
	}
	switch {
	case limit == 0:
		q.Limit = DefaultBreakdownLimit
	case limit < 0 || limit > MaxBreakdownLimit:
		return q, telemetry.FieldError(telemetry.EINVALID, "query.limit", "limit must be between 1 and %d.", MaxBreakdownLimit)
	}
	return q, nil
}

// Breakdown is an MCP's figures split by one dimension over a range
// (GET /v1/mcps/{id}/breakdown): the values with the most calls, by calls
// descending then value, and Other summing every other value (null when
// none is left).
type Breakdown struct {
	From  string          `json:"from"`
	To    string          `json:"to"`
	By    string          `json:"by"`
	Items []BreakdownItem `json:"items"`
	Other *Figures        `json:"other"`
	// Previous, with compare=previous, is the range just before (from and
	// to); each item and other then carry their previous figures.
	Previous *PreviousRange `json:"previous,omitempty"`
}

// BreakdownItem is one value of the dimension ("" for items that carried
// none) with its figures.
type BreakdownItem struct {
	Value string `json:"value"`
	Figures
}

// Figures are the figures of a set of items: a breakdown value, the rest
// of a breakdown, or a previous period. Latencies cover the items carrying
// duration_ms (null without any). Previous is set only with
// compare=previous: the same figures over the previous period (zeros when
// the value had no item then).
type Figures struct {
	CallCounts
	Latencies
	Sessions int64    `json:"sessions"`
	Users    int64    `json:"users"`
	Previous *Figures `json:"previous,omitempty"`
}

// PreviousRange names the period a comparison was made with.
type PreviousRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// BreakdownDoc documents GET /v1/mcps/{id}/breakdown.
const BreakdownDoc = `The MCP's figures split by one dimension: ` + "`by`" + ` is ` + "`tool`" + ` (` + "`tools/call`" + ` items, by tool name),
` + "`method`" + `, ` + "`client_name`" + `, ` + "`client_version`" + `, ` + "`server_version`" + `, ` + "`protocol_version`" + ` (the MCP protocol
revision, e.g. ` + "`2025-06-18`" + `), ` + "`error_type`" + ` (error items only, by type), ` + "`error_kind`" + ` (error items only, by kind),
` + "`user_id`" + ` or ` + "`attribute:<key>`" + ` (the value of that attribute; the key is everything after the first
colon, up to 256 characters, percent-encoded in the query). Items that did not carry the value count under
` + "`\"\"`" + `. Filters ` + "`tool`" + `, ` + "`method`" + `, ` + "`client_name`" + ` and ` + "`status`" + ` (` + "`ok`" + ` or ` + "`error`" + `) narrow the items first.

` + "`items`" + ` are the ` + "`limit`" + ` (default 20, at most 200) values with the most calls, calls descending then value
(byte order), each ` + "`{value, calls, errors, error_rate, avg_ms, p50_ms, p95_ms, sessions, users}`" + `; ` + "`other`" + `
has the same figures (without ` + "`value`" + `) over every other value together, or is null when no value is left.
Distinct counts and percentiles of ` + "`other`" + ` are merged over its items, not summed.

Without filters, or with ` + "`status`" + ` only, every dimension but ` + "`user_id`" + ` and ` + "`attribute:<key>`" + ` is read from a
daily rollup (a few rows per value and day), fast over three years. ` + "`user_id`" + `, ` + "`attribute:<key>`" + ` and the
filters ` + "`tool`" + `, ` + "`method`" + ` and ` + "`client_name`" + ` scan the raw events that match: more than 10,000,000 of them in
the range is refused with 422 ` + "`range_too_large`" + ` (narrow the range).

` + "`compare=previous`" + ` adds ` + "`previous`" + ` (` + "`{from, to}`" + `: as many days just before ` + "`from`" + `) and, on every item,
` + "`previous`" + ` with the value's figures then (zeros when it had no item then); ` + "`other`" + ` gets none.

Example: ` + "`GET /v1/mcps/mcp_1/breakdown?by=client_version&client_name=claude-desktop&limit=2`" + `

` + "```json" + `
{"from": "2026-11-14", "to": "2026-11-20", "by": "client_version",
 "items": [
  {"value": "0.9.1", "calls": 900, "errors": 9, "error_rate": 0.01, "avg_ms": 120.5, "p50_ms": 98,
   "p95_ms": 310, "sessions": 120, "users": 80},
  {"value": "0.9.0", "calls": 250, "errors": 5, "error_rate": 0.02, "avg_ms": 131, "p50_ms": 101,
   "p95_ms": 350, "sessions": 40, "users": 31}],
 "other": {"calls": 12, "errors": 0, "error_rate": 0, "avg_ms": null, "p50_ms": null, "p95_ms": null,
   "sessions": 3, "users": 3}}
` + "```"
