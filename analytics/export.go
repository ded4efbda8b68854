package analytics

import (
	"bufio"
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
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
	// ProtocolVersion comes last in an export (a later addition: CSV
	// readers that go by position keep their columns).
	ProtocolVersion string
	AttrKeys        []string
	AttrValues      []string
	// ErrorKind, ResponseBytes (-1: not measured) and ArgsHash come after
	// protocol_version, for the same reason.
	ErrorKind     string
	ResponseBytes int64
	ArgsHash      string
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
	"error_type", "error_message", "client_name", "client_version", "server_version", "user_id", "attributes", "protocol_version",
	"error_kind", "response_bytes", "args_hash"}

// exportTimeLayout writes every exported time with milliseconds, so that
// the column sorts as text and has one width.
const exportTimeLayout = "2006-01-02T15:04:05.000Z"

// ExportWriter encodes items as NDJSON or CSV onto a buffered writer. It
// appends each line to a reused buffer (no per-item allocation) and writes
// CSV exactly as encoding/csv would (comma, LF line ends).
type ExportWriter struct {
	w     *bufio.Writer
	csv   bool
	buf   []byte
	times [2]timeCache
}

// timeCache holds the last day formatted ("2006-01-02T"): an export
// runs in time order, so the date changes rarely.
type timeCache struct {
	day    int64
	ok     bool
	prefix []byte
}

// NewExportWriter writes format (ExportNDJSON or ExportCSV) onto w; a CSV
// export starts with the header line. Call Flush at the end.
func NewExportWriter(w *bufio.Writer, format string) *ExportWriter {
	e := &ExportWriter{w: w, buf: make([]byte, 0, 1024), csv: format == ExportCSV}
	if e.csv {
		b := e.buf[:0]
		for i, c := range ExportColumns {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCSVField(b, c)
		}
		e.buf = append(b, '\n')
		_, _ = w.Write(e.buf)
	}
	return e
}

// appendTime appends t as exportTimeLayout (UTC, milliseconds truncated,
// as time.Format does), formatting the date once per day.
func (e *ExportWriter) appendTime(b []byte, slot int, t time.Time) []byte {
	c := &e.times[slot]
	sec := t.Unix()
	day, clock := sec/86400, sec%86400
	if clock < 0 {
		day, clock = day-1, clock+86400
	}
	if !c.ok || day != c.day {
		c.prefix = t.UTC().AppendFormat(c.prefix[:0], "2006-01-02T")
		c.day, c.ok = day, true
	}
	b = append(b, c.prefix...)
	h, m, s := clock/3600, clock/60%60, clock%60
	ms := t.Nanosecond() / 1e6
	return append(b, byte('0'+h/10), byte('0'+h%10), ':', byte('0'+m/10), byte('0'+m%10), ':', byte('0'+s/10), byte('0'+s%10),
		'.', byte('0'+ms/100), byte('0'+ms/10%10), byte('0'+ms%10), 'Z')
}

