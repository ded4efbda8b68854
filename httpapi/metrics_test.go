package httpapi

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Requests with made-up methods to unknown paths must not grow the
// request metrics' label sets: labels come from the route table.
func TestMetricLabelsAreBounded(t *testing.T) {
	t.Parallel()
	reg := prometheus.NewRegistry()
	s := testServer(t, Options{Metrics: NewMetrics(reg)})
	for i := 0; i < 300; i++ {
		method := fmt.Sprintf("M%03dX", i)
		if rec, _ := do(t, s, method, fmt.Sprintf("/no/such/path/%d", i), ""); rec.Code != http.StatusNotFound && rec.Code != http.StatusMethodNotAllowed {
			t.Fatalf("%s: %d", method, rec.Code)
		}
	}
	do(t, s, http.MethodGet, "/health", "")
	do(t, s, "BREW", "/health", "")
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		seen := map[string]bool{}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "method" {
					seen[l.GetValue()] = true
				}
				if l.GetName() == "route" && l.GetValue() != "unmatched" && l.GetValue() != "/health" {
					t.Errorf("%s: route label %q", f.GetName(), l.GetValue())
				}
			}
		}
		if len(f.GetMetric()) > 4 {
			t.Errorf("%s has %d label sets after a flood of made-up requests", f.GetName(), len(f.GetMetric()))
		}
		for m := range seen {
			if m != "other" && m != http.MethodGet {
				t.Errorf("%s: method label %q", f.GetName(), m)
			}
		}
	}
}
