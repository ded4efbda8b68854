package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry/clickhouse"
)

// The verdict: every acknowledged item stored once in events and in every
// rollup, one delivery per transition, no 5xx other than 503.

// verdict brings every server back, waits for both logs to drain, and
// checks what is stored.
func (h *harness) verdict(seed int64) int {
	for _, in := range h.instances {
		in.mu.Lock()
		// Killed, or exited by itself (a start while PostgreSQL was
		// down ends with "postgres migrations: unavailable").
		dead := in.cmd == nil || syscall.Kill(in.cmd.Process.Pid, 0) != nil
		in.mu.Unlock()
		if dead {
			if err := in.start(); err != nil {
				return fail(err)
			}
		}
	}
	for _, in := range h.instances {
		if err := waitDrained(in); err != nil {
			return fail(err)
		}
	}
	var problems []string
	h.mu.Lock()
	if len(h.bad) > 0 {
		problems = append(problems, fmt.Sprintf("%d answers were a 5xx other than 503: %v", len(h.bad), h.bad[:min(len(h.bad), 10)]))
	}
	acked := len(h.acked)
	statuses := fmt.Sprint(h.statuses)
	h.mu.Unlock()
	n, err := h.checkEvents()
	if err != nil {
		problems = append(problems, err.Error())
	}
	if err := h.checkRollups(); err != nil {
		problems = append(problems, err.Error())
	}
	transitions, err := h.checkDeliveries()
	if err != nil {
		problems = append(problems, err.Error())
	}
	fmt.Printf("chaos: %d items acknowledged, %d stored; %d rule transitions; answers %s\n", acked, n, transitions, statuses)
	if transitions == 0 {
		problems = append(problems, "no rule transition happened: the delivery check proved nothing")
	}
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Printf("chaos: problem: %s\n", p)
		}
		fmt.Printf("chaos: verdict FAIL (seed %d)\n", seed)
		return 1
	}
	fmt.Printf("chaos: verdict PASS (seed %d)\n", seed)
	return 0
}

// waitDrained waits until an instance answers and its log is empty.
func waitDrained(in *instance) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		backlog, err := metric(in.base()+"/metrics", "telemetry_wal_backlog_records")
		if err == nil && backlog == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("instance %s: log not drained after 3 minutes (backlog %v, %v)", in.name, backlog, err)
		}
		time.Sleep(time.Second)
	}
}

func metric(u, name string) (float64, error) {
	res, err := http.Get(u)
	if err != nil {
		return -1, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), name+" "); ok {
			return strconv.ParseFloat(rest, 64)
		}
	}
	return -1, errors.New(name + " not exposed")
}

// chQuery runs a query on ClickHouse's HTTP interface and returns its TSV.
func (h *harness) chQuery(q string) (string, error) {
	res, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/", h.chHTTP), "text/plain", strings.NewReader(q))
	if err != nil {
		return "", err
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != 200 {
		return "", fmt.Errorf("clickhouse: %s\n%s", bytes.TrimSpace(b), q)
	}
	return string(b), nil
}

// checkEvents: every acknowledged id stored once, no id twice.
func (h *harness) checkEvents() (int, error) {
	out, err := h.chQuery(fmt.Sprintf("SELECT %s AS item_id, count() FROM %s.events WHERE mcp_id = '%s' GROUP BY item_id FORMAT TSV", clickhouse.EventID, h.database, h.mcp))
	if err != nil {
		return 0, err
	}
	stored := map[string]int{}
	var twice []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		id, n, _ := strings.Cut(line, "\t")
		c, _ := strconv.Atoi(n)
		stored[id] = c
		if c > 1 {
			twice = append(twice, line)
		}
	}
	var missing []string
	h.mu.Lock()
	for id := range h.acked {
		if stored[id] == 0 {
			missing = append(missing, id)
		}
	}
	h.mu.Unlock()
	sort.Strings(missing)
	var problems []string
	if len(missing) > 0 {
		problems = append(problems, fmt.Sprintf("%d acknowledged items missing from events (e.g. %v)", len(missing), missing[:min(5, len(missing))]))
	}
	if len(twice) > 0 {
		problems = append(problems, fmt.Sprintf("%d items stored more than once (e.g. %v)", len(twice), twice[:min(5, len(twice))]))
	}
	if problems != nil {
		return len(stored), errors.New(strings.Join(problems, "; "))
	}
	return len(stored), nil
}

