package clickhouse

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	_ "unsafe" // go:linkname

	chproto "github.com/ClickHouse/ch-go/proto"
	"github.com/ClickHouse/clickhouse-go/v2/lib/driver"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse/native"
	"github.com/mcpscope/telemetry/internal/testkit/chdb"
)

// The ClickHouse 26 proof. With TELEMETRY_TEST_LIBCHDB naming libchdb.so
// (`make test` installs it with scripts/chdb.sh), every store the
// package's tests open on a single server mirrors each statement it runs
// on ClickHouse 18.16 to ClickHouse 26.7 in process, with the same
// parameters bound into the text by the driver's own binder:
//
//   - every migration statement (single-server rendering), every insert
//     (the fixture's batches, as VALUES), every INSERT ... SELECT (nightly,
//     seeding) and OPTIMIZE must run there too;
//   - every query on the test's database (overview, tools, tool detail,
//     insights, sessions, usage, rule windows, nightly, duplicates, ...)
//     runs on both, 18.16's answer read over its HTTP interface as TSV
//     (TELEMETRY_TEST_CLICKHOUSE_HTTP, host:port) and
//     26's by the library as TSV, and the two must match as multisets of
//     rows (main rows and WITH TOTALS rows apart, since GROUP BY has no
//     order), field by field: text exactly, numbers within the documented
//     approximations (compareField).
//
// So the read tests' fixture and parameters are exercised on both versions
// by the same tests that check them against their oracles on 18.16.

//go:linkname driverBind github.com/ClickHouse/clickhouse-go/v2.bind
func driverBind(tz *time.Location, query string, args ...any) (string, error)

// EnvLibCHDB names libchdb.so for the proof; EnvHTTP 18.16's HTTP
// interface (host:port).
const (
	EnvLibCHDB = "TELEMETRY_TEST_LIBCHDB"
	EnvHTTP    = "TELEMETRY_TEST_CLICKHOUSE_HTTP"
)

var (
	proofOnce    sync.Once
	proofSession *chdb.Session
	proofDir     string
	proofErr     error
)

// ProveOn26 mirrors db's statements to ClickHouse 26 and compares the
// answers (above), when EnvLibCHDB is set. It reports whether the proof
// is on.
func ProveOn26(t testing.TB, db *DB) bool {
	lib, http := os.Getenv(EnvLibCHDB), os.Getenv(EnvHTTP)
	if lib == "" || db.cluster != "" {
		return false
	}
	if http == "" {
		t.Fatalf("%s is set but %s does not name 18.16's HTTP interface", EnvLibCHDB, EnvHTTP)
	}
	proofOnce.Do(func() {
		if proofDir, proofErr = os.MkdirTemp("", "telemetry-chdb-"); proofErr == nil {
			proofSession, proofErr = chdb.Open(lib, filepath.Join(proofDir, "data"))
		}
	})
	if proofErr != nil {
		t.Fatalf("ClickHouse 26 (libchdb %s): %v", lib, proofErr)
	}
	pc := &proofConn{Conn: db.conn, t: t, s: proofSession, db: db.db, http: "http://" + http + "/"}
	db.conn = pc
	db.knobs.proveInsert = pc.mirrorInsert
	db.knobs.proveQuery = func(ctx context.Context, q string) { pc.compare(ctx, q, nil) }
	db.knobs.proveExport = func(ctx context.Context, q string) {
		pc.compare(ctx, q, nil)
		pc.compareExportBlocks(ctx, q)
	}
	return true
}

// CleanUpProof removes ClickHouse 26's data directory (TestMain, after
// every test).
func CleanUpProof() {
	if proofDir != "" {
		os.RemoveAll(proofDir)
	}
}

type proofConn struct {
	driver.Conn
	t    testing.TB
	s    *chdb.Session
	db   string
	http string
}

func (c *proofConn) bind(q string, args []any) string {
	text, err := driverBind(time.UTC, q, args...)
	if err != nil {
		c.t.Errorf("bind %q: %v", q, err)
	}
	return text
}

// mirror runs a statement 18.16 ran on 26 too.
func (c *proofConn) mirror(text string) {
	if _, err := c.s.Query(text, "TSV"); err != nil {
		c.t.Errorf("ClickHouse 26 refused a statement 18.16 ran: %v\n%s", err, text)
	}
}

