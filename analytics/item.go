package analytics

import (
	"bytes"
	"encoding/json"
	"errors"
	"time"
	"unicode/utf8"

	"github.com/bytedance/sonic"

	"github.com/mcpscope/telemetry"
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
	MaxShortStringLen = 128 // client_name, client_version, server_version, user_id
	MaxErrorMessage   = 1024
	MaxAttributes     = 32
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
	ID            string            `json:"id,omitempty"`
	Timestamp     time.Time         `json:"timestamp"`
	SessionID     string            `json:"session_id"`
	Method        string            `json:"method"`
	Name          string            `json:"name,omitempty"`
	DurationMs    *float64          `json:"duration_ms,omitempty"`
	Status        string            `json:"status"`
	ErrorType     string            `json:"error_type,omitempty"`
	ErrorMessage  string            `json:"error_message,omitempty"`
	ClientName    string            `json:"client_name,omitempty"`
	ClientVersion string            `json:"client_version,omitempty"`
	ServerVersion string            `json:"server_version,omitempty"`
	UserID        string            `json:"user_id,omitempty"`
	Attributes    map[string]string `json:"attributes,omitempty"`
}

// Normalize applies the defaults and the rules that repair rather than
// reject: status defaults to ok, an item with an error_type is an error, the
// error message is cut to MaxErrorMessage characters, the timestamp is UTC.
func (it *Item) Normalize() {
	if it.Status == "" {
		it.Status = StatusOK
	}
	if it.ErrorType != "" {
		it.Status = StatusError
	}
	it.ErrorMessage = truncateRunes(it.ErrorMessage, MaxErrorMessage)
	it.Timestamp = it.Timestamp.UTC()
}

// Validate reports whether the item satisfies every field rule of the ingest
// contract, with now as the reference time. Call Normalize first.
func (it *Item) Validate(now time.Time) bool {
	if it.Timestamp.IsZero() || it.Timestamp.Before(now.Add(-MaxItemAge)) || it.Timestamp.After(now.Add(MaxItemSkew)) {
		return false
	}
	if !lenBetween(it.SessionID, 1, MaxSessionIDLen) || !lenBetween(it.Method, 1, MaxMethodLen) {
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
	for _, s := range []string{it.ClientName, it.ClientVersion, it.ServerVersion, it.UserID} {
		if !lenBetween(s, 0, MaxShortStringLen) {
			return false
		}
	}
	return len(it.Attributes) <= MaxAttributes
}

// Batch is the decoded body of an ingest request: its valid items and the
// number of invalid ones that were dropped.
type Batch struct {
	Items   []Item
	Dropped int
}

// ParseBatch decodes an ingest body ({"items": [...]}). The whole payload is
// refused (EBADREQUEST, ETOOMANYITEMS) only when it is not a batch at all;
// items that fail a field rule, or are not even objects of the right types,
// are counted in Dropped. Unknown fields of an item are ignored.
func ParseBatch(body []byte, now time.Time) (Batch, error) {
	// Fast path: a well-formed batch decodes in one pass. Only when some
	// item has a wrong type does the slow path decode item by item, so
	// that the bad item drops alone.
	var fast struct {
		Items *[]wireItem `json:"items"`
	}
	if err := sonic.ConfigStd.Unmarshal(body, &fast); err == nil && fast.Items != nil && len(*fast.Items) <= MaxBatchItems {
		b := Batch{Items: make([]Item, 0, len(*fast.Items))}
		for i := range *fast.Items {
			it, ok := (*fast.Items)[i].item()
			if ok {
				it.Normalize()
				ok = it.Validate(now)
			}
			if !ok {
				b.Dropped++
				continue
			}
			b.Items = append(b.Items, it)
		}
		return b, nil
	}
	return parseBatchSlow(body, now)
}

// parseBatchSlow decodes item by item with encoding/json: the reference
// behaviour, which the fast path must match (FuzzParseBatch checks it).
func parseBatchSlow(body []byte, now time.Time) (Batch, error) {
	var envelope struct {
		Items *[]json.RawMessage `json:"items"`
	}
	if err := json.Unmarshal(body, &envelope); err != nil {
		return Batch{}, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not a JSON batch: %s.", jsonErrorText(err))
	}
	if envelope.Items == nil {
		return Batch{}, telemetry.FieldError(telemetry.EBADREQUEST, "body.items", "The body must be an object with an items array.")
	}
	raw := *envelope.Items
	if len(raw) > MaxBatchItems {
		return Batch{}, telemetry.FieldError(telemetry.ETOOMANYITEMS, "body.items", "A batch holds at most %d items; this one has %d.", MaxBatchItems, len(raw))
	}
	b := Batch{Items: make([]Item, 0, len(raw))}
	for _, r := range raw {
		it, ok := decodeItem(r)
		if ok {
			it.Normalize()
			ok = it.Validate(now)
		}
		if !ok {
			b.Dropped++
			continue
		}
		b.Items = append(b.Items, it)
	}
	return b, nil
}

// wireItem mirrors Item with a textual timestamp so that a bad timestamp
// invalidates the item, not the batch.
type wireItem struct {
	ID            string            `json:"id"`
	Timestamp     string            `json:"timestamp"`
	SessionID     string            `json:"session_id"`
	Method        string            `json:"method"`
	Name          string            `json:"name"`
	DurationMs    *float64          `json:"duration_ms"`
	Status        string            `json:"status"`
	ErrorType     string            `json:"error_type"`
	ErrorMessage  string            `json:"error_message"`
	ClientName    string            `json:"client_name"`
	ClientVersion string            `json:"client_version"`
	ServerVersion string            `json:"server_version"`
	UserID        string            `json:"user_id"`
	Attributes    map[string]string `json:"attributes"`
}

func decodeItem(raw json.RawMessage) (Item, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return Item{}, false
	}
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return Item{}, false
	}
	return w.item()
}

// item converts the wire form; a timestamp that is not RFC 3339 makes the
// item invalid.
func (w *wireItem) item() (Item, bool) {
	ts, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return Item{}, false
	}
	return Item{
		ID: w.ID, Timestamp: ts, SessionID: w.SessionID, Method: w.Method, Name: w.Name,
		DurationMs: w.DurationMs, Status: w.Status, ErrorType: w.ErrorType, ErrorMessage: w.ErrorMessage,
		ClientName: w.ClientName, ClientVersion: w.ClientVersion, ServerVersion: w.ServerVersion,
		UserID: w.UserID, Attributes: w.Attributes,
	}, true
}

func lenBetween(s string, lo, hi int) bool {
	n := utf8.RuneCountInString(s)
	return n >= lo && n <= hi
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for pos := range s {
		if i == n {
			return s[:pos]
		}
		i++
	}
	return s
}

func jsonErrorText(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return se.Error()
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return "items must be an array of objects"
	}
	return "invalid JSON"
}
