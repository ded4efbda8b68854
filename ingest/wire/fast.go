package wire

import (
	"strconv"
	"time"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"

	"github.com/mcpscope/telemetry/analytics"
)

// parseFast decodes a batch of the shape every SDK sends in a single pass
// over the bytes, without reflection: the object {"items": [...]} whose
// items are objects of the known fields (exact names, each at most once),
// strings (escapes only in values), JSON numbers and null. Strings
// are copied once each, a string equal to the same field's recent value
// is shared, and the unique ones (id, args_hash, error_message) share one
// slab per batch.
//
// ok is false when the body is anything else (an unknown or repeated key,
// an unpaired surrogate, an escape in a key or a timestamp, a type the
// field does not take, malformed JSON, no items or too many): the caller
// then decodes it as before (sonic, else item by item), so every answer
// for such a body is unchanged. When ok is true, the batch is the one
// that path would give: FuzzParseFast checks it.
func parseFast(body []byte, now time.Time) (b Batch, ok bool) {
	d := fastDecoder{b: body}
	d.ws()
	if !d.eat('{') || d.ws() != '"' {
		return Batch{}, false
	}
	if k, ok := d.key(); !ok || string(k) != "items" || !d.eat('[') {
		return Batch{}, false
	}
	d.cache = fastCaches.Get().(*fieldCache)
	defer putFieldCache(d.cache)
	if d.ws() == ']' {
		return Batch{}, false // no items: the old path answers
	}
	// The items go straight into the batch's slice, sized after the first
	// item's bytes: items of a batch are alike, so it rarely grows.
	var items []analytics.Item
	for first := d.i; ; {
		if len(items) == analytics.MaxBatchItems {
			return Batch{}, false
		}
		items = append(items, analytics.Item{})
		it := &items[len(items)-1]
		valid, ok := d.item(it)
		if !ok {
			return Batch{}, false
		}
		if len(items) == 1 {
			n := min(analytics.MaxBatchItems, (len(d.b)-first)/max(d.i-first, 1)+1)
			items = append(make([]analytics.Item, 0, n), items[0])
			it = &items[0]
		}
		if valid {
			it.Normalize()
			valid = it.Validate(now)
		}
		if !valid {
			*it = analytics.Item{}
			items = items[:len(items)-1]
			b.Dropped++
		}
		switch d.ws() {
		case ',':
			d.i++
			d.ws()
			continue
		case ']':
			d.i++
		default:
			return Batch{}, false
		}
		break
	}
	if d.ws() != '}' {
		return Batch{}, false
	}
	d.i++
	if d.ws() != 0 || d.i != len(d.b) {
		return Batch{}, false
	}
	b.Items = items
	return b, true
}

// Field numbers: the bit of each item field (a key seen twice gives up)
// and its slots in the cache of recent values.
const (
	fID = iota
	fTimestamp
	fSession
	fMethod
	fName
	fDuration
	fStatus
	fErrorType
	fErrorMessage
	fClientName
	fClientVersion
	fServerVersion
	fProtocol
	fUserID
	fAttributes
	fErrorKind
	fResponseBytes
	fArgsHash
	fAttrKey
	fAttrValue
	nFields
)

type fastDecoder struct {
	b       []byte
	i       int
	cache   *fieldCache
	scratch []byte // text's unescaped strings
}

// ws skips JSON whitespace and returns the next byte, 0 at the end.
func (d *fastDecoder) ws() byte {
	for d.i < len(d.b) {
		switch c := d.b[d.i]; c {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return c
		}
	}
	return 0
}

// eat consumes c, after whitespace.
func (d *fastDecoder) eat(c byte) bool {
	if d.ws() != c {
		return false
	}
	d.i++
	return true
}

// key reads an object key and its colon.
func (d *fastDecoder) key() ([]byte, bool) {
	k, ok := d.str()
	return k, ok && d.eat(':')
}

// str reads a string without escapes at d.i (after whitespace), returning
// its bytes; false for anything else, including invalid UTF-8.
func (d *fastDecoder) str() ([]byte, bool) {
	return d.scan(false)
}

