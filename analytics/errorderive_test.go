package analytics

import "testing"

func TestDeriveErrorKind(t *testing.T) {
	const call, prompt, read = MethodToolsCall, "prompts/get", "resources/read"
	cases := []struct {
		sdk, method, typ, msg, want string
	}{
		// TypeScript @modelcontextprotocol/sdk 1.32: McpServer turns its own
		// McpErrors of tools/call into isError results.
		{"ts1", call, "tool_error", "MCP error -32602: Tool get_forcast not found", ErrorKindUnknownTool},
		{"ts1", call, "tool_error", "MCP error -32602: Tool old_tool disabled", ErrorKindUnknownTool},
		{"ts1", call, "tool_error", "MCP error -32602: Input validation error: Invalid arguments for tool get_forecast: [{\"path\":[\"days\"]}]", ErrorKindInvalidParams},
		{"ts1", call, "tool_error", "MCP error -32603: Tool x has taskSupport 'required' but was not registered", ErrorKindInternal},
		{"ts1", call, "tool_error", "upstream said no", ErrorKindToolError},
		{"ts1", prompt, "-32602", "MCP error -32602: Prompt summary not found", ErrorKindUnknownTool},
		{"ts1", prompt, "-32602", "MCP error -32602: Invalid arguments for prompt summary: bad", ErrorKindInvalidParams},
		{"ts1", read, "-32602", "MCP error -32602: Resource file:///x not found", ErrorKindUnknownTool},
		{"ts1", read, "-32002", "Resource not found", ErrorKindUnknownTool},
		{"ts1", "completion/complete", "-32602", "MCP error -32602: Resource template file:///{x} not found", ErrorKindInvalidParams},
		{"ts1", "tools/list", "-32001", "MCP error -32001: Request timed out", ErrorKindTimeout},
		// TypeScript @modelcontextprotocol/server 2.x: unknown tools are
		// JSON-RPC errors, refused arguments isError results.
		{"ts2", call, "-32602", "Tool get_forcast not found", ErrorKindUnknownTool},
		{"ts2", call, "tool_error", "Input validation error: Invalid arguments for tool get_forecast: ✖ Invalid input: expected number, received string\n  → at days", ErrorKindInvalidParams},
		{"ts2", read, "-32602", "Resource not found: file:///missing", ErrorKindUnknownTool},
		{"ts2", read, "-32602", "Resource URI ::: is invalid", ErrorKindInvalidParams},
		{"ts2", "sampling/x", "-32601", "Method not found", ErrorKindMethodNotFound},
		// Go go-sdk v1.8.0.
		{"go", call, "-32602", `unknown tool "get_forcast"`, ErrorKindUnknownTool},
		{"go", prompt, "-32602", `unknown prompt "summary"`, ErrorKindUnknownTool},
		{"go", read, "-32602", "Resource not found", ErrorKindUnknownTool},
		{"go", call, "tool_error", `validating "arguments": validating root: required: missing properties: ["city"]`, ErrorKindInvalidParams},
		{"go", "foo/bar", "-32601", "method not found", ErrorKindMethodNotFound},
		{"go", "tools/list", "-32001", "unknown error", ErrorKindOther},
		{"go", "tools/list", "*errors.errorString", "boom", ErrorKindException},
		{"go", "tools/list", "context.deadlineExceededError", "context deadline exceeded", ErrorKindTimeout},
		// Python SDK 2.x (MCPServer) and 1.x (FastMCP).
		{"py", call, "tool_error", "Unknown tool: get_forcast", ErrorKindUnknownTool},
		{"py", prompt, "ValueError", "Unknown prompt: summary", ErrorKindUnknownTool},
		{"py", read, "-32602", "Unknown resource: file:///x", ErrorKindUnknownTool},
		{"py", call, "tool_error", "Error executing tool get_forecast: 1 validation error for get_forecastArguments\ndays\n  Input should be a valid integer", ErrorKindInvalidParams},
		{"py", call, "tool_error", "Error executing tool get_forecast: division by zero", ErrorKindException},
		{"py", call, "-32602", "Invalid request parameters", ErrorKindInvalidParams},
		{"py", call, "RuntimeError", "index offline", ErrorKindException},
		{"py", call, "asyncio.CancelledError", "", ErrorKindCancelled},
		{"py", call, "TimeoutError", "", ErrorKindTimeout},
		// OTLP error.type, rpc.response.status_code and status alone.
		{"otlp", call, "_OTHER", "", ErrorKindOther},
		{"otlp", call, "", "", ErrorKindOther},
		{"otlp", call, "_OTHER", "upstream timed out", ErrorKindTimeout},
		{"otlp", call, "401", "", ErrorKindAuth},
		{"otlp", call, "503", "", ErrorKindInternal},
		{"otlp", call, "504", "", ErrorKindTimeout},
		{"otlp", call, "404", "", ErrorKindOther},
		{"otlp", call, "UnauthorizedError", "", ErrorKindAuth},
		{"otlp", call, "AbortError", "This operation was aborted", ErrorKindCancelled},
		{"otlp", call, "-32700", "Parse error", ErrorKindOther},
		{"otlp", call, "-32800", "Request cancelled", ErrorKindCancelled},
		{"otlp", call, "McpError", "MCP error -32602: Tool x not found", ErrorKindUnknownTool},
		{"otlp", call, "McpError", "MCP error -32601: Method not found", ErrorKindMethodNotFound},
		{"otlp", call, "timeout", "", ErrorKindTimeout},
		{"otlp", call, "internal", "", ErrorKindInternal},
		// A not-found message of another method is not an unknown tool.
		{"ts2", prompt, "-32602", "Tool get_forcast not found", ErrorKindInvalidParams},
	}
	for _, c := range cases {
		if got := DeriveErrorKind(c.method, c.typ, c.msg); got != c.want {
			t.Errorf("%s: DeriveErrorKind(%q, %q, %q) = %q, want %q", c.sdk, c.method, c.typ, c.msg, got, c.want)
		}
		if !ValidErrorKind(DeriveErrorKind(c.method, c.typ, c.msg)) {
			t.Errorf("not a kind")
		}
	}
}

func TestFillErrorKind(t *testing.T) {
	it := Item{Method: MethodToolsCall, Status: StatusError, ErrorType: "-32602", ErrorMessage: "Tool a not found"}
	it.FillErrorKind()
	if it.ErrorKind != ErrorKindUnknownTool {
		t.Errorf("derived %q", it.ErrorKind)
	}
	kept := Item{Method: MethodToolsCall, Status: StatusError, ErrorType: "-32602", ErrorKind: ErrorKindAuth}
	kept.FillErrorKind()
	ok := Item{Method: MethodToolsCall, Status: StatusOK}
	ok.FillErrorKind()
	if kept.ErrorKind != ErrorKindAuth || ok.ErrorKind != "" {
		t.Errorf("kept %q, ok %q", kept.ErrorKind, ok.ErrorKind)
	}
}
