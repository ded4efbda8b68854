package analytics

// provisionalErrorKind is the minimal derivation of an error item's kind
// from its error_type alone: the JSON-RPC codes and "tool_error". The
// full derivation (DeriveErrorKind: each SDK's "not found" messages,
// OTLP types, HTTP statuses) replaces it where Item.Normalize calls it.
func provisionalErrorKind(errorType string) string {
	switch errorType {
	case "-32601":
		return ErrorKindMethodNotFound
	case "-32602":
		return ErrorKindInvalidParams
	case "-32603":
		return ErrorKindInternal
	case "-32001":
		return ErrorKindTimeout
	case "tool_error":
		return ErrorKindToolError
	}
	return ErrorKindOther
}
