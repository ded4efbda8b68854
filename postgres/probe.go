package postgres

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/internal/ids"
)

const prefixProbe = "prb_"

// ProbeStore keeps probes (docs/probes.md): their definitions, sealed
// headers, current state, schedule and lease. Every query a route calls is
// scoped by account; headers are opened only for the prober (Claim).
type ProbeStore struct {
	db  *DB
	box *alerting.SecretBox
}

// NewProbeStore returns the store; box seals the probes' headers.
func NewProbeStore(db *DB, box *alerting.SecretBox) *ProbeStore {
	return &ProbeStore{db: db, box: box}
}

const probeColumns = `id, mcp_id, url, interval_seconds, timeout_ms, header_hints, enabled, status, last_checked_at,
	last_error, latency_ms, protocol_version, tls_expires_at, down_since, consecutive_failures, created_at`

func scanProbe(row pgx.Row) (alerting.Probe, error) {
	var p alerting.Probe
	var hints []byte
	err := row.Scan(&p.ID, &p.MCPID, &p.URL, &p.IntervalSeconds, &p.TimeoutMs, &hints, &p.Enabled, &p.Status, &p.LastCheckedAt,
		&p.LastError, &p.LatencyMs, &p.ProtocolVersion, &p.TLSExpiresAt, &p.DownSince, &p.ConsecutiveFailures, &p.CreatedAt)
	if err != nil {
		return alerting.Probe{}, wrap(err)
	}
	p.Headers = map[string]string{}
	_ = json.Unmarshal(hints, &p.Headers)
	p.LastCheckedAt, p.TLSExpiresAt, p.DownSince, p.CreatedAt = utcPtr(p.LastCheckedAt), utcPtr(p.TLSExpiresAt), utcPtr(p.DownSince), utc(p.CreatedAt)
	if p.TLSExpiresAt != nil {
		if w := alerting.CertWarning(*p.TLSExpiresAt, time.Now()); w != "" {
			p.Warning = &w
		}
	}
	return p, nil
}

// seal returns the sealed headers and their hints (nil and {} for none).
func (s *ProbeStore) seal(accountID, probeID string, h map[string]string) ([]byte, []byte, error) {
	hints, _ := json.Marshal(alerting.ProbeHeaderHints(h))
	if len(h) == 0 {
		return nil, hints, nil
	}
	plain, err := json.Marshal(h)
	if err != nil {
		return nil, nil, err
	}
	sealed, err := s.box.Seal(plain, alerting.ProbeHeadersAssociatedData(accountID, probeID))
	return sealed, hints, err
}

// CreateProbe stores a probe of the account's MCP, its first check at
// firstRun; at most max probes per account (ELIMITREACHED), ENOTFOUND for
// another account's MCP. c must be valid.
func (s *ProbeStore) CreateProbe(ctx context.Context, accountID, mcpID string, c alerting.ProbeCreate, max int, firstRun time.Time) (alerting.Probe, error) {
	if !alerting.PlausibleID(mcpID) {
		return alerting.Probe{}, notFound("MCP")
	}
	id := ids.New(prefixProbe)
	sealed, hints, err := s.seal(accountID, id, c.Headers)
	if err != nil {
		return alerting.Probe{}, err
	}
	var p alerting.Probe
	err = pgx.BeginFunc(ctx, s.db.Pool, func(tx pgx.Tx) error {
		// The account row's lock serialises creations, so the cap holds.
		if _, err := tx.Exec(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE`, accountID); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM probes WHERE account_id = $1`, accountID).Scan(&n); err != nil {
			return err
		}
		if n >= max {
			return telemetry.Errorf(telemetry.ELIMITREACHED, "An account holds at most %d probes; delete one to create another.", max)
		}
		var err error
		p, err = scanProbe(tx.QueryRow(ctx, `INSERT INTO probes (id, account_id, mcp_id, url, interval_seconds, timeout_ms,
				headers_sealed, header_hints, enabled, next_run_at)
			SELECT $1, account_id, id, $4, $5, $6, $7, $8, $9, $10 FROM mcps WHERE id = $2 AND account_id = $3
			RETURNING `+probeColumns, id, mcpID, accountID, c.URL, *c.IntervalSeconds, *c.TimeoutMs, sealed, hints, *c.Enabled, firstRun))
		if telemetry.ErrorCode(err) == telemetry.ENOTFOUND {
			return notFound("MCP")
		}
		return err
	})
	return p, wrap(err)
}