// text is str that also takes escapes (but unpaired surrogates), decoded into
// the decoder's scratch buffer (valid until the next text): what error
// messages and attribute values carry (quotes, new lines, backslashes).
func (d *fastDecoder) text() ([]byte, bool) {
	return d.scan(true)
}

func (d *fastDecoder) scan(escapes bool) ([]byte, bool) {
	if d.ws() != '"' {
		return nil, false
	}
	start := d.i + 1
	ascii := true
	for j := start; j < len(d.b); j++ {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			s := d.b[start:j]
			return s, ascii || utf8.Valid(s)
		case c == '\\':
			if !escapes {
				return nil, false
			}
			return d.unescape(start, j, ascii)
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
	}
	return nil, false
}

// unescape finishes the string begun at start whose first escape is at j.
func (d *fastDecoder) unescape(start, j int, ascii bool) ([]byte, bool) {
	out := append(d.scratch[:0], d.b[start:j]...)
	for j < len(d.b) {
		c := d.b[j]
		switch {
		case c == '"':
			d.i = j + 1
			d.scratch = out
			return out, ascii || utf8.Valid(out)
		case c == '\\':
			if j+1 >= len(d.b) {
				return nil, false
			}
			switch e := d.b[j+1]; e {
			case '"', '\\', '/':
				out = append(out, e)
			case 'b':
				out = append(out, '\b')
			case 'f':
				out = append(out, '\f')
			case 'n':
				out = append(out, '\n')
			case 'r':
				out = append(out, '\r')
			case 't':
				out = append(out, '\t')
			case 'u':
				r, n := d.escapedRune(j)
				if n == 0 {
					return nil, false
				}
				out = utf8.AppendRune(out, r)
				j += n
				continue
			default:
				return nil, false
			}
			j += 2
			continue
		case c < 0x20:
			return nil, false
		case c >= utf8.RuneSelf:
			ascii = false
		}
		out = append(out, c)
		j++
	}
	return nil, false
}

// escapedRune decodes the \u escape at j, with the low half of a
// surrogate pair when it is one, and its length in bytes; 0 for an
// unpaired surrogate or bad hex, which the old path answers (encoding/json
// makes them U+FFFD).
func (d *fastDecoder) escapedRune(j int) (rune, int) {
	r, ok := hex4(d.b, j+2)
	if !ok {
		return 0, 0
	}
	if !utf16.IsSurrogate(r) {
		return r, 6
	}
	if len(d.b) < j+12 || d.b[j+6] != '\\' || d.b[j+7] != 'u' {
		return 0, 0
	}
	lo, ok := hex4(d.b, j+8)
	if r = utf16.DecodeRune(r, lo); !ok || r == utf8.RuneError {
		return 0, 0
	}
	return r, 12
}

// hex4 reads the four hex digits at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if len(b) < i+4 {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// null consumes a null literal when it is next.
func (d *fastDecoder) null() bool {
	if d.ws() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// number reads a JSON number, reporting whether it has a fraction or an
// exponent.
func (d *fastDecoder) number() (lit []byte, integer, ok bool) {
	d.ws()
	start, j := d.i, d.i
	digits := func() int {
		n := 0
		for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
			j++
			n++
		}
		return n
	}
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	if j < len(d.b) && d.b[j] == '0' {
		j++
	} else if digits() == 0 {
		return nil, false, false
	}
	integer = true
	if j < len(d.b) && d.b[j] == '.' {
		j++
		integer = false
		if digits() == 0 {
			return nil, false, false
		}
	}
	if j < len(d.b) && (d.b[j] == 'e' || d.b[j] == 'E') {
		j++
		integer = false
		if j < len(d.b) && (d.b[j] == '+' || d.b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return nil, false, false
		}
	}
	d.i = j
	return d.b[start:j], integer, true
}

