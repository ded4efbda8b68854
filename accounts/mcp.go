package accounts

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// MCP is a registered MCP server: telemetry arrives for it through its
// ingest keys and metrics and rules are read and kept per MCP.
type MCP struct {
	ID          string    `json:"id"`
	AccountID   string    `json:"-"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	CreatedAt   time.Time `json:"created_at"`
	Redaction   Redaction `json:"redaction"`
	// SessionIdleMinutes is the idle timeout of the sessions derived for
	// items sent without a session_id (docs/sessions.md).
	SessionIdleMinutes int `json:"session_idle_minutes"`
}

// NewMCP registers an MCP.
type NewMCP struct {
	Name        string `json:"name"`
	Description string `json:"description"`
}

// Validate checks the name and description.
func (m NewMCP) Validate() error {
	if err := checkText("body.name", m.Name, 1, MaxNameLen); err != nil {
		return err
	}
	return checkText("body.description", m.Description, 0, MaxDescriptionLen)
}

// MCPUpdate changes an MCP; nil fields stay as they are.
type MCPUpdate struct {
	Name        *string `json:"name"`
	Description *string `json:"description"`
	// RedactionEnabled and RedactionPatterns change the redaction setting
	// (the patterns are replaced whole).
	RedactionEnabled  *bool     `json:"-"`
	RedactionPatterns *[]string `json:"-"`
	// SessionIdleMinutes changes the idle timeout of derived sessions
	// (MinSessionIdleMinutes to MaxSessionIdleMinutes).
	SessionIdleMinutes *int `json:"-"`
}

// Bounds of an MCP's session idle timeout, in minutes.
const (
	MinSessionIdleMinutes = 1
	MaxSessionIdleMinutes = 1440
)

// Validate checks the fields present.
func (u MCPUpdate) Validate() error {
	if u.Name != nil {
		if err := checkText("body.name", *u.Name, 1, MaxNameLen); err != nil {
			return err
		}
	}
	if u.Description != nil {
		if err := checkText("body.description", *u.Description, 0, MaxDescriptionLen); err != nil {
			return err
		}
	}
	if m := u.SessionIdleMinutes; m != nil && (*m < MinSessionIdleMinutes || *m > MaxSessionIdleMinutes) {
		return telemetry.FieldError(telemetry.EINVALID, "body.session_idle_minutes",
			"session_idle_minutes must be between %d and %d.", MinSessionIdleMinutes, MaxSessionIdleMinutes)
	}
	if u.RedactionPatterns != nil {
		return ValidateRedaction(*u.RedactionPatterns)
	}
	return nil
}

// MCPService manages an account's MCPs. Every method is scoped to
// accountID: another account's MCP is ENOTFOUND, exactly like a missing one.
type MCPService interface {
	// ListMCPs returns the account's MCPs, oldest first.
	ListMCPs(ctx context.Context, accountID string) ([]MCP, error)
	// CreateMCP registers an MCP.
	// Errors: EINVALID with the field.
	CreateMCP(ctx context.Context, accountID string, in NewMCP) (*MCP, error)
	// FindMCP returns one MCP.
	// Errors: ENOTFOUND.
	FindMCP(ctx context.Context, accountID, id string) (*MCP, error)
	// UpdateMCP changes an MCP and returns it whole.
	// Errors: EINVALID with the field; ENOTFOUND.
	UpdateMCP(ctx context.Context, accountID, id string, upd MCPUpdate) (*MCP, error)
	// DeleteMCP removes an MCP, its ingest keys (which stop working within
	// seconds on every instance) and everything that references it.
	// Errors: ENOTFOUND.
	DeleteMCP(ctx context.Context, accountID, id string) error
}