// Probe returns one probe of the account. Returns ENOTFOUND.
func (s *ProbeStore) Probe(ctx context.Context, accountID, probeID string) (alerting.Probe, error) {
	if !alerting.PlausibleID(probeID) {
		return alerting.Probe{}, notFound("Probe")
	}
	p, err := scanProbe(s.db.Pool.QueryRow(ctx, `SELECT `+probeColumns+` FROM probes WHERE id = $1 AND account_id = $2`, probeID, accountID))
	if telemetry.ErrorCode(err) == telemetry.ENOTFOUND {
		return p, notFound("Probe")
	}
	return p, err
}

// Probes returns the MCP's probes, oldest first; ENOTFOUND for an MCP not
// in the account.
func (s *ProbeStore) Probes(ctx context.Context, accountID, mcpID string) ([]alerting.Probe, error) {
	var one int
	if err := s.db.Pool.QueryRow(ctx, `SELECT 1 FROM mcps WHERE id = $1 AND account_id = $2`, mcpID, accountID).Scan(&one); err != nil {
		if isNotFound(err) {
			return nil, notFound("MCP")
		}
		return nil, wrap(err)
	}
	rows, err := s.db.Pool.Query(ctx, `SELECT `+probeColumns+` FROM probes WHERE mcp_id = $1 AND account_id = $2 ORDER BY created_at, id`, mcpID, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (alerting.Probe, error) { return scanProbe(r) })
}

// AccountProbes returns every probe of the account, oldest first (/mcp's
// list_probes).
func (s *ProbeStore) AccountProbes(ctx context.Context, accountID string) ([]alerting.Probe, error) {
	rows, err := s.db.Pool.Query(ctx, `SELECT `+probeColumns+` FROM probes WHERE account_id = $1 ORDER BY created_at, id`, accountID)
	if err != nil {
		return nil, wrap(err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (alerting.Probe, error) { return scanProbe(r) })
}

// UpdateProbe applies u (valid); a new URL or new headers reset the
// state to unknown and make the probe due at nextRun. Returns ENOTFOUND.
func (s *ProbeStore) UpdateProbe(ctx context.Context, accountID, probeID string, u alerting.ProbeUpdate, nextRun time.Time) (alerting.Probe, error) {
	if _, err := s.Probe(ctx, accountID, probeID); err != nil {
		return alerting.Probe{}, err
	}
	var sealed, hints []byte
	if u.Headers != nil {
		var err error
		if sealed, hints, err = s.seal(accountID, probeID, *u.Headers); err != nil {
			return alerting.Probe{}, err
		}
	}
	reset := u.URL != nil || u.Headers != nil
	p, err := scanProbe(s.db.Pool.QueryRow(ctx, `UPDATE probes SET
			url = COALESCE($3, url), interval_seconds = COALESCE($4, interval_seconds), timeout_ms = COALESCE($5, timeout_ms),
			headers_sealed = CASE WHEN $6 THEN $7 ELSE headers_sealed END,
			header_hints = CASE WHEN $6 THEN $8::jsonb ELSE header_hints END,
			enabled = COALESCE($9, enabled),
			status = CASE WHEN $10 THEN 'unknown' ELSE status END,
			consecutive_failures = CASE WHEN $10 THEN 0 ELSE consecutive_failures END,
			down_since = CASE WHEN $10 THEN NULL ELSE down_since END,
			last_error = CASE WHEN $10 THEN NULL ELSE last_error END,
			next_run_at = CASE WHEN $10 OR $4::int IS NOT NULL OR ($9::bool AND NOT enabled) THEN $11 ELSE next_run_at END
		WHERE id = $1 AND account_id = $2 RETURNING `+probeColumns,
		probeID, accountID, u.URL, u.IntervalSeconds, u.TimeoutMs, u.Headers != nil, sealed, hints, u.Enabled, reset, nextRun))
	if telemetry.ErrorCode(err) == telemetry.ENOTFOUND {
		return p, notFound("Probe")
	}
	return p, err
}

// DeleteProbe removes a probe. Returns ENOTFOUND.
func (s *ProbeStore) DeleteProbe(ctx context.Context, accountID, probeID string) error {
	tag, err := s.db.Pool.Exec(ctx, `DELETE FROM probes WHERE id = $1 AND account_id = $2`, probeID, accountID)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("Probe")
	}
	return nil
}