func (c *proofConn) Exec(ctx context.Context, q string, args ...any) error {
	wrote(c.db) // before, too: a query racing the statement is compared again
	defer wrote(c.db)
	if err := c.Conn.Exec(ctx, q, args...); err != nil {
		return err
	}
	c.mirror(c.bind(q, args))
	return nil
}

func (c *proofConn) Query(ctx context.Context, q string, args ...any) (driver.Rows, error) {
	rows, err := c.Conn.Query(ctx, q, args...)
	if err == nil {
		c.compare(ctx, q, args)
	}
	return rows, err
}

func (c *proofConn) QueryRow(ctx context.Context, q string, args ...any) driver.Row {
	row := c.Conn.QueryRow(ctx, q, args...)
	if row.Err() == nil {
		c.compare(ctx, q, args)
	}
	return row
}

func (c *proofConn) Select(ctx context.Context, dest any, q string, args ...any) error {
	err := c.Conn.Select(ctx, dest, q, args...)
	if err == nil {
		c.compare(ctx, q, args)
	}
	return err
}

// proofMemo remembers the queries compared since their database was last
// written to: the same text (it names its database) on the same data gives
// the same answers, so it is compared once per state of the data, not
// once per call (the read grids repeat many of their queries: two thirds
// of TestReads' and TestSessionTimeline's). Every statement that writes
// (Exec, the inserts, OPTIMIZE, ALTER) starts a new state of its database;
// QueryOn26, which may write anywhere, a new state of every database.
var proofMemo = struct {
	sync.Mutex
	writes   map[string]uint64 // database → statements that wrote to it
	anywhere uint64            // QueryOn26 calls
	compared map[string]uint64 // query text → its database's state when compared, plus one
}{writes: map[string]uint64{}, compared: map[string]uint64{}}

// wrote starts a new state of db's data ("" : of every database).
func wrote(db string) {
	proofMemo.Lock()
	defer proofMemo.Unlock()
	if db == "" {
		proofMemo.anywhere++
	} else {
		proofMemo.writes[db]++
	}
}

// comparedBefore reports whether text was compared in db's present state;
// with mark, it records that it now was.
func comparedBefore(db, text string, mark bool) bool {
	proofMemo.Lock()
	defer proofMemo.Unlock()
	state := proofMemo.writes[db] + proofMemo.anywhere + 1
	if mark {
		proofMemo.compared[text] = state
		return true
	}
	return proofMemo.compared[text] == state
}

// compare runs a query of the test's database on both versions, once per
// state of the database's data (proofMemo).
func (c *proofConn) compare(ctx context.Context, q string, args []any) {
	text := c.bind(q, args)
	if !strings.Contains(text, c.db+".") {
		return // system tables, constants: not the store's data
	}
	if strings.Contains(text, duringMutations) {
		c.mirror(text) // the answer depends on each server's progress
		return
	}
	if comparedBefore(c.db, text, false) {
		return
	}
	old, got, ok := c.answers(ctx, text, "TSVWithNamesAndTypes")
	if !ok {
		return
	}
	if diff := compareTSV(string(old), got); diff != "" {
		c.t.Errorf("ClickHouse 26 answers otherwise than 18.16: %s\n%s\n-- 18.16:\n%s-- 26:\n%s", diff, text, old, got)
		return
	}
	comparedBefore(c.db, text, true)
}

// answers runs a query on both versions, in format; ok is false (and the
// test failed) when either refused it.
func (c *proofConn) answers(ctx context.Context, text, format string) (old, got string, ok bool) {
	old, err := httpQuery(ctx, c.http+"?default_format="+format, text)
	if err != nil {
		c.t.Errorf("18.16 over HTTP: %v\n%s", err, text)
		return "", "", false
	}
	if got, err = c.s.Query(text, format); err != nil {
		c.t.Errorf("ClickHouse 26 refused a query 18.16 answered: %v\n%s", err, text)
		return "", "", false
	}
	return old, got, true
}

