package client

import (
	"math"
	"strconv"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// appendBatch appends the ingest body {"items": [...]} for items to b.
//
// It is a hand-written encoder rather than encoding/json because the client
// shares its machine with the MCP server it reports for (and, in the load
// generator, with the service itself): reflection-based encoding costs
// several times the CPU for the same bytes. Strings are escaped by
// analytics.AppendJSONString, the export's encoder, byte for byte as
// encoding/json escapes them; FuzzAppendString checks the client's bodies
// against encoding/json.
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
	b = appendField(b, "error_kind", it.ErrorKind, false)
	if it.ResponseBytes != nil {
		b = append(b, `"response_bytes":`...)
		b = strconv.AppendInt(b, *it.ResponseBytes, 10)
		b = append(b, ',')
	}
	b = appendField(b, "args_hash", it.ArgsHash, false)
	if len(it.Attributes) > 0 {
		b = append(b, `"attributes":{`...)
		first := true
		for k, v := range it.Attributes {
			if !first {
				b = append(b, ',')
			}
			first = false
			b = analytics.AppendJSONString(b, k)
			b = append(b, ':')
			b = analytics.AppendJSONString(b, v)
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
	b = analytics.AppendJSONString(b, value)
	return append(b, ',')
}
