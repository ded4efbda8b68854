package analytics_test

import (
	"testing"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

func TestParseTimeWindow(t *testing.T) {
	for _, c := range []struct {
		from, to, code string
	}{
		{"", "", ""}, {"2026-03-01", "", ""}, {"", "2026-03-01", ""}, {"2026-03-01", "2026-03-01", ""},
		{"2026-03-02", "2026-03-01", telemetry.EINVALIDRANGE}, {"2026-3-1", "", telemetry.EINVALIDDATE}, {"", "x", telemetry.EINVALIDDATE},
	} {
		_, err := analytics.ParseTimeWindow(c.from, c.to)
		if c.code == "" && err != nil || c.code != "" && telemetry.ErrorCode(err) != c.code {
			t.Errorf("%q..%q: %v, want %q", c.from, c.to, err, c.code)
		}
	}
}