// compareExportBlocks checks the export's own block decoders
// (package native) on ClickHouse 26's encoding of the export's columns:
// the export query's answer in the Native format (the column encodings of
// the native protocol's data blocks, without block info: revision 0, so no
// custom serialization flags, as at the export's pinned revision) from 26
// and from 18.16, each decoded by exportCols and written as NDJSON, must
// give the same lines. The export itself streams from 18.16 alone (libchdb
// listens on no port), so this is how its decoders meet 26.
func (c *proofConn) compareExportBlocks(ctx context.Context, q string) {
	old, got, ok := c.answers(ctx, q, "Native")
	if !ok {
		return
	}
	decode := func(version, data string) []string {
		cols := newExportCols()
		br := bufio.NewReaderSize(strings.NewReader(data), 256<<10)
		r := chproto.NewReader(br) // reads br as it is (big enough), so br.Peek sees the end
		var buf bytes.Buffer
		bw := bufio.NewWriter(&buf)
		ew := analytics.NewExportWriter(bw, analytics.ExportNDJSON)
		it := &analytics.ExportedItem{}
		for {
			if _, err := br.Peek(1); err == io.EOF {
				break
			}
			var block chproto.Block
			if err := block.DecodeRawBlock(r, native.Revision, cols.results); err != nil {
				c.t.Errorf("the export's decoders on %s's Native answer: %v\n%s", version, err, q)
				return nil
			}
			if err := cols.each(block.Rows, it, ew.Write); err != nil {
				c.t.Errorf("the export's decoders on %s's Native answer: %v", version, err)
				return nil
			}
		}
		if err := ew.Flush(); err != nil {
			c.t.Error(err)
		}
		lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
		sort.Strings(lines) // rows equal in the ORDER BY keys may come in either order
		return lines
	}
	o, g := decode("18.16", old), decode("26", got)
	if !reflect.DeepEqual(o, g) {
		c.t.Errorf("the export's decoders read 26's blocks otherwise than 18.16's:\n%s\n-- 18.16:\n%s\n-- 26:\n%s", q,
			strings.Join(o, "\n"), strings.Join(g, "\n"))
	}
	n, _ := exportBlocksProven.LoadOrStore(c.db, new(atomic.Int64))
	n.(*atomic.Int64).Add(int64(len(g)))
}

// exportBlocksProven counts the rows compareExportBlocks decoded from 26,
// per database (the package's tests run in parallel).
var exportBlocksProven sync.Map // database -> *atomic.Int64

// ExportRowsProvenOn26 is how many rows of ClickHouse 26's export answers
// on database the export's decoders have read (and matched with 18.16's)
// so far.
func ExportRowsProvenOn26(database string) int64 {
	if n, ok := exportBlocksProven.Load(database); ok {
		return n.(*atomic.Int64).Load()
	}
	return 0
}

// httpQuery runs a query on 18.16's HTTP interface; the answer is TSV.
func httpQuery(ctx context.Context, url, text string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, "POST", url, strings.NewReader(text))
	if err != nil {
		return "", err
	}
	// The server closes a kept-alive connection after a few idle seconds;
	// a POST on one it just closed fails with EOF before reaching it. The
	// header marks the query replayable, so the transport sends it again
	// on a fresh connection (only reads come here).
	req.Header["Idempotency-Key"] = nil
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: %s", resp.Status, body)
	}
	return string(body), nil
}

// mirrorInsert inserts on 26 as VALUES the block 18.16 took: each row's
// values read back from the block's columns (their Row methods).
func (c *proofConn) mirrorInsert(query string, block chproto.Input, n int) {
	if n == 0 {
		return
	}
	wrote(c.db)
	defer wrote(c.db)
	var sb strings.Builder
	sb.WriteString(query + " VALUES ")
	marks := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(block)), ", ") + ")"
	row := make([]any, len(block))
	for r := range n {
		for i, col := range block {
			row[i] = reflect.ValueOf(col.Data).MethodByName("Row").Call([]reflect.Value{reflect.ValueOf(r)})[0].Interface()
		}
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString(c.bind(marks, row))
	}
	c.mirror(sb.String())
}

