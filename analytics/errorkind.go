package analytics

// Error kinds (item field error_kind): why a request failed, told apart so
// that an MCP author sees whether the tool broke or the agent guessed
// wrong. The names are pinned by the wire contract (Additions).
const (
	ErrorKindToolError      = "tool_error"       // a result with isError
	ErrorKindException      = "exception"        // the handler threw
	ErrorKindInvalidParams  = "invalid_params"   // arguments the schema or handler refused
	ErrorKindUnknownTool    = "unknown_tool"     // a tool, prompt or resource the server does not have
	ErrorKindMethodNotFound = "method_not_found" // a JSON-RPC method the server does not serve
	ErrorKindTimeout        = "timeout"
	ErrorKindCancelled      = "cancelled"
	ErrorKindAuth           = "auth"
	ErrorKindInternal       = "internal"
	ErrorKindOther          = "other"
)

// ErrorKinds lists every error kind, in the contract's order.
var ErrorKinds = []string{
	ErrorKindToolError, ErrorKindException, ErrorKindInvalidParams, ErrorKindUnknownTool,
	ErrorKindMethodNotFound, ErrorKindTimeout, ErrorKindCancelled, ErrorKindAuth,
	ErrorKindInternal, ErrorKindOther,
}

// ValidErrorKind reports whether k is one of ErrorKinds.
func ValidErrorKind(k string) bool {
	switch k {
	case ErrorKindToolError, ErrorKindException, ErrorKindInvalidParams, ErrorKindUnknownTool,
		ErrorKindMethodNotFound, ErrorKindTimeout, ErrorKindCancelled, ErrorKindAuth,
		ErrorKindInternal, ErrorKindOther:
		return true
	}
	return false
}

// Limits of the failure fields.
const (
	// MaxArgsHashLen bounds args_hash, the SDKs' keyed hash of a call's
	// canonical arguments.
	MaxArgsHashLen = 128
	// MaxResponseBytes bounds response_bytes: a larger figure is not a
	// serialized MCP result.
	MaxResponseBytes = 1 << 40
)
