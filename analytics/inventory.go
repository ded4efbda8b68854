package analytics

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// The tool inventory (docs/inventory.md): what an MCP server's tools/list
// answers served, per tool its first and last sighting and schema hash,
// and the changes between reports.

// Inventory bounds: a report is refused whole beyond them.
const (
	// MaxInventoryTools bounds the tools of one report (413 too_many_items).
	MaxInventoryTools = 1000
	// MaxInventoryNameLen bounds a tool name, in characters (as an item's
	// name).
	MaxInventoryNameLen = 256
	// MaxInventorySchemaBytes bounds one tool's optional schema.
	MaxInventorySchemaBytes = 64 << 10
	// MaxInventoryBodyBytes bounds a report's body after decompression.
	MaxInventoryBodyBytes = 4 << 20
	// MaxInventoryVersionLen bounds server_version and protocol_version.
	MaxInventoryVersionLen = 128
	// MaxInventoryChanges bounds the changes one inventory read returns
	// (the newest).
	MaxInventoryChanges = 1000
)

// Kinds of inventory change.
const (
	ChangeAdded   = "added"
	ChangeRemoved = "removed"
	ChangeChanged = "changed"
)

// InventoryReport is one tools/list answer as an SDK reports it
// (POST /v1/ingest/inventory).
type InventoryReport struct {
	ServerVersion   string                `json:"server_version"`
	ProtocolVersion string                `json:"protocol_version"`
	Tools           []InventoryReportTool `json:"tools"`
	// Source is who made the report, set by the service (never read from
	// a body): InventorySourceSDK ("" too) or InventorySourceProbe.
	Source string `json:"-"`
}

// Sources of inventory reports: an SDK (or the Go middleware) reporting
// from inside the server, or a probe's tools/list from outside.
const (
	InventorySourceSDK   = "sdk"
	InventorySourceProbe = "probe"
)

// SourceOrSDK is r's source, InventorySourceSDK when unset.
func (r InventoryReport) SourceOrSDK() string {
	if r.Source == InventorySourceProbe {
		return InventorySourceProbe
	}
	return InventorySourceSDK
}

// InventoryReportTool is one listed tool: its name, the canonical schema
// hash (SHA-256, 64 lowercase hex digits, of the canonical JSON of
// {description, inputSchema, annotations}) and, optionally, that schema.
type InventoryReportTool struct {
	Name       string          `json:"name"`
	SchemaHash string          `json:"schema_hash"`
	Schema     json.RawMessage `json:"schema,omitempty"`
}

// ParseInventoryReport decodes and validates a report's JSON body (at most
// MaxInventoryBodyBytes, checked by the caller while decompressing).
// Errors: EBADREQUEST for a body that is not a report, and Validate's.
func ParseInventoryReport(body []byte) (InventoryReport, error) {
	var r InventoryReport
	if err := json.Unmarshal(body, &r); err != nil {
		return InventoryReport{}, telemetry.Errorf(telemetry.EBADREQUEST, "The body is not a valid inventory report: %v.", err)
	}
	return r, r.Validate()
}

// Validate checks a report: ETOOMANYITEMS past MaxInventoryTools, EINVALID
// (with the field) for a missing, too long or repeated name, a malformed
// hash or an overlong version, ETOOLARGE for a schema over
// MaxInventorySchemaBytes.
func (r InventoryReport) Validate() error {
	if len(r.Tools) > MaxInventoryTools {
		return telemetry.FieldError(telemetry.ETOOMANYITEMS, "body.tools", "A report lists at most %d tools; this one has %d.", MaxInventoryTools, len(r.Tools))
	}
	for field, v := range map[string]string{"body.server_version": r.ServerVersion, "body.protocol_version": r.ProtocolVersion} {
		if utf8.RuneCountInString(v) > MaxInventoryVersionLen || !utf8.ValidString(v) {
			return telemetry.FieldError(telemetry.EINVALID, field, "must be valid UTF-8 of at most %d characters", MaxInventoryVersionLen)
		}
	}
	seen := make(map[string]bool, len(r.Tools))
	for i, t := range r.Tools {
		field := fmt.Sprintf("body.tools[%d]", i)
		switch n := utf8.RuneCountInString(t.Name); {
		case n == 0 || n > MaxInventoryNameLen || !utf8.ValidString(t.Name):
			return telemetry.FieldError(telemetry.EINVALID, field+".name", "must be 1 to %d characters of valid UTF-8", MaxInventoryNameLen)
		case seen[t.Name]:
			return telemetry.FieldError(telemetry.EINVALID, field+".name", "%q is listed twice", t.Name)
		}
		seen[t.Name] = true
		if !isHexHash(t.SchemaHash) {
			return telemetry.FieldError(telemetry.EINVALID, field+".schema_hash", "must be 64 lowercase hex digits (SHA-256)")
		}
		if len(t.Schema) > MaxInventorySchemaBytes {
			return telemetry.FieldError(telemetry.ETOOLARGE, field+".schema", "A tool's schema is at most %d bytes.", MaxInventorySchemaBytes)
		}
	}
	return nil
}

func isHexHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for _, c := range []byte(s) {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Inventory is an MCP's tools over a range (GET /v1/mcps/{id}/inventory).
type Inventory struct {
	From  string          `json:"from"`
	To    string          `json:"to"`
	Tools []InventoryTool `json:"tools"`
	// Changes are the range's changes, newest first, at most
	// MaxInventoryChanges.
	Changes []InventoryChange `json:"changes"`
	// DefinitionBytesTotal sums the tools' DefinitionBytes: what every
	// agent reads before its first call. Null when no tool has one.
	DefinitionBytesTotal *int64 `json:"definition_bytes_total"`
}

// DefinitionBytes is the size of a tool's definition as tools/list sends
// it: the name's bytes plus those of the compact JSON of its stored
// schema ({description, inputSchema, annotations}); nil when the SDK did
// not send the schema (docs/failures.md).
func DefinitionBytes(name string, schema []byte) *int64 {
	if len(schema) == 0 {
		return nil
	}
	var b bytes.Buffer
	if err := json.Compact(&b, schema); err != nil {
		return nil
	}
	n := int64(len(name) + b.Len())
	return &n
}

// SumDefinitionBytes sets DefinitionBytesTotal from the tools.
func (inv *Inventory) SumDefinitionBytes() {
	inv.DefinitionBytesTotal = nil
	for _, t := range inv.Tools {
		if t.DefinitionBytes != nil {
			if inv.DefinitionBytesTotal == nil {
				inv.DefinitionBytesTotal = new(int64)
			}
			*inv.DefinitionBytesTotal += *t.DefinitionBytes
		}
	}
}

// InventoryTool is one tool listed or called in the range. A tool called
// but never listed has null FirstSeenAt, LastSeenAt and SchemaHash; a tool
// listed but not called has Calls 0.
type InventoryTool struct {
	Name        string     `json:"name"`
	FirstSeenAt *time.Time `json:"first_seen_at"`
	LastSeenAt  *time.Time `json:"last_seen_at"`
	// SchemaHash is the tool's latest hash.
	SchemaHash *string `json:"schema_hash"`
	Calls      int64   `json:"calls"`
	// DefinitionBytes is the listed tool's definition size
	// (DefinitionBytes); null when its schema was not reported.
	DefinitionBytes *int64 `json:"definition_bytes"`
	// Source is the kind of the last report that wrote the tool: "sdk"
	// or "probe"; null for a tool called but never listed.
	Source *string `json:"source"`
}

// InventoryChange is one change between two reports.
type InventoryChange struct {
	// ID names the change (GET /v1/mcps/{id}/inventory/changes/{id}).
	ID   string    `json:"id"`
	At   time.Time `json:"at"`
	Tool string    `json:"tool"`
	Kind string    `json:"kind"`
	// ServerVersion is the version of the report that showed the change
	// (null when it named none).
	ServerVersion *string `json:"server_version"`
	// SchemaHash is the tool's hash from then on (null for removed).
	SchemaHash *string `json:"schema_hash"`
	// Source is the kind of report that showed the change: "sdk" or
	// "probe".
	Source string `json:"source"`
	// Severity and Reasons grade the change (docs/tool-changes.md); null
	// for changes recorded before grading.
	Severity *string        `json:"severity"`
	Reasons  []ChangeReason `json:"reasons"`
	// AffectedClients are the clients that called the tool in the
	// AffectedClientsWindow before the change, most calls first (at most
	// MaxAffectedClients); null in an inventory read whose changes span
	// more events than a raw read may read (the change's own read,
	// GET .../inventory/changes/{change_id}, always has them).
	AffectedClients []AffectedClient `json:"affected_clients"`
}

// InventoryService keeps the inventory. mcpID is trusted: callers check
// the MCP belongs to the caller first.
type InventoryService interface {
	// RecordInventory applies one report received at at, recording the
	// changes it shows against the tools listed before, and returns the
	// number of tools it listed. The report must be valid (Validate).
	RecordInventory(ctx context.Context, mcpID string, at time.Time, r InventoryReport) (int, error)
	// Inventory returns the tools listed at some time in the range (Calls
	// left 0) and the range's changes, newest first.
	Inventory(ctx context.Context, mcpID string, r Range) (*Inventory, error)
}

// ToolChangeCounter counts inventory changes for the alert evaluator (rule
// metric tool_changes).
type ToolChangeCounter interface {
	// ToolChangeCounts counts, for each MCP of reqs and each of its window
	// lengths (Minutes), the changes in [to - minutes, to): by MCP id,
	// window minutes, then "" for all tools and each tool's name. Absent
	// entries are zero.
	ToolChangeCounts(ctx context.Context, to time.Time, reqs map[string]WindowRequest) (map[string]map[int]map[string]ToolChangeCount, error)
}
