package clickhouse

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"
)

// What deletion and retention do to each table is derived from the
// migrations (the tables they create, their columns and partitioning), so
// that a table added by a later migration is covered without a list to
// keep up to date; a table whose shape the rules below do not know makes
// the derivation fail (and the store's tests with it) instead of being
// skipped. docs/data-lifecycle.md describes the outcome table by table.
//
//   - Deleting an MCP deletes its rows from every table with an mcp_id
//     column, except those in keptOnMCPDeletion.
//   - Deleting a person's data deletes, in each table with an mcp_id
//     column, the MCP's rows found by the first of these columns it has:
//     user_id (the raw items), user_key (per-user rollup rows), session_id
//     (per-session rows of the person's sessions). A table with none of
//     them holds aggregate states of everyone's items, kept.
//   - Retention cuts each table on its time column: the column of its
//     PARTITION BY (toDate(ts): day partitions; toYYYYMM(day|hour|month):
//     month partitions, month being a month's first day, which keeps whole
//     months) or, in a table without partitions, the item time in Unix
//     milliseconds its last_seen max state holds.

// keptOnMCPDeletion are the tables with an mcp_id column whose rows
// outlive the MCP, and why (docs/data-lifecycle.md).
var keptOnMCPDeletion = map[string]string{
	"usage_daily": "usage meters what the account sent: event counts per account, day and MCP, no item content",
}

// Person deletion: how a table's rows of one person are found.
const (
	byUserID    = "user_id"
	byUserKey   = "user_key"
	bySessionID = "session_id"
)

// Kinds of time column, by which retention cuts a table.
const (
	timeDateTime = "datetime" // DateTime: rows before the cut-off's instant go
	timeDate     = "date"     // Date of a day: rows of days before the cut-off go
	timeMonth    = "month"    // Date of a month's first day: only whole months before the cut-off's go
	timeMaxMs    = "max_ms"   // max state of Unix milliseconds, in a table without partitions
)

// lifecycleTable is one table created by the migrations, as deletion and
// retention treat it.
type lifecycleTable struct {
	name    string            // as the migrations name it (events, mcp_daily), not _local
	columns map[string]string // column name → type
	// partition is the PARTITION BY expression ("" when none); dayParts
	// is true for day partitions (toDate: ids YYYYMMDD), false for
	// month ones (toYYYYMM: ids YYYYMM).
	partition string
	dayParts  bool
	// timeCol and timeKind are the column retention cuts on ("" when
	// retention leaves the table alone: it has neither mcp_id nor
	// account_id).
	timeCol, timeKind string
	// byAccount: the table is sorted by account first (usage), so
	// retention selects an account's rows by account_id, not by MCP.
	byAccount bool
	// person is how a person's rows are found (by* constants), "" when
	// the table holds none apart from everyone's.
	person string
}

// perMCP reports whether the table holds rows of an MCP.
func (t lifecycleTable) perMCP() bool { return t.columns["mcp_id"] != "" }

// deletedWithMCP reports whether deleting an MCP deletes its rows here.
func (t lifecycleTable) deletedWithMCP() bool {
	_, kept := keptOnMCPDeletion[t.name]
	return t.perMCP() && !kept
}

var (
	createTable  = regexp.MustCompile(`(?s)^CREATE TABLE IF NOT EXISTS [A-Za-z0-9_]+\.([A-Za-z0-9_]+)\s*\((.*)\)\s*ENGINE\s*=\s*(.*)$`)
	partitionBy  = regexp.MustCompile(`(?m)^PARTITION BY (.+)$`)
	orderBy      = regexp.MustCompile(`(?m)^ORDER BY \(?([A-Za-z0-9_]+)`)
	partitionCol = regexp.MustCompile(`^(toDate|toYYYYMM)\(([A-Za-z0-9_]+)\)$`)
)

var (
	lifecycleOnce   sync.Once
	lifecycleTables []lifecycleTable
	lifecycleErr    error
)

// tables returns every table the migrations create, with what deletion
// and retention do to it, in the migrations' order.
func tables() ([]lifecycleTable, error) {
	lifecycleOnce.Do(func() { lifecycleTables, lifecycleErr = deriveTables() })
	return lifecycleTables, lifecycleErr
}

func deriveTables() ([]lifecycleTable, error) {
	migs, err := loadMigrations(templateData{DB: "lifecycle"})
	if err != nil {
		return nil, err
	}
	var out []lifecycleTable
	for _, m := range migs {
		for _, stmt := range m.statements {
			c := createTable.FindStringSubmatch(stmt)
			if c == nil || strings.TrimSpace(c[3]) == "Null" {
				continue // a Null table (008) holds no rows to delete or expire
			}
			t, err := deriveTable(c[1], c[2], c[3])
			if err != nil {
				return nil, fmt.Errorf("clickhouse: migration %s: table %s: %w", m.name, c[1], err)
			}
			out = append(out, t)
		}
	}
	return out, nil
}

