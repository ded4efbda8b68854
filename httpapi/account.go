package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"time"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// AccountBody is the caller's account.
type AccountBody struct {
	ID        string    `json:"id" example:"acc_7Hq2LmZ0xV9cT4bN"`
	Name      string    `json:"name" example:"Analytical Engines"`
	Plan      string    `json:"plan" doc:"The billing plan; every account starts on free." example:"free"`
	CreatedAt time.Time `json:"created_at"`
	Role      string    `json:"role" enum:"owner,admin,member" doc:"The caller's role in this account."`
	// Retention: what is kept.
	RetentionDays          *int    `json:"retention_days" doc:"The account's own retention in UTC days (today included); null: the installation's applies. Owners change it with PATCH." example:"30"`
	EffectiveRetentionDays *int    `json:"effective_retention_days" doc:"The retention that applies: the account's, at most the installation's storage.retention_days; null: kept forever." example:"30"`
	KeptFrom               *string `json:"kept_from" doc:"The oldest UTC day kept (YYYY-MM-DD); reads of earlier days answer zeros, and the nightly job deletes them. Null: kept forever." example:"2026-10-27"`
}

// AccountPatch changes the account; fields left out stay as they are.
type AccountPatch struct {
	Name *string `json:"name,omitempty" minLength:"1" maxLength:"200" example:"Analytical Engines Ltd"`
	// RetentionDays is changed by owners only.
	RetentionDays *int `json:"retention_days,omitempty" minimum:"0" doc:"Owners only. UTC days of telemetry to keep, today included, at most the installation's storage.retention_days (422 invalid beyond); 0 returns to the installation's." example:"30"`
}

// ProfileBody is the caller's own profile.
type ProfileBody struct {
	UserID        string `json:"user_id" example:"usr_9dK2mQ7xL0pV3sB8"`
	Email         string `json:"email" example:"ada@example.com"`
	Name          string `json:"name" example:"Ada Lovelace"`
	EmailVerified bool   `json:"email_verified" doc:"Whether you confirmed the address with the link of the verification message. With an SMTP server configured, alert and test emails to an unverified address end failed with address_unverified; POST /v1/account/profile/verification sends a new link. Changing the email makes it unverified again."`
}

// ProfilePatch changes the caller's own profile; fields left out stay.
type ProfilePatch struct {
	Name  *string `json:"name,omitempty" minLength:"1" maxLength:"200" example:"Ada King"`
	Email *string `json:"email,omitempty" minLength:"1" maxLength:"254" doc:"A new login email, unique regardless of case (409 if another person has it)." example:"ada@example.org"`
}

// CompanyBody is the account's company record; each field is a string or
// null. As a PUT body it replaces the record: fields left out become null.
type CompanyBody struct {
	LegalName    *string `json:"legal_name,omitempty" nullable:"true" minLength:"1" maxLength:"200" example:"Analytical Engines Ltd"`
	Website      *string `json:"website,omitempty" nullable:"true" minLength:"1" maxLength:"2048" doc:"An http or https URL." example:"https://engines.example"`
	BillingEmail *string `json:"billing_email,omitempty" nullable:"true" minLength:"1" maxLength:"254" example:"billing@engines.example"`
	Address      *string `json:"address,omitempty" nullable:"true" minLength:"1" maxLength:"1000" example:"12 Marylebone Road, London"`
	VATID        *string `json:"vat_id,omitempty" nullable:"true" minLength:"1" maxLength:"64" example:"GB123456789"`
}

// CompanyRecord is the company record as responses show it: all five
// fields, each a string or null.
type CompanyRecord struct {
	LegalName    *string `json:"legal_name" example:"Analytical Engines Ltd"`
	Website      *string `json:"website" example:"https://engines.example"`
	BillingEmail *string `json:"billing_email" example:"billing@engines.example"`
	Address      *string `json:"address" example:"12 Marylebone Road, London"`
	VATID        *string `json:"vat_id" example:"GB123456789"`
}

