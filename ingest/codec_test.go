package ingest

import (
	"encoding/hex"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

func sampleRecord() Record {
	d := 182.5
	zero := 0.0
	size, empty := int64(102_400), int64(0)
	ts := time.Date(2026, 11, 20, 10, 0, 0, 120_000_000, time.UTC)
	return Record{
		AccountID: "acc_1", MCPID: "mcp_1", ReceivedAt: ts.Add(time.Second),
		Items: []analytics.Item{
			{ID: "6f1c", Timestamp: ts, SessionID: "s-81", Method: "tools/call", Name: "search_docs", DurationMs: &d,
				Status: "error", ErrorType: "TimeoutError", ErrorMessage: "upstream timed out", ClientName: "claude-desktop",
				ClientVersion: "0.9.1", ServerVersion: "1.4.0", ProtocolVersion: "2025-06-18", UserID: "u-42", Attributes: map[string]string{"region": "eu", "é": "🚀"}},
			{Timestamp: ts, SessionID: "s", Method: "initialize", Status: "ok"},
			{Timestamp: ts, SessionID: "s", Method: "tools/call", Name: "搜索/docs", Status: "ok", DurationMs: &zero,
				ResponseBytes: &size, ArgsHash: "k1.Zm9v"},
			{Timestamp: ts, SessionID: "s", Method: "tools/call", Name: "get_forcast", Status: "error",
				ErrorKind: analytics.ErrorKindUnknownTool, ResponseBytes: &empty},
		},
	}
}

func TestCodecRoundTrip(t *testing.T) {
	r := sampleRecord()
	got, err := DecodeRecord(r.Encode(nil))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", got, r)
	}
}

// A version 1 record, written by the build before items had a
// protocol_version (these bytes are its Encode output), still decodes: a log
// left by an older build replays after an upgrade.
func TestCodecReadsVersion1(t *testing.T) {
	const v1 = "01056163635f31056d63705f3180e0f8e9eda0dce93101043666316380b8a2b0e6a0dce93104732d38310a746f6f6c732f63616c6c0b" +
		"7365617263685f646f6373030000000000d066400c54696d656f75744572726f7212757073747265616d2074696d6564206f75740e636c" +
		"617564652d6465736b746f7005302e392e3105312e342e3004752d34320106726567696f6e026575"
	b, err := hex.DecodeString(v1)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRecord()
	want.Items = want.Items[:1]
	want.Items[0].ProtocolVersion = ""
	want.Items[0].Attributes = map[string]string{"region": "eu"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 1 record:\n got %+v\nwant %+v", got, want)
	}
}

// A version 2 record, written by the build before items had error_kind,
// response_bytes and args_hash (these bytes are its Encode output), still
// decodes.
func TestCodecReadsVersion2(t *testing.T) {
	const v2 = "02056163635f31056d63705f3180e0f8e9eda0dce93101043666316380b8a2b0e6a0dce93104732d38310a746f6f6c732f63616c6c0b" +
		"7365617263685f646f6373030000000000d066400c54696d656f75744572726f7212757073747265616d2074696d6564206f75740e636c" +
		"617564652d6465736b746f7005302e392e3105312e342e300a323032352d30362d313804752d34320106726567696f6e026575"
	b, err := hex.DecodeString(v2)
	if err != nil {
		t.Fatal(err)
	}
	got, err := DecodeRecord(b)
	if err != nil {
		t.Fatal(err)
	}
	want := sampleRecord()
	want.Items = want.Items[:1]
	want.Items[0].Attributes = map[string]string{"region": "eu"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("version 2 record:\n got %+v\nwant %+v", got, want)
	}
}

