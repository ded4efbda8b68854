package otlp

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// Each emitter fixture's calls read back with the error kind derived from
// what that emitter records, the result size where it records the result,
// and an args_hash where it records the arguments: equal arguments hash
// equal across emitters, different ones differ.
func TestEmitterFixturesFailureFields(t *testing.T) {
	const dune, empty, x = "dune", "empty", "x" // the arguments {"q": ...}
	type call struct{ method, name, kind, size, args string }
	want := map[string][]call{
		"aws-distro.json": {
			{"tools/call", "search_books", "", "15", dune}, // gen_ai.tool.call.result {"content": []}
			{"tools/call", "search_books", "tool_error", "", dune},
			{"tools/call", "search_books", "exception", "", dune}, // ValueError
			{"tools/call", "nope", "unknown_tool", "", dune},      // McpError -32602 "Unknown tool: nope"
			{"resources/read", "file:///catalog.json", "", "", ""},
			{"prompts/get", "review", "", "", ""},
		},
		"openlit.json": {
			{"initialize", "", "", "", ""},
			{"tools/call", "search_books", "", "", dune},
			{"tools/call", "search_books", "tool_error", "", empty},
			{"tools/call", "search_books", "other", "", x}, // McpError, no code, no message
			{"resources/read", "file:///catalog.json", "", "", ""},
			{"prompts/get", "review", "", "", ""},
		},
		"openllmetry-js.json": {
			{"initialize", "", "", "", ""},
			{"tools/call", "search_books", "", "", dune},
			{"tools/call", "search_books", "tool_error", "", empty},
			{"resources/read", "file:///missing", "unknown_tool", "", ""}, // -32002 Resource not found
			{"prompts/get", "review", "", "", ""},
		},
		"openllmetry-python.json": {
			{"initialize", "", "", "", ""},
			{"tools/call", "search_books", "", "", dune},
			{"tools/call", "search_books", "tool_error", "", x}, // isError, error.type SERVICE_UNAVAILABLE
			{"tools/call", "search_books", "other", "", ""},     // McpError "Connection closed"
			{"resources/read", "file:///catalog.json", "", "", ""},
			{"prompts/get", "review", "", "", ""},
		},
		"python-sdk-v2.json": {
			{"tools/call", "search_books", "", "", ""},
			{"tools/call", "search_books", "tool_error", "", ""},
			{"tools/call", "search_books", "exception", "", ""}, // RuntimeError
			{"tools/call", "nope", "unknown_tool", "", ""},      // -32602
			{"resources/read", "", "", "", ""},
			{"prompts/get", "review", "", "", ""},
			{"tools/list", "", "", "", ""},
		},
		"semconv.json": {
			{"initialize", "", "", "", ""},
			{"tools/call", "get-weather", "", "", ""},
			{"tools/call", "get-weather", "tool_error", "", ""},
			{"tools/call", "get-weather", "invalid_params", "", ""}, // -32602
			{"resources/read", "postgres://database/customers/schema", "", "", ""},
			{"prompts/get", "analyze-code", "", "", ""},
			{"tools/call", "get-weather", "timeout", "", ""}, // TimeoutError
		},
		"shinzo.json": {
			{"tools/call", "search_books", "", "", dune}, // mcp.tool.argument.q
			{"tools/call", "search_books", "exception", "", ""},
			{"tools/call", "fetch_cover", "", "", ""},
		},
	}
	hashes := map[string]string{} // argument label -> hash
	for file, calls := range want {
		body, err := os.ReadFile(filepath.Join("testdata", file))
		if err != nil {
			t.Fatal(err)
		}
		req, err := Decode(body, ContentTypeJSON)
		if err != nil {
			t.Fatal(err)
		}
		items, _ := Map(req, time.Date(2026, 11, 20, 11, 0, 0, 0, time.UTC))
		if len(items) != len(calls) {
			t.Fatalf("%s: %d items, want %d", file, len(items), len(calls))
		}
		for i, c := range calls {
			it := items[i]
			size := ""
			if it.ResponseBytes != nil {
				size = fmt.Sprint(*it.ResponseBytes)
			}
			if it.Method != c.method || it.Name != c.name || it.ErrorKind != c.kind || size != c.size {
				t.Errorf("%s call %d: %s %s kind %q size %q; want %+v", file, i, it.Method, it.Name, it.ErrorKind, size, c)
			}
			if (it.ArgsHash == "") != (c.args == "") {
				t.Errorf("%s call %d: args_hash %q, want one for %q", file, i, it.ArgsHash, c.args)
				continue
			}
			if c.args == "" {
				continue
			}
			if len(it.ArgsHash) != argsHashLen {
				t.Errorf("%s call %d: args_hash %q", file, i, it.ArgsHash)
			}
			if h, seen := hashes[c.args]; seen && h != it.ArgsHash {
				t.Errorf("%s call %d: args %s hash %s, elsewhere %s", file, i, c.args, it.ArgsHash, h)
			}
			hashes[c.args] = it.ArgsHash
		}
	}
	if hashes[dune] == hashes[empty] || hashes[dune] == hashes[x] || hashes[empty] == hashes[x] {
		t.Errorf("different arguments hash equal: %v", hashes)
	}
}

// The hash is of the canonical JSON: key order and whitespace do not count.
func TestArgsHashCanonical(t *testing.T) {
	a := argsHash(map[string]any{"b": 1.0, "a": []any{"x", map[string]any{"d": true, "c": nil}}})
	b := argsHash(map[string]any{"a": []any{"x", map[string]any{"c": nil, "d": true}}, "b": 1.0})
	if a != b || a == argsHash(map[string]any{"b": 2.0}) || argsHash(nil) != argsHash(map[string]any{}) {
		t.Errorf("hashes %s %s", a, b)
	}
}
