package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// DeletionAccepted is the 202 of DELETE /v1/mcps/{id}/users/{user_id}.
type DeletionAccepted struct {
	ID     string `json:"id" example:"del_4Jq9Xz0bE7vR2aTM" doc:"Read its progress at GET /v1/account/deletions/{id}."`
	Status string `json:"status" enum:"pending,running,done,failed" example:"pending"`
}

const deletionDoc = "The request is carried out in the background: status goes `pending` → `running` → `done` (or `failed`, " +
	"which operators see in the service's log). The worker first waits until its instance has flushed to ClickHouse the " +
	"items it accepted before the request ran, then runs `ALTER TABLE … DELETE` mutations (on every host's local tables in " +
	"cluster mode, again if items received before the request were stored after they started) and reports `done` once no " +
	"raw item of the person received before the request is left; items the MCP sends for that user id afterwards are " +
	"stored as usual. It keeps watching a few seconds longer (two flush intervals and a second) for such items other " +
	"instances flush late. With several instances, an item another instance holds in its write-ahead log longer than that " +
	"(during a ClickHouse outage, say) is stored later and stays: request the deletion again then.\n\n" +
	"**What goes and what stays.** Every raw item of the MCP whose `user_id` is the person's goes (so exports and session " +
	"timelines no longer show them), with the rollup rows that name them: the per-user rows of the nightly figures, and " +
	"the per-session rows of their sessions (their sessions leave the sessions list and have no timeline). The other rollups keep what they " +
	"already aggregated: call and error counts, latency digests (t-digest) and the distinct-count sketches of sessions and " +
	"users (uniqHLL12) mix everyone's items in one state that cannot forget one item; they hold no user id, and the figures " +
	"of past days (overview, tools, usage) do not change. Items without a `user_id` cannot be found by person.\n\n" +
	"**Limit.** An account may make `storage.deletions_per_hour` deletion requests per hour (default 60; deleting an MCP " +
	"counts too); past it the request is refused with 429 `rate_limited` and a `Retry-After` (whole seconds until the " +
	"oldest request of the hour leaves it).\n\n" +
	"Example: `DELETE /v1/mcps/mcp_3kTMd9Xq0bE7vR2a/users/u-42` → 202 `{\"id\": \"del_4Jq9Xz0bE7vR2aTM\", \"status\": \"pending\"}`."

var deleteUserDataOp = huma.Operation{OperationID: "delete-user-data", Summary: "Delete a person's data",
	Description: "Owners and admins. Deletes the items of the MCP whose `user_id` is `{user_id}` (percent-encoded in the path); " +
		"answers 202 with the request's id at once.\n\n" + deletionDoc,
	Tags: []string{"Data"}, DefaultStatus: http.StatusAccepted, Errors: []int{404, 422, 429}}

func (s *Server) deleteUserData(ctx context.Context, in *struct {
	MCPPath
	UserID string `path:"user_id" maxLength:"128" doc:"The user id as ingested, percent-encoded."`
}) (*struct{ Body DeletionAccepted }, error) {
	d, err := s.opts.Deletions.RequestUserDeletion(ctx, principal(ctx).AccountID, in.ID, in.UserID)
	if err != nil {
		return nil, err
	}
	return &struct{ Body DeletionAccepted }{DeletionAccepted{ID: d.ID, Status: d.Status}}, nil
}

var getDeletionOp = huma.Operation{OperationID: "get-deletion", Summary: "Progress of a deletion",
	Description: "Any role. `kind` is `user` (DELETE /v1/mcps/{id}/users/{user_id}) or `mcp` (deleting an MCP deletes its " +
		"telemetry the same way: every raw item and rollup row, except the usage counts of `/v1/account/usage`); `user_id` is " +
		"null for kind `mcp`; `finished_at` is null until `done` or `failed`.\n\n" + deletionDoc,
	Tags: []string{"Data"}, Errors: []int{404}}

func (s *Server) getDeletion(ctx context.Context, in *struct {
	ID string `path:"id" maxLength:"64" doc:"The deletion request's id."`
}) (*struct{ Body accounts.Deletion }, error) {
	d, err := s.opts.Deletions.FindDeletion(ctx, principal(ctx).AccountID, in.ID)
	if err != nil {
		return nil, err
	}
	return &struct{ Body accounts.Deletion }{*d}, nil
}
