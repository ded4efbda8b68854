package analytics

// WindowStat is what an alert rule measures over its window: one MCP's
// items of any method (the "" entry) or one tool's tools/call items.
type WindowStat struct {
	Calls  int64
	Errors int64
	// P95Ms is over the items carrying duration_ms; nil when none does.
	P95Ms *float64
}