// Write encodes one item. NDJSON lines leave out what the item did not
// carry, as the ingest wire does (an empty string is not sent, duration_ms
// absent is not 0), so that a line is a valid ingest item; CSV cells are
// empty instead, and attributes are one cell holding a JSON object.
func (e *ExportWriter) Write(it *ExportedItem) error {
	if e.csv {
		return e.writeCSV(it)
	}
	b := append(e.buf[:0], '{')
	if it.ID != "" {
		b = append(b, `"id":`...)
		b = AppendJSONString(b, it.ID)
		b = append(b, ',')
	}
	b = append(b, `"timestamp":"`...)
	b = e.appendTime(b, 0, it.Timestamp)
	b = append(b, `","received_at":"`...)
	b = e.appendTime(b, 1, it.ReceivedAt)
	b = append(b, `","session_id":`...)
	b = AppendJSONString(b, it.SessionID)
	b = append(b, `,"method":`...)
	b = AppendJSONString(b, it.Method)
	b = appendJSONField(b, `,"name":`, it.Name)
	if it.HasDuration {
		b = append(b, `,"duration_ms":`...)
		b = strconv.AppendFloat(b, it.DurationMs, 'f', -1, 64)
	}
	b = append(b, `,"status":`...)
	b = AppendJSONString(b, it.Status)
	b = appendJSONField(b, `,"error_type":`, it.ErrorType)
	b = appendJSONField(b, `,"error_message":`, it.ErrorMessage)
	b = appendJSONField(b, `,"client_name":`, it.ClientName)
	b = appendJSONField(b, `,"client_version":`, it.ClientVersion)
	b = appendJSONField(b, `,"server_version":`, it.ServerVersion)
	b = appendJSONField(b, `,"user_id":`, it.UserID)
	if len(it.AttrKeys) > 0 {
		b = append(b, `,"attributes":`...)
		b = appendAttributes(b, it)
	}
	b = appendJSONField(b, `,"protocol_version":`, it.ProtocolVersion)
	b = appendJSONField(b, `,"error_kind":`, it.ErrorKind)
	if it.ResponseBytes >= 0 {
		b = append(b, `,"response_bytes":`...)
		b = strconv.AppendInt(b, it.ResponseBytes, 10)
	}
	b = appendJSONField(b, `,"args_hash":`, it.ArgsHash)
	b = append(b, '}', '\n')
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

// appendJSONField appends key and v unless v is empty.
func appendJSONField(b []byte, key, v string) []byte {
	if v == "" {
		return b
	}
	return AppendJSONString(append(b, key...), v)
}

func (e *ExportWriter) writeCSV(it *ExportedItem) error {
	b := appendCSVField(e.buf[:0], it.ID)
	b = append(b, ',')
	b = e.appendTime(b, 0, it.Timestamp)
	b = append(b, ',')
	b = e.appendTime(b, 1, it.ReceivedAt)
	b = append(b, ',')
	b = appendCSVField(b, it.SessionID)
	b = append(b, ',')
	b = appendCSVField(b, it.Method)
	b = append(b, ',')
	b = appendCSVField(b, it.Name)
	b = append(b, ',')
	if it.HasDuration {
		b = strconv.AppendFloat(b, it.DurationMs, 'f', -1, 64) // no quotes needed: digits, '.', '-'
	}
	for _, v := range [...]string{it.Status, it.ErrorType, it.ErrorMessage, it.ClientName, it.ClientVersion, it.ServerVersion, it.UserID} {
		b = append(b, ',')
		b = appendCSVField(b, v)
	}
	b = append(b, ',')
	if len(it.AttrKeys) > 0 {
		start := len(b)
		b = appendAttributes(b, it)
		// The object always needs quotes (it holds '"'): quote it in place.
		attrs := len(b) - start
		n := attrs + 2
		for _, c := range b[start:] {
			if c == '"' {
				n++
			}
		}
		b = append(b, make([]byte, n-attrs)...)
		// Copy backwards, doubling quotes, into the grown tail.
		j := len(b) - 1
		b[j] = '"'
		j--
		for i := start + attrs - 1; i >= start; i-- {
			c := b[i]
			b[j] = c
			j--
			if c == '"' {
				b[j] = '"'
				j--
			}
		}
		b[j] = '"'
	}
	b = append(b, ',')
	b = appendCSVField(b, it.ProtocolVersion)
	b = append(b, ',')
	b = appendCSVField(b, it.ErrorKind)
	b = append(b, ',')
	if it.ResponseBytes >= 0 {
		b = strconv.AppendInt(b, it.ResponseBytes, 10)
	}
	b = append(b, ',')
	b = appendCSVField(b, it.ArgsHash)
	b = append(b, '\n')
	e.buf = b
	_, err := e.w.Write(b)
	return err
}

// appendCSVField appends a field as encoding/csv writes it (comma
// separator, UseCRLF false): quoted, with quotes doubled, when it holds a
// comma, quote, CR or LF, starts with a space character or is \.; as is
// otherwise.
func appendCSVField(b []byte, f string) []byte {
	if !csvNeedsQuotes(f) {
		return append(b, f...)
	}
	b = append(b, '"')
	for {
		i := strings.IndexByte(f, '"')
		if i < 0 {
			break
		}
		b = append(b, f[:i+1]...)
		b = append(b, '"')
		f = f[i+1:]
	}
	b = append(b, f...)
	return append(b, '"')
}

// csvNeedsQuotes is encoding/csv's fieldNeedsQuotes for a comma.
func csvNeedsQuotes(f string) bool {
	if f == "" {
		return false
	}
	if f == `\.` {
		return true
	}
	for i := 0; i < len(f); i++ {
		switch f[i] {
		case '\n', '\r', '"', ',':
			return true
		}
	}
	if c := f[0]; c < utf8.RuneSelf {
		return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r'
	}
	r1, _ := utf8.DecodeRuneInString(f)
	return unicode.IsSpace(r1)
}

// Flush writes what is buffered to the underlying writer of the
// bufio.Writer (not further).
func (e *ExportWriter) Flush() error {
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
	`{"id":"6f1c2a9e","timestamp":"2026-11-20T10:00:00.120Z","received_at":"2026-11-20T10:00:01.000Z","session_id":"s-81","method":"tools/call","name":"search_docs","duration_ms":182.5,"status":"error","error_type":"TimeoutError","error_message":"upstream timed out","client_name":"claude-desktop","user_id":"u-42","attributes":{"region":"eu"},"protocol_version":"2025-06-18","error_kind":"timeout","response_bytes":2048,"args_hash":"k1.4f2a"}` + "\n" +
	"```\n\n" +
	"Example (csv):\n\n" +
	"```\n" +
	"id,timestamp,received_at,session_id,method,name,duration_ms,status,error_type,error_message,client_name,client_version,server_version,user_id,attributes,protocol_version,error_kind,response_bytes,args_hash\n" +
	`6f1c2a9e,2026-11-20T10:00:00.120Z,2026-11-20T10:00:01.000Z,s-81,tools/call,search_docs,182.5,error,TimeoutError,upstream timed out,claude-desktop,,,u-42,"{""region"":""eu""}",2025-06-18,timeout,2048,k1.4f2a` + "\n" +
	"```\n\n" +
	"The response is streamed as it is read from the store: memory stays flat whatever the size, and a client that disconnects " +
	"cancels the query. An error after the first bytes were sent ends the response early (the chunked body has no terminating " +
	"chunk, which HTTP clients report as an unexpected end); an error before then is the usual problem document. " +
	"Exports are rate-limited per account (`export.per_minute` starts a minute, default 10, and `export.concurrent` at once, " +
	"default 2): beyond either, 429 `rate_limited` with `Retry-After`. An instance runs at most `export.max_concurrent_total` " +
	"exports at once across accounts (default 8): beyond it, 503 `unavailable` with `Retry-After` (the service is busy, not the " +
	"account over its limits). Any role may export."
