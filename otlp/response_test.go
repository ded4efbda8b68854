package otlp

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	spb "google.golang.org/genproto/googleapis/rpc/status"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"

	"github.com/mcpscope/telemetry"
)

func TestEncodeResponse(t *testing.T) {
	tests := []struct {
		name     string
		rejected int
		ct       string
	}{
		{"all accepted, protobuf", 0, "application/x-protobuf"},
		{"all accepted, JSON", 0, "application/json"},
		{"partial, protobuf", 3, "application/x-protobuf"},
		{"partial, JSON with charset", 3, "application/json; charset=utf-8"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body, err := EncodeResponse(tt.rejected, tt.ct)
			if err != nil {
				t.Fatal(err)
			}
			resp := &coltracepb.ExportTraceServiceResponse{}
			if strings.HasPrefix(tt.ct, "application/json") {
				err = protojson.Unmarshal(body, resp)
			} else {
				err = proto.Unmarshal(body, resp)
			}
			if err != nil {
				t.Fatalf("response %q does not decode in its own encoding: %v", body, err)
			}
			ps := resp.GetPartialSuccess()
			if tt.rejected == 0 {
				if ps != nil {
					t.Errorf("partial_success %v set on full success", ps)
				}
				return
			}
			if ps.GetRejectedSpans() != int64(tt.rejected) || !strings.Contains(ps.GetErrorMessage(), "mcp.method.name") {
				t.Errorf("partial_success %v; want %d rejected and a message", ps, tt.rejected)
			}
		})
	}
}

func TestEncodeResponseJSONShape(t *testing.T) {
	body, err := EncodeResponse(2, "application/json")
	if err != nil {
		t.Fatal(err)
	}
	// OTLP/JSON uses lowerCamelCase keys.
	var got struct {
		PartialSuccess map[string]any `json:"partialSuccess"`
	}
	if err := json.Unmarshal(body, &got); err != nil || got.PartialSuccess["rejectedSpans"] == nil {
		t.Errorf("JSON response %s lacks partialSuccess.rejectedSpans (%v)", body, err)
	}
	if body, _ := EncodeResponse(0, "application/json"); string(body) != "{}" {
		t.Errorf("full success JSON = %s; want {}", body)
	}
}

func TestEncodeResponseUnsupported(t *testing.T) {
	_, err := EncodeResponse(1, "text/plain")
	wantCode(t, err, telemetry.EUNSUPPORTEDMEDIA)
}

func TestEncodeStatus(t *testing.T) {
	tests := []struct {
		name     string
		err      error
		ct       string
		wantCode int32
		wantMsg  string
	}{
		{"bad request, protobuf", telemetry.Errorf(telemetry.EBADREQUEST, "not OTLP"), "application/x-protobuf", 3, "not OTLP"},
		{"rate limited, JSON", telemetry.Errorf(telemetry.ERATELIMITED, "slow down"), "application/json", 8, "slow down"},
		{"unauthenticated", telemetry.Errorf(telemetry.EUNAUTHENTICATED, "no key"), "application/json", 16, "no key"},
		{"unavailable", telemetry.Errorf(telemetry.EUNAVAILABLE, "later"), "application/json", 14, "later"},
		{"internal error hides its text", errors.New("pq: connection refused"), "application/json", 13, "Internal error."},
		{"unsupported media answers in JSON", telemetry.Errorf(telemetry.EUNSUPPORTEDMEDIA, "no"), "text/plain", 3, "no"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			body := EncodeStatus(tt.err, tt.ct)
			st := &spb.Status{}
			var err error
			if tt.ct == "application/x-protobuf" {
				err = proto.Unmarshal(body, st)
			} else {
				err = protojson.Unmarshal(body, st)
			}
			if err != nil {
				t.Fatalf("status %q does not decode: %v", body, err)
			}
			if st.Code != tt.wantCode || st.Message != tt.wantMsg {
				t.Errorf("status %v; want code %d, message %q", st, tt.wantCode, tt.wantMsg)
			}
		})
	}
}
