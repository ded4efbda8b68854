package analytics

import (
	"strconv"
	"strings"
)

// JSON-RPC error codes that tell a failure's kind (JSON-RPC 2.0, and the
// server-defined codes of the official MCP SDKs).
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
	codeMethodNotFound = -32601
	codeInvalidParams  = -32602
	codeInternalError  = -32603
	// codeRequestTimeout is the TypeScript SDK's RequestTimeout; the Go
	// SDK's internal jsonrpc2 uses -32001 for "unknown error".
	codeRequestTimeout = -32001
	// codeResourceNotFound is the resources/read miss of the 2025 protocol
	// revisions (TypeScript SDK 1.x, Go SDK before v1.7.0).
	codeResourceNotFound = -32002
	// codeRequestCancelled is the Language Server Protocol's
	// RequestCancelled, used by JSON-RPC stacks derived from it.
	codeRequestCancelled = -32800
)

// FillErrorKind sets the item's ErrorKind, when it is an error item without
// one, to what DeriveErrorKind makes of its method, error type and message.
// A kind the item came with is kept.
func (it *Item) FillErrorKind() {
	if it.Status == StatusError && it.ErrorKind == "" {
		it.ErrorKind = DeriveErrorKind(it.Method, it.ErrorType, it.ErrorMessage)
	}
}

// DeriveErrorKind is the error kind (one of ErrorKinds) of a failed request
// that came without one: from its MCP method, its error type (a JSON-RPC
// code such as "-32602", "tool_error", an exception class, an OTLP
// error.type or HTTP status code) and its error message. It never returns
// "": a failure it cannot place is ErrorKindOther.
//
// In this order:
//  1. The "not found" answers of the official SDKs to a tools/call,
//     prompts/get or resources/read of a name (URI) the server does not
//     have, by version: TypeScript @modelcontextprotocol/sdk 1.x and
//     @modelcontextprotocol/server 2.x "Tool X not found" (1.x answers it
//     as an isError result "MCP error -32602: Tool X not found"), "Prompt X
//     not found", "Resource X not found" (1.x), "Resource not found: X"
//     (2.x), and "... disabled" (a disabled tool is not listed either); Go
//     go-sdk `unknown tool "X"`, `unknown prompt "X"`, "Resource not found";
//     Python SDK (1.x FastMCP, 2.x MCPServer) "Unknown tool: X", "Unknown
//     prompt: X", "Unknown resource: X"; and -32002 on resources/read. These
//     are ErrorKindUnknownTool.
//  2. The SDKs' messages for refused arguments (TypeScript "Input validation
//     error: ...", "Invalid arguments for tool X: ...", Go `validating
//     "arguments": ...`, Python pydantic "N validation error(s) for ...")
//     are ErrorKindInvalidParams, whatever their code: TypeScript 1.x and Go
//     answer them as isError results.
//  3. The JSON-RPC code, of the error type or of the "MCP error <code>: "
//     prefix TypeScript 1.x gives an error it turns into an isError result:
//     -32601 method_not_found, -32602 invalid_params, -32603 internal,
//     -32001 timeout (except the Go SDK's "unknown error"), -32800
//     cancelled; other codes are other.
//  4. "tool_error" is ErrorKindToolError, except the Python SDK's "Error
//     executing tool X: ...", which is an exception the SDK caught.
//  5. An HTTP status code: 401 and 403 auth, 408 and 504 timeout, 499
//     cancelled, other 5xx internal, others other.
//  6. A type name: one naming a timeout or deadline is timeout, a
//     cancellation or abort cancelled, an authentication or authorization
//     failure auth; any other class or type name (RuntimeError,
//     *errors.errorString) is an exception the handler threw.
//  7. No type (or OTLP's "_OTHER", a span with an error status only), or
//     only the class of a JSON-RPC error answer (McpError, MCPError,
//     ProtocolError: a client-side instrumentation saw the server's error
//     but not its code): a
//     message "context canceled", "context deadline exceeded" or "... timed
//     out" tells cancelled or timeout; otherwise other.
func DeriveErrorKind(method, errorType, message string) string {
	msg := strings.TrimSpace(message)
	typ := strings.TrimSpace(errorType)
	code, isCode := jsonrpcCode(typ)
	if c, rest, ok := mcpErrorPrefix(msg); ok {
		msg = rest
		if !isCode {
			code, isCode = c, true
		}
	}
	if unknownName(method, msg) || (isCode && code == codeResourceNotFound && method == "resources/read") {
		return ErrorKindUnknownTool
	}
	if refusedArguments(msg) {
		return ErrorKindInvalidParams
	}
	if isCode {
		switch code {
		case codeMethodNotFound:
			return ErrorKindMethodNotFound
		case codeInvalidParams:
			return ErrorKindInvalidParams
		case codeInternalError:
			return ErrorKindInternal
		case codeRequestTimeout:
			if strings.EqualFold(msg, "unknown error") {
				return ErrorKindOther
			}
			return ErrorKindTimeout
		case codeRequestCancelled:
			return ErrorKindCancelled
		}
		return ErrorKindOther
	}
	if typ == ErrorKindToolError {
		if strings.HasPrefix(msg, "Error executing tool ") {
			return ErrorKindException
		}
		return ErrorKindToolError
	}
	if n, err := strconv.Atoi(typ); err == nil {
		return httpStatusKind(n)
	}
	if typ == "" || typ == "_OTHER" || protocolErrorClass(typ) {
		return messageKind(msg)
	}
	if k := typeNameKind(typ); k != "" {
		return k
	}
	if ValidErrorKind(typ) {
		return typ // an emitter that already says the kind as its error type
	}
	return ErrorKindException
}

