package client

import (
	"math"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry/analytics"
)

// appendBatch appends the ingest body {"items": [...]} for items to b.
//
// It is a hand-written encoder rather than encoding/json because the client
// shares its machine with the MCP server it reports for (and, in the load
// generator, with the service itself): reflection-based encoding costs
// several times the CPU for the same bytes. The output is what
// encoding/json would decode to the same items; FuzzAppendString checks
// the string escaping against it.
func appendBatch(b []byte, items []analytics.Item) []byte {
	b = append(b, `{"items":[`...)
	for i := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendItem(b, &items[i])
	}
	return append(b, "]}"...)
}

func appendItem(b []byte, it *analytics.Item) []byte {
	b = append(b, '{')
	b = appendField(b, "id", it.ID, false)
	b = append(b, `"timestamp":"`...)
	b = it.Timestamp.UTC().AppendFormat(b, time.RFC3339Nano)
	b = append(b, `",`...)
	b = appendField(b, "session_id", it.SessionID, false) // none: the service derives it
	b = appendField(b, "method", it.Method, true)
	b = appendField(b, "name", it.Name, false)
	// JSON has no NaN or infinity; such a duration is sent as not measured.
	if d := it.DurationMs; d != nil && !math.IsNaN(*d) && !math.IsInf(*d, 0) {
		b = append(b, `"duration_ms":`...)
		b = strconv.AppendFloat(b, *d, 'g', -1, 64)
		b = append(b, ',')
	}
	b = appendField(b, "status", it.Status, false)
	b = appendField(b, "error_type", it.ErrorType, false)
	b = appendField(b, "error_message", it.ErrorMessage, false)
	b = appendField(b, "client_name", it.ClientName, false)
	b = appendField(b, "client_version", it.ClientVersion, false)
	b = appendField(b, "server_version", it.ServerVersion, false)
	b = appendField(b, "user_id", it.UserID, false)
	b = appendField(b, "protocol_version", it.ProtocolVersion, false)
	if len(it.Attributes) > 0 {
		b = append(b, `"attributes":{`...)
		first := true
		for k, v := range it.Attributes {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = appendString(b, k)
			b = append(b, ':')
			b = appendString(b, v)
		}
		b = append(b, "},"...)
	}
	// Every field above ends with a comma; the timestamp is always present,
	// so there is one to replace.
	b[len(b)-1] = '}'
	return b
}

// appendField appends "key":"value", (with the trailing comma), skipping
// an empty value unless always.
func appendField(b []byte, key, value string, always bool) []byte {
	if value == "" && !always {
		return b
	}
	b = append(b, '"')
	b = append(b, key...)
	b = append(b, `":`...)
	b = appendString(b, value)
	return append(b, ',')
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. Invalid UTF-8 becomes U+FFFD,
// as encoding/json does.
func appendString(b []byte, s string) []byte {
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
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
