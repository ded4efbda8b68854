package postgres

import (
	"context"
	"sort"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/analytics"
)

// InventoryService keeps the tool inventory (docs/inventory.md) and counts
// its changes for the alert evaluator.
type InventoryService struct {
	db *DB
}

var (
	_ analytics.InventoryService  = (*InventoryService)(nil)
	_ analytics.ToolChangeCounter = (*InventoryService)(nil)
)

// NewInventoryService returns the service.
func NewInventoryService(db *DB) *InventoryService { return &InventoryService{db: db} }

// inventoryTouchEvery bounds last_seen_at writes of unchanged tools: a
// server answering tools/list often does not rewrite its whole inventory
// every time.
const inventoryTouchEvery = time.Minute

// RecordInventory implements analytics.InventoryService. Reports of one
// MCP are applied one at a time (the MCP row's lock), so two instances
// receiving reports at once record each change once.
func (s *InventoryService) RecordInventory(ctx context.Context, mcpID string, at time.Time, r analytics.InventoryReport) (int, error) {
	var version *string
	if r.ServerVersion != "" {
		version = &r.ServerVersion
	}
	err := pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		var one int
		if err := tx.QueryRow(ctx, `SELECT 1 FROM mcps WHERE id = $1 FOR NO KEY UPDATE`, mcpID).Scan(&one); err != nil {
			return err
		}
		before, err := knownTools(ctx, tx, mcpID)
		if err != nil {
			return err
		}
		d := diffInventory(before, r, at)
		if len(d.names) > 0 {
			if _, err := tx.Exec(ctx, `
				INSERT INTO inventory_tools (mcp_id, name, schema_hash, schema, first_seen_at, last_seen_at, present, definition_hash, source)
				SELECT $1, t.name, t.hash, t.schema::jsonb, $2, $2, true, t.def, $7 FROM unnest($3::text[], $4::text[], $5::text[], $6::text[]) AS t(name, hash, schema, def)
				ON CONFLICT (mcp_id, name) DO UPDATE SET schema_hash = excluded.schema_hash, source = excluded.source,
					schema = CASE WHEN excluded.schema IS NOT NULL OR inventory_tools.schema_hash <> excluded.schema_hash
						THEN excluded.schema ELSE inventory_tools.schema END,
					definition_hash = CASE WHEN excluded.schema IS NOT NULL OR inventory_tools.schema_hash <> excluded.schema_hash
						THEN excluded.definition_hash ELSE inventory_tools.definition_hash END,
					last_seen_at = greatest(inventory_tools.last_seen_at, excluded.last_seen_at), present = true`,
				mcpID, at, d.names, d.hashes, d.schemas, d.defHashes, r.SourceOrSDK()); err != nil {
				return err
			}
		}
		if len(d.removed) > 0 {
			if _, err := tx.Exec(ctx, `UPDATE inventory_tools SET present = false WHERE mcp_id = $1 AND name = ANY($2)`, mcpID, d.removed); err != nil {
				return err
			}
		}
		if err := keepDefinitions(ctx, tx, mcpID, at, d.newDefs); err != nil {
			return err
		}
		if len(d.kinds) > 0 {
			severities, reasons, err := gradeChanges(ctx, tx, mcpID, d)
			if err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `
				INSERT INTO inventory_changes (mcp_id, at, tool, kind, server_version, schema_hash, before_definition, after_definition, severity, reasons, source)
				SELECT $1, $2, c.tool, c.kind, $3, c.hash, c.bdef, c.adef, c.sev, c.reasons::jsonb, $11
				FROM unnest($4::text[], $5::text[], $6::text[], $7::text[], $8::text[], $9::text[], $10::text[]) AS c(tool, kind, hash, bdef, adef, sev, reasons)`,
				mcpID, at, version, d.changeTools, d.kinds, d.changeHashes, d.beforeDefs, d.afterDefs, severities, reasons, r.SourceOrSDK()); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return 0, wrap(err)
	}
	return len(r.Tools), nil
}

// knownTool is what the inventory holds of one tool before a report.
type knownTool struct {
	hash     string
	present  bool
	lastSeen time.Time
	defHash  *string
}

