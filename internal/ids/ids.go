// Package ids makes and checks the service's ids and credentials: a
// prefix that says what the id names, then base62 characters from
// crypto/rand. Malformed ids are refused without a database round trip.
package ids

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
)

const (
	base62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	// idLen base62 characters: 95 random bits, unguessable and collision-free
	// at any scale this service meets.
	idLen = 16
	// secretLen base62 characters: 190 random bits for session tokens,
	// ingest keys and invitation tokens (the contract asks for >= 128 and
	// >= 160).
	secretLen = 32
)

// RandomBase62 returns n uniformly random base62 characters from crypto/rand
// (rejection sampling: bytes >= 248 are redrawn, so there is no modulo bias).
func RandomBase62(n int) string {
	var sb strings.Builder
	sb.Grow(n)
	buf := make([]byte, n+n/4+8)
	for sb.Len() < n {
		_, _ = rand.Read(buf) // never fails on supported platforms (Go 1.24+)
		for _, b := range buf {
			if b < 248 && sb.Len() < n {
				sb.WriteByte(base62[b%62])
			}
		}
	}
	return sb.String()
}

// New returns a fresh id with the given prefix.
func New(prefix string) string { return prefix + RandomBase62(idLen) }

// NewSecret returns a fresh credential with the given prefix.
func NewSecret(prefix string) string { return prefix + RandomBase62(secretLen) }

// HashSecret is how credentials are stored and looked up: SHA-256 is enough
// for 190 random bits (no dictionary to attack) and keeps lookups cheap.
func HashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// WellFormed reports whether s is prefix followed by n base62 characters.
// Malformed ids and credentials are refused without touching the database,
// which also keeps NUL bytes and invalid UTF-8 away from PostgreSQL.
func WellFormed(s, prefix string, n int) bool {
	rest, ok := strings.CutPrefix(s, prefix)
	if !ok || len(rest) != n {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// Valid reports whether s is an id New(prefix) could have returned.
func Valid(s, prefix string) bool { return WellFormed(s, prefix, idLen) }

// ValidSecret reports whether s is a credential NewSecret(prefix) could
// have returned.
func ValidSecret(s, prefix string) bool { return WellFormed(s, prefix, secretLen) }