// CompanyPatch merges into the company record: a field left out stays, a
// field set to null is cleared.
type CompanyPatch struct {
	LegalName    patchString `json:"legal_name,omitempty" minLength:"1" maxLength:"200" example:"Analytical Engines Ltd"`
	Website      patchString `json:"website,omitempty" minLength:"1" maxLength:"2048" doc:"An http or https URL." example:"https://engines.example"`
	BillingEmail patchString `json:"billing_email,omitempty" minLength:"1" maxLength:"254" example:"billing@engines.example"`
	Address      patchString `json:"address,omitempty" minLength:"1" maxLength:"1000" example:"12 Marylebone Road, London"`
	VATID        patchString `json:"vat_id,omitempty" minLength:"1" maxLength:"64" example:"GB123456789"`
}

// patchString is a merge-patch field, which must tell "left out" (Set
// false) from null (Set, nil Value): a pointer cannot.
type patchString accounts.Change[string]

// UnmarshalJSON is called for every field present, null included.
func (p *patchString) UnmarshalJSON(b []byte) error {
	p.Set = true
	if string(b) == "null" {
		p.Value = nil
		return nil
	}
	var v string
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	p.Value = &v
	return nil
}

// Schema documents the field as a nullable string; the struct tags add
// its bounds.
func (patchString) Schema(huma.Registry) *huma.Schema {
	return &huma.Schema{Type: huma.TypeString, Nullable: true}
}

type accountOutput struct{ Body AccountBody }
type profileOutput struct{ Body ProfileBody }
type companyOutput struct{ Body CompanyRecord }

func (s *Server) newAccountOutput(a *accounts.Account) *accountOutput {
	out := &accountOutput{Body: AccountBody{ID: a.ID, Name: a.Name, Plan: a.Plan, CreatedAt: a.CreatedAt.UTC(), Role: string(a.Role),
		RetentionDays: a.RetentionDays}}
	if days := accounts.EffectiveRetention(a.RetentionDays, s.opts.RetentionDays); days > 0 {
		from := analytics.KeptFrom(days, time.Now()).Format(analytics.DateLayout)
		out.Body.EffectiveRetentionDays, out.Body.KeptFrom = &days, &from
	}
	return out
}

func newProfileOutput(p *accounts.Profile) *profileOutput {
	return &profileOutput{Body: ProfileBody{UserID: p.UserID, Email: p.Email, Name: p.Name, EmailVerified: p.EmailVerified}}
}

func newCompanyOutput(c *accounts.Company) *companyOutput {
	return &companyOutput{Body: CompanyRecord{LegalName: c.LegalName, Website: c.Website, BillingEmail: c.BillingEmail, Address: c.Address, VATID: c.VATID}}
}

const retentionDoc = "**Retention.** The installation keeps telemetry `storage.retention_days` UTC days, today included " +
	"(default 1096, the longest range a read takes; 0 keeps it forever). An owner may keep less for the account: " +
	"`PATCH /v1/account` with `{\"retention_days\": 30}` (1 to the installation's; 0 returns to it; more is 422 `invalid`, " +
	"an admin is 403 `forbidden`). `effective_retention_days` and `kept_from` say what is kept. Reads (metrics, usage, " +
	"export) of days before `kept_from` answer zeros at once; once a day the nightly job (or `telemetryd retention`) deletes " +
	"them: whole day partitions of the raw table (and whole months of the rollups) where every account allows it, " +
	"per-account deletions of raw items and rollup rows where an account keeps less than others."

var getAccountOp = huma.Operation{
	OperationID: "get-account",
	Summary:     "Get the account",
	Description: "The account the session token is bound to, with the caller's `role` and what is kept (`retention_days`, `effective_retention_days`, `kept_from`).\n\n" + retentionDoc,
	Tags:        []string{"Account"},
}

func (s *Server) getAccount(ctx context.Context, _ *struct{}) (*accountOutput, error) {
	a, err := s.opts.Accounts.Account(ctx, principal(ctx))
	if err != nil {
		return nil, err
	}
	return s.newAccountOutput(a), nil
}

var updateAccountOp = huma.Operation{
	OperationID: "update-account",
	Summary:     "Rename the account",
	Description: "Owners and admins. Fields left out stay as they are; `plan` is read-only.\n\n" + retentionDoc,
	Tags:        []string{"Account"},
	Errors:      []int{http.StatusUnprocessableEntity},
}

