package client

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// Inventory is the body of POST /v1/ingest/inventory: the tools a server
// listed in one tools/list answer (docs/sdks.md, "Tool inventory").
type Inventory struct {
	ServerVersion   string          `json:"server_version,omitempty"`
	ProtocolVersion string          `json:"protocol_version,omitempty"`
	Tools           []InventoryTool `json:"tools"`
}

// InventoryTool is one listed tool: its name and schema hash, the size
// of its definition, and its schema only when the reporter opted in.
type InventoryTool struct {
	Name       string          `json:"name"`
	SchemaHash string          `json:"schema_hash"`
	Schema     json.RawMessage `json:"schema,omitempty"`
	// DefinitionBytes is the size in bytes of the tool as tools/list
	// sent it (name, description, schemas, annotations: all of its JSON),
	// what every agent pays in context for it before its first call.
	DefinitionBytes int64 `json:"definition_bytes,omitempty"`
}

// PostInventory posts inv once (no retry): the next tools/list answer
// reports it again. A refused key is an *Error like a batch's.
func (c *Client) PostInventory(ctx context.Context, inv Inventory) error {
	if inv.Tools == nil {
		inv.Tools = []InventoryTool{}
	}
	raw, err := json.Marshal(inv)
	if err != nil {
		return err
	}
	body := raw
	if !c.opts.DisableGzip {
		var buf bytes.Buffer
		if err := compress(&buf, raw); err != nil {
			return err
		}
		body = buf.Bytes()
	}
	_, err = c.postTo(ctx, strings.TrimSuffix(c.ingest, "/ingest")+"/ingest/inventory", body)
	return err
}

// SchemaHash is a tool's schema_hash: the SHA-256 (hex) of the canonical
// JSON of its description, inputSchema and annotations (absent members
// left out): keys sorted at every level, no whitespace, and no HTML
// escaping, as the TypeScript SDK's toolSchemaHash writes it. part holds
// those members as decoded JSON (maps, slices, float64, strings, bools).
func SchemaHash(part map[string]any) string {
	b := CanonicalJSON(part)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// CanonicalJSON encodes decoded JSON with sorted keys (encoding/json sorts
// map keys), no whitespace and no HTML escaping.
func CanonicalJSON(v any) []byte {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return []byte("null")
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
}
