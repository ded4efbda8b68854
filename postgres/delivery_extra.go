package postgres

import (
	"encoding/json"
	"time"

	"github.com/mcpscope/telemetry/alerting"
)

// deliveryExtra is what a claimed delivery carries besides its text
// (migration 019): the severity, the firing episode and the numbers.
type deliveryExtra struct {
	severity  string
	episodeAt *time.Time
	details   []byte
}

// apply puts the extra columns into m and resets e for the next row. A
// row from before migration 019 has no episode: its creation time stands
// in; malformed details are left out rather than failing the claim.
func (e *deliveryExtra) apply(m *alerting.Message) {
	m.Severity = e.severity
	m.EpisodeAt = m.At
	if e.episodeAt != nil {
		m.EpisodeAt = e.episodeAt.UTC()
	}
	m.Details = alerting.Details{}
	if len(e.details) > 0 {
		_ = json.Unmarshal(e.details, &m.Details)
	}
	*e = deliveryExtra{}
}