// jsonrpcCode parses s as a JSON-RPC error code: an integer of the
// reserved range -32768 to -32000, or LSP's -32899 to -32800.
func jsonrpcCode(s string) (int, bool) {
	if !strings.HasPrefix(s, "-32") {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < -32899 || n > -32000 {
		return 0, false
	}
	return n, true
}

// mcpErrorPrefix splits the "MCP error <code>: " that the TypeScript SDK
// 1.x puts in front of an McpError's message.
func mcpErrorPrefix(msg string) (int, string, bool) {
	const p = "MCP error "
	if !strings.HasPrefix(msg, p) {
		return 0, msg, false
	}
	head, rest, ok := strings.Cut(msg[len(p):], ": ")
	if !ok {
		return 0, msg, false
	}
	code, isCode := jsonrpcCode(head)
	if !isCode {
		return 0, msg, false
	}
	return code, rest, true
}

// unknownName reports whether msg is an official SDK's answer to a
// request, of method, for a tool, prompt or resource it does not have.
func unknownName(method, msg string) bool {
	var noun, goNoun string
	switch method {
	case MethodToolsCall:
		noun, goNoun = "Tool", "tool"
	case "prompts/get":
		noun, goNoun = "Prompt", "prompt"
	case "resources/read":
		noun, goNoun = "Resource", "resource"
		if msg == "Resource not found" || strings.HasPrefix(msg, "Resource not found: ") {
			return true // Go SDK; TypeScript 2.x
		}
	default:
		return false
	}
	if strings.HasPrefix(msg, noun+" ") && (strings.HasSuffix(msg, " not found") || strings.HasSuffix(msg, " disabled")) {
		return !strings.HasPrefix(msg, "Resource template ") // TypeScript 1.x, 2.x
	}
	return strings.HasPrefix(msg, "unknown "+goNoun+" \"") || // Go SDK
		strings.HasPrefix(msg, "Unknown "+goNoun+": ") // Python SDK
}

// refusedArguments reports whether msg is an official SDK's answer to
// arguments that the schema refused.
func refusedArguments(msg string) bool {
	for _, p := range []string{"Input validation error: ", "Invalid arguments for tool ", "Invalid arguments for prompt ", `validating "arguments": `, "Invalid request parameters"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	// Python (pydantic), also behind "Error executing tool X: ".
	return strings.Contains(msg, " validation error for ") || strings.Contains(msg, " validation errors for ")
}

// httpStatusKind is the kind of an HTTP status code given as error type.
func httpStatusKind(n int) string {
	switch {
	case n == 401 || n == 403:
		return ErrorKindAuth
	case n == 408 || n == 504:
		return ErrorKindTimeout
	case n == 499:
		return ErrorKindCancelled
	case n >= 500 && n <= 599:
		return ErrorKindInternal
	}
	return ErrorKindOther
}

// typeNameKind is the kind an exception class or error type name says, or
// "" when it says none: TimeoutError, context.deadlineExceededError,
// CancelledError, AbortError, UnauthorizedError, PermissionDenied.
func typeNameKind(typ string) string {
	t := strings.ToLower(typ)
	switch {
	case strings.Contains(t, "timeout") || strings.Contains(t, "timedout") || strings.Contains(t, "deadline"):
		return ErrorKindTimeout
	case strings.Contains(t, "cancel") || strings.Contains(t, "abort"):
		return ErrorKindCancelled
	case strings.Contains(t, "unauthori") || strings.Contains(t, "unauthenticated") || strings.Contains(t, "forbidden") ||
		strings.Contains(t, "authentication") || strings.Contains(t, "permissiondenied"):
		return ErrorKindAuth
	}
	return ""
}

// messageKind is the kind a failure without a type says in its message.
func messageKind(msg string) string {
	m := strings.ToLower(msg)
	switch {
	case strings.Contains(m, "context deadline exceeded") || strings.Contains(m, "timed out"):
		return ErrorKindTimeout
	case strings.Contains(m, "context canceled") || strings.Contains(m, "request cancelled"):
		return ErrorKindCancelled
	}
	return ErrorKindOther
}

// protocolErrorClass reports whether typ is the official SDKs' class of a
// JSON-RPC error answer, which says that the server answered an error but
// not why.
func protocolErrorClass(typ string) bool {
	switch strings.ToLower(typ) {
	case "mcperror", "mcp.shared.exceptions.mcperror", "protocolerror":
		return true
	}
	return false
}
