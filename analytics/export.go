package analytics

import (
	"bufio"
	"context"
	"encoding/csv"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Export formats (the format query parameter of GET /v1/mcps/{id}/export).
const (
	ExportNDJSON = "ndjson"
	ExportCSV    = "csv"
)

// ExportedItem is one stored item as an export writes it: the ingest fields
// as stored, plus when the service accepted it. Attributes are parallel
// key and value slices sorted by key (as stored), not a map, so that a
// stream of millions of items allocates nothing per item.
type ExportedItem struct {
	ID            string
	Timestamp     time.Time // millisecond precision
	ReceivedAt    time.Time // whole seconds
	SessionID     string
	Method        string
	Name          string
	DurationMs    float64
	HasDuration   bool // false: the item carried no duration_ms
	Status        string
	ErrorType     string
	ErrorMessage  string
	ClientName    string
	ClientVersion string
	ServerVersion string
	UserID        string
	AttrKeys      []string
	AttrValues    []string
}

// Exporter streams stored items.
type Exporter interface {
	// Export calls each for every stored item of the MCP in the range,
	// oldest first (by timestamp, then id and session id); the item is
	// reused between calls. It stops at the first error of each or of the
	// store, and when ctx ends (the query on the store is cancelled). A
	// store that cannot be reached fails with EUNAVAILABLE.
	Export(ctx context.Context, mcpID string, r Range, each func(*ExportedItem) error) error
}

// ParseExportFormat checks the format query parameter; empty means ndjson.
func ParseExportFormat(f string) (string, error) {
	switch f {
	case "", ExportNDJSON:
		return ExportNDJSON, nil
	case ExportCSV:
		return ExportCSV, nil
	}
	return "", telemetry.FieldError(telemetry.EINVALID, "query.format", "format must be ndjson or csv, not %q.", f)
}

// ExportColumns are the CSV header, in column order; an NDJSON line has
// the same fields in the same order.
var ExportColumns = []string{"id", "timestamp", "received_at", "session_id", "method", "name", "duration_ms", "status",
	"error_type", "error_message", "client_name", "client_version", "server_version", "user_id", "attributes"}

// exportTimeLayout writes every exported time with milliseconds, so that
// the column sorts as text and has one width.
const exportTimeLayout = "2006-01-02T15:04:05.000Z"

// ExportWriter encodes items as NDJSON or CSV onto a buffered writer.
type ExportWriter struct {
	w      *bufio.Writer
	csv    *csv.Writer
	buf    []byte
	record []string
}

// NewExportWriter writes format (ExportNDJSON or ExportCSV) onto w; a CSV
// export starts with the header line. Call Flush at the end.
func NewExportWriter(w *bufio.Writer, format string) *ExportWriter {
	e := &ExportWriter{w: w, buf: make([]byte, 0, 1024)}
	if format == ExportCSV {
		e.csv = csv.NewWriter(w)
		e.record = make([]string, len(ExportColumns))
		_ = e.csv.Write(ExportColumns)
	}
	return e
}

// Write encodes one item. NDJSON lines leave out what the item did not
// carry, as the ingest wire does (an empty string is not sent, duration_ms
// absent is not 0), so that a line is a valid ingest item; CSV cells are
// empty instead, and attributes are one cell holding a JSON object.
func (e *ExportWriter) Write(it *ExportedItem) error {
	if e.csv != nil {
		return e.writeCSV(it)
	}
	b := e.buf[:0]
	b = append(b, '{')
	first := true
	str := func(key, v string, always bool) {
		if v == "" && !always {
			return
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, '"')
		b = append(b, key...)
		b = append(b, '"', ':')
		b = AppendJSONString(b, v)
	}
	str("id", it.ID, false)
	str("timestamp", it.Timestamp.UTC().Format(exportTimeLayout), true)
	str("received_at", it.ReceivedAt.UTC().Format(exportTimeLayout), true)
	str("session_id", it.SessionID, true)
	str("method", it.Method, true)
	str("name", it.Name, false)
	if it.HasDuration {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendFloat(b, it.DurationMs, 'f', -1, 64)
	}
	str("status", it.Status, true)
	str("error_type", it.ErrorType, false)
	str("error_message", it.ErrorMessage, false)
	str("client_name", it.ClientName, false)
	str("client_version", it.ClientVersion, false)
	str("server_version", it.ServerVersion, false)
	str("user_id", it.UserID, false)
	if len(it.AttrKeys) > 0 {
		b = append(b, `,"attributes":`...)
		b = appendAttributes(b, it)
	}
	b = append(b, '}', '\n')
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

func (e *ExportWriter) writeCSV(it *ExportedItem) error {
	r := e.record
	r[0], r[1], r[2] = it.ID, it.Timestamp.UTC().Format(exportTimeLayout), it.ReceivedAt.UTC().Format(exportTimeLayout)
	r[3], r[4], r[5] = it.SessionID, it.Method, it.Name
	r[6] = ""
	if it.HasDuration {
		r[6] = strconv.FormatFloat(it.DurationMs, 'f', -1, 64)
	}
	r[7], r[8], r[9] = it.Status, it.ErrorType, it.ErrorMessage
	r[10], r[11], r[12], r[13] = it.ClientName, it.ClientVersion, it.ServerVersion, it.UserID
	r[14] = ""
	if len(it.AttrKeys) > 0 {
		e.buf = appendAttributes(e.buf[:0], it)
		r[14] = string(e.buf)
	}
	return e.csv.Write(r)
}

// Flush writes what is buffered to the underlying writer of the
// bufio.Writer (not further).
func (e *ExportWriter) Flush() error {
	if e.csv != nil {
		e.csv.Flush()
		if err := e.csv.Error(); err != nil {
			return err
		}
	}
	return e.w.Flush()
}

func appendAttributes(b []byte, it *ExportedItem) []byte {
	b = append(b, '{')
	for i, k := range it.AttrKeys {
		if i > 0 {
			b = append(b, ',')
		}
		b = AppendJSONString(b, k)
		b = append(b, ':')
		v := ""
		if i < len(it.AttrValues) {
			v = it.AttrValues[i]
		}
		b = AppendJSONString(b, v)
	}
	return append(b, '}')
}

const hexDigits = "0123456789abcdef"

// AppendJSONString appends s as a JSON string, escaped as encoding/json
// escapes it without HTML escaping: control characters, quote, backslash,
// U+2028 and U+2029 escaped, invalid UTF-8 replaced by U+FFFD.
func AppendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// ExportDoc documents GET /v1/mcps/{id}/export in /docs.
const ExportDoc = "Streams every stored item of the MCP in the range, oldest first (by `timestamp`, then `id` and `session_id`), " +
	"as `format=ndjson` (default; `application/x-ndjson`, one JSON object a line) or `format=csv` (`text/csv`, a header line first), " +
	"with `Content-Disposition: attachment`. The fields are the ingest fields as stored plus `received_at` (when the service accepted " +
	"the item, whole seconds). Times are RFC 3339 UTC with milliseconds.\n\n" +
	"An NDJSON line leaves out what the item did not carry, as the ingest wire does (so each line is a valid ingest item): " +
	"`duration_ms` absent means not measured, attributes appear only when the item had some. A CSV cell is empty instead, and " +
	"`attributes` is one cell holding a JSON object (keys sorted). Values are written exactly as stored: a spreadsheet may read a " +
	"cell starting with `=`, `+`, `-` or `@` as a formula, so open untrusted exports as text.\n\n" +
	"Example (ndjson):\n\n" +
	"```\n" +
	`{"id":"6f1c2a9e","timestamp":"2026-11-20T10:00:00.120Z","received_at":"2026-11-20T10:00:01.000Z","session_id":"s-81","method":"tools/call","name":"search_docs","duration_ms":182.5,"status":"error","error_type":"TimeoutError","error_message":"upstream timed out","client_name":"claude-desktop","user_id":"u-42","attributes":{"region":"eu"}}` + "\n" +
	"```\n\n" +
	"Example (csv):\n\n" +
	"```\n" +
	"id,timestamp,received_at,session_id,method,name,duration_ms,status,error_type,error_message,client_name,client_version,server_version,user_id,attributes\n" +
	`6f1c2a9e,2026-11-20T10:00:00.120Z,2026-11-20T10:00:01.000Z,s-81,tools/call,search_docs,182.5,error,TimeoutError,upstream timed out,claude-desktop,,,u-42,"{""region"":""eu""}"` + "\n" +
	"```\n\n" +
	"The response is streamed as it is read from the store: memory stays flat whatever the size, and a client that disconnects " +
	"cancels the query. An error after the first bytes were sent ends the response early (the chunked body has no terminating " +
	"chunk, which HTTP clients report as an unexpected end); an error before then is the usual problem document. " +
	"Exports are rate-limited per account (`export.per_minute` starts a minute, default 10, and `export.concurrent` at once, " +
	"default 2): beyond either, 429 `rate_limited` with `Retry-After`. Any role may export."
