package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// AccountService stores accounts, profiles and company records. Each method
// acts on the principal's own account or person only.
type AccountService struct {
	db *DB
}

var _ accounts.AccountService = (*AccountService)(nil)

// NewAccountService returns the service.
func NewAccountService(db *DB) *AccountService { return &AccountService{db: db} }

var errAccountNotFound = telemetry.Errorf(telemetry.ENOTFOUND, "Account not found.")

// Account implements accounts.AccountService.
func (s *AccountService) Account(ctx context.Context, p *accounts.Principal) (*accounts.Account, error) {
	return s.scanAccount(p, s.db.Pool.QueryRow(ctx, `SELECT id, name, plan, created_at, retention_days FROM accounts WHERE id = $1`, p.AccountID))
}

// UpdateAccount implements accounts.AccountService.
func (s *AccountService) UpdateAccount(ctx context.Context, p *accounts.Principal, upd accounts.AccountUpdate) (*accounts.Account, error) {
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	return s.scanAccount(p, s.db.Pool.QueryRow(ctx, `UPDATE accounts SET name = COALESCE($2, name),
		retention_days = CASE WHEN $3::integer IS NULL THEN retention_days WHEN $3::integer = 0 THEN NULL ELSE $3::integer END
		WHERE id = $1
		RETURNING id, name, plan, created_at, retention_days`, p.AccountID, upd.Name, upd.RetentionDays))
}

func (s *AccountService) scanAccount(p *accounts.Principal, r pgx.Row) (*accounts.Account, error) {
	a := &accounts.Account{Role: p.Role}
	err := r.Scan(&a.ID, &a.Name, &a.Plan, &a.CreatedAt, &a.RetentionDays)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, errAccountNotFound
	} else if err != nil {
		return nil, wrap(err)
	}
	a.CreatedAt = a.CreatedAt.UTC()
	return a, nil
}

// Profile implements accounts.AccountService.
func (s *AccountService) Profile(ctx context.Context, p *accounts.Principal) (*accounts.Profile, error) {
	return scanProfile(s.db.Pool.QueryRow(ctx, `SELECT `+profileColumns+` FROM users WHERE id = $1`, p.UserID))
}

// UpdateProfile implements accounts.AccountService.
func (s *AccountService) UpdateProfile(ctx context.Context, p *accounts.Principal, upd accounts.ProfileUpdate) (*accounts.Profile, error) {
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	var emailKey *string
	if upd.Email != nil {
		k := accounts.EmailKey(*upd.Email)
		emailKey = &k
	}
	// A changed address is unverified again, and a token made for the
	// old one no longer verifies anything (it names the old address).
	prof, err := scanProfile(s.db.Pool.QueryRow(ctx, `UPDATE users SET name = COALESCE($2, name),
		email_verified_at = CASE WHEN $3::text IS NULL OR $3::text = email THEN email_verified_at END,
		verification_sent_at = CASE WHEN $3::text IS NULL OR $3::text = email THEN verification_sent_at END,
		email = COALESCE($3, email), email_key = COALESCE($4, email_key) WHERE id = $1
		RETURNING `+profileColumns, p.UserID, upd.Name, upd.Email, emailKey))
	if isUniqueViolation(err) {
		return nil, telemetry.FieldError(telemetry.ECONFLICT, "body.email", "belongs to another person")
	}
	return prof, wrap(err)
}

const profileColumns = `id, email, name, email_verified_at IS NOT NULL`

func scanProfile(r pgx.Row) (*accounts.Profile, error) {
	var p accounts.Profile
	err := r.Scan(&p.UserID, &p.Email, &p.Name, &p.EmailVerified)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, telemetry.Errorf(telemetry.ENOTFOUND, "Person not found.")
	} else if err != nil {
		return nil, err
	}
	return &p, nil
}

// Company implements accounts.AccountService.
func (s *AccountService) Company(ctx context.Context, accountID string) (*accounts.Company, error) {
	c, err := scanCompany(s.db.Pool.QueryRow(ctx, `SELECT legal_name, website, billing_email, address, vat_id
		FROM companies WHERE account_id = $1`, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return &accounts.Company{}, nil
	}
	return c, wrap(err)
}

// UpdateCompany implements accounts.AccountService: one upsert in which
// each column keeps its value unless the update names it.
func (s *AccountService) UpdateCompany(ctx context.Context, accountID string, upd accounts.CompanyUpdate) (*accounts.Company, error) {
	if err := upd.Validate(); err != nil {
		return nil, err
	}
	args := []any{accountID}
	for _, ch := range []accounts.Change[string]{upd.LegalName, upd.Website, upd.BillingEmail, upd.Address, upd.VATID} {
		args = append(args, ch.Set, ch.Value)
	}
	c, err := scanCompany(s.db.Pool.QueryRow(ctx, `
		INSERT INTO companies AS c (account_id, legal_name, website, billing_email, address, vat_id)
		VALUES ($1, $3, $5, $7, $9, $11)
		ON CONFLICT (account_id) DO UPDATE SET
			legal_name    = CASE WHEN $2::bool  THEN EXCLUDED.legal_name    ELSE c.legal_name END,
			website       = CASE WHEN $4::bool  THEN EXCLUDED.website       ELSE c.website END,
			billing_email = CASE WHEN $6::bool  THEN EXCLUDED.billing_email ELSE c.billing_email END,
			address       = CASE WHEN $8::bool  THEN EXCLUDED.address       ELSE c.address END,
			vat_id        = CASE WHEN $10::bool THEN EXCLUDED.vat_id        ELSE c.vat_id END
		RETURNING legal_name, website, billing_email, address, vat_id`, args...))
	return c, wrap(err)
}

func scanCompany(r pgx.Row) (*accounts.Company, error) {
	var c accounts.Company
	if err := r.Scan(&c.LegalName, &c.Website, &c.BillingEmail, &c.Address, &c.VATID); err != nil {
		return nil, err
	}
	return &c, nil
}

// Retentions lists every account's effective retention (its own, at most
// the installation's, which applies when it has none; 0: forever) with its
// MCPs, for the retention pass.
func (s *AccountService) Retentions(ctx context.Context, installation int) ([]analytics.AccountRetention, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT a.id, a.retention_days, COALESCE(array_agg(m.id ORDER BY m.id) FILTER (WHERE m.id IS NOT NULL), '{}')
		FROM accounts a LEFT JOIN mcps m ON m.account_id = a.id GROUP BY a.id ORDER BY a.id`)
	if err != nil {
		return nil, wrap(err)
	}
	list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (analytics.AccountRetention, error) {
		var a analytics.AccountRetention
		var own *int
		err := r.Scan(&a.AccountID, &own, &a.MCPIDs)
		a.Days = accounts.EffectiveRetention(own, installation)
		return a, err
	})
	return list, wrap(err)
}
