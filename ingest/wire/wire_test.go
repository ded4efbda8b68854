package wire

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

var testNow = time.Date(2026, 11, 20, 12, 0, 0, 0, time.UTC)

// valid is an item that passes every rule; each case below breaks or
// bends one.
func valid() map[string]any {
	return map[string]any{"timestamp": "2026-11-20T10:00:00.120Z", "session_id": "s-81", "method": "tools/call", "name": "search_docs"}
}

func with(kv ...any) map[string]any {
	m := valid()
	for i := 0; i+1 < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(m, kv[i].(string))
		} else {
			m[kv[i].(string)] = kv[i+1]
		}
	}
	return m
}

func TestItemFieldRules(t *testing.T) {
	long := func(n int) string { return strings.Repeat("é", n) } // runes, not bytes
	attrs := func(n int) map[string]string {
		m := map[string]string{}
		for i := 0; i < n; i++ {
			m[string(rune('a'+i%26))+strings.Repeat("x", i)] = "v"
		}
		return m
	}
	cases := []struct {
		name string
		item any
		ok   bool
	}{
		{"valid", valid(), true},
		{"timestamp missing", with("timestamp", nil), false},
		{"timestamp not RFC 3339", with("timestamp", "20 Nov 2026"), false},
		{"timestamp a number", with("timestamp", 1763630000), false},
		{"timestamp with offset", with("timestamp", "2026-11-20T11:00:00+01:00"), true},
		{"timestamp 30 days old", with("timestamp", testNow.Add(-30*24*time.Hour+time.Second).Format(time.RFC3339)), true},
		{"timestamp older than 30 days", with("timestamp", testNow.Add(-30*24*time.Hour-time.Second).Format(time.RFC3339)), false},
		{"timestamp 10 minutes ahead", with("timestamp", testNow.Add(10*time.Minute).Format(time.RFC3339)), true},
		{"timestamp further ahead", with("timestamp", testNow.Add(10*time.Minute+time.Second).Format(time.RFC3339)), false},
		{"session_id missing (the service derives one)", with("session_id", nil), true},
		{"session_id empty (the service derives one)", with("session_id", ""), true},
		{"session_id 128", with("session_id", long(128)), true},
		{"session_id 129", with("session_id", long(129)), false},
		{"method missing", with("method", nil), false},
		{"method 64", with("method", long(64)), true},
		{"method 65", with("method", long(65)), false},
		{"tools/call without name", with("name", nil), false},
		{"other method without name", with("method", "initialize", "name", nil), true},
		{"name 256", with("name", long(256)), true},
		{"name 257", with("name", long(257)), false},
		{"duration 0", with("duration_ms", 0), true},
		{"duration max", with("duration_ms", 86400000), true},
		{"duration negative", with("duration_ms", -1), false},
		{"duration too long", with("duration_ms", 86400000.5), false},
		{"duration a string", with("duration_ms", "5"), false},
		{"duration null is absent", with("duration_ms", nil), true},
		{"status ok", with("status", "ok"), true},
		{"status error", with("status", "error"), true},
		{"status other", with("status", "failed"), false},
		{"error_type makes an error", with("error_type", "Timeout"), true},
		{"long error message is cut, not refused", with("error_message", long(5000)), true},
		{"id 64", with("id", strings.Repeat("a", 64)), true},
		{"id 65", with("id", strings.Repeat("a", 65)), false},
		{"id a number", with("id", 5), false},
		{"client_name 128", with("client_name", long(128)), true},
		{"client_name 129", with("client_name", long(129)), false},
		{"client_version 129", with("client_version", long(129)), false},
		{"server_version 129", with("server_version", long(129)), false},
		{"user_id 129", with("user_id", long(129)), false},
		{"attributes 32", with("attributes", attrs(32)), true},
		{"attributes 33", with("attributes", attrs(33)), false},
		{"attributes not strings", with("attributes", map[string]any{"a": 1}), false},
		{"unknown fields ignored", with("future", map[string]any{"x": 1}), true},
		{"not an object", "item", false},
		{"null", nil, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			body, _ := json.Marshal(map[string]any{"items": []any{tc.item, valid()}})
			b, err := ParseBatch(body, testNow)
			if err != nil {
				t.Fatal(err)
			}
			wantAccepted, wantDropped := 1, 1
			if tc.ok {
				wantAccepted, wantDropped = 2, 0
			}
			if len(b.Items) != wantAccepted || b.Dropped != wantDropped {
				t.Fatalf("accepted %d dropped %d, want %d and %d (the valid neighbour is always kept)", len(b.Items), b.Dropped, wantAccepted, wantDropped)
			}
		})
	}
}

