package client

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/analytics"
)

// FuzzAppendString checks the strings of an ingest body: every input,
// valid UTF-8 or not, is written byte for byte as analytics.AppendJSONString
// writes it (which analytics' FuzzAppendJSONString holds to encoding/json's
// bytes: \b, \f, U+2028 and U+2029 included), and the body decodes, with
// encoding/json, to the item with encoding/json's own decoding of s.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\n\r\t\x00\x1f\x7f", "\b\f", "naïve 工具 🚀", "\xff\xfe", "a\xc3", "\u2028\u2029</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		it := analytics.Item{Timestamp: time.Unix(0, 0), SessionID: s, Method: "tools/call", ErrorMessage: s,
			Attributes: map[string]string{s: s}}
		body := appendBatch(nil, []analytics.Item{it})
		want := string(analytics.AppendJSONString(nil, s))
		fields := []string{`"attributes":{` + want + `:` + want + `}`}
		if s != "" { // empty optional fields are left out
			fields = append(fields, `"session_id":`+want+`,`, `"error_message":`+want+`,`)
		}
		for _, f := range fields {
			if !bytes.Contains(body, []byte(f)) {
				t.Fatalf("%q: AppendJSONString writes it %s, but the body %s lacks %s", s, want, body, f)
			}
		}
		var decoded struct {
			Items []struct {
				SessionID    string            `json:"session_id"`
				ErrorMessage string            `json:"error_message"`
				Attributes   map[string]string `json:"attributes"`
			} `json:"items"`
		}
		if err := json.Unmarshal(body, &decoded); err != nil {
			t.Fatalf("%q: the body %s is not JSON: %v", s, body, err)
		}
		var ref string
		if err := json.Unmarshal([]byte(want), &ref); err != nil {
			t.Fatal(err)
		}
		if len(decoded.Items) != 1 || decoded.Items[0].SessionID != ref || decoded.Items[0].ErrorMessage != ref || decoded.Items[0].Attributes[ref] != ref {
			t.Fatalf("%q: the body decodes to %+v, want %q everywhere", s, decoded.Items, ref)
		}
	})
}

func BenchmarkAppendBatch(b *testing.B) {
	items := make([]analytics.Item, 500)
	for i := range items {
		items[i] = item(i)
		items[i].ID = NewID()
	}
	b.Run("appendBatch", func(b *testing.B) {
		var buf []byte
		for b.Loop() {
			buf = appendBatch(buf[:0], items)
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(struct {
				Items []analytics.Item `json:"items"`
			}{items})
		}
	})
}

// Every field of an item survives the hand-written encoder: decoded with
// encoding/json, the body gives the item back (the failure fields
// error_kind, response_bytes and args_hash included).
func TestAppendItemRoundTrip(t *testing.T) {
	ms, n := 12.5, int64(102547)
	it := analytics.Item{ID: "i-1", Timestamp: time.Date(2026, 11, 27, 10, 0, 0, 123, time.UTC), SessionID: "s", Method: "tools/call",
		Name: "get_forecast", DurationMs: &ms, Status: "error", ErrorType: "-32602", ErrorMessage: "m", ClientName: "c", ClientVersion: "1",
		ServerVersion: "2", ProtocolVersion: "2025-11-25", UserID: "u", Attributes: map[string]string{"k": "v"},
		ErrorKind: "invalid_params", ResponseBytes: &n, ArgsHash: "0123456789abcdef0123456789abcdef"}
	var got struct{ Items []analytics.Item }
	if err := json.Unmarshal(appendBatch(nil, []analytics.Item{it}), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Items) != 1 {
		t.Fatalf("%+v", got)
	}
	a, _ := json.Marshal(got.Items[0])
	b, _ := json.Marshal(it)
	if !bytes.Equal(a, b) {
		t.Errorf("round trip\n got %s\nwant %s", a, b)
	}
}
