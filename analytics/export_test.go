package analytics

import (
	"bufio"
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// jsonString is encoding/json's rendering of s without HTML escaping.
func jsonString(s string) string {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain", "quote \" back \\ slash", "\n\r\t\x00\x1f", "\u2028\u2029", "bad \xff utf8", "搜索 🚀", "<&>"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(AppendJSONString(nil, s)), jsonString(s); got != want {
			t.Errorf("%q: got %s, encoding/json gives %s", s, got, want)
		}
	})
}

// TestExportWriterRoundTrip writes items with hostile strings in both
// formats and reads them back with the standard decoders.
func TestExportWriterRoundTrip(t *testing.T) {
	ts := time.Date(2026, 11, 20, 10, 0, 0, 120e6, time.UTC)
	items := []ExportedItem{
		{ID: "a", Timestamp: ts, ReceivedAt: ts.Add(time.Second), SessionID: "s,1", Method: "tools/call", Name: "x\"y",
			DurationMs: 0.25, HasDuration: true, Status: StatusError, ErrorType: "E", ErrorMessage: "line1\nline2, \"q\"",
			AttrKeys: []string{"k\"", "z"}, AttrValues: []string{"v\n", "=1+1"}},
		{Timestamp: ts, ReceivedAt: ts, SessionID: "s", Method: "ping", Status: StatusOK},
	}
	for _, format := range []string{ExportNDJSON, ExportCSV} {
		var b bytes.Buffer
		w := NewExportWriter(bufio.NewWriter(&b), format)
		for i := range items {
			if err := w.Write(&items[i]); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		var got []map[string]any
		if format == ExportNDJSON {
			for _, line := range strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n") {
				var m map[string]any
				if err := json.Unmarshal([]byte(line), &m); err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				got = append(got, m)
			}
		} else {
			recs, err := csv.NewReader(&b).ReadAll()
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(recs[0], ",") != strings.Join(ExportColumns, ",") {
				t.Fatalf("header %v", recs[0])
			}
			for _, r := range recs[1:] {
				m := map[string]any{}
				for i, c := range ExportColumns {
					if r[i] != "" {
						m[c] = r[i]
					}
				}
				if a, ok := m["attributes"].(string); ok {
					var attrs map[string]any
					if err := json.Unmarshal([]byte(a), &attrs); err != nil {
						t.Fatal(err)
					}
					m["attributes"] = attrs
				}
				got = append(got, m)
			}
		}
		first := got[0]
		attrs, _ := first["attributes"].(map[string]any)
		if first["error_message"] != items[0].ErrorMessage || first["name"] != `x"y` || first["session_id"] != "s,1" ||
			attrs["k\""] != "v\n" || attrs["z"] != "=1+1" || first["timestamp"] != "2026-11-20T10:00:00.120Z" {
			t.Errorf("%s: first item read back as %v", format, first)
		}
		if _, ok := got[1]["duration_ms"]; ok || got[1]["status"] != "ok" {
			t.Errorf("%s: second item read back as %v", format, got[1])
		}
	}
}

// FuzzExportCSVField checks that a CSV field is written exactly as
// encoding/csv writes it (the writer appends fields itself).
func FuzzExportCSVField(f *testing.F) {
	for _, s := range []string{"", "plain", `\.`, `\.x`, " lead", "\tlead", "\u00a0nbsp", "\u2003em", "\u0085nel", "a,b", `say "hi"`,
		"cr\rlf\n", "trail ", "bad \xff utf8", "\xffstart", "搜索", "=1+2", `""`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var want bytes.Buffer
		w := csv.NewWriter(&want)
		_ = w.Write([]string{s})
		w.Flush()
		if got := string(appendCSVField(nil, s)) + "\n"; got != want.String() {
			t.Errorf("%q: got %q, encoding/csv gives %q", s, got, want.String())
		}
	})
}

// TestExportTimesAsFormat checks the cached time formatting against
// time.Format over times sharing and changing seconds, in both slots.
func TestExportTimesAsFormat(t *testing.T) {
	e := NewExportWriter(bufio.NewWriter(&bytes.Buffer{}), ExportNDJSON)
	base := time.Date(2026, 11, 20, 23, 59, 58, 0, time.UTC)
	for i, d := range []time.Duration{0, 1, 999 * time.Millisecond, 1000 * time.Millisecond, 1500 * time.Millisecond, 1999999999, 2 * time.Second,
		-time.Second, 24 * time.Hour, 999*time.Millisecond + 999999, 2 * time.Hour, -70 * 365 * 24 * time.Hour, -60 * 365 * 24 * time.Hour} {
		ts := base.Add(d)
		for _, tt := range []time.Time{ts, ts.In(time.FixedZone("x", 3600))} {
			if got, want := string(e.appendTime(nil, i%2, tt)), tt.UTC().Format(exportTimeLayout); got != want {
				t.Errorf("%v: got %s, want %s", tt, got, want)
			}
		}
	}
}
