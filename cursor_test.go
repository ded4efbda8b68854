package telemetry

import (
	"errors"
	"testing"
)

func TestCursorRoundTripAndMalformed(t *testing.T) {
	type wire struct {
		T int64  `json:"t"`
		S string `json:"s"`
	}
	s := EncodeCursor(wire{T: 1700000000123, S: "s-1"})
	if s != "eyJ0IjoxNzAwMDAwMDAwMTIzLCJzIjoicy0xIn0" {
		t.Fatalf("wire form changed: %s", s)
	}
	var got wire
	if err := DecodeCursor(s, &got); err != nil || got != (wire{T: 1700000000123, S: "s-1"}) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"!!", "bm90IGpzb24", "eyJ0Ijoic3RyaW5nIn0"} {
		err := DecodeCursor(bad, &got)
		var e *Error
		if !errors.As(err, &e) || e.Code != EBADREQUEST {
			t.Errorf("DecodeCursor(%q) = %v, want %s", bad, err, EBADREQUEST)
		}
	}
}
