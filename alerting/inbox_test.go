package alerting

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
)

func TestInboxReadValidate(t *testing.T) {
	tests := []struct {
		name  string
		body  string
		field string
	}{
		{"ids", `{"ids": ["a", "b"]}`, ""},
		{"all", `{"all": true}`, ""},
		{"empty ids mark nothing", `{"ids": []}`, ""},
		{"ids with all false", `{"ids": ["a"], "all": false}`, ""},
		{"both", `{"ids": ["a"], "all": true}`, "body"},
		{"empty ids and all", `{"ids": [], "all": true}`, "body"},
		{"neither", `{}`, "body"},
		{"all false", `{"all": false}`, "body"},
		{"ids null", `{"ids": null}`, "body"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r InboxRead
			if err := json.Unmarshal([]byte(tt.body), &r); err != nil {
				t.Fatal(err)
			}
			wantField(t, r.Validate(), tt.field)
		})
	}
	wantField(t, InboxRead{IDs: make([]string, MaxInboxReadIDs+1)}.Validate(), "body.ids")
}

func TestInboxFilterValidate(t *testing.T) {
	tests := []struct {
		limit, want int
		field       string
	}{
		{0, DefaultPageLimit, ""}, {1, 1, ""}, {MaxPageLimit, MaxPageLimit, ""},
		{-1, 0, "query.limit"}, {MaxPageLimit + 1, 0, "query.limit"},
	}
	for _, tt := range tests {
		f := InboxFilter{Limit: tt.limit}
		err := f.Validate()
		wantField(t, err, tt.field)
		if err == nil && f.Limit != tt.want {
			t.Errorf("limit %d became %d, want %d", tt.limit, f.Limit, tt.want)
		}
	}
}

func TestInboxJSON(t *testing.T) {
	b, _ := json.Marshal(InboxItem{CreatedAt: time.Unix(0, 0).UTC()})
	want := []string{"body", "created_at", "id", "mcp_id", "read", "read_at", "rule_id", "rule_name", "title"}
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, want) {
		t.Errorf("item keys = %v, want %v", got, want)
	}
	b, _ = json.Marshal(InboxPage{})
	if got := jsonKeys(t, b); !reflect.DeepEqual(got, []string{"items", "next_cursor", "unread_count"}) {
		t.Errorf("page keys = %v", got)
	}
}

func TestDeliveryCursor(t *testing.T) {
	at := time.Date(2026, 11, 20, 10, 0, 0, 123456000, time.UTC)
	c := DeliveryCursor{CreatedAt: at, ID: "dlv_abc123"}
	got, err := ParseDeliveryCursor(c.Encode())
	if err != nil || got == nil || !got.CreatedAt.Equal(at) || got.ID != c.ID {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if got, err := ParseDeliveryCursor(""); got != nil || err != nil {
		t.Fatalf("empty cursor: %+v, %v", got, err)
	}
	far := DeliveryCursor{CreatedAt: time.Date(20000, 1, 1, 0, 0, 0, 0, time.UTC), ID: "dlv_x"}.Encode()
	early := DeliveryCursor{CreatedAt: time.Date(1969, 1, 1, 0, 0, 0, 0, time.UTC), ID: "dlv_x"}.Encode()
	for _, bad := range []string{"x", "!!!", "eyJ0IjoxfQ", "bnVsbA", "eyJ0IjoxLCJpIjoiYVx1MDAwMGIifQ", far, early} {
		if _, err := ParseDeliveryCursor(bad); telemetry.ErrorCode(err) != telemetry.EBADREQUEST {
			t.Errorf("%q: got %v, want bad_request", bad, err)
		}
	}
}

func TestPlausibleID(t *testing.T) {
	for _, ok := range []string{"dlv_0123456789abcdef", "a", "rul-1_X"} {
		if !PlausibleID(ok) {
			t.Errorf("%q refused", ok)
		}
	}
	for _, bad := range []string{"", "a b", "a\x00b", "é", "a/b", "1;DROP", strings.Repeat("a", MaxIDLen+1)} {
		if PlausibleID(bad) {
			t.Errorf("%q accepted", bad)
		}
	}
}
