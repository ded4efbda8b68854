package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Graded tool changes (docs/tool-changes.md): the definitions kept, the
// grading of each change as it is recorded, and their reads.

var _ analytics.ToolChangeStore = (*InventoryService)(nil)

// keepDefinitions stores the report's definitions new to their tools
// (by hash, once each) and drops the oldest definitions no listed tool
// has, past analytics.MaxToolDefinitions.
func keepDefinitions(ctx context.Context, tx pgx.Tx, mcpID string, at time.Time, defs map[string][]byte) error {
	if len(defs) == 0 {
		return nil
	}
	hashes, bodies := make([]string, 0, len(defs)), make([]string, 0, len(defs))
	for h, b := range defs {
		hashes, bodies = append(hashes, h), append(bodies, string(b))
	}
	if _, err := tx.Exec(ctx, `INSERT INTO tool_definitions (mcp_id, hash, definition, first_seen_at)
		SELECT $1, d.hash, d.body::jsonb, $2 FROM unnest($3::text[], $4::text[]) AS d(hash, body)
		ON CONFLICT (mcp_id, hash) DO NOTHING`, mcpID, at, hashes, bodies); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `DELETE FROM tool_definitions WHERE mcp_id = $1 AND hash IN (
		SELECT d.hash FROM tool_definitions d WHERE d.mcp_id = $1 AND NOT EXISTS (
			SELECT 1 FROM inventory_tools t WHERE t.mcp_id = $1 AND t.present AND t.definition_hash = d.hash)
		ORDER BY d.first_seen_at DESC, d.hash OFFSET $2)`, mcpID, analytics.MaxToolDefinitions)
	return err
}

// gradeChanges grades the diff's changes, reading the definitions before
// them: the severities and the reasons as JSON, one each.
func gradeChanges(ctx context.Context, tx pgx.Tx, mcpID string, d inventoryDiff) ([]string, []string, error) {
	var want []string
	for i, h := range d.beforeDefs {
		if h != nil && d.kinds[i] == analytics.ChangeChanged {
			want = append(want, *h)
		}
	}
	defs := map[string][]byte{}
	if len(want) > 0 {
		rows, err := tx.Query(ctx, `SELECT hash, definition::text FROM tool_definitions WHERE mcp_id = $1 AND hash = ANY($2)`, mcpID, want)
		if err != nil {
			return nil, nil, err
		}
		var h, body string
		if _, err := pgx.ForEachRow(rows, []any{&h, &body}, func() error {
			defs[h] = []byte(body)
			return nil
		}); err != nil {
			return nil, nil, err
		}
	}
	severities, reasons := make([]string, len(d.kinds)), make([]string, len(d.kinds))
	for i, kind := range d.kinds {
		var before []byte
		if h := d.beforeDefs[i]; h != nil {
			before = defs[*h]
		}
		sev, rs := analytics.GradeToolChange(kind, before, d.afterSchemas[i])
		b, err := json.Marshal(rs)
		if err != nil {
			return nil, nil, err
		}
		severities[i], reasons[i] = sev, string(b)
	}
	return severities, reasons, nil
}

const changeColumns = `id, at, tool, kind, server_version, schema_hash, severity, reasons, source`

func scanChange(row pgx.Row) (analytics.InventoryChange, error) {
	var c analytics.InventoryChange
	var id int64
	var reasons []byte
	err := row.Scan(&id, &c.At, &c.Tool, &c.Kind, &c.ServerVersion, &c.SchemaHash, &c.Severity, &reasons, &c.Source)
	c.ID, c.At = strconv.FormatInt(id, 10), c.At.UTC()
	if err == nil && reasons != nil {
		err = json.Unmarshal(reasons, &c.Reasons)
	}
	return c, err
}

// ToolChange implements analytics.ToolChangeStore.
func (s *InventoryService) ToolChange(ctx context.Context, mcpID, changeID string) (analytics.InventoryChange, []byte, []byte, error) {
	id, err := strconv.ParseInt(changeID, 10, 64)
	if err != nil || id <= 0 {
		return analytics.InventoryChange{}, nil, nil, telemetry.Errorf(telemetry.ENOTFOUND, "No such tool change.")
	}
	row := s.db.Pool.QueryRow(ctx, `SELECT `+changeColumns+`,
		(SELECT definition::text FROM tool_definitions d WHERE d.mcp_id = c.mcp_id AND d.hash = c.before_definition),
		(SELECT definition::text FROM tool_definitions d WHERE d.mcp_id = c.mcp_id AND d.hash = c.after_definition)
		FROM inventory_changes c WHERE c.mcp_id = $1 AND c.id = $2`, mcpID, id)
	var before, after *string
	c, err := scanChange(rowWith{row, []any{&before, &after}})
	if errors.Is(err, pgx.ErrNoRows) {
		return c, nil, nil, telemetry.Errorf(telemetry.ENOTFOUND, "No such tool change.")
	}
	if err != nil {
		return c, nil, nil, wrap(err)
	}
	return c, bytesOf(before), bytesOf(after), nil
}

// rowWith scans a row's leading change columns and then extra.
type rowWith struct {
	row   pgx.Row
	extra []any
}

func (r rowWith) Scan(dest ...any) error { return r.row.Scan(append(dest, r.extra...)...) }

func bytesOf(s *string) []byte {
	if s == nil {
		return nil
	}
	return []byte(*s)
}

// RecentToolChanges implements analytics.ToolChangeStore.
func (s *InventoryService) RecentToolChanges(ctx context.Context, mcpID string, from, to time.Time, tool *string, minSeverity string, limit int) ([]analytics.InventoryChange, int, error) {
	var sevs []string
	for _, v := range []string{analytics.SeverityBreaking, analytics.SeverityRisky, analytics.SeverityBenign} {
		if analytics.SeverityRank(v) >= analytics.SeverityRank(minSeverity) {
			sevs = append(sevs, v)
		}
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+changeColumns+`, count(*) OVER () FROM inventory_changes
		WHERE mcp_id = $1 AND at >= $2 AND at < $3 AND ($4::text IS NULL OR tool = $4) AND ($5 = '' OR severity = ANY($6))
		ORDER BY at DESC, id DESC LIMIT $7`, mcpID, from, to, tool, minSeverity, sevs, limit)
	if err != nil {
		return nil, 0, wrap(err)
	}
	total := 0
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (analytics.InventoryChange, error) {
		return scanChange(rowWith{row, []any{&total}})
	})
	if err != nil {
		return nil, 0, wrap(err)
	}
	return out, total, nil
}