func (s *Server) updateAccount(ctx context.Context, in *struct{ Body AccountPatch }) (*accountOutput, error) {
	p := principal(ctx)
	if in.Body.RetentionDays != nil {
		if p.Role != accounts.RoleOwner {
			return nil, telemetry.Errorf(telemetry.EFORBIDDEN, "Only owners change retention_days; your role is %s.", p.Role)
		}
		if err := accounts.ValidateRetention(*in.Body.RetentionDays, s.opts.RetentionDays); err != nil {
			return nil, err
		}
	}
	a, err := s.opts.Accounts.UpdateAccount(ctx, p, accounts.AccountUpdate{Name: in.Body.Name, RetentionDays: in.Body.RetentionDays})
	if err != nil {
		return nil, err
	}
	return s.newAccountOutput(a), nil
}

var getProfileOp = huma.Operation{
	OperationID: "get-profile",
	Summary:     "Get your profile",
	Description: "The caller's own name and email, and whether the email is verified. Every role may read and change their own profile.",
	Tags:        []string{"Account"},
}

func (s *Server) getProfile(ctx context.Context, _ *struct{}) (*profileOutput, error) {
	p, err := s.opts.Accounts.Profile(ctx, principal(ctx))
	if err != nil {
		return nil, err
	}
	return newProfileOutput(p), nil
}

var updateProfileOp = huma.Operation{
	OperationID: "update-profile",
	Summary:     "Change your profile",
	Description: "Fields left out stay as they are. A new email must not belong to another person (409). A changed email is unverified again (`email_verified` false); with an SMTP server configured, a verification message goes to the new address and no other email does until its link is opened.",
	Tags:        []string{"Account"},
	Errors:      []int{http.StatusConflict, http.StatusUnprocessableEntity},
}

func (s *Server) updateProfile(ctx context.Context, in *struct{ Body ProfilePatch }) (*profileOutput, error) {
	p, err := s.opts.Accounts.UpdateProfile(ctx, principal(ctx), accounts.ProfileUpdate{Name: in.Body.Name, Email: in.Body.Email})
	if err != nil {
		return nil, err
	}
	if in.Body.Email != nil && !p.EmailVerified && s.opts.Verification != nil {
		s.opts.Verification.Start(ctx, p.UserID)
	}
	return newProfileOutput(p), nil
}

var getCompanyOp = huma.Operation{
	OperationID: "get-company",
	Summary:     "Get the company record",
	Description: "The account's billing identity. Every field is a string or null (all null until set).",
	Tags:        []string{"Account"},
}

func (s *Server) getCompany(ctx context.Context, _ *struct{}) (*companyOutput, error) {
	c, err := s.opts.Accounts.Company(ctx, principal(ctx).AccountID)
	if err != nil {
		return nil, err
	}
	return newCompanyOutput(c), nil
}

var replaceCompanyOp = huma.Operation{
	OperationID: "replace-company",
	Summary:     "Replace the company record",
	Description: "Owners and admins. Sets all five fields: a field left out or null becomes null. Empty strings are refused (use null).",
	Tags:        []string{"Account"},
	Errors:      []int{http.StatusUnprocessableEntity},
}

func (s *Server) replaceCompany(ctx context.Context, in *struct{ Body CompanyBody }) (*companyOutput, error) {
	b := in.Body
	upd := accounts.ReplaceCompany(accounts.Company{LegalName: b.LegalName, Website: b.Website, BillingEmail: b.BillingEmail, Address: b.Address, VATID: b.VATID})
	c, err := s.opts.Accounts.UpdateCompany(ctx, principal(ctx).AccountID, upd)
	if err != nil {
		return nil, err
	}
	return newCompanyOutput(c), nil
}

var updateCompanyOp = huma.Operation{
	OperationID: "update-company",
	Summary:     "Change the company record",
	Description: "Owners and admins. A merge: a field left out keeps its value, a field set to null is cleared, a string sets it.",
	Tags:        []string{"Account"},
	Errors:      []int{http.StatusUnprocessableEntity},
}

func (s *Server) updateCompany(ctx context.Context, in *struct{ Body CompanyPatch }) (*companyOutput, error) {
	b := in.Body
	upd := accounts.CompanyUpdate{LegalName: accounts.Change[string](b.LegalName), Website: accounts.Change[string](b.Website),
		BillingEmail: accounts.Change[string](b.BillingEmail), Address: accounts.Change[string](b.Address), VATID: accounts.Change[string](b.VATID)}
	c, err := s.opts.Accounts.UpdateCompany(ctx, principal(ctx).AccountID, upd)
	if err != nil {
		return nil, err
	}
	return newCompanyOutput(c), nil
}
