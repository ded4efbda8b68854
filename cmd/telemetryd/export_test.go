package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"testing"
	"time"

	ch "github.com/ClickHouse/clickhouse-go/v2"

	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/testkit/chtest"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// getRaw fetches a path with a session token and returns the response with
// its body read.
func getRaw(t *testing.T, base, path, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("GET %s: reading the body: %v", path, err)
	}
	return res, string(b)
}

// TestExportKnownSetByteForByte stores a known set of items (fixed
// received_at, so the output is known to the byte) and exports it in both
// formats: only the MCP's items of the range, oldest first, every field.
func TestExportKnownSetByteForByte(t *testing.T) {
	t.Parallel()
	m, base := startMain(t, testConfig(t, testenv.ClickHouseAddr(t)))
	a := api{t, base}
	token, mcp, _ := a.newTenant("exp")
	_, other, _ := a.newTenant("other")
	account := a.must(200, "GET", "/v1/account", token, nil)["id"].(string)

	day := time.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, -3)
	at := func(d int, h, mi, s, ms int) time.Time {
		return day.AddDate(0, 0, d).Add(time.Duration(h)*time.Hour + time.Duration(mi)*time.Minute +
			time.Duration(s)*time.Second + time.Duration(ms)*time.Millisecond)
	}
	f := func(v float64) *float64 { return &v }
	size := int64(2048)
	rows := []analytics.StoredRow{
		// Inserted out of order: the export sorts.
		{AccountID: account, MCPID: mcp, ReceivedAt: at(1, 0, 0, 1, 0), Item: analytics.Item{ID: "b2", Timestamp: at(1, 0, 0, 0, 5),
			SessionID: "s-2", Method: "initialize", Status: "ok", ClientName: "cursor", ClientVersion: "2.0"}},
		{AccountID: account, MCPID: mcp, ReceivedAt: at(0, 10, 0, 1, 0), Item: analytics.Item{ID: "a1", Timestamp: at(0, 10, 0, 0, 120),
			SessionID: "s-81", Method: "tools/call", Name: "search_docs", DurationMs: f(182.5), Status: "error",
			ErrorType: "TimeoutError", ErrorMessage: "upstream \"timed\" out, again\nline 2", ClientName: "claude-desktop",
			ClientVersion: "0.9.1", ServerVersion: "1.4.0", ProtocolVersion: "2025-06-18", UserID: "u-42", Attributes: map[string]string{"region": "eu", "a": "x,y"},
			ErrorKind: "timeout", ResponseBytes: &size, ArgsHash: "k1.4f2a"}},
		{AccountID: account, MCPID: mcp, ReceivedAt: at(0, 10, 0, 2, 0), Item: analytics.Item{ID: "a0", Timestamp: at(0, 10, 0, 0, 120),
			SessionID: "s-81", Method: "tools/call", Name: "搜索/docs 🚀", DurationMs: f(0), Status: "ok"}},
		// Outside the range, and another MCP's: not exported.
		{AccountID: account, MCPID: mcp, ReceivedAt: at(-1, 0, 0, 0, 0), Item: analytics.Item{ID: "old", Timestamp: at(-1, 23, 59, 59, 999),
			SessionID: "s-0", Method: "ping", Status: "ok"}},
		{AccountID: "x", MCPID: other, ReceivedAt: at(0, 11, 0, 0, 0), Item: analytics.Item{ID: "o1", Timestamp: at(0, 11, 0, 0, 0),
			SessionID: "s-9", Method: "ping", Status: "ok"}},
	}
	if err := m.CH.InsertRows(context.Background(), rows); err != nil {
		t.Fatal(err)
	}
	d0, d1 := day.Format("2006-01-02"), day.AddDate(0, 0, 1).Format("2006-01-02")
	ts := func(tm time.Time) string { return tm.Format("2006-01-02T15:04:05.000Z") }
	path := "/v1/mcps/" + mcp + "/export?from=" + d0 + "&to=" + d1

	wantNDJSON := `{"id":"a0","timestamp":"` + ts(at(0, 10, 0, 0, 120)) + `","received_at":"` + ts(at(0, 10, 0, 2, 0)) +
		`","session_id":"s-81","method":"tools/call","name":"搜索/docs 🚀","duration_ms":0,"status":"ok"}` + "\n" +
		`{"id":"a1","timestamp":"` + ts(at(0, 10, 0, 0, 120)) + `","received_at":"` + ts(at(0, 10, 0, 1, 0)) +
		`","session_id":"s-81","method":"tools/call","name":"search_docs","duration_ms":182.5,"status":"error","error_type":"TimeoutError",` +
		`"error_message":"upstream \"timed\" out, again\nline 2","client_name":"claude-desktop","client_version":"0.9.1","server_version":"1.4.0",` +
		`"user_id":"u-42","attributes":{"a":"x,y","region":"eu"},"protocol_version":"2025-06-18","error_kind":"timeout","response_bytes":2048,"args_hash":"k1.4f2a"}` + "\n" +
		`{"id":"b2","timestamp":"` + ts(at(1, 0, 0, 0, 5)) + `","received_at":"` + ts(at(1, 0, 0, 1, 0)) +
		`","session_id":"s-2","method":"initialize","status":"ok","client_name":"cursor","client_version":"2.0"}` + "\n"
	for _, p := range []string{path, path + "&format=ndjson"} {
		res, body := getRaw(t, base, p, token)
		if res.StatusCode != 200 || body != wantNDJSON {
			t.Fatalf("ndjson: status %d\n got: %q\nwant: %q", res.StatusCode, body, wantNDJSON)
		}
		if ct, cd := res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"); ct != "application/x-ndjson" ||
			cd != `attachment; filename="`+mcp+"_"+d0+"_"+d1+`.ndjson"` {
			t.Errorf("ndjson headers: %q, %q", ct, cd)
		}
	}

	wantCSV := "id,timestamp,received_at,session_id,method,name,duration_ms,status,error_type,error_message,client_name,client_version,server_version,user_id,attributes,protocol_version,error_kind,response_bytes,args_hash\n" +
		"a0," + ts(at(0, 10, 0, 0, 120)) + "," + ts(at(0, 10, 0, 2, 0)) + ",s-81,tools/call,搜索/docs 🚀,0,ok,,,,,,,,,,,\n" +
		"a1," + ts(at(0, 10, 0, 0, 120)) + "," + ts(at(0, 10, 0, 1, 0)) + ",s-81,tools/call,search_docs,182.5,error,TimeoutError," +
		"\"upstream \"\"timed\"\" out, again\nline 2\",claude-desktop,0.9.1,1.4.0,u-42,\"{\"\"a\"\":\"\"x,y\"\",\"\"region\"\":\"\"eu\"\"}\",2025-06-18,timeout,2048,k1.4f2a\n" +
		"b2," + ts(at(1, 0, 0, 0, 5)) + "," + ts(at(1, 0, 0, 1, 0)) + ",s-2,initialize,,,ok,,,cursor,2.0,,,,,,,\n"
	res, body := getRaw(t, base, path+"&format=csv", token)
	if res.StatusCode != 200 || body != wantCSV {
		t.Fatalf("csv: status %d\n got: %q\nwant: %q", res.StatusCode, body, wantCSV)
	}
	if ct, cd := res.Header.Get("Content-Type"), res.Header.Get("Content-Disposition"); ct != "text/csv; charset=utf-8" ||
		cd != `attachment; filename="`+mcp+"_"+d0+"_"+d1+`.csv"` {
		t.Errorf("csv headers: %q, %q", ct, cd)
	}

	// An empty range: the header alone, or nothing.
	empty := "/v1/mcps/" + mcp + "/export?from=2020-01-01&to=2020-01-02"
	if res, body := getRaw(t, base, empty+"&format=csv", token); res.StatusCode != 200 || body != strings.SplitAfter(wantCSV, "\n")[0] {
		t.Errorf("empty csv: %d %q", res.StatusCode, body)
	}
	if res, body := getRaw(t, base, empty, token); res.StatusCode != 200 || body != "" {
		t.Errorf("empty ndjson: %d %q", res.StatusCode, body)
	}

	// The usual rules: bad format, bad range, another account's MCP.
	for _, c := range []struct {
		path   string
		status int
		code   string
	}{
		{path + "&format=xml", 422, "invalid"},
		{"/v1/mcps/" + mcp + "/export?from=2026-13-01", 400, "invalid_date"},
		{"/v1/mcps/" + mcp + "/export?from=2026-02-01&to=2026-01-01", 422, "invalid_range"},
		{"/v1/mcps/" + mcp + "/export?from=2020-01-01&to=2026-01-01", 422, "range_too_large"},
		{"/v1/mcps/" + other + "/export", 404, "not_found"},
	} {
		status, got := a.do("GET", c.path, token, nil)
		if status != c.status || got["code"] != c.code {
			t.Errorf("%s: %d %v, want %d %s", c.path, status, got, c.status, c.code)
		}
	}
}

