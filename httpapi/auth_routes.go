package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/accounts"
)

// SignupRequest is the body of POST /v1/auth/signup.
type SignupRequest struct {
	Email       string `json:"email" minLength:"1" maxLength:"254" doc:"The person's email address, unique regardless of case (compared lower-cased); stored as sent. Accented and non-Latin characters are welcome, but a character that Unicode case folding or compatibility mapping turns into an ASCII one (the Kelvin sign K, fullwidth ａ, ligature ﬁ, mathematical 𝐚 …) is refused with 422, so that no address can pass for another." example:"ada@example.com"`
	Password    string `json:"password" minLength:"10" maxLength:"1024" doc:"At least 10 characters. Stored only as an argon2id hash." example:"correct horse battery"`
	Name        string `json:"name" minLength:"1" maxLength:"200" doc:"The person's name." example:"Ada Lovelace"`
	AccountName string `json:"account_name,omitempty" minLength:"1" maxLength:"200" doc:"Name of the new account; defaults to the person's name. Ignored with invite_token." example:"Analytical Engines"`
	InviteToken string `json:"invite_token,omitempty" maxLength:"256" doc:"The token of an invitation (POST /v1/account/members): the person joins that account in the invited role instead of creating one. The email must be the invited address." example:"inv_4fJ9kQ2mX7pL0sV3bN8cR1tY6wZ5aE2d"`
}

// LoginRequest is the body of POST /v1/auth/login.
type LoginRequest struct {
	Email     string `json:"email" minLength:"1" maxLength:"254" doc:"The email address signed up with, in any case." example:"ada@example.com"`
	Password  string `json:"password" minLength:"1" maxLength:"1024" example:"correct horse battery"`
	AccountID string `json:"account_id,omitempty" maxLength:"64" doc:"The account the session acts on, for people in several accounts; defaults to the account joined first." example:"acc_7Hq2LmZ0xV9cT4bN"`
}

// UserRef is a person as session responses show them.
type UserRef struct {
	ID    string `json:"id" example:"usr_9dK2mQ7xL0pV3sB8"`
	Email string `json:"email" example:"ada@example.com"`
	Name  string `json:"name" example:"Ada Lovelace"`
}

// AccountRef names the account a session acts on.
type AccountRef struct {
	ID   string `json:"id" example:"acc_7Hq2LmZ0xV9cT4bN"`
	Name string `json:"name" example:"Analytical Engines"`
}

// SessionBody is a freshly issued session token.
type SessionBody struct {
	Token     string     `json:"token" doc:"The session token (sess_…), shown only here. Send it as Authorization: Bearer <token>." example:"sess_Zx81hQ0aLm4K9pT2vW7bN3cR5dY6eF1g"`
	ExpiresAt time.Time  `json:"expires_at" doc:"When the token stops working (30 days by default) unless logged out before."`
	User      UserRef    `json:"user"`
	Account   AccountRef `json:"account" doc:"The account every /v1/account… and /v1/mcps… path acts on with this token."`
}

type sessionOutput struct {
	CacheControl string `header:"Cache-Control"`
	Body         SessionBody
}

func newSessionOutput(s *accounts.Session) *sessionOutput {
	return &sessionOutput{CacheControl: "no-store", Body: SessionBody{
		Token: s.Token, ExpiresAt: s.ExpiresAt.UTC(),
		User:    UserRef{ID: s.User.ID, Email: s.User.Email, Name: s.User.Name},
		Account: AccountRef{ID: s.Account.ID, Name: s.Account.Name},
	}}
}

var signupOp = huma.Operation{
	OperationID:   "signup",
	Summary:       "Sign up",
	Description:   "Creates a person and a session token. Without `invite_token` a new account is created and the person is its owner; with one, the person joins the inviting account in the invited role. An email already registered (in any case) is a 409; an unknown, used or expired invitation is a 422 at `body.invite_token`. Sign-in attempts (signup, login, invitation acceptance) are also limited per client address (default 30 per 15 minutes; IPv6 per /64; `X-Forwarded-For` counts only from configured trusted proxies): beyond it 429 `rate_limited` with `Retry-After`. Password hashing runs a few at a time; when its queue is full the answer is 503 `unavailable` with `Retry-After`.",
	Tags:          []string{"Authentication"},
	DefaultStatus: http.StatusCreated,
	Errors:        []int{http.StatusConflict, http.StatusUnprocessableEntity, http.StatusServiceUnavailable},
}

func (s *Server) signup(ctx context.Context, in *struct{ Body SignupRequest }) (*sessionOutput, error) {
	b := in.Body
	sess, err := s.opts.Sessions.Signup(ctx, accounts.Signup{Email: b.Email, Password: b.Password, Name: b.Name, AccountName: b.AccountName, InviteToken: b.InviteToken})
	if err != nil {
		return nil, err
	}
	if s.opts.Verification != nil {
		s.opts.Verification.Start(ctx, sess.User.ID)
	}
	return newSessionOutput(sess), nil
}

var loginOp = huma.Operation{
	OperationID: "login",
	Summary:     "Log in",
	Description: "Exchanges an email and password for a session token bound to one account (`account_id`, or the account joined first). A wrong email and a wrong password get the same 401 `invalid_credentials`. After 5 failures for one email within 15 minutes (configurable; counted per instance) further attempts get 429 `rate_limited` with `Retry-After`, even with the right password, until the oldest failure is 15 minutes old. An `account_id` the person does not belong to is a 422. Sign-in attempts (signup, login, invitation acceptance) are also limited per client address (default 30 per 15 minutes; IPv6 per /64; `X-Forwarded-For` counts only from configured trusted proxies): beyond it 429 `rate_limited` with `Retry-After`. Password hashing runs a few at a time; when its queue is full the answer is 503 `unavailable` with `Retry-After`.",
	Tags:        []string{"Authentication"},
	Errors:      []int{http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusTooManyRequests, http.StatusServiceUnavailable},
}

func (s *Server) login(ctx context.Context, in *struct{ Body LoginRequest }) (*sessionOutput, error) {
	sess, err := s.opts.Sessions.Login(ctx, accounts.Login{Email: in.Body.Email, Password: in.Body.Password, AccountID: in.Body.AccountID})
	if err != nil {
		return nil, err
	}
	return newSessionOutput(sess), nil
}

var logoutOp = huma.Operation{
	OperationID:   "logout",
	Summary:       "Log out",
	Description:   "Revokes the session token the request carries. Other sessions of the same person stay valid.",
	Tags:          []string{"Authentication"},
	DefaultStatus: http.StatusNoContent,
}

func (s *Server) logout(ctx context.Context, _ *struct{}) (*struct{}, error) {
	return nil, s.opts.Sessions.Logout(ctx, principal(ctx))
}
