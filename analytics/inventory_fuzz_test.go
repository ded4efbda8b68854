package analytics

import (
	"testing"

	"github.com/mcpscope/telemetry"
)

// FuzzParseInventoryReport drives the inventory report parser with
// arbitrary bytes: it must never panic, fail only with the contract's
// codes, and accept only reports within the documented bounds.
func FuzzParseInventoryReport(f *testing.F) {
	h := "108efad4c366fbf80b280c036d32e615af67edb7f9a0a16c6c6568fb68ad9b55"
	f.Add([]byte(`{"server_version":"1.0","protocol_version":"2025-06-18","tools":[{"name":"search","schema_hash":"` + h + `"}]}`))
	f.Add([]byte(`{"tools":[{"name":"a","schema_hash":"` + h + `","schema":{"type":"object"}},{"name":"a","schema_hash":"` + h + `"}]}`))
	f.Add([]byte(`{"tools":[{"name":"","schema_hash":"x"}]}`))
	f.Add([]byte(`{"tools":null}`))
	f.Add([]byte(`not json`))
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := ParseInventoryReport(body)
		if err != nil {
			switch telemetry.ErrorCode(err) {
			case telemetry.EBADREQUEST, telemetry.EINVALID, telemetry.ETOOMANYITEMS, telemetry.ETOOLARGE:
			default:
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		if len(r.Tools) > MaxInventoryTools {
			t.Fatalf("%d tools accepted", len(r.Tools))
		}
		seen := map[string]bool{}
		for _, tool := range r.Tools {
			if tool.Name == "" || seen[tool.Name] || !isHexHash(tool.SchemaHash) || len(tool.Schema) > MaxInventorySchemaBytes {
				t.Fatalf("accepted an invalid tool %+v", tool)
			}
			seen[tool.Name] = true
		}
	})
}
