package probe

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// Store is the probes' storage (postgres.ProbeStore).
type Store interface {
	CreateProbe(ctx context.Context, accountID, mcpID string, c alerting.ProbeCreate, max int, firstRun time.Time) (alerting.Probe, error)
	Probe(ctx context.Context, accountID, probeID string) (alerting.Probe, error)
	Probes(ctx context.Context, accountID, mcpID string) ([]alerting.Probe, error)
	AccountProbes(ctx context.Context, accountID string) ([]alerting.Probe, error)
	UpdateProbe(ctx context.Context, accountID, probeID string, u alerting.ProbeUpdate, nextRun time.Time) (alerting.Probe, error)
	DeleteProbe(ctx context.Context, accountID, probeID string) error
	SetBadge(ctx context.Context, accountID, probeID, token string) error
	BadgeProbe(ctx context.Context, token string) (accountID string, p alerting.Probe, err error)
}

// Results reads the checks' results (clickhouse.Reads).
type Results interface {
	ProbeResults(ctx context.Context, mcpID, probeID string, f alerting.ProbeResultFilter) (alerting.ProbeResultPage, error)
	ProbeUptimes(ctx context.Context, mcpIDs, probeIDs []string, now time.Time) (map[string]alerting.ProbeUptime, error)
	ProbeDownBuckets(ctx context.Context, mcpID string, from, to time.Time) ([]alerting.DownBucket, error)
}

// Service implements alerting.ProbeService on the store, the results and
// the checker's create-time guard.
type Service struct {
	Store   Store
	Results Results
	Checker *Checker
	// MaxPerAccount caps an account's probes (probes.max_per_account;
	// alerting.MaxProbesPerAccount by default, 0 allows none).
	MaxPerAccount int
	Log           *slog.Logger
}

var _ alerting.ProbeService = (*Service)(nil)

// firstRun is when a new or re-pointed probe is first checked: within a
// few seconds (spread, so probes created together do not run together).
func firstRun(now time.Time) time.Time {
	return now.Add(time.Duration(rand.Int64N(int64(3 * time.Second))))
}

// CreateProbe implements alerting.ProbeService.
func (s *Service) CreateProbe(ctx context.Context, accountID, mcpID string, c alerting.ProbeCreate) (alerting.Probe, error) {
	if err := c.Validate(); err != nil {
		return alerting.Probe{}, err
	}
	if err := s.Checker.CheckURL(ctx, c.URL); err != nil {
		return alerting.Probe{}, err
	}
	p, err := s.Store.CreateProbe(ctx, accountID, mcpID, c, s.MaxPerAccount, firstRun(time.Now()))
	if err != nil {
		return p, err
	}
	p.Uptime = alerting.ProbeUptime{}
	return p, nil
}

// Probe implements alerting.ProbeService.
func (s *Service) Probe(ctx context.Context, accountID, probeID string) (alerting.Probe, error) {
	p, err := s.Store.Probe(ctx, accountID, probeID)
	if err != nil {
		return p, err
	}
	ps := []alerting.Probe{p}
	s.withUptime(ctx, ps)
	return ps[0], nil
}

// Probes implements alerting.ProbeService.
func (s *Service) Probes(ctx context.Context, accountID, mcpID string) ([]alerting.Probe, error) {
	ps, err := s.Store.Probes(ctx, accountID, mcpID)
	if err != nil {
		return nil, err
	}
	s.withUptime(ctx, ps)
	return ps, nil
}

// AccountProbes lists every probe of the account with its uptime.
func (s *Service) AccountProbes(ctx context.Context, accountID string) ([]alerting.Probe, error) {
	ps, err := s.Store.AccountProbes(ctx, accountID)
	if err != nil {
		return nil, err
	}
	s.withUptime(ctx, ps)
	return ps, nil
}

// withUptime fills the probes' uptime; the metrics store being down
// leaves it null rather than failing the read (the state is PostgreSQL's).
func (s *Service) withUptime(ctx context.Context, ps []alerting.Probe) {
	if len(ps) == 0 || s.Results == nil {
		return
	}
	var mcps, ids []string
	seen := map[string]bool{}
	for _, p := range ps {
		ids = append(ids, p.ID)
		if !seen[p.MCPID] {
			seen[p.MCPID] = true
			mcps = append(mcps, p.MCPID)
		}
	}
	up, err := s.Results.ProbeUptimes(ctx, mcps, ids, time.Now())
	if err != nil {
		if s.Log != nil {
			s.Log.Warn("probe uptime unavailable", "error", err)
		}
		return
	}
	for i := range ps {
		ps[i].Uptime = up[ps[i].ID]
	}
}

// UpdateProbe implements alerting.ProbeService.
func (s *Service) UpdateProbe(ctx context.Context, accountID, probeID string, u alerting.ProbeUpdate) (alerting.Probe, error) {
	if err := u.Validate(); err != nil {
		return alerting.Probe{}, err
	}
	if u.URL != nil {
		if err := s.Checker.CheckURL(ctx, *u.URL); err != nil {
			return alerting.Probe{}, err
		}
	}
	if _, err := s.Store.UpdateProbe(ctx, accountID, probeID, u, firstRun(time.Now())); err != nil {
		return alerting.Probe{}, err
	}
	return s.Probe(ctx, accountID, probeID)
}

// DeleteProbe implements alerting.ProbeService.
func (s *Service) DeleteProbe(ctx context.Context, accountID, probeID string) error {
	return s.Store.DeleteProbe(ctx, accountID, probeID)
}

// Bounds of a results read.
const (
	DefaultResultsLimit = 100
	MaxResultsLimit     = 1000
	// MaxResultsRange bounds to - from.
	MaxResultsRange = 31 * 24 * time.Hour
)

// ProbeResults implements alerting.ProbeService. from defaults to 24
// hours before to, to to now.
func (s *Service) ProbeResults(ctx context.Context, accountID, probeID string, f alerting.ProbeResultFilter) (alerting.ProbeResultPage, error) {
	p, err := s.Store.Probe(ctx, accountID, probeID)
	if err != nil {
		return alerting.ProbeResultPage{}, err
	}
	if f.To.IsZero() {
		f.To = time.Now().UTC()
	}
	if f.From.IsZero() {
		f.From = f.To.Add(-24 * time.Hour)
	}
	switch {
	case f.From.After(f.To):
		return alerting.ProbeResultPage{}, telemetry.FieldError(telemetry.EINVALIDRANGE, "query.from", "must not be after to")
	case f.To.Sub(f.From) > MaxResultsRange:
		return alerting.ProbeResultPage{}, telemetry.FieldError(telemetry.ERANGETOOLARGE, "query.from", "a results read covers at most 31 days")
	}
	if f.Limit <= 0 {
		f.Limit = DefaultResultsLimit
	}
	f.Limit = min(f.Limit, MaxResultsLimit)
	return s.Results.ProbeResults(ctx, p.MCPID, probeID, f)
}

func notFoundBadge() error { return telemetry.Errorf(telemetry.ENOTFOUND, "Badge not found.") }

var _ alerting.ProbeBadgeService = (*Service)(nil)
