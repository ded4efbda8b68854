// Package wire decodes the ingest wire format (contract, section Ingest)
// into domain items: the JSON batch of POST /v1/ingest. The domain package
// analytics owns the Item type and its field rules; this package owns the
// bytes, and the fast decoder (sonic) that reads them in one pass.
package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"sync"
	"time"

	"github.com/bytedance/sonic"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/jsoncount"
)

// Batch is the decoded body of an ingest request: its valid items and the
// number of invalid ones that were dropped.
type Batch struct {
	Items   []analytics.Item
	Dropped int
}

// ParseBatch decodes an ingest body ({"items": [...]}). The whole payload is
// refused (EBADREQUEST, ETOOMANYITEMS) only when it is not a batch at all;
// items that fail a field rule, or are not even objects of the right types,
// are counted in Dropped. Unknown fields of an item are ignored.
func ParseBatch(body []byte, now time.Time) (Batch, error) {
	// A body the hand-written decoder takes has at most MaxBatchItems
	// items (it gives up at more), so it needs no count first.
	if b, ok := parseFast(body, now); ok {
		return b, nil
	}
	if err := CheckItemCount(body); err != nil {
		return Batch{}, err
	}
	return parseSonic(body, now)
}

// ParseCountedBatch is ParseBatch for a body whose items CheckItemCount
// already counted (the ingest handler counts them as it inflates a gzip
// body): it skips the count.
func ParseCountedBatch(body []byte, now time.Time) (Batch, error) {
	// Fastest path: the shape every SDK sends, decoded by hand (fast.go).
	if b, ok := parseFast(body, now); ok {
		return b, nil
	}
	return parseSonic(body, now)
}

// parseSonic is ParseCountedBatch for the bodies parseFast gives up on.
func parseSonic(body []byte, now time.Time) (Batch, error) {
	// Fast path: a well-formed batch decodes in one pass, into a slice
	// kept between requests. Only when some item has a wrong type does the
	// slow path decode item by item, so that the bad item drops alone; it
	// also answers a batch that decodes to no item (none, or no items
	// array at all).
	buf := wireItems.Get().(*[]wireItem)
	defer putWireItems(buf)
	fast := struct {
		Items *[]wireItem `json:"items"`
	}{Items: buf}
	if err := sonic.ConfigStd.Unmarshal(body, &fast); err == nil && fast.Items != nil && len(*fast.Items) > 0 && len(*fast.Items) <= analytics.MaxBatchItems {
		b := Batch{Items: make([]analytics.Item, 0, len(*fast.Items))}
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

// wireItems keeps the fast path's slices between requests: at hundreds of
// payloads a second, a slice of a batch's items grown by doubling each
// time was the largest part of the garbage.
var wireItems = sync.Pool{New: func() any { return new([]wireItem) }}

// putWireItems zeroes the slice (the decoder writes into the elements it
// finds, so none may keep a field of an earlier request) and keeps it
// unless it grew past a batch.
func putWireItems(buf *[]wireItem) {
	all := (*buf)[:cap(*buf)]
	if len(all) > analytics.MaxBatchItems {
		return
	}
	clear(all)
	*buf = all[:0]
	wireItems.Put(buf)
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
	if len(raw) > analytics.MaxBatchItems {
		return Batch{}, telemetry.FieldError(telemetry.ETOOMANYITEMS, "body.items", "A batch holds at most %d items; this one has %d.", analytics.MaxBatchItems, len(raw))
	}
	b := Batch{Items: make([]analytics.Item, 0, len(raw))}
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

// CheckItemCount refuses a body of more than MaxBatchItems items, counting
// them on the bytes: a 1 MiB body of empty items would otherwise be
// decoded into some 350,000 items before the limit is checked. Malformed or
// truncated input passes (the decoder reports it), so it can judge a
// prefix of a body as it inflates.
func CheckItemCount(body []byte) error {
	if _, over := jsoncount.AtPath(body, itemsPath, analytics.MaxBatchItems); over {
		return telemetry.FieldError(telemetry.ETOOMANYITEMS, "body.items", "A batch holds at most %d items; this one has more.", analytics.MaxBatchItems)
	}
	return nil
}

// itemsPath is where a batch keeps its items.
var itemsPath = []string{"items"}

// wireItem mirrors analytics.Item with a textual timestamp so that a bad
// timestamp invalidates the item, not the batch.
type wireItem struct {
	ID              string            `json:"id"`
	Timestamp       string            `json:"timestamp"`
	SessionID       string            `json:"session_id"`
	Method          string            `json:"method"`
	Name            string            `json:"name"`
	DurationMs      *float64          `json:"duration_ms"`
	Status          string            `json:"status"`
	ErrorType       string            `json:"error_type"`
	ErrorMessage    string            `json:"error_message"`
	ClientName      string            `json:"client_name"`
	ClientVersion   string            `json:"client_version"`
	ServerVersion   string            `json:"server_version"`
	ProtocolVersion string            `json:"protocol_version"`
	UserID          string            `json:"user_id"`
	Attributes      map[string]string `json:"attributes"`
	ErrorKind       string            `json:"error_kind"`
	ResponseBytes   *int64            `json:"response_bytes"`
	ArgsHash        string            `json:"args_hash"`
}

func decodeItem(raw json.RawMessage) (analytics.Item, bool) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || raw[0] != '{' {
		return analytics.Item{}, false
	}
	var w wireItem
	if err := json.Unmarshal(raw, &w); err != nil {
		return analytics.Item{}, false
	}
	return w.item()
}

// item converts the wire form; a timestamp that is not RFC 3339 makes the
// item invalid.
func (w *wireItem) item() (analytics.Item, bool) {
	ts, err := time.Parse(time.RFC3339Nano, w.Timestamp)
	if err != nil {
		return analytics.Item{}, false
	}
	return analytics.Item{
		ID: w.ID, Timestamp: ts, SessionID: w.SessionID, Method: w.Method, Name: w.Name,
		DurationMs: w.DurationMs, Status: w.Status, ErrorType: w.ErrorType, ErrorMessage: w.ErrorMessage,
		ClientName: w.ClientName, ClientVersion: w.ClientVersion, ServerVersion: w.ServerVersion,
		ProtocolVersion: w.ProtocolVersion, UserID: w.UserID, Attributes: w.Attributes,
		ErrorKind: w.ErrorKind, ResponseBytes: w.ResponseBytes, ArgsHash: w.ArgsHash,
	}, true
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
