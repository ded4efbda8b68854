package analytics

import (
	"slices"
	"testing"
)

// DeriveErrorKind reads outside input (an item's error type and message,
// a span's attributes): whatever it is given, it answers one of ErrorKinds.
func FuzzDeriveErrorKind(f *testing.F) {
	f.Add(MethodToolsCall, "tool_error", "MCP error -32602: Tool get_forcast not found")
	f.Add("resources/read", "-32002", "Resource not found")
	f.Add("prompts/get", "ValueError", "Unknown prompt: x")
	f.Add("x", "-32768", "MCP error -32899: ")
	f.Add("", "_OTHER", "")
	f.Fuzz(func(t *testing.T, method, typ, msg string) {
		if k := DeriveErrorKind(method, typ, msg); !ValidErrorKind(k) {
			t.Fatalf("DeriveErrorKind(%q, %q, %q) = %q", method, typ, msg, k)
		}
	})
}

// ClosestName reads names agents made up: its answer is one of the
// candidates, never the name itself, and none when it says so.
func FuzzClosestName(f *testing.F) {
	f.Add("get_forcast", "get_forecast", "search")
	f.Add("é", "É", "e")
	f.Add("", "a", "")
	f.Fuzz(func(t *testing.T, name, a, b string) {
		got, ok := ClosestName(name, []string{a, b})
		if ok != (got != "") || (ok && (!slices.Contains([]string{a, b}, got) || got == name)) {
			t.Fatalf("ClosestName(%q, [%q %q]) = %q, %v", name, a, b, got, ok)
		}
	})
}