func deriveTable(name, columns, engine string) (lifecycleTable, error) {
	t := lifecycleTable{name: name, columns: map[string]string{}}
	for _, col := range splitTopLevel(columns) {
		n, typ, _ := strings.Cut(strings.TrimSpace(col), " ")
		t.columns[n] = strings.TrimSpace(typ)
	}
	if p := partitionBy.FindStringSubmatch(engine); p != nil {
		t.partition = strings.TrimSpace(p[1])
	}
	if o := orderBy.FindStringSubmatch(engine); o != nil {
		t.byAccount = o[1] == "account_id"
	}
	for _, c := range []string{byUserID, byUserKey, bySessionID} {
		if t.perMCP() && t.columns[c] != "" {
			t.person = c
			break
		}
	}
	if !t.perMCP() && t.columns["account_id"] == "" {
		return t, nil // no tenant's rows (nightly_runs): retention leaves it
	}
	if t.partition == "" {
		if t.columns["last_seen"] != "AggregateFunction(max, UInt64)" {
			return t, fmt.Errorf("a table of tenants' rows without partitions needs a last_seen max state of Unix milliseconds for retention to cut on")
		}
		t.timeCol, t.timeKind = "last_seen", timeMaxMs
		return t, nil
	}
	p := partitionCol.FindStringSubmatch(t.partition)
	if p == nil {
		return t, fmt.Errorf("retention knows partitions by toDate(column) or toYYYYMM(column), not %q", t.partition)
	}
	t.dayParts, t.timeCol = p[1] == "toDate", p[2]
	switch typ := t.columns[t.timeCol]; {
	case strings.HasPrefix(typ, "DateTime"):
		t.timeKind = timeDateTime
	case typ == "Date" && t.timeCol == "month":
		t.timeKind = timeMonth
	case typ == "Date":
		t.timeKind = timeDate
	default:
		return t, fmt.Errorf("partition column %s has type %q, not Date or DateTime", t.timeCol, typ)
	}
	if t.dayParts && t.timeKind == timeMonth {
		return t, fmt.Errorf("day partitions of a month column")
	}
	return t, nil
}

// splitTopLevel splits a column list at the commas outside parentheses.
func splitTopLevel(s string) []string {
	var out []string
	depth, start := 0, 0
	for i, r := range s {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 {
				out = append(out, s[start:i])
				start = i + 1
			}
		}
	}
	if strings.TrimSpace(s[start:]) != "" {
		out = append(out, s[start:])
	}
	return out
}

// tableNames lists the names of the tables keep selects.
func tableNames(keep func(lifecycleTable) bool) ([]string, error) {
	all, err := tables()
	if err != nil {
		return nil, err
	}
	var names []string
	for _, t := range all {
		if keep(t) {
			names = append(names, t.name)
		}
	}
	sort.Strings(names)
	return names, nil
}

// before renders the condition "the row is older than the cut-off" on the
// table's time column (monthly tables: older than the cut-off's month).
func (t lifecycleTable) before(cutoff time.Time) string {
	switch t.timeKind {
	case timeDateTime:
		return fmt.Sprintf("%s < %s", t.timeCol, timeLit(cutoff))
	case timeDate:
		return fmt.Sprintf("%s < %s", t.timeCol, dateLit(cutoff))
	case timeMonth:
		return fmt.Sprintf("%s < %s", t.timeCol, dateLit(monthStart(cutoff)))
	case timeMaxMs:
		return fmt.Sprintf("finalizeAggregation(%s) < %d", t.timeCol, clampTime(cutoff).UnixMilli())
	}
	return "0"
}

// partitionBefore returns the partition expression of a partition id of
// the table wholly before the cut-off.
func (t lifecycleTable) partitionBefore(id string, cutoff time.Time) (string, bool) {
	if t.timeKind == "" || t.partition == "" {
		return "", false
	}
	if t.dayParts {
		d, err := time.Parse("20060102", id)
		if err == nil && d.Before(cutoff) {
			return "'" + d.Format("2006-01-02") + "'", true
		}
		return "", false
	}
	m, err := time.Parse("200601", id)
	// A month partition goes when the whole month is before the cut-off.
	if err == nil && !m.AddDate(0, 1, 0).After(cutoff) {
		return id, true
	}
	return "", false
}

// maxStatementBytes bounds the text of a statement built from a list of
// values (a person's session ids): ClickHouse refuses a query longer than
// max_query_size, 256 KiB by default.
const maxStatementBytes = 200 << 10

// inChunks renders head + "(" + values + ")" + tail statements, each
// holding as many quoted values as keep it under maxStatementBytes.
func inChunks(head, tail string, values []string) []string {
	var out []string
	var b strings.Builder
	n := 0
	flush := func() {
		if n > 0 {
			b.WriteString(")" + tail)
			out = append(out, b.String())
		}
		b.Reset()
		n = 0
	}
	for _, v := range values {
		q := QuoteString(v)
		if n > 0 && b.Len()+len(q)+2+len(tail) > maxStatementBytes {
			flush()
		}
		if n == 0 {
			b.WriteString(head + "(")
		} else {
			b.WriteString(", ")
		}
		b.WriteString(q)
		n++
	}
	flush()
	return out
}