// checkRollups re-runs every view over the final events in a database of
// its own (telemetryd migrate, then one INSERT ... SELECT of events) and
// compares each rollup of the MCP with it, merged by its sorting key:
// every aggregate but the t-digest quantiles (approximate, and dependent
// on the order states merge in) must be equal.
func (h *harness) checkRollups() error {
	ref := h.database + "_ref"
	cmd := exec.Command(h.bin, "migrate")
	cmd.Dir = h.dir
	cmd.Env = append(os.Environ(), fmt.Sprintf("TELEMETRY_CLICKHOUSE_ADDR=127.0.0.1:%d", h.chPort), "TELEMETRY_CLICKHOUSE_DATABASE="+ref,
		"TELEMETRY_POSTGRES_URL="+h.pgURL(), "TELEMETRY_ALERTING_SECRET_KEY_FILE="+filepath.Join(h.dir, "secret.key"))
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("migrate the reference database: %v\n%s", err, out)
	}
	if _, err := h.chQuery(fmt.Sprintf("INSERT INTO %s.events SELECT * FROM %s.events", ref, h.database)); err != nil {
		return err
	}
	// On the replicated cluster the rollups are Replicated*MergeTree
	// tables name_local, read whole through their Distributed table name.
	tables, err := h.chQuery(fmt.Sprintf("SELECT name FROM system.tables WHERE database = '%s' AND (engine LIKE '%%AggregatingMergeTree' OR engine LIKE '%%SummingMergeTree') ORDER BY name FORMAT TSV", h.database))
	if err != nil {
		return err
	}
	var problems []string
	checked := 0
	for _, table := range strings.Fields(tables) {
		cols, err := h.chQuery(fmt.Sprintf("SELECT name, type, is_in_sorting_key FROM system.columns WHERE database = '%s' AND table = '%s' FORMAT TSV", h.database, table))
		if err != nil {
			return err
		}
		var keys, aggs []string
		hasMCP := false
		for _, line := range strings.Split(strings.TrimSpace(cols), "\n") {
			f := strings.Split(line, "\t")
			name, typ, key := f[0], f[1], f[2] == "1"
			hasMCP = hasMCP || name == "mcp_id"
			switch {
			case key:
				keys = append(keys, name)
			case strings.Contains(typ, "TDigest") || strings.Contains(typ, "quantile"):
				// approximate: see above
			case strings.HasPrefix(typ, "AggregateFunction("):
				aggs = append(aggs, mergeOf(typ, name))
			default:
				aggs = append(aggs, "sum("+name+")")
			}
		}
		if !hasMCP || len(keys) == 0 || len(aggs) == 0 {
			continue
		}
		read := strings.TrimSuffix(table, "_local")
		q := func(db string) string {
			return fmt.Sprintf("SELECT %s, %s FROM %s.%s WHERE mcp_id = '%s' GROUP BY %s ORDER BY %s FORMAT TSV",
				strings.Join(keys, ", "), strings.Join(aggs, ", "), db, read, h.mcp, strings.Join(keys, ", "), strings.Join(keys, ", "))
		}
		got, err := h.chQuery(q(h.database))
		if err != nil {
			return err
		}
		want, err := h.chQuery(q(ref))
		if err != nil {
			return err
		}
		checked++
		if got != want {
			problems = append(problems, fmt.Sprintf("rollup %s differs from its view re-run over events:\n%s", table, diffLines(got, want)))
		}
	}
	_, _ = h.chQuery("DROP DATABASE IF EXISTS " + ref)
	logf("rollups compared with their views re-run over events: %d", checked)
	if checked == 0 {
		return errors.New("no rollup was compared")
	}
	if problems != nil {
		return errors.New(strings.Join(problems, "\n"))
	}
	return nil
}

// mergeOf turns a column of type AggregateFunction(f(params), T...) into
// fMerge(params)(column).
func mergeOf(typ, col string) string {
	inner := strings.TrimSuffix(strings.TrimPrefix(typ, "AggregateFunction("), ")")
	depth, end := 0, len(inner)
	for i, r := range inner {
		switch r {
		case '(':
			depth++
		case ')':
			depth--
		case ',':
			if depth == 0 && end == len(inner) {
				end = i
			}
		}
	}
	fn := strings.TrimSpace(inner[:end])
	if name, params, ok := strings.Cut(fn, "("); ok {
		return name + "Merge(" + params + "(" + col + ")"
	}
	return fn + "Merge(" + col + ")"
}

func diffLines(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	var b strings.Builder
	shown := 0
	for i := 0; i < max(len(g), len(w)) && shown < 5; i++ {
		var gl, wl string
		if i < len(g) {
			gl = g[i]
		}
		if i < len(w) {
			wl = w[i]
		}
		if gl != wl {
			fmt.Fprintf(&b, "  stored:   %s\n  expected: %s\n", gl, wl)
			shown++
		}
	}
	return b.String()
}

// checkDeliveries: every transition of a rule made exactly one delivery
// per person and channel (firings; resolves too with notify_on_resolve).
func (h *harness) checkDeliveries() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.pgURL())
	if err != nil {
		return 0, err
	}
	defer conn.Close(ctx)
	transitions := 0
	var problems []string
	for rule, onResolve := range h.rules {
		var fired, resolved int
		if err := conn.QueryRow(ctx, `SELECT count(*) FILTER (WHERE kind = 'fired'), count(*) FILTER (WHERE kind = 'resolved')
			FROM rule_events WHERE rule_id = $1`, rule).Scan(&fired, &resolved); err != nil {
			return 0, err
		}
		transitions += fired + resolved
		want := fired
		if onResolve {
			want += resolved
		}
		rows, err := conn.Query(ctx, `SELECT coalesce(recipient_user_id, ''), channel, count(*) FROM deliveries WHERE rule_id = $1 GROUP BY 1, 2`, rule)
		if err != nil {
			return 0, err
		}
		seen := 0
		for rows.Next() {
			var who, channel string
			var n int
			if err := rows.Scan(&who, &channel, &n); err != nil {
				return 0, err
			}
			seen++
			if n != want {
				problems = append(problems, fmt.Sprintf("rule %s: %d deliveries to %s by %s for %d fired and %d resolved, want %d",
					rule, n, who, channel, fired, resolved, want))
			}
		}
		rows.Close()
		if want > 0 && seen == 0 {
			problems = append(problems, fmt.Sprintf("rule %s: no delivery for %d transitions", rule, want))
		}
		logf("rule %s: fired %d, resolved %d, %d recipient-channel pairs", rule, fired, resolved, seen)
	}
	if problems != nil {
		return transitions, errors.New(strings.Join(problems, "; "))
	}
	return transitions, nil
}