// knownTools reads the MCP's inventory, by tool name.
func knownTools(ctx context.Context, tx pgx.Tx, mcpID string) (map[string]knownTool, error) {
	rows, err := tx.Query(ctx, `SELECT name, schema_hash, present, last_seen_at, definition_hash FROM inventory_tools WHERE mcp_id = $1`, mcpID)
	if err != nil {
		return nil, err
	}
	before := map[string]knownTool{}
	var name string
	var k knownTool
	_, err = pgx.ForEachRow(rows, []any{&name, &k.hash, &k.present, &k.lastSeen, &k.defHash}, func() error {
		before[name] = k
		return nil
	})
	return before, err
}

// inventoryDiff is what a report changes, as the columns of the writes:
// the tools to upsert (names, hashes, schemas), those no longer listed
// (removed) and the change log's rows (changeTools, kinds, changeHashes).
type inventoryDiff struct {
	names, hashes, removed []string
	schemas, defHashes     []*string
	changeTools, kinds     []string
	changeHashes           []*string
	// beforeDefs and afterDefs are the changes' definition hashes; after
	// the definitions (by hash) of the report that are new to their tool.
	beforeDefs, afterDefs []*string
	newDefs               map[string][]byte
	afterSchemas          [][]byte
}

// diffInventory compares report r, made at at, with the inventory before
// it. An unchanged tool seen less than inventoryTouchEvery ago, reported
// without its schema, is left alone.
func diffInventory(before map[string]knownTool, r analytics.InventoryReport, at time.Time) inventoryDiff {
	var d inventoryDiff
	listed := make(map[string]bool, len(r.Tools))
	d.newDefs = map[string][]byte{}
	for _, t := range r.Tools {
		listed[t.Name] = true
		old, ok := before[t.Name]
		var defHash *string
		if t.Schema != nil {
			if h := analytics.DefinitionHash(t.Schema); h != "" {
				defHash = &h
			}
		}
		defChanged := defHash != nil && old.defHash != nil && *old.defHash != *defHash
		kind := ""
		switch {
		case !ok || !old.present:
			kind = analytics.ChangeAdded
		case old.hash != t.SchemaHash || defChanged:
			kind = analytics.ChangeChanged
		case at.Sub(old.lastSeen) < inventoryTouchEvery && t.Schema == nil:
			continue // unchanged and seen a moment ago
		}
		if defHash != nil && (old.defHash == nil || *old.defHash != *defHash) {
			d.newDefs[*defHash] = t.Schema
		}
		if kind != "" {
			var was *string
			if kind == analytics.ChangeChanged {
				was = old.defHash
			}
			d.kinds, d.changeTools, d.changeHashes = append(d.kinds, kind), append(d.changeTools, t.Name), append(d.changeHashes, &t.SchemaHash)
			d.beforeDefs, d.afterDefs, d.afterSchemas = append(d.beforeDefs, was), append(d.afterDefs, defHash), append(d.afterSchemas, t.Schema)
		}
		var schema *string
		if t.Schema != nil {
			v := string(t.Schema)
			schema = &v
		}
		d.names, d.hashes, d.schemas, d.defHashes = append(d.names, t.Name), append(d.hashes, t.SchemaHash), append(d.schemas, schema), append(d.defHashes, defHash)
	}
	for n, old := range before {
		if old.present && !listed[n] {
			d.removed = append(d.removed, n)
		}
	}
	sort.Strings(d.removed)
	for _, n := range d.removed {
		d.kinds, d.changeTools, d.changeHashes = append(d.kinds, analytics.ChangeRemoved), append(d.changeTools, n), append(d.changeHashes, nil)
		d.beforeDefs, d.afterDefs, d.afterSchemas = append(d.beforeDefs, before[n].defHash), append(d.afterDefs, nil), append(d.afterSchemas, nil)
	}
	return d
}

