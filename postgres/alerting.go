package postgres

import (
	"time"

	"github.com/mcpscope/telemetry"
)

// Id prefixes of the alerting tables (newID adds 16 random base62
// characters).
const (
	prefixRule     = "rul_"
	prefixDelivery = "dlv_"
	prefixEvent    = "rev_"
)

func notFound(what string) error {
	return telemetry.Errorf(telemetry.ENOTFOUND, "%s not found.", what)
}

// utc returns t in UTC: pgx scans timestamptz in the local zone, and the wire
// wants a Z suffix.
func utc(t time.Time) time.Time { return t.UTC() }

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