// DueProbe is a probe an instance claimed: what a check needs.
type DueProbe struct {
	ID, AccountID, MCPID, URL string
	Headers                   map[string]string
	Interval, Timeout         time.Duration
	// DueAt is when the check was due (the schedule's phase).
	DueAt time.Time
}

// Claim leases up to limit due probes to owner, each for its timeout
// plus margin: rows another instance is claiming are skipped (SKIP
// LOCKED), leased rows are passed over until their lease ends.
func (s *ProbeStore) Claim(ctx context.Context, owner string, limit int, margin time.Duration) ([]DueProbe, error) {
	if limit < 1 {
		return nil, nil
	}
	rows, err := s.db.Pool.Query(ctx, `WITH c AS (
			SELECT id FROM probes
			WHERE enabled AND next_run_at <= now() AND (lease_until IS NULL OR lease_until < now())
			ORDER BY next_run_at LIMIT $2 FOR UPDATE SKIP LOCKED)
		UPDATE probes p SET lease_owner = $1, lease_until = now() + (p.timeout_ms + $3) * interval '1 millisecond'
		FROM c WHERE p.id = c.id
		RETURNING p.id, p.account_id, p.mcp_id, p.url, p.headers_sealed, p.interval_seconds, p.timeout_ms, p.next_run_at`,
		owner, limit, margin.Milliseconds())
	if err != nil {
		return nil, wrap(err)
	}
	var out []DueProbe
	var d DueProbe
	var sealed []byte
	var interval, timeout int
	_, err = pgx.ForEachRow(rows, []any{&d.ID, &d.AccountID, &d.MCPID, &d.URL, &sealed, &interval, &timeout, &d.DueAt}, func() error {
		d.Interval, d.Timeout, d.DueAt = time.Duration(interval)*time.Second, time.Duration(timeout)*time.Millisecond, utc(d.DueAt)
		d.Headers = nil
		if sealed != nil {
			plain, err := s.box.Open(sealed, alerting.ProbeHeadersAssociatedData(d.AccountID, d.ID))
			if err != nil {
				return fmt.Errorf("postgres: headers of probe %s: %w", d.ID, err)
			}
			if err := json.Unmarshal(plain, &d.Headers); err != nil {
				return fmt.Errorf("postgres: headers of probe %s: %w", d.ID, err)
			}
		}
		out = append(out, d)
		sealed = nil
		return nil
	})
	return out, wrap(err)
}

