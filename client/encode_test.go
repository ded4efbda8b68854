package client

import (
	"encoding/json"
	"testing"

	"github.com/mcpscope/telemetry/analytics"
)

// FuzzAppendString checks the hand-written string encoder against
// encoding/json: every input, valid UTF-8 or not, must decode to what
// encoding/json's own encoding of it decodes to.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"\`, "\n\r\t\x00\x1f\x7f", "naïve 工具 🚀", "\xff\xfe", "a\xc3", "\u2028</script>&"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ours := appendString(nil, s)
		var got string
		if err := json.Unmarshal(ours, &got); err != nil {
			t.Fatalf("appendString(%q) = %s: not JSON: %v", s, ours, err)
		}
		ref, _ := json.Marshal(s)
		var want string
		if err := json.Unmarshal(ref, &want); err != nil {
			t.Fatal(err)
		}
		if got != want {
			t.Fatalf("appendString(%q) decodes to %q, encoding/json's to %q", s, got, want)
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
