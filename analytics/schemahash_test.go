package analytics

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"testing"
)

func hexSHA256(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// The documented example (docs/inventory.md) and the rules around it:
// member order and whitespace do not matter, absent members are omitted,
// nested keys are sorted, numbers are written in their shortest form and
// text is not HTML-escaped.
func TestToolSchemaHash(t *testing.T) {
	desc := "Search"
	const example = "108efad4c366fbf80b280c036d32e615af67edb7f9a0a16c6c6568fb68ad9b55"
	for _, schema := range []any{
		json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
		json.RawMessage("{ \"properties\" : { \"q\" : { \"type\" : \"string\" } },\n \"type\": \"object\" }"),
		map[string]any{"properties": map[string]any{"q": map[string]any{"type": "string"}}, "type": "object"},
	} {
		got, err := ToolSchemaHash(&desc, schema, nil)
		if err != nil || got != example {
			t.Errorf("%v: %s %v, want %s", schema, got, err, example)
		}
	}
	withAnn, _ := ToolSchemaHash(&desc, json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"readOnlyHint":true}`))
	noDesc, _ := ToolSchemaHash(nil, json.RawMessage(`{"type":"object"}`), json.RawMessage(`{"readOnlyHint":true}`))
	if withAnn == noDesc || len(withAnn) != 64 || !isHexHash(withAnn) {
		t.Errorf("description must count: %s %s", withAnn, noDesc)
	}
	// As JSON.stringify writes it: 1.50 is 1.5, <, > and & unescaped.
	a, _ := ToolSchemaHash(nil, json.RawMessage(`{"description":"a<b & é","maximum":1.50}`), nil)
	const canonical = `{"inputSchema":{"description":"a<b & é","maximum":1.5}}`
	if want := hexSHA256(canonical); a != want {
		t.Errorf("got %s, want the hash of %s (%s)", a, canonical, want)
	}
}
