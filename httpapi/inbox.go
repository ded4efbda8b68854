package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

// PageQuery is the paging of the delivery lists (exported: huma reads
// only exported embedded structs).
type PageQuery struct {
	Limit  int    `query:"limit" minimum:"1" maximum:"200" default:"50" doc:"Items per page, 1 to 200."`
	Cursor string `query:"cursor" doc:"The next_cursor of the previous page; absent for the first page."`
}

type inboxInput struct {
	PageQuery
	Unread bool `query:"unread" doc:"Only items not read yet."`
}

type inboxOutput struct {
	Body alerting.InboxPage
}

// inboxReadRequest is the body of POST /v1/account/inbox/read.
type inboxReadRequest struct {
	IDs []string `json:"ids,omitempty" maxItems:"1000" doc:"Inbox item ids to mark read (at most 1000). Ids that are not yours, unknown or malformed are ignored."`
	All bool     `json:"all,omitempty" doc:"true marks every item of your inbox in this account read."`
}

type inboxReadInput struct {
	Body inboxReadRequest
}

// InboxReadResult is the answer of POST /v1/account/inbox/read.
type InboxReadResult struct {
	Updated int `json:"updated" doc:"How many items went from unread to read."`
}

type inboxReadOutput struct {
	Body InboxReadResult
}

// describeInbox documents the schemas of these routes.
func (s *Server) describeInbox() {
	s.documentSchema(alerting.InboxItem{}, "An in-app delivery to you: created when a rule fired, for the people on the team at that moment.", map[string]string{
		"id":         "The item's id (a delivery id).",
		"rule_id":    "The rule that fired; it may have been deleted since.",
		"rule_name":  "The rule's name when it fired.",
		"mcp_id":     "The MCP the rule measures.",
		"title":      "One line, e.g. \"Firing: Search errors (error rate 12.5%)\".",
		"body":       "What was measured against what.",
		"created_at": "When the rule fired.",
		"read":       "Whether you marked it read.",
		"read_at":    "When you marked it read; null while unread.",
	})
	s.documentSchema(alerting.InboxPage{}, "A page of your inbox, newest first.", map[string]string{
		"items":        "The items of this page.",
		"unread_count": "All your unread items in this account, not only this page's.",
		"next_cursor":  "Pass as cursor to get the next page; null on the last page.",
	})
}

var listInboxOp = huma.Operation{
	OperationID: "list-inbox",
	Summary:     "Read your inbox",
	Description: `Your in-app deliveries in this account, newest first (ties by id), paginated with an opaque
cursor that neither skips nor repeats items when new ones arrive. ` + "`unread=true`" + ` keeps unread
items only. Items are created when a rule fires, never when the inbox is read, and stay when
the rule, its MCP or your membership go away. A malformed cursor is 400.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusBadRequest, http.StatusUnprocessableEntity},
}

func (s *Server) listInbox(ctx context.Context, in *inboxInput) (*inboxOutput, error) {
	f := alerting.InboxFilter{Unread: in.Unread, Limit: in.Limit, Cursor: in.Cursor}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	p := principal(ctx)
	page, err := s.opts.Inbox.Inbox(ctx, p.AccountID, p.UserID, f)
	if err != nil {
		return nil, err
	}
	return &inboxOutput{Body: page}, nil
}

var markInboxReadOp = huma.Operation{
	OperationID: "mark-inbox-read",
	Summary:     "Mark inbox items read",
	Description: "Send `{\"ids\": [...]}` or `{\"all\": true}`; both or neither is 422. Answers how many items went " +
		"from unread to read; marking an item read again counts 0. Ids that are not yours, unknown or malformed are ignored, never an error.",
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusUnprocessableEntity},
}

func (s *Server) markInboxRead(ctx context.Context, in *inboxReadInput) (*inboxReadOutput, error) {
	r := alerting.InboxRead{IDs: in.Body.IDs, All: in.Body.All}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	p := principal(ctx)
	n, err := s.opts.Inbox.MarkRead(ctx, p.AccountID, p.UserID, r.IDs, r.All)
	if err != nil {
		return nil, err
	}
	return &inboxReadOutput{Body: InboxReadResult{Updated: n}}, nil
}
