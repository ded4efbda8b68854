package analytics

import (
	"context"
	"time"
)

// WindowStat is what an alert rule measures over its window: one MCP's
// items of any method (the "" entry) or one tool's tools/call items.
type WindowStat struct {
	Calls  int64
	Errors int64
	// The percentiles are over the items carrying duration_ms; nil when
	// none does. WindowSets fills them only for detail windows.
	P50Ms, P95Ms, P99Ms *float64
	// Sessions counts distinct session_ids, Users distinct user_ids falling
	// back to the session_id (as the metric reads do), exactly. WindowSets
	// fills them only for detail windows.
	Sessions, Users int64
	// ToolChanges counts tool inventory changes in the window; the
	// metrics stores leave it 0, the alert evaluator fills it from its
	// ToolChangeCounter.
	ToolChanges int64
	// ToolChangeCount counts them by severity (ToolChanges is its All).
	ToolChangeCount ToolChangeCount
	// Probe is the MCP's probe state (nil when it has no enabled probe);
	// the metrics stores leave it nil, the alert evaluator fills it from
	// its ProbeStatReader.
	Probe *ProbeStat
	// ErrorKinds counts the errors by kind (errors without a kind are
	// only in Errors); nil without any.
	ErrorKinds map[string]int64
	// RepeatedCalls counts the repeats (RepeatOf) among the window's
	// calls; the metrics stores leave it 0, the alert evaluator fills it
	// from its RepeatCounter.
	RepeatedCalls int64
	// UnknownToolCalls counts the calls of unknown tools in the window (as
	// the unknown-tools read counts them); the metrics stores leave it 0,
	// the alert evaluator fills it from its UnknownToolCounter.
	UnknownToolCalls int64
}

// RepeatCounter counts repeated calls for the alert evaluator (rule metric
// repeated_calls).
type RepeatCounter interface {
	// RepeatCounts counts, for each MCP of reqs and each of its window
	// lengths (Minutes), the repeats among the tools/call items of
	// [to - minutes, to), each session's calls taken in order within the
	// window: by MCP id, window minutes, then "" for all tools and each
	// tool's name. Absent entries are zero.
	RepeatCounts(ctx context.Context, to time.Time, reqs map[string]WindowRequest) (map[string]map[int]map[string]int64, error)
}

// UnknownToolCounter counts the calls of unknown tools for the alert
// evaluator (rule metric unknown_tool_calls).
type UnknownToolCounter interface {
	// UnknownToolCounts counts, for each MCP of reqs and each of its
	// window lengths (Minutes), the items of [to - minutes, to) with
	// error_kind unknown_tool and the tools/call items naming a tool that
	// the MCP's inventory did not list in that window: by MCP id, window
	// minutes, then "" for all and each unknown name. Absent entries are
	// zero.
	UnknownToolCounts(ctx context.Context, to time.Time, reqs map[string]WindowRequest) (map[string]map[int]map[string]int64, error)
}

// WindowReader gives the alert evaluator its rule values.
type WindowReader interface {
	// WindowStats measures [from, to) for many MCPs in one go: by MCP id,
	// then "" for all methods of the MCP and each tool name for its
	// tools/call items. MCPs and tools without items are absent.
	WindowStats(ctx context.Context, from, to time.Time, mcpIDs []string) (map[string]map[string]WindowStat, error)
}

// WindowRequest asks for one MCP's figures over several rule windows that
// all end at the same instant: Minutes are the windows' lengths, and
// DetailMinutes those of them whose percentiles and distinct counts are
// wanted too (merging percentile and distinct states is the expensive part
// of the read).
type WindowRequest struct {
	Minutes       []int
	DetailMinutes []int
	// DetailKeys restricts the details to these keys ("" for the whole
	// MCP, a tool name for its tools/call items); nil means every key.
	DetailKeys []string
	// QuantilesOnly leaves the distinct counts (sessions, users) out of
	// the details: only the percentiles are wanted.
	QuantilesOnly bool
}

// WindowSetReader gives the alert evaluator every window of a pass in one
// read per set of MCPs, instead of one read per window length.
type WindowSetReader interface {
	WindowReader
	// WindowSets measures, for each MCP of reqs, each requested window
	// [to - minutes, to): by MCP id, window minutes, then "" for all
	// methods of the MCP and each tool name for its tools/call items.
	// Percentiles and distinct counts are set only for DetailMinutes
	// windows and DetailKeys keys. MCPs, windows and tools without
	// items are absent.
	WindowSets(ctx context.Context, to time.Time, reqs map[string]WindowRequest) (map[string]map[int]map[string]WindowStat, error)
}

// WindowRead is one WindowSets call of a batch: the windows of Reqs, all
// ending at To.
type WindowRead struct {
	To   time.Time
	Reqs map[string]WindowRequest
}

// WindowSetBatchReader is a WindowSetReader that measures several reads at
// once, such as a chunk's windows and the same windows a week earlier,
// which the alert evaluator then waits for together.
type WindowSetBatchReader interface {
	WindowSetReader
	// WindowSetsBatch answers each read as WindowSets would, in order;
	// when any read fails, it returns the error and no answer.
	WindowSetsBatch(ctx context.Context, reads []WindowRead) ([]map[string]map[int]map[string]WindowStat, error)
}