// item decodes one item object into it (zero on entry). valid is false
// when its timestamp is not RFC 3339 (the item drops); ok is false when the
// decoder gives up on the whole body.
func (d *fastDecoder) item(it *analytics.Item) (valid, ok bool) {
	if !d.eat('{') {
		return false, false
	}
	var ts []byte
	if d.ws() == '}' {
		d.i++
		return false, true // no timestamp
	}
	var seen uint32
	for {
		k, ok := d.key()
		if !ok {
			return false, false
		}
		f := fieldOf(k)
		if f < 0 || seen&(1<<f) != 0 {
			return false, false
		}
		seen |= 1 << f
		if !d.value(it, f, &ts) {
			return false, false
		}
		switch d.ws() {
		case ',':
			d.i++
			continue
		case '}':
			d.i++
		default:
			return false, false
		}
		break
	}
	t, err := time.Parse(time.RFC3339Nano, unsafe.String(unsafe.SliceData(ts), len(ts)))
	if err != nil {
		return false, true
	}
	it.Timestamp = t
	return true, true
}

// value decodes the value of field f.
func (d *fastDecoder) value(it *analytics.Item, f int, ts *[]byte) bool {
	if d.null() {
		return true // the zero value, as encoding/json leaves it
	}
	switch f {
	case fDuration:
		lit, _, ok := d.number()
		if !ok {
			return false
		}
		v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(lit), len(lit)), 64)
		if err != nil {
			return false
		}
		it.DurationMs = d.cache.float(v)
		return true
	case fResponseBytes:
		lit, integer, ok := d.number()
		if !ok || !integer {
			return false
		}
		v, err := strconv.ParseInt(unsafe.String(unsafe.SliceData(lit), len(lit)), 10, 64)
		if err != nil {
			return false
		}
		it.ResponseBytes = d.cache.integer(v)
		return true
	case fAttributes:
		return d.attributes(it)
	}
	if f == fTimestamp {
		s, ok := d.str() // kept until the item ends: not in the scratch
		*ts = s
		return ok
	}
	s, ok := d.text()
	if !ok {
		return false
	}
	c := d.cache
	switch f {
	case fID:
		it.ID = c.unique(s)
	case fArgsHash:
		it.ArgsHash = c.unique(s)
	case fErrorMessage:
		it.ErrorMessage = c.unique(s)
	default:
		*stringField(it, f) = c.shared(f, s)
	}
	return true
}

// attributes decodes the attributes object.
func (d *fastDecoder) attributes(it *analytics.Item) bool {
	if !d.eat('{') {
		return false
	}
	m := map[string]string{}
	it.Attributes = m
	if d.ws() == '}' {
		d.i++
		return true
	}
	for {
		k, ok := d.key()
		if !ok {
			return false
		}
		v, ok := d.text()
		if !ok {
			return false
		}
		m[d.cache.shared(fAttrKey, k)] = d.cache.shared(fAttrValue, v)
		switch d.ws() {
		case ',':
			d.i++
			continue
		case '}':
			d.i++
			return true
		}
		return false
	}
}

// stringField is the string field f of it.
func stringField(it *analytics.Item, f int) *string {
	switch f {
	case fSession:
		return &it.SessionID
	case fMethod:
		return &it.Method
	case fName:
		return &it.Name
	case fStatus:
		return &it.Status
	case fErrorType:
		return &it.ErrorType
	case fClientName:
		return &it.ClientName
	case fClientVersion:
		return &it.ClientVersion
	case fServerVersion:
		return &it.ServerVersion
	case fProtocol:
		return &it.ProtocolVersion
	case fUserID:
		return &it.UserID
	default: // fErrorKind
		return &it.ErrorKind
	}
}

// fieldOf is the field of an item key, -1 for one the decoder does not
// know (the old path then ignores it, or matches it without regard to case).
func fieldOf(k []byte) int {
	switch string(k) {
	case "id":
		return fID
	case "timestamp":
		return fTimestamp
	case "session_id":
		return fSession
	case "method":
		return fMethod
	case "name":
		return fName
	case "duration_ms":
		return fDuration
	case "status":
		return fStatus
	case "error_type":
		return fErrorType
	case "error_message":
		return fErrorMessage
	case "client_name":
		return fClientName
	case "client_version":
		return fClientVersion
	case "server_version":
		return fServerVersion
	case "protocol_version":
		return fProtocol
	case "user_id":
		return fUserID
	case "attributes":
		return fAttributes
	case "error_kind":
		return fErrorKind
	case "response_bytes":
		return fResponseBytes
	case "args_hash":
		return fArgsHash
	}
	return -1
}