// TestExportCancelled starts a big export, reads a little, hangs up, and
// checks that the ClickHouse query is gone soon after; then the account's
// per-minute limit answers 429 with Retry-After.
func TestExportCancelled(t *testing.T) {
	t.Parallel()
	cfg := testConfig(t, testenv.ClickHouseAddr(t))
	cfg.Export.PerMinute = 3
	m, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, _ := a.newTenant("cancel")
	ctx := context.Background()
	if err := chtest.SeedHistory(ctx, m.CH, chtest.SeedOptions{Events: 600_000, Days: 2, MCPs: 1, MCPIDs: []string{mcp}}); err != nil {
		t.Fatal(err)
	}
	conn, err := ch.Open(&ch.Options{Addr: cfg.ClickHouse.Addr})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	running := func() int {
		var n uint64
		if err := conn.QueryRow(ctx, "SELECT count() FROM system.processes WHERE query_id LIKE 'export-%'").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return int(n)
	}
	rctx, cancel := context.WithCancel(ctx)
	req, _ := http.NewRequestWithContext(rctx, "GET", base+"/v1/mcps/"+mcp+"/export?format=csv", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if res.StatusCode != 200 {
		t.Fatalf("status %d", res.StatusCode)
	}
	br := bufio.NewReader(res.Body)
	for i := 0; i < 10; i++ {
		if _, err := br.ReadString('\n'); err != nil {
			t.Fatal(err)
		}
	}
	// The client does not read on: the service blocks on writing, and the
	// query stays open on the server.
	eventually(t, 10*time.Second, func() error {
		if running() == 0 {
			return errString("no export query is running")
		}
		return nil
	})
	cancel()
	res.Body.Close()
	eventually(t, 10*time.Second, func() error {
		if n := running(); n != 0 {
			return errString("the export query still runs after the client left")
		}
		return nil
	})
	// Two more started this minute are admitted; the fourth is not.
	for i := 0; i < 2; i++ {
		if res, _ := getRaw(t, base, "/v1/mcps/"+mcp+"/export?from=2020-01-01&to=2020-01-01", token); res.StatusCode != 200 {
			t.Fatalf("export %d: %d", i+2, res.StatusCode)
		}
	}
	res, body := getRaw(t, base, "/v1/mcps/"+mcp+"/export?from=2020-01-01&to=2020-01-01", token)
	if res.StatusCode != 429 || res.Header.Get("Retry-After") == "" || !strings.Contains(body, `"rate_limited"`) {
		t.Fatalf("fourth export: %d %q %s", res.StatusCode, res.Header.Get("Retry-After"), body)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestExportDeadlineMidBlockReleases lets the export's deadline end while
// the service is still writing a block to a client that reads on: the
// export must give up its slot, goroutines and connections, so the
// account (one export at a time here) exports again at once, several
// times, and the service's goroutines come back to where they were. A
// second account meanwhile meets the instance's total ceiling: 503 with
// Retry-After, not the first account's 429.
func TestExportDeadlineMidBlockReleases(t *testing.T) {
	// Not parallel, and on a ClickHouse of its own: its export must start
	// within a 2 s deadline, which a test server busy with the other
	// packages' tests (go test -p 4) does not always give.
	cfg := ownServerConfig(t, testenv.OwnClickHouse(t).Addr)
	cfg.Server.DeadlineExport = 2 * time.Second
	cfg.Export.Concurrent, cfg.Export.MaxConcurrentTotal, cfg.Export.PerMinute = 1, 1, 100
	m, base := startMain(t, cfg)
	a := api{t, base}
	token, mcp, _ := a.newTenant("deadline")
	token2, mcp2, _ := a.newTenant("other")
	ctx := context.Background()
	if err := chtest.SeedHistory(ctx, m.CH, chtest.SeedOptions{Events: 300_000, Days: 1, MCPs: 1, MCPIDs: []string{mcp}}); err != nil {
		t.Fatal(err)
	}
	// The timeout ends a read that an export stuck in the service would
	// hold forever.
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 20 * time.Second}
	get := func(ctx context.Context, token, path string) *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	small := "/v1/mcps/" + mcp2 + "/export?from=2020-01-01&to=2020-01-01"
	if res := get(ctx, token2, small); res.StatusCode != 200 {
		t.Fatalf("warm-up export: %d", res.StatusCode)
	} else {
		res.Body.Close()
	}
	baseline := runtime.NumGoroutine()

	for i := 0; i < 3; i++ {
		// The client may see the cut stream a moment before the service
		// has unwound the export: the slot must come back soon, not never.
		// (On a busy machine the export's plan query may itself outlast
		// the short deadline: a 503 then, which a retry gets past.)
		var res *http.Response
		eventually(t, 30*time.Second, func() error {
			if res = get(ctx, token, "/v1/mcps/"+mcp+"/export?format=csv"); res.StatusCode != 200 {
				body, _ := io.ReadAll(res.Body)
				res.Body.Close()
				return fmt.Errorf("export %d: status %d %s", i, res.StatusCode, body)
			}
			return nil
		})
		if i == 0 {
			// While it runs, the other account meets the total ceiling.
			other := get(ctx, token2, small)
			body, _ := io.ReadAll(other.Body)
			other.Body.Close()
			if other.StatusCode != 503 || other.Header.Get("Retry-After") == "" || !strings.Contains(string(body), "as many exports") {
				t.Fatalf("an export beyond the total: %d %q %s", other.StatusCode, other.Header.Get("Retry-After"), body)
			}
		}
		// Read on at a few MiB/s: the deadline (2 s) ends mid-stream, with
		// the service between two writes of a block.
		buf := make([]byte, 128<<10)
		var n int
		var err error
		for err == nil {
			var k int
			k, err = res.Body.Read(buf)
			n += k
			time.Sleep(20 * time.Millisecond)
		}
		res.Body.Close()
		if err == io.EOF {
			t.Fatalf("export %d was complete (%d bytes) within its 2s deadline; seed more", i, n)
		}
	}
	eventually(t, 10*time.Second, func() error {
		res := get(ctx, token2, small)
		res.Body.Close()
		if res.StatusCode != 200 {
			return fmt.Errorf("after the cut exports, another account's export: %d", res.StatusCode)
		}
		return nil
	})
	eventually(t, 10*time.Second, func() error {
		if n := runtime.NumGoroutine(); n > baseline+2 {
			return fmt.Errorf("%d goroutines, %d before the exports", n, baseline)
		}
		return nil
	})
}
