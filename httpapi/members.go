package httpapi

import (
	"context"
	"net/http"
	"reflect"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// MemberBody is a person's membership.
type MemberBody struct {
	UserID        string    `json:"user_id" example:"usr_9dK2mQ7xL0pV3sB8"`
	Email         string    `json:"email" example:"grace@example.com"`
	EmailVerified bool      `json:"email_verified" doc:"Whether the person confirmed the address (the link of the verification message). With an SMTP server configured, no email but that message goes to an unverified address."`
	Name          string    `json:"name" example:"Grace Hopper"`
	Role          string    `json:"role" enum:"owner,admin,member"`
	JoinedAt      time.Time `json:"joined_at"`
}

// InvitationBody is a pending invitation (never with its token).
type InvitationBody struct {
	ID        string    `json:"id" example:"inv_2bV8nM4kQ1xZ7cL0"`
	Email     string    `json:"email" example:"grace@example.com"`
	Role      string    `json:"role" enum:"owner,admin,member"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at" doc:"After this (14 days after creation) the token no longer works; invite again."`
}

// InvitedBody answers adding someone who has no login yet.
type InvitedBody struct {
	Invitation  InvitationBody `json:"invitation"`
	InviteToken string         `json:"invite_token" doc:"Shown only here: pass it to the person, who signs up with it (POST /v1/auth/signup with invite_token and the invited email)." example:"inv_4fJ9kQ2mX7pL0sV3bN8cR1tY6wZ5aE2d"`
}

// MemberListBody is the team.
type MemberListBody struct {
	Items       []MemberBody     `json:"items" doc:"Members, oldest first."`
	Invitations []InvitationBody `json:"invitations" doc:"Invitations not yet accepted or expired, oldest first."`
}

// NewMemberRequest adds a person by email.
type NewMemberRequest struct {
	Email string `json:"email" minLength:"1" maxLength:"254" doc:"The person's email address." example:"grace@example.com"`
	Role  string `json:"role" enum:"owner,admin,member" doc:"Only owners may grant owner." example:"member"`
}

// MemberPatch changes a member's role.
type MemberPatch struct {
	Role string `json:"role" enum:"owner,admin,member" example:"admin"`
}

// MemberPath names a member (by user id) in a path.
type MemberPath struct {
	UserID string `path:"user_id" doc:"The member's user id." example:"usr_9dK2mQ7xL0pV3sB8"`
}

func memberBody(m *accounts.Member) MemberBody {
	return MemberBody{UserID: m.UserID, Email: m.Email, EmailVerified: m.EmailVerified, Name: m.Name, Role: string(m.Role), JoinedAt: m.JoinedAt.UTC()}
}

func invitationBody(i *accounts.Invitation) InvitationBody {
	return InvitationBody{ID: i.ID, Email: i.Email, Role: string(i.Role), CreatedAt: i.CreatedAt.UTC(), ExpiresAt: i.ExpiresAt.UTC()}
}

const roleRules = "Owners and admins manage members, but only an owner may grant the owner role or change or remove an owner; " +
	"an account always keeps at least one owner (demoting or removing the last one is a 409 `conflict`)."

var listMembersOp = huma.Operation{
	OperationID: "list-members",
	Summary:     "List members and invitations",
	Tags:        []string{"Members"},
}

func (s *Server) listMembers(ctx context.Context, _ *struct{}) (*struct{ Body MemberListBody }, error) {
	list, err := s.opts.Members.ListMembers(ctx, principal(ctx).AccountID)
	if err != nil {
		return nil, err
	}
	out := &struct{ Body MemberListBody }{Body: MemberListBody{Items: make([]MemberBody, 0, len(list.Items)), Invitations: make([]InvitationBody, 0, len(list.Invitations))}}
	for i := range list.Items {
		out.Body.Items = append(out.Body.Items, memberBody(&list.Items[i]))
	}
	for i := range list.Invitations {
		out.Body.Invitations = append(out.Body.Invitations, invitationBody(&list.Invitations[i]))
	}
	return out, nil
}

var addMemberOp = huma.Operation{
	OperationID:   "add-member",
	Summary:       "Add or invite a member",
	Description:   "Owners and admins. A person who already has a login is added at once (201 with the member; 409 if already a member). Anyone else gets an invitation: 201 `{invitation, invite_token}`, the token shown only this once. Inviting the same email again replaces the pending invitation and its token. " + roleRules,
	Tags:          []string{"Members"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusConflict, http.StatusUnprocessableEntity},
}

// addMemberResponses documents the 201 of adding, which is one of two
// shapes: huma cannot infer that from an `any` body, so the response schema
// is given explicitly.
func addMemberResponses(s *Server, op *huma.Operation) {
	reg := s.api.OpenAPI().Components.Schemas
	op.Responses = map[string]*huma.Response{"201": {
		Description: "A person with a login was added (a member); anyone else was invited (an invitation and its token).",
		Content: map[string]*huma.MediaType{"application/json": {Schema: &huma.Schema{OneOf: []*huma.Schema{
			reg.Schema(reflect.TypeOf(MemberBody{}), true, ""),
			reg.Schema(reflect.TypeOf(InvitedBody{}), true, ""),
		}}}},
	}}
}

// addedOutput is the 201 of adding a member. It may carry a one-time
// invitation token, so it is never stored by caches.
type addedOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         any
}

func (s *Server) addMember(ctx context.Context, in *struct{ Body NewMemberRequest }) (*addedOutput, error) {
	res, err := s.opts.Members.AddMember(ctx, principal(ctx), accounts.NewMember{Email: in.Body.Email, Role: accounts.Role(in.Body.Role)})
	if err != nil {
		return nil, err
	}
	if res.Member != nil {
		return &addedOutput{CacheControl: "no-store", Body: memberBody(res.Member)}, nil
	}
	return &addedOutput{CacheControl: "no-store", Body: InvitedBody{Invitation: invitationBody(res.Invitation), InviteToken: res.InviteToken}}, nil
}

var updateMemberOp = huma.Operation{
	OperationID: "update-member",
	Summary:     "Change a member's role",
	Description: "Owners and admins. " + roleRules,
	Tags:        []string{"Members"},
	Errors:      []int{http.StatusNotFound, http.StatusConflict, http.StatusUnprocessableEntity},
}

func (s *Server) updateMember(ctx context.Context, in *struct {
	MemberPath
	Body MemberPatch
}) (*struct{ Body MemberBody }, error) {
	m, err := s.opts.Members.UpdateMember(ctx, principal(ctx), in.UserID, accounts.MemberUpdate{Role: accounts.Role(in.Body.Role)})
	if err != nil {
		return nil, err
	}
	return &struct{ Body MemberBody }{Body: memberBody(m)}, nil
}

var removeMemberOp = huma.Operation{
	OperationID:   "remove-member",
	Summary:       "Remove a member",
	Description:   "Owners and admins. Everything the person held in this account ends in the same transaction: their sessions for it stop working at once, their personal access tokens for it are deleted (adding them again does not revive any), and their email deliveries still queued or retrying end `failed` with `last_error` `not_a_member` (the outbox never mails a non-member, even after an admin's retry). Inbox items already delivered to them are kept. " + roleRules,
	Tags:          []string{"Members"},
	DefaultStatus: http.StatusNoContent,
	Errors:        []int{http.StatusNotFound, http.StatusConflict},
}

func (s *Server) removeMember(ctx context.Context, in *MemberPath) (*struct{}, error) {
	return nil, s.opts.Members.RemoveMember(ctx, principal(ctx), in.UserID)
}