func TestCodecRejectsTruncation(t *testing.T) {
	b := sampleRecord().Encode(nil)
	for n := 0; n < len(b); n++ {
		if _, err := DecodeRecord(b[:n]); err == nil {
			t.Fatalf("truncated record of %d/%d bytes decoded", n, len(b))
		}
	}
	if _, err := DecodeRecord(append(b, 0)); err == nil {
		t.Fatal("trailing garbage accepted")
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(sampleRecord().Encode(nil))
	f.Add([]byte{1, 0, 0, 0, 0})
	f.Add([]byte{1, 0, 0, 0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := DecodeRecord(b)
		if err != nil {
			return
		}
		// Whatever decodes must encode back to a record that decodes equal.
		again, err := DecodeRecord(r.Encode(nil))
		if err != nil || !reflect.DeepEqual(again, r) {
			t.Fatalf("re-encode mismatch: %v", err)
		}
	})
}

func TestDedup(t *testing.T) {
	d := NewDedup(24 * time.Hour)
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	if !d.Reserve("m1", "a", now) || d.Reserve("m1", "a", now.Add(time.Hour)) {
		t.Fatal("second reserve within the window must fail")
	}
	if !d.Reserve("m2", "a", now) {
		t.Fatal("the same id on another MCP is not a duplicate")
	}
	if !d.Reserve("m1", "a", now.Add(25*time.Hour)) {
		t.Fatal("an id older than the window is no longer a duplicate")
	}
	d.Release("m2", "a")
	if !d.Reserve("m2", "a", now) {
		t.Fatal("a released id must be accepted again")
	}
	if n := d.Sweep(now.Add(49 * time.Hour)); n != 0 {
		t.Fatalf("sweep left %d", n)
	}
}

func TestRateLimiter(t *testing.T) {
	r := NewRateLimiter(3)
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 3; i++ {
		if ok, _ := r.Allow("k", now); !ok {
			t.Fatalf("payload %d refused", i)
		}
	}
	ok, wait := r.Allow("k", now)
	if ok || wait != 20*time.Second {
		t.Fatalf("fourth payload: ok=%v wait=%v, want refused with 20s", ok, wait)
	}
	if ok, _ := r.Allow("other", now); !ok {
		t.Fatal("limits are per key")
	}
	if ok, _ := r.Allow("k", now.Add(20*time.Second)); !ok {
		t.Fatal("a token is back after 20s")
	}
}

func TestDedupGrowsAndSweeps(t *testing.T) {
	d := NewDedup(24 * time.Hour)
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	const n = 200_000
	for i := 0; i < n; i++ {
		if !d.Reserve("m", strconv.Itoa(i), now) {
			t.Fatalf("fresh id %d refused", i)
		}
	}
	for i := 0; i < n; i += 7 {
		if d.Reserve("m", strconv.Itoa(i), now.Add(time.Hour)) {
			t.Fatalf("duplicate %d accepted after growth", i)
		}
	}
	for i := 0; i < n; i += 2 {
		d.Release("m", strconv.Itoa(i))
	}
	for i := 0; i < n; i += 2 {
		if !d.Reserve("m", strconv.Itoa(i), now.Add(2*time.Hour)) {
			t.Fatalf("released id %d refused", i)
		}
	}
	// A day after the first batch, only the re-reserved half is still known.
	if got := d.Sweep(now.Add(24*time.Hour + time.Minute)); got != n/2 {
		t.Fatalf("after the sweep %d ids, want %d", got, n/2)
	}
	if d.Reserve("m", "0", now.Add(24*time.Hour+2*time.Minute)) || !d.Reserve("m", "1", now.Add(24*time.Hour+2*time.Minute)) {
		t.Fatal("the sweep kept or dropped the wrong ids")
	}
}

// A record keeps which of its items were accepted unverified, and a
// record without any (an older build's) decodes with none.
func TestRecordUnverified(t *testing.T) {
	now := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	its := make([]analytics.Item, 5)
	for i := range its {
		its[i] = analytics.Item{ID: strconv.Itoa(i), Timestamp: now, Method: "tools/call", Status: analytics.StatusOK}
	}
	for _, want := range [][]int{nil, {0}, {1, 4}, {0, 1, 2, 3, 4}} {
		r, err := DecodeRecord(Record{AccountID: "a", MCPID: "m", ReceivedAt: now, Items: its, Unverified: want}.Encode(nil))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(r.Unverified, want) || len(r.Items) != 5 || r.Items[4].ID != "4" {
			t.Fatalf("unverified %v decoded as %v", want, r.Unverified)
		}
	}
}
