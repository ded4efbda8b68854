package accounts

import "context"

// CredentialKind tells the credentials apart; they are isolated by design.
type CredentialKind string

// Credential kinds and the prefixes their secrets carry.
const (
	CredentialSession   CredentialKind = "session"
	CredentialIngestKey CredentialKind = "ingest_key"
	// CredentialPersonalToken reads as its person (TokenService).
	CredentialPersonalToken CredentialKind = "personal_token"

	SessionTokenPrefix  = "sess_"
	IngestKeyPrefix     = "ik_"
	PersonalTokenPrefix = "pat_"
)

// Principal is who a request acts as, resolved from its bearer credential.
type Principal struct {
	Kind CredentialKind
	// Session and personal token credentials (TokenID for the latter).
	SessionID string
	TokenID   string
	UserID    string
	AccountID string
	Role      Role
	// RetentionDays is the account's own retention (nil: the
	// installation's applies).
	RetentionDays *int
	// Ingest-key credentials: the key names its MCP (and through it the
	// account, set in AccountID too).
	KeyID string
	MCPID string
	// Redactor is the MCP's redaction, compiled; nil when it is off.
	Redactor *Redactor
}

// Authenticator resolves bearer credentials.
type Authenticator interface {
	// AuthenticateSession returns the principal of a live session token.
	// Errors: EUNAUTHENTICATED for an unknown, expired or revoked token.
	AuthenticateSession(ctx context.Context, token string) (*Principal, error)
	// AuthenticateIngestKey returns the principal of an ingest key. It must
	// not cost a database round trip on the hot path.
	// Errors: EUNAUTHENTICATED for an unknown or deleted key.
	AuthenticateIngestKey(ctx context.Context, key string) (*Principal, error)
	// AuthenticatePersonalToken returns the principal of a personal access
	// token: its person, in its account, with their current role.
	// Errors: EUNAUTHENTICATED for an unknown or revoked token, or when the
	// person no longer belongs to the account.
	AuthenticatePersonalToken(ctx context.Context, token string) (*Principal, error)
}