func TestItemNormalisation(t *testing.T) {
	body, _ := json.Marshal(map[string]any{"items": []any{
		with("error_type", "Timeout", "error_message", strings.Repeat("ü", 2000), "timestamp", "2026-11-20T11:00:00.5+01:00"),
		with("name", "  a/b 🚀  "),
	}})
	b, err := ParseBatch(body, testNow)
	if err != nil || len(b.Items) != 2 {
		t.Fatal(b, err)
	}
	it := b.Items[0]
	// The message is kept whole: it is cut after redaction (analytics.Item.CutText).
	if it.Status != analytics.StatusError || len([]rune(it.ErrorMessage)) != 2000 || it.Timestamp != time.Date(2026, 11, 20, 10, 0, 0, 5e8, time.UTC) {
		t.Errorf("normalised item: %+v", it)
	}
	if b.Items[1].Name != "  a/b 🚀  " || b.Items[1].Status != analytics.StatusOK {
		t.Errorf("strings are kept exactly as sent: %q", b.Items[1].Name)
	}
}

func TestBatchRefusals(t *testing.T) {
	many := make([]any, analytics.MaxBatchItems+1)
	for i := range many {
		many[i] = valid()
	}
	tooMany, _ := json.Marshal(map[string]any{"items": many})
	cases := []struct {
		name, body, code string
	}{
		{"not json", `{"items": [`, telemetry.EBADREQUEST},
		{"not an object", `[1,2]`, telemetry.EBADREQUEST},
		{"no items", `{"events": []}`, telemetry.EBADREQUEST},
		{"items not an array", `{"items": {}}`, telemetry.EBADREQUEST},
		{"items null", `{"items": null}`, telemetry.EBADREQUEST},
		{"too many items", string(tooMany), telemetry.ETOOMANYITEMS},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseBatch([]byte(tc.body), testNow)
			if telemetry.ErrorCode(err) != tc.code {
				t.Fatalf("got %v, want code %s", err, tc.code)
			}
		})
	}
	if b, err := ParseBatch([]byte(`{"items": []}`), testNow); err != nil || len(b.Items) != 0 {
		t.Fatalf("an empty batch is a batch: %v", err)
	}
}

// FuzzParseBatch checks that the decoder never panics, that everything it
// accepts satisfies the rules, and that the one-pass fast path agrees with
// the item-by-item reference decoder.
func FuzzParseBatch(f *testing.F) {
	seed, _ := json.Marshal(map[string]any{"items": []any{valid(), with("duration_ms", "x"), 5, nil}})
	f.Add(seed)
	f.Add([]byte(`{"items":[{"timestamp":"2026-11-20T10:00:00Z","session_id":"s","method":"ping","attributes":{"a":"b"}}]}`))
	f.Add([]byte(`{"items":[{"timestamp":"2026-11-20T10:00:00Z","session_id":"\ud800","method":"ping"}]}`))
	f.Add([]byte(`{"items":[]}`))
	f.Add([]byte(`{"ITEMS":[{"Timestamp":"2026-11-20T10:00:00Z","SESSION_ID":"s","Method":"ping"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := ParseBatch(body, testNow)
		ref, refErr := parseBatchSlow(body, testNow)
		if (err == nil) != (refErr == nil) {
			t.Fatalf("fast path error %v, reference %v", err, refErr)
		}
		if err != nil {
			return
		}
		if b.Dropped != ref.Dropped || !reflect.DeepEqual(b.Items, ref.Items) {
			t.Fatalf("fast path %+v differs from reference %+v", b, ref)
		}
		for _, it := range b.Items {
			if !it.Validate(testNow) {
				t.Fatalf("accepted an invalid item %+v", it)
			}
		}
	})
}

// TestParseBatchReusesNothing: the fast path decodes into slices kept
// between requests; no field of one request's items may show in the next
// one's.
func TestParseBatchReusesNothing(t *testing.T) {
	full, _ := json.Marshal(map[string]any{"items": []any{with("id", "a-1", "user_id", "u-1", "error_type", "Timeout",
		"client_name", "c", "duration_ms", 5, "attributes", map[string]string{"k": "v"})}})
	bare, _ := json.Marshal(map[string]any{"items": []any{valid()}})
	for range 20 {
		if b, err := ParseBatch(full, testNow); err != nil || len(b.Items) != 1 || b.Items[0].UserID != "u-1" {
			t.Fatalf("full item: %+v %v", b, err)
		}
		b, err := ParseBatch(bare, testNow)
		if err != nil || len(b.Items) != 1 {
			t.Fatalf("bare item: %+v %v", b, err)
		}
		if it := b.Items[0]; it.ID != "" || it.UserID != "" || it.ErrorType != "" || it.ClientName != "" || it.DurationMs != nil || it.Attributes != nil || it.Status != analytics.StatusOK {
			t.Fatalf("a field of the previous request leaked into %+v", it)
		}
	}
}
