package postgres

import (
	"crypto/rand"
	"time"

	"github.com/mcpscope/telemetry"
)

// Id prefixes of the alerting tables.
const (
	prefixRule     = "rul_"
	prefixDelivery = "dlv_"
)

const alertingIDAlphabet = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

// alertingID returns prefix and 16 random base62 characters (95 bits):
// unguessable, so an id reveals nothing about other rows.
func alertingID(prefix string) string {
	b := make([]byte, len(prefix)+16)
	copy(b, prefix)
	var r [32]byte
	for i := len(prefix); i < len(b); {
		_, _ = rand.Read(r[:])
		for _, c := range r {
			// 248 = 4*62: rejecting bytes above it keeps the draw uniform.
			if c < 248 && i < len(b) {
				b[i] = alertingIDAlphabet[c%62]
				i++
			}
		}
	}
	return string(b)
}

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
