package analytics

import (
	"time"
	"unicode/utf8"
)

// Limits of the ingest wire (contract, section Ingest).
const (
	MaxBatchItems     = 1000
	MaxBodyBytes      = 1 << 20 // after decompression
	MaxItemAge        = 30 * 24 * time.Hour
	MaxItemSkew       = 10 * time.Minute
	MaxSessionIDLen   = 128
	MaxMethodLen      = 64
	MaxNameLen        = 256
	MaxIDLen          = 64
	MaxShortStringLen = 128 // client_name, client_version, server_version, protocol_version, user_id
	MaxErrorMessage   = 1024
	MaxAttributes     = 32
	MaxAttributeValue = 1024 // characters; cut like the error message
	MaxDurationMs     = 86_400_000
)

// Item statuses.
const (
	StatusOK    = "ok"
	StatusError = "error"
)

// MethodToolsCall is the MCP method whose items are tool calls.
const MethodToolsCall = "tools/call"

// Item is one telemetry item: one MCP request handled by a server. It is the
// unit of ingest, of the write-ahead log and of the raw ClickHouse table.
type Item struct {
	ID            string    `json:"id,omitempty"`
	Timestamp     time.Time `json:"timestamp"`
	SessionID     string    `json:"session_id"`
	Method        string    `json:"method"`
	Name          string    `json:"name,omitempty"`
	DurationMs    *float64  `json:"duration_ms,omitempty"`
	Status        string    `json:"status"`
	ErrorType     string    `json:"error_type,omitempty"`
	ErrorMessage  string    `json:"error_message,omitempty"`
	ClientName    string    `json:"client_name,omitempty"`
	ClientVersion string    `json:"client_version,omitempty"`
	ServerVersion string    `json:"server_version,omitempty"`
	// ProtocolVersion is the MCP protocol revision the request was made
	// under ("2025-06-18"), as the client negotiated or declared it.
	ProtocolVersion string            `json:"protocol_version,omitempty"`
	UserID          string            `json:"user_id,omitempty"`
	Attributes      map[string]string `json:"attributes,omitempty"`
	// ErrorKind is why an error item failed, one of ErrorKinds
	// (errorkind.go); empty on success, and derived by the service when an
	// error item comes without one.
	ErrorKind string `json:"error_kind,omitempty"`
	// ResponseBytes is the size of the serialized result, when known.
	ResponseBytes *int64 `json:"response_bytes,omitempty"`
	// ArgsHash is the SDK's keyed hash of the call's canonical arguments
	// (at most MaxArgsHashLen characters); the same tool and hash twice in
	// a row in a session is a repeat.
	ArgsHash string `json:"args_hash,omitempty"`
}

// Normalize applies the defaults and the rules that repair rather than
// reject: status defaults to ok, an item with an error_type or an
// error_kind is an error, an error item without an error_kind gets one
// derived, the timestamp is UTC. The free text is cut later, by CutText, once redacted.
func (it *Item) Normalize() {
	if it.Status == "" {
		it.Status = StatusOK
	}
	if it.ErrorType != "" || it.ErrorKind != "" {
		it.Status = StatusError
	}
	// The one call site of the derivation of items that come without a
	// kind (errorderive.go, docs/failures.md).
	it.FillErrorKind()
	it.Timestamp = it.Timestamp.UTC()
}

// CutText passes the free text of the item, the error message and each
// attribute value, through cut with its limit in characters
// (MaxErrorMessage, MaxAttributeValue), and keeps what cut returns. cut
// must return at most that many characters; it redacts first when the
// MCP has redaction on, so that no part of a secret straddling the cut is
// kept. Errors: the first cut returns.
func (it *Item) CutText(cut func(s string, maxChars int) (string, error)) error {
	var err error
	if it.ErrorMessage, err = cut(it.ErrorMessage, MaxErrorMessage); err != nil {
		return err
	}
	for k, v := range it.Attributes {
		if it.Attributes[k], err = cut(v, MaxAttributeValue); err != nil {
			return err
		}
	}
	return nil
}

// Validate reports whether the item satisfies every field rule of the ingest
// contract, with now as the reference time. Call Normalize first.
func (it *Item) Validate(now time.Time) bool {
	if it.Timestamp.IsZero() || it.Timestamp.Before(now.Add(-MaxItemAge)) || it.Timestamp.After(now.Add(MaxItemSkew)) {
		return false
	}
	// An item without a session_id gets one derived by the service
	// (autosession.go) before it is stored.
	if !lenBetween(it.SessionID, 0, MaxSessionIDLen) || !lenBetween(it.Method, 1, MaxMethodLen) {
		return false
	}
	if !lenBetween(it.Name, 0, MaxNameLen) || (it.Method == MethodToolsCall && it.Name == "") {
		return false
	}
	if it.DurationMs != nil && !(*it.DurationMs >= 0 && *it.DurationMs <= MaxDurationMs) {
		return false
	}
	if it.Status != StatusOK && it.Status != StatusError {
		return false
	}
	if !lenBetween(it.ID, 0, MaxIDLen) {
		return false
	}
	for _, s := range []string{it.ClientName, it.ClientVersion, it.ServerVersion, it.ProtocolVersion, it.UserID} {
		if !lenBetween(s, 0, MaxShortStringLen) {
			return false
		}
	}
	if it.ErrorKind != "" && !ValidErrorKind(it.ErrorKind) {
		return false
	}
	if it.ResponseBytes != nil && (*it.ResponseBytes < 0 || *it.ResponseBytes > MaxResponseBytes) {
		return false
	}
	if !lenBetween(it.ArgsHash, 0, MaxArgsHashLen) {
		return false
	}
	return len(it.Attributes) <= MaxAttributes
}

// lenBetween reports whether s has lo to hi characters. A string has at
// most as many characters as bytes, and at least one when it has a byte,
// so most strings are judged by their length alone.
func lenBetween(s string, lo, hi int) bool {
	if len(s) <= hi && lo <= 1 {
		return len(s) >= lo
	}
	n := utf8.RuneCountInString(s)
	return n >= lo && n <= hi
}
