package accounts

import (
	"context"
	"time"
)

// IngestKey is an ingest credential as every read shows it: the secret is
// never kept or returned, only a hint to tell keys apart.
type IngestKey struct {
	ID         string     `json:"id"`
	MCPID      string     `json:"-"`
	Name       string     `json:"name"`
	Hint       string     `json:"hint"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at"`
}

// CreatedKey is a new ingest key with its secret, which exists outside the
// client only in this one response.
type CreatedKey struct {
	IngestKey
	Key string `json:"key"`
}

// NewKey names a new ingest key (say, after the host that uses it).
type NewKey struct {
	Name string `json:"name"`
}

// Validate checks the name.
func (k NewKey) Validate() error { return checkText("body.name", k.Name, 1, MaxNameLen) }

// KeyMask stands for the hidden part of a key in its hint.
const KeyMask = "••••••••"

// KeyHint is what reads show of a key: its prefix, a mask and the last
// four characters, e.g. ik_••••••••a1b2.
func KeyHint(key string) string { return secretHint(IngestKeyPrefix, key) }

func secretHint(prefix, secret string) string {
	last := secret
	if len(last) > 4 {
		last = last[len(last)-4:]
	}
	return prefix + KeyMask + last
}

// KeyService manages ingest keys. Every method is scoped to accountID:
// another account's MCP or key is ENOTFOUND.
type KeyService interface {
	// ListKeys returns the MCP's keys, oldest first, hints only.
	// Errors: ENOTFOUND for the MCP.
	ListKeys(ctx context.Context, accountID, mcpID string) ([]IngestKey, error)
	// CreateKey issues a key for the MCP.
	// Errors: EINVALID with the field; ENOTFOUND for the MCP.
	CreateKey(ctx context.Context, accountID, mcpID string, in NewKey) (*CreatedKey, error)
	// DeleteKey removes a key: it stops working within seconds on every
	// instance.
	// Errors: ENOTFOUND.
	DeleteKey(ctx context.Context, accountID, keyID string) error
}