// Record stores a check's outcome as the probe's state, schedules its
// next check at next and ends owner's lease. It reports false when the
// lease was lost (the probe was deleted, or its lease ended and another
// instance took it), in which case nothing is written.
func (s *ProbeStore) Record(ctx context.Context, owner, probeID string, c alerting.ProbeCheck, next time.Time) (bool, error) {
	var errText, proto *string
	if t := c.ErrorText(); t != "" {
		errText = &t
	}
	if c.ProtocolVersion != "" {
		proto = &c.ProtocolVersion
	}
	var expires *time.Time
	if !c.TLSExpiresAt.IsZero() {
		expires = &c.TLSExpiresAt
	}
	status := alerting.ProbeDown
	if c.OK {
		status = alerting.ProbeUp
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE probes SET status = $3, last_checked_at = $4, last_error = $5, latency_ms = $6,
			protocol_version = COALESCE($7, protocol_version), tls_expires_at = COALESCE($8, tls_expires_at),
			consecutive_failures = CASE WHEN $9 THEN 0 ELSE consecutive_failures + 1 END,
			down_since = CASE WHEN $9 THEN NULL ELSE COALESCE(down_since, $4) END,
			next_run_at = $10, lease_owner = NULL, lease_until = NULL
		WHERE id = $1 AND lease_owner = $2`, probeID, owner, status, c.At, errText, c.LatencyMs, proto, expires, c.OK, next)
	if err != nil {
		return false, wrap(err)
	}
	return tag.RowsAffected() == 1, nil
}

var _ analytics.ProbeStatReader = (*ProbeStore)(nil)

// ProbeStats implements analytics.ProbeStatReader: per MCP of mcpIDs
// with an enabled probe, the probe with the most consecutive failures.
func (s *ProbeStore) ProbeStats(ctx context.Context, mcpIDs []string) (map[string]analytics.ProbeStat, error) {
	return probeStats(ctx, s.db.Pool, mcpIDs)
}

// probeStats is ProbeStats on q (a pool or a transaction).
func probeStats(ctx context.Context, q querier, mcpIDs []string) (map[string]analytics.ProbeStat, error) {
	rows, err := q.Query(ctx, `SELECT DISTINCT ON (mcp_id) mcp_id, status, consecutive_failures, down_since, COALESCE(last_error, '')
		FROM probes WHERE mcp_id = ANY($1) AND enabled
		ORDER BY mcp_id, consecutive_failures DESC, id`, mcpIDs)
	if err != nil {
		return nil, wrap(err)
	}
	out := map[string]analytics.ProbeStat{}
	var mcp string
	var st analytics.ProbeStat
	var since *time.Time
	_, err = pgx.ForEachRow(rows, []any{&mcp, &st.Status, &st.Failures, &since, &st.LastError}, func() error {
		st.DownSince = time.Time{}
		if since != nil {
			st.DownSince = since.UTC()
		}
		out[mcp] = st
		return nil
	})
	return out, wrap(err)
}

// SetBadge stores the hash of a new badge token for the probe (replacing
// any earlier one, which stops working). Returns ENOTFOUND.
func (s *ProbeStore) SetBadge(ctx context.Context, accountID, probeID, token string) error {
	var hash []byte
	if token != "" {
		sum := sha256.Sum256([]byte(token))
		hash = sum[:]
	}
	tag, err := s.db.Pool.Exec(ctx, `UPDATE probes SET badge_token_hash = $3 WHERE id = $1 AND account_id = $2`, probeID, accountID, hash)
	if err != nil {
		return wrap(err)
	}
	if tag.RowsAffected() == 0 {
		return notFound("Probe")
	}
	return nil
}

// BadgeProbe returns the probe a badge token shows. Returns ENOTFOUND.
func (s *ProbeStore) BadgeProbe(ctx context.Context, token string) (accountID string, p alerting.Probe, err error) {
	sum := sha256.Sum256([]byte(token))
	err = s.db.Pool.QueryRow(ctx, `SELECT account_id FROM probes WHERE badge_token_hash = $1`, sum[:]).Scan(&accountID)
	if err != nil {
		if isNotFound(err) {
			return "", p, notFound("Badge")
		}
		return "", p, wrap(err)
	}
	p, err = scanProbe(s.db.Pool.QueryRow(ctx, `SELECT `+probeColumns+` FROM probes WHERE badge_token_hash = $1`, sum[:]))
	return accountID, p, err
}
