package httpapi

import (
	"context"
	"errors"
	"net/http"
	"reflect"
	"sort"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/jsoncount"
)

// InventoryResult is the 202 body of POST /v1/ingest/inventory.
type InventoryResult struct {
	Tools int `json:"tools" doc:"Tools the report listed."`
}

// inventoryReportDoc documents the report's wire format in /docs (the
// body is read raw, gzip or not).
type inventoryReportDoc struct {
	ServerVersion   string                   `json:"server_version,omitempty" maxLength:"128" doc:"The version the server announced in its initialize result."`
	ProtocolVersion string                   `json:"protocol_version,omitempty" maxLength:"128" doc:"The MCP protocol version of the session that listed the tools."`
	Tools           []inventoryReportToolDoc `json:"tools" doc:"Every tool of the tools/list answer (all pages), at most 1000."`
}

type inventoryReportToolDoc struct {
	Name       string         `json:"name" minLength:"1" maxLength:"256"`
	SchemaHash string         `json:"schema_hash" pattern:"^[0-9a-f]{64}$" doc:"SHA-256 (hex) of the canonical JSON of {description, inputSchema, annotations}: keys sorted recursively, no whitespace, absent members omitted."`
	Schema     map[string]any `json:"schema,omitempty" doc:"Optional: that object itself, at most 64 KiB."`
}

var ingestInventoryOp = huma.Operation{
	OperationID:   "ingest-inventory",
	Summary:       "Report the tools a server lists",
	Tags:          []string{"Ingest"},
	DefaultStatus: http.StatusAccepted,
	MaxBodyBytes:  analytics.MaxInventoryBodyBytes,
	Errors:        []int{400, 413, 415, 422, 429, 503},
	Description: `Takes an ingest key; the key names the MCP. The SDKs send one report per tools/list answer they
serve. The body is JSON, optionally ` + "`Content-Encoding: gzip`" + `, at most 4 MiB after decompression:
` + "`{\"server_version\": \"1.4.0\", \"protocol_version\": \"2025-06-18\", \"tools\": [{\"name\": \"search\", \"schema_hash\": \"<64 hex>\"}]}`" + `.
A report is the server's whole tool set: a tool listed before and missing now is recorded as removed.
More than 1000 tools is 413 ` + "`too_many_items`" + `; a schema over 64 KiB 413 ` + "`payload_too_large`" + `; a missing,
repeated or over-long name, or a malformed hash, 422 ` + "`invalid`" + `. A report counts against the key's payloads
per minute, as a batch does. See GET /v1/mcps/{id}/inventory.`,
}

func inventoryBody(s *Server) map[string]*huma.MediaType {
	return map[string]*huma.MediaType{
		"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(inventoryReportDoc{}), true, "InventoryReport")},
	}
}

var inventoryToolsPath = []string{"tools"}

func checkInventoryCount(body []byte) error {
	if _, over := jsoncount.AtPath(body, inventoryToolsPath, analytics.MaxInventoryTools); over {
		return telemetry.FieldError(telemetry.ETOOMANYITEMS, "body.tools", "A report lists at most %d tools; this one has more.", analytics.MaxInventoryTools)
	}
	return nil
}

func (s *Server) ingestInventory(ctx context.Context, in *rawBodyInput) (*struct{ Body InventoryResult }, error) {
	p := principal(ctx)
	if err := s.opts.Ingester.Allow(p.KeyID); err != nil {
		return nil, err
	}
	if err := requireMediaType(in.ContentType, "application/json"); err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	body, release, err := s.decodeBudgeted(ctx, in.RawBody, in.ContentEncoding, analytics.MaxInventoryBodyBytes, checkInventoryCount)
	if err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	defer release()
	report, err := analytics.ParseInventoryReport(body)
	if err != nil {
		return nil, s.refusedWhole(p.KeyID, err)
	}
	n, err := s.opts.Inventory.RecordInventory(ctx, p.MCPID, time.Now(), report)
	if err != nil {
		return nil, err
	}
	return &struct{ Body InventoryResult }{InventoryResult{Tools: n}}, nil
}

var getInventoryOp = metricRead("get-inventory", "Tool inventory of an MCP",
	"The tools the MCP's server listed (tools/list, as the SDKs report it) at some time in the range, or still lists, each with `first_seen_at`, `last_seen_at`, "+
		"its latest `schema_hash` and its `calls` in the range (0: listed but never called); tools called in the range but never listed appear with null "+
		"`first_seen_at`, `last_seen_at` and `schema_hash`. Sorted by name. `changes` are the range's inventory changes, newest first (at most 1000): "+
		"`{id, at, tool, kind: added|removed|changed, server_version, schema_hash, severity: breaking|risky|benign, reasons: [{code, message}]}` "+
		"(severity and reasons null for changes recorded before grading; GET /v1/mcps/{id}/inventory/changes/{change_id} has the diff and who it hit; docs/tool-changes.md). Each listed tool has `definition_bytes` (its name plus the compact JSON of "+
		"the schema the SDK reported, `{description, inputSchema, annotations}`: what an agent reads of it in tools/list; null when no schema was reported) "+
		"and the inventory `definition_bytes_total`, their sum (null when none has one). See docs/inventory.md and docs/failures.md.")

func (s *Server) getInventory(ctx context.Context, in *mcpRangeInput) (*bodyOf[analytics.Inventory], error) {
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	inv, err := s.opts.Inventory.Inventory(ctx, in.ID, r)
	if err != nil {
		return nil, err
	}
	called, err := s.opts.Analytics.Tools(ctx, in.ID, r)
	if err != nil {
		return nil, err
	}
	calls := map[string]int64{}
	for _, t := range called.Items {
		calls[t.Name] = t.Calls
	}
	for i := range inv.Tools {
		inv.Tools[i].Calls = calls[inv.Tools[i].Name]
		delete(calls, inv.Tools[i].Name)
	}
	for name, n := range calls {
		inv.Tools = append(inv.Tools, analytics.InventoryTool{Name: name, Calls: n})
	}
	sort.Slice(inv.Tools, func(i, j int) bool { return inv.Tools[i].Name < inv.Tools[j].Name })
	if err := s.affectedClients(ctx, in.ID, inv.Changes); err != nil {
		return nil, err
	}
	return &bodyOf[analytics.Inventory]{inv}, nil
}

// affectedClients fills the changes' affected clients; they stay null
// when the changes span more events than a raw read may read.
func (s *Server) affectedClients(ctx context.Context, mcpID string, changes []analytics.InventoryChange) error {
	if s.opts.AffectedClients == nil || len(changes) == 0 {
		return nil
	}
	clients, err := s.opts.AffectedClients.AffectedClients(ctx, mcpID, changes)
	if errors.Is(err, analytics.ErrTooManyEvents) {
		return nil
	}
	if err != nil {
		return err
	}
	for i := range changes {
		changes[i].AffectedClients = clients[i]
	}
	return nil
}
