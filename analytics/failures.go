package analytics

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry"
)

// Why agents fail (docs/failures.md): error kinds, refused arguments,
// answer sizes, repeated calls and tools agents ask for that the server
// does not have.

// ErrorKindCount is how many error items had one error kind.
type ErrorKindCount struct {
	ErrorKind string `json:"error_kind"`
	Count     int64  `json:"count"`
}

// ResponseSizes are the answer sizes (response_bytes) of the calls that
// carried one: t-digest estimates of the median and 95th percentile, and
// the exact largest. Each is null when no call in scope carried a size.
type ResponseSizes struct {
	P50 *float64 `json:"response_bytes_p50"`
	P95 *float64 `json:"response_bytes_p95"`
	Max *int64   `json:"response_bytes_max"`
}

// Refusal is one validation message of a tool's invalid_params errors and
// how often it was answered.
type Refusal struct {
	Message string `json:"message"`
	Count   int64  `json:"count"`
}

// MaxRefusals bounds the refusals a tool detail lists (the most frequent).
const MaxRefusals = 10

// ToolFailures are a tool's failure figures over a range.
type ToolFailures struct {
	ErrorKinds []ErrorKindCount
	Sizes      ResponseSizes
	Refusals   []Refusal
}

// UnknownTools is the names agents asked for that an MCP does not offer,
// over a range (GET /v1/mcps/{id}/unknown-tools).
type UnknownTools struct {
	From  string        `json:"from"`
	To    string        `json:"to"`
	Items []UnknownTool `json:"items"`
}

// UnknownTool is one name agents asked for: its calls, distinct sessions,
// the real tool it is closest to (ClosestName; null when none is close),
// its calls by client name (most first) and its last call.
type UnknownTool struct {
	Name       string       `json:"name"`
	Calls      int64        `json:"calls"`
	Sessions   int64        `json:"sessions"`
	Closest    *string      `json:"closest"`
	Clients    []ToolClient `json:"clients"`
	LastSeenAt time.Time    `json:"last_seen_at"`
}

// MaxUnknownTools bounds the names an unknown-tools read returns (those
// with the most calls).
const MaxUnknownTools = 200

// FailureReader serves the failure reads that the Reader's figures do not
// carry.
type FailureReader interface {
	// ToolFailures returns a tool's error kinds (most first), answer sizes
	// and most frequent refusals (at most MaxRefusals).
	ToolFailures(ctx context.Context, mcpID, name string, r Range) (*ToolFailures, error)
	// ToolSizes returns the answer sizes of every tool with a call.
	ToolSizes(ctx context.Context, mcpID string, r Range) (map[string]ResponseSizes, error)
	// ErrorKinds returns the MCP's error kinds over the range, any method.
	ErrorKinds(ctx context.Context, mcpID string, r Range) ([]ErrorKindCount, error)
	// RepeatedCalls counts the repeats (RepeatOf) of the range's
	// tools/call items, by tool name.
	RepeatedCalls(ctx context.Context, mcpID string, r Range) (map[string]int64, error)
	// UnknownTools returns the names asked for that the server does not
	// have: items with error_kind unknown_tool, and, when listed is not
	// nil, tools/call items whose name is not in listed. Closest is left
	// nil; at most MaxUnknownTools names, most calls first.
	UnknownTools(ctx context.Context, mcpID string, r Range, listed []string) ([]UnknownTool, error)
	// CalledTools lists the names of the range's tools/call items that
	// succeeded: the candidates for the closest name of an MCP without an
	// inventory.
	CalledTools(ctx context.Context, mcpID string, r Range) ([]string, error)
}

// RepeatOf numbers the repeats of a session's tools/call items, in order:
// the nth consecutive call with the same tool and a non-empty args_hash
// as the call before it is repeat n; any other call is 0. Items of other
// methods do not count and do not break a run. prev is the repeat number
// of the call before keys[0] and prevKey its key ("" when there is none
// or it had no args_hash); a key is the tool name and the args_hash, or ""
// without an args_hash.
func RepeatOf(prevKey string, prev int, keys []string) []int {
	out := make([]int, len(keys))
	for i, k := range keys {
		if k != "" && k == prevKey {
			prev++
		} else {
			prev = 0
		}
		out[i] = prev
		prevKey = k
	}
	return out
}

// RepeatKey is the key RepeatOf compares: "" when the call had no
// args_hash.
func RepeatKey(name, argsHash string) string {
	if argsHash == "" {
		return ""
	}
	return name + "\x00" + argsHash
}

// UnknownToolReport builds the unknown-tools read: the names from fr, each
// with the closest name among the tools the inventory listed in the range
// (or, for an MCP that never reported an inventory, among the tools called
// successfully in the range). An MCP without an inventory in the range
// counts only items with error_kind unknown_tool: without a list of its
// tools, a call to a name is not known to be unknown.
func UnknownToolReport(ctx context.Context, fr FailureReader, inv InventoryService, mcpID string, r Range) (*UnknownTools, error) {
	var listed []string
	if inv != nil {
		in, err := inv.Inventory(ctx, mcpID, r)
		if err != nil {
			return nil, err
		}
		for _, t := range in.Tools {
			if t.FirstSeenAt != nil {
				listed = append(listed, t.Name)
			}
		}
	}
	items, err := fr.UnknownTools(ctx, mcpID, r, listed)
	if err != nil {
		return nil, err
	}
	candidates := listed
	if candidates == nil && len(items) > 0 {
		if candidates, err = fr.CalledTools(ctx, mcpID, r); err != nil {
			return nil, err
		}
	}
	for i := range items {
		if c, ok := ClosestName(items[i].Name, candidates); ok {
			items[i].Closest = &c
		}
	}
	return &UnknownTools{From: r.FromDate(), To: r.ToDate(), Items: items}, nil
}

// MaxRawFailureEvents bounds the events one read of repeats or unknown
// tools reads (they come from raw events, not rollups): a range whose
// events of the MCP are more is refused (ErrTooManyEvents).
const MaxRawFailureEvents = 5_000_000

// ErrTooManyEvents is the cause of the error a store answers when a read
// of repeats or unknown tools would read more than its bound of events:
// the unknown-tools read is refused with it (422 range_too_large), the
// overview and tool figures it feeds are null.
var ErrTooManyEvents = errors.New("too many events for a raw read")

// TooManyEventsError is the error of a read of repeats or unknown tools
// over more than max events.
func TooManyEventsError(max int64) error {
	return &telemetry.Error{Code: telemetry.ERANGETOOLARGE, Field: "query.from", Err: ErrTooManyEvents,
		Message: fmt.Sprintf("Repeats and unknown tools are counted from the range's events, at most %d of them; this range holds more. Ask for fewer days.", max)}
}

// nullIfTooMany turns a count whose read hit ErrTooManyEvents into null
// (other errors are returned).
func nullIfTooMany(n int64, err error) (*int64, error) {
	if errors.Is(err, ErrTooManyEvents) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &n, nil
}

// UnknownToolCalls sums the calls of an unknown-tools read.
func (u *UnknownTools) UnknownToolCalls() int64 {
	var n int64
	for _, it := range u.Items {
		n += it.Calls
	}
	return n
}
