package alerting

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// MaxInboxReadIDs caps the ids of one mark-read request, so one request
// cannot turn into an unbounded query.
const MaxInboxReadIDs = 1000

// InboxItem is one entry of a person's inbox: an in_app delivery addressed to
// them. RuleName is the name the rule had when it fired; the store records it
// with the delivery, so the inbox outlives a deleted rule (deleting an MCP
// removes its rules) and a rename does not rewrite history.
type InboxItem struct {
	ID        string     `json:"id"`
	RuleID    string     `json:"rule_id"`
	RuleName  string     `json:"rule_name"`
	MCPID     string     `json:"mcp_id"`
	Title     string     `json:"title"`
	Body      string     `json:"body"`
	CreatedAt time.Time  `json:"created_at"`
	Read      bool       `json:"read"`
	ReadAt    *time.Time `json:"read_at"`
}

// InboxFilter selects a page of a person's inbox, newest first.
type InboxFilter struct {
	// Unread keeps only items not yet read.
	Unread bool
	Limit  int
	Cursor string
}

// Validate checks the filter and puts the default limit in place of 0.
// Errors are EINVALID on query.limit.
func (f *InboxFilter) Validate() error {
	return checkLimit(&f.Limit)
}

// InboxPage is the body of GET /v1/account/inbox. UnreadCount counts all of
// the person's unread items in the account, not only this page. Items is
// never nil, so an empty page encodes as [], not null; NextCursor is nil on
// the last page.
type InboxPage struct {
	Items       []InboxItem `json:"items"`
	UnreadCount int         `json:"unread_count"`
	NextCursor  *string     `json:"next_cursor"`
}

// InboxRead is the body of POST /v1/account/inbox/read: either ids or
// all: true.
type InboxRead struct {
	IDs []string `json:"ids,omitempty"`
	All bool     `json:"all,omitempty"`
}

// Validate refuses a body with both ids and all: true, or with neither
// (EINVALID). An empty ids array counts as ids: it marks nothing and answers
// 0. Unknown, foreign or malformed ids are not errors; the store ignores them.
func (r InboxRead) Validate() error {
	switch {
	case r.All && r.IDs != nil:
		return telemetry.FieldError(telemetry.EINVALID, "body", "Send either ids or \"all\": true, not both.")
	case !r.All && r.IDs == nil:
		return telemetry.FieldError(telemetry.EINVALID, "body", "Send either ids (a list of inbox item ids) or \"all\": true.")
	case len(r.IDs) > MaxInboxReadIDs:
		return telemetry.FieldError(telemetry.EINVALID, "body.ids", "At most %d ids per request.", MaxInboxReadIDs)
	}
	return nil
}

// InboxService reads and marks a person's in-app deliveries.
type InboxService interface {
	// Inbox returns a page of the person's in_app deliveries in the account,
	// newest first (ties broken by id), with the unread count. Call
	// f.Validate first. Returns EBADREQUEST for a cursor that is not one
	// this service issued (ParseDeliveryCursor).
	Inbox(ctx context.Context, accountID, userID string, f InboxFilter) (InboxPage, error)

	// MarkRead marks read the listed items, or all of the person's items
	// when all is true, and returns how many went from unread to read. Ids
	// that are not the person's, unknown or malformed are ignored, never an
	// error. Call InboxRead.Validate first.
	MarkRead(ctx context.Context, accountID, userID string, ids []string, all bool) (int, error)
}
