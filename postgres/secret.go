package postgres

import (
	"crypto/rand"
	"crypto/sha256"
	"strings"
)

// ID prefixes: every id says what it names, which makes logs and support
// requests readable and lets a malformed id be refused without a query.
const (
	prefixUser       = "usr_"
	prefixAccount    = "acc_"
	prefixMCP        = "mcp_"
	prefixKey        = "key_"
	prefixInvitation = "inv_"
	prefixSession    = "ses_"
	// prefixInviteToken starts the secret of an invitation. It shares inv_
	// with invitation ids, but is twice as long and only ever looked up by
	// its hash, so the two cannot be confused.
	prefixInviteToken = "inv_"
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

// randomBase62 returns n uniformly random base62 characters from crypto/rand
// (rejection sampling: bytes >= 248 are redrawn, so there is no modulo bias).
func randomBase62(n int) string {
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

// newID returns a fresh id with the given prefix.
func newID(prefix string) string { return prefix + randomBase62(idLen) }

// newSecret returns a fresh credential with the given prefix.
func newSecret(prefix string) string { return prefix + randomBase62(secretLen) }

// hashSecret is how credentials are stored and looked up: SHA-256 is enough
// for 190 random bits (no dictionary to attack) and keeps lookups cheap.
func hashSecret(s string) []byte {
	sum := sha256.Sum256([]byte(s))
	return sum[:]
}

// wellFormed reports whether s is prefix followed by n base62 characters.
// Malformed ids and credentials are refused without touching the database,
// which also keeps NUL bytes and invalid UTF-8 away from PostgreSQL.
func wellFormed(s, prefix string, n int) bool {
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

func validID(s, prefix string) bool     { return wellFormed(s, prefix, idLen) }
func validSecret(s, prefix string) bool { return wellFormed(s, prefix, secretLen) }
