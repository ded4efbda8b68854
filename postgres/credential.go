package postgres

import (
	"time"

	"github.com/mcpscope/telemetry/internal/ids"
)

// Ingest keys and personal access tokens are stored alike: the secret
// exists outside the client only in the creating response, the table keeps
// its SHA-256 and a hint, and reads list id, name, hint, created_at and
// last_used_at.

// mintedSecret is a new credential's secret with what the store keeps of it.
type mintedSecret struct {
	secret string // returned once
	hash   []byte // stored and looked up
	hint   string // shown by reads
}

// mintSecret makes a new secret with prefix; hint is the credential's
// (accounts.KeyHint, accounts.TokenHint).
func mintSecret(prefix string, hint func(string) string) mintedSecret {
	s := ids.NewSecret(prefix)
	return mintedSecret{secret: s, hash: ids.HashSecret(s), hint: hint(s)}
}

// credentialTimes puts a listed credential's times in UTC, as every read
// returns them.
func credentialTimes(createdAt *time.Time, lastUsedAt **time.Time) {
	*createdAt = createdAt.UTC()
	*lastUsedAt = utcPtr(*lastUsedAt)
}