// compareTSV compares two TSVWithNamesAndTypes answers as multisets of
// rows, the rows after an empty line (WITH TOTALS) apart; it describes the
// first difference. Column names (expressions are named differently by the
// versions) and types are not compared; 18.16's types say which columns
// are t-digest estimates.
func compareTSV(old, got string) string {
	if got == "" || strings.HasPrefix(got, "\n") {
		// Without rows libchdb writes the totals first, and the header
		// after them (or nothing at all).
		o := strings.SplitN(old, "\n", 3)
		if i := strings.Index(got, "\n"+o[0]+"\n"); i >= 0 && got != "" {
			got = got[:i+1]
		}
		got = o[0] + "\n" + o[1] + "\n" + got
	}
	oh, old, _ := strings.Cut(old, "\n")
	gh, got, _ := strings.Cut(got, "\n")
	ot, old, _ := strings.Cut(old, "\n")
	_, got, _ = strings.Cut(got, "\n")
	if len(strings.Split(oh, "\t")) != len(strings.Split(gh, "\t")) {
		return fmt.Sprintf("columns %s, %s on 18.16", gh, oh)
	}
	types := strings.Split(ot, "\t")
	ob, gb := blocks(old), blocks(got)
	if len(ob) != len(gb) {
		return fmt.Sprintf("%d blocks, %d on 18.16", len(gb), len(ob))
	}
	for i := range ob {
		ol, gl := sortRows(ob[i], types), sortRows(gb[i], types)
		if len(ol) != len(gl) {
			return fmt.Sprintf("%d rows, %d on 18.16", len(gl), len(ol))
		}
		for j := range ol {
			of, gf := strings.Split(ol[j], "\t"), strings.Split(gl[j], "\t")
			if len(of) != len(gf) || len(of) != len(types) {
				return fmt.Sprintf("row %d: %d fields, %d on 18.16", j, len(gf), len(of))
			}
			for k := range of {
				if !compareField(types[k], of[k], gf[k]) {
					return fmt.Sprintf("row %d field %d (%s): %q, %q on 18.16", j, k, types[k], gf[k], of[k])
				}
			}
		}
	}
	return ""
}

// blocks splits TSV rows at empty lines: the rows, then the totals.
func blocks(data string) [][]string {
	out := [][]string{nil}
	for _, l := range strings.Split(strings.TrimRight(data, "\n"), "\n") {
		if l == "" {
			out = append(out, nil)
			continue
		}
		out[len(out)-1] = append(out[len(out)-1], l)
	}
	return out
}

// sortRows sorts a block's rows by their exact fields only (t-digest
// estimates may differ).
func sortRows(ls []string, types []string) []string {
	key := func(l string) string {
		f := strings.Split(l, "\t")
		for k := range f {
			if k < len(types) && isEstimate(types[k]) {
				f[k] = ""
			}
		}
		return strings.Join(f, "\t")
	}
	sort.SliceStable(ls, func(a, b int) bool { return key(ls[a]) < key(ls[b]) })
	return ls
}

// isEstimate: t-digest quantiles are Float32 (the store has no other
// Float32 column).
func isEstimate(typ string) bool { return strings.Contains(typ, "Float32") }

// compareField compares one field. Text must be equal, except for the
// zero Date and DateTime, which 18.16 renders 0000-00-00 and 26
// 1970-01-01 (the same stored 0; the driver reads both as the Unix
// epoch). Float64 numbers may differ by float formatting, within 1e-9
// relative. T-digest estimates (Float32) are estimates on both sides, with
// different implementations (26 answers centroid values, 18.16
// interpolates between them): the versions must agree on their presence
// (an empty sample reads nan on both, arrays have the same length) and
// their values must be finite, but not on the value: TestTDigestAccuracyOn26
// checks 26's estimates against the exact quantiles of the same fixture,
// with the rank accuracy the read tests demand of 18.16.
func compareField(typ, old, got string) bool {
	if old == got {
		return true
	}
	if strings.HasPrefix(old, "0000-00-00") && strings.Replace(old, "0000-00-00", "1970-01-01", 1) == got {
		return true
	}
	if strings.HasPrefix(old, "[") && strings.HasPrefix(got, "[") {
		oe := strings.Split(strings.Trim(old, "[]"), ",")
		ge := strings.Split(strings.Trim(got, "[]"), ",")
		if len(oe) != len(ge) {
			return false
		}
		for i := range oe {
			if !compareField(strings.TrimSuffix(strings.TrimPrefix(typ, "Array("), ")"), oe[i], ge[i]) {
				return false
			}
		}
		return true
	}
	o, err1 := strconv.ParseFloat(old, 64)
	g, err2 := strconv.ParseFloat(got, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if isEstimate(typ) {
		return math.IsNaN(o) == math.IsNaN(g) && !math.IsInf(g, 0)
	}
	return math.Abs(o-g) <= 1e-9*math.Max(math.Abs(o), math.Abs(g))
}

// QueryOn26 runs a query on ClickHouse 26 (TSV), once ProveOn26 is on.
func QueryOn26(q string) (string, error) {
	if proofSession == nil {
		return "", fmt.Errorf("the ClickHouse 26 proof is off")
	}
	defer wrote("")
	return proofSession.Query(q, "TSV")
}