// Inventory implements analytics.InventoryService: the tools first seen
// before the range ends and seen in it or still listed, by name, and the
// range's changes, newest first.
func (s *InventoryService) Inventory(ctx context.Context, mcpID string, r analytics.Range) (*analytics.Inventory, error) {
	inv := &analytics.Inventory{From: r.FromDate(), To: r.ToDate(), Tools: []analytics.InventoryTool{}, Changes: []analytics.InventoryChange{}}
	rows, err := s.db.Pool.Query(ctx, `SELECT name, first_seen_at, last_seen_at, schema_hash, schema, source FROM inventory_tools
		WHERE mcp_id = $1 AND first_seen_at < $3 AND (last_seen_at >= $2 OR present) ORDER BY name`, mcpID, r.From, r.End())
	if err != nil {
		return nil, wrap(err)
	}
	inv.Tools, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (analytics.InventoryTool, error) {
		var t analytics.InventoryTool
		var first, last time.Time
		var hash string
		var schema []byte
		err := row.Scan(&t.Name, &first, &last, &hash, &schema, &t.Source)
		first, last = first.UTC(), last.UTC()
		t.FirstSeenAt, t.LastSeenAt, t.SchemaHash = &first, &last, &hash
		t.DefinitionBytes = analytics.DefinitionBytes(t.Name, schema)
		return t, err
	})
	if err != nil {
		return nil, wrap(err)
	}
	inv.SumDefinitionBytes()
	rows, err = s.db.Pool.Query(ctx, `SELECT `+changeColumns+` FROM inventory_changes
		WHERE mcp_id = $1 AND at >= $2 AND at < $3 ORDER BY at DESC, id DESC LIMIT $4`, mcpID, r.From, r.End(), analytics.MaxInventoryChanges)
	if err != nil {
		return nil, wrap(err)
	}
	inv.Changes, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (analytics.InventoryChange, error) { return scanChange(row) })
	if err != nil {
		return nil, wrap(err)
	}
	return inv, nil
}

var _ analytics.ListedToolReader = (*InventoryService)(nil)

// ListedTools implements analytics.ListedToolReader with the tools read's
// rule (Inventory), over [from, to).
func (s *InventoryService) ListedTools(ctx context.Context, mcpID string, from, to time.Time) ([]string, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT name FROM inventory_tools
		WHERE mcp_id = $1 AND first_seen_at < $3 AND (last_seen_at >= $2 OR present) ORDER BY name`, mcpID, from, to)
	if err != nil {
		return nil, wrap(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, wrap(err)
}

// ToolChangeCounts implements analytics.ToolChangeCounter in one query:
// per MCP and window, the changes of every tool and their sum ("").
func (s *InventoryService) ToolChangeCounts(ctx context.Context, to time.Time, reqs map[string]analytics.WindowRequest) (map[string]map[int]map[string]analytics.ToolChangeCount, error) {
	var mcps []string
	var windows []int32
	for id, q := range reqs {
		for _, m := range q.Minutes {
			mcps, windows = append(mcps, id), append(windows, int32(m))
		}
	}
	out := map[string]map[int]map[string]analytics.ToolChangeCount{}
	if len(mcps) == 0 {
		return out, nil
	}
	rows, err := s.db.Pool.Query(ctx, `
		SELECT q.mcp, q.w, c.tool, count(*), count(*) FILTER (WHERE c.severity = 'breaking'), count(*) FILTER (WHERE c.severity = 'risky') FROM inventory_changes c
		JOIN unnest($1::text[], $2::int[]) AS q(mcp, w) ON c.mcp_id = q.mcp AND c.at >= $3::timestamptz - make_interval(mins => q.w) AND c.at < $3::timestamptz
		GROUP BY GROUPING SETS ((q.mcp, q.w, c.tool), (q.mcp, q.w))`, mcps, windows, to)
	if err != nil {
		return nil, wrap(err)
	}
	var mcp string
	var w int32
	var tool *string
	var n analytics.ToolChangeCount
	_, err = pgx.ForEachRow(rows, []any{&mcp, &w, &tool, &n.All, &n.Breaking, &n.Risky}, func() error {
		if out[mcp] == nil {
			out[mcp] = map[int]map[string]analytics.ToolChangeCount{}
		}
		if out[mcp][int(w)] == nil {
			out[mcp][int(w)] = map[string]analytics.ToolChangeCount{}
		}
		key := ""
		if tool != nil {
			key = *tool
		}
		out[mcp][int(w)][key] = n
		return nil
	})
	if err != nil {
		return nil, wrap(err)
	}
	return out, nil
}
