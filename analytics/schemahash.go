package analytics

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
)

// ToolSchemaHash is the canonical schema hash of a listed tool
// (docs/inventory.md): the SHA-256, lowercase hex, of the canonical JSON of
// {description, inputSchema, annotations}, absent members (nil) omitted,
// keys sorted recursively by code point, no whitespace, no HTML escaping.
// Each member may be anything encoding/json marshals (an SDK's schema
// type, json.RawMessage, a map); numbers are read as float64 and written
// back in their shortest form, as JSON.stringify does (1.50 is 1.5).
func ToolSchemaHash(description *string, inputSchema, annotations any) (string, error) {
	obj := map[string]any{}
	if description != nil {
		obj["description"] = *description
	}
	for k, v := range map[string]any{"inputSchema": inputSchema, "annotations": annotations} {
		if v == nil {
			continue
		}
		raw, err := json.Marshal(v)
		if err != nil {
			return "", err
		}
		if string(raw) == "null" {
			continue
		}
		var generic any
		if err := json.Unmarshal(raw, &generic); err != nil {
			return "", err
		}
		obj[k] = generic
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(obj); err != nil { // maps encode with sorted keys
		return "", err
	}
	sum := sha256.Sum256(bytes.TrimSuffix(b.Bytes(), []byte("\n")))
	return hex.EncodeToString(sum[:]), nil
}
