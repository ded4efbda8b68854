package alerting

import (
	"context"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/analytics"
)

// Service level objectives (docs/slos.md): "99.5% of the search tool's
// calls succeed over 28 days". An SLO's indicator (SLI) is the fraction of
// good calls over its window; its error budget the bad calls the objective
// allows; it pages or files a ticket when the budget burns fast
// (BurnAlerts, the SRE Workbook's multiwindow, multi-burn-rate alerts).

// SLO kinds.
const (
	// SLOAvailability counts a call bad when it failed with one of the
	// SLO's error kinds.
	SLOAvailability = "availability"
	// SLOLatency counts a call (with a duration) bad when it took longer
	// than threshold_ms, one of analytics.LatencyLadderMs.
	SLOLatency = "latency"
)

// Limits and defaults of an SLO's fields.
const (
	DefaultSLOWindowDays = 28
	MaxSLOWindowDays     = 90
	// MinObjective and MaxObjective bound the objective: 50% to 99.999%
	// (an objective of 1 has no budget to burn).
	MinObjective = 0.5
	MaxObjective = 0.99999
	// MaxSLOsPerAccount caps an account's SLOs (like rules).
	MaxSLOsPerAccount = 1000
)

// LadderText lists the thresholds a latency SLO may take, for messages
// and docs: "50, 100, …, 30000".
func LadderText() string {
	s := make([]string, len(analytics.LatencyLadderMs))
	for i, t := range analytics.LatencyLadderMs {
		s[i] = strconv.FormatFloat(t, 'f', -1, 64)
	}
	return strings.Join(s, ", ")
}

// SLO severities: the least alert state that notifies.
const (
	SeverityTicket = "ticket" // tickets and pages notify (default)
	SeverityPage   = "page"   // pages only; tickets are recorded, not delivered
)

// DefaultBadErrorKinds are the error kinds an availability SLO counts bad
// unless told otherwise: every kind except invalid_params and unknown_tool,
// which are the client's mistakes (an agent sending arguments the schema
// refuses, or guessing a tool name), not the server failing.
func DefaultBadErrorKinds() []string {
	var out []string
	for _, k := range analytics.ErrorKinds {
		if k != analytics.ErrorKindInvalidParams && k != analytics.ErrorKindUnknownTool {
			out = append(out, k)
		}
	}
	return out
}

// SLO is a service level objective on one MCP, as stored.
type SLO struct {
	ID          string   `json:"id"`
	MCPID       string   `json:"mcp_id"`
	Name        string   `json:"name"`
	Kind        string   `json:"kind"`
	Objective   float64  `json:"objective"`
	ThresholdMs *float64 `json:"threshold_ms"`
	Tool        *string  `json:"tool"`
	// ErrorKinds are the kinds an availability SLO counts bad; nil for a
	// latency SLO.
	ErrorKinds []string `json:"error_kinds"`
	WindowDays int      `json:"window_days"`
	Channels   []string `json:"channels"`
	Severity   string   `json:"severity"`
	Enabled    bool     `json:"enabled"`
	// State is the last evaluation's: ok, ticket or page.
	State           string     `json:"state"`
	LastAlertAt     *time.Time `json:"last_alert_at"`
	SnoozedUntil    *time.Time `json:"snoozed_until"`
	NotifyOnResolve bool       `json:"notify_on_resolve"`
	// RenotifyMinutes, while the SLO stays in a state that notifies,
	// delivers its alert again every so many minutes; nil never.
	RenotifyMinutes *int      `json:"renotify_minutes"`
	CreatedAt       time.Time `json:"created_at"`
}

// Window is the SLO's window as a duration.
func (s SLO) Window() time.Duration {
	return time.Duration(s.WindowDays) * 24 * time.Hour
}

// Snoozed reports whether the SLO's alerts are muted at now.
func (s SLO) Snoozed(now time.Time) bool {
	return s.SnoozedUntil != nil && now.Before(*s.SnoozedUntil)
}

// Notifies reports whether an alert state is severe enough to notify.
func (s SLO) Notifies(state string) bool {
	return state == SLOStatePage || (state == SLOStateTicket && s.Severity != SeverityPage)
}

// SLOCreate is the body of POST /v1/mcps/{id}/slos.
type SLOCreate struct {
	Name            string     `json:"name"`
	Kind            string     `json:"kind"`
	Objective       float64    `json:"objective"`
	ThresholdMs     *float64   `json:"threshold_ms,omitempty"`
	Tool            *string    `json:"tool,omitempty"`
	ErrorKinds      []string   `json:"error_kinds,omitempty"`
	WindowDays      *int       `json:"window_days,omitempty"`
	Channels        []string   `json:"channels"`
	Severity        *string    `json:"severity,omitempty"`
	Enabled         *bool      `json:"enabled,omitempty"`
	SnoozedUntil    *time.Time `json:"snoozed_until,omitempty"`
	NotifyOnResolve *bool      `json:"notify_on_resolve,omitempty"`
	RenotifyMinutes *int       `json:"renotify_minutes,omitempty"`
}

// Validate checks every field (EINVALID on the first at fault).
func (c SLOCreate) Validate() error {
	if err := checkText("body.name", c.Name, MaxRuleNameLen); err != nil {
		return err
	}
	if strings.TrimSpace(c.Name) == "" {
		return telemetry.FieldError(telemetry.EINVALID, "body.name", "The name must not be blank.")
	}
	switch c.Kind {
	case SLOAvailability:
		if c.ThresholdMs != nil {
			return telemetry.FieldError(telemetry.EINVALID, "body.threshold_ms", "threshold_ms is for latency SLOs only.")
		}
		for i, k := range c.ErrorKinds {
			if !analytics.ValidErrorKind(k) || slices.Contains(c.ErrorKinds[:i], k) {
				return telemetry.FieldError(telemetry.EINVALID, "body.error_kinds", "error_kinds must name distinct kinds among %s.", strings.Join(analytics.ErrorKinds, ", "))
			}
		}
		if c.ErrorKinds != nil && len(c.ErrorKinds) == 0 {
			return telemetry.FieldError(telemetry.EINVALID, "body.error_kinds", "Name at least one error kind, or leave error_kinds out for the default.")
		}
	case SLOLatency:
		// The SLO rollups count the calls at or under each threshold of
		// a fixed ladder: a threshold between two rungs could only be
		// estimated (docs/slos.md).
		if c.ThresholdMs == nil || !slices.Contains(analytics.LatencyLadderMs, *c.ThresholdMs) {
			return telemetry.FieldError(telemetry.EINVALID, "body.threshold_ms", "A latency SLO needs threshold_ms, one of %s (milliseconds).", LadderText())
		}
		if c.ErrorKinds != nil {
			return telemetry.FieldError(telemetry.EINVALID, "body.error_kinds", "error_kinds is for availability SLOs only.")
		}
	default:
		return telemetry.FieldError(telemetry.EINVALID, "body.kind", "The kind must be availability or latency.")
	}
	if math.IsNaN(c.Objective) || c.Objective < MinObjective || c.Objective > MaxObjective {
		return telemetry.FieldError(telemetry.EINVALID, "body.objective", "The objective is a fraction from %v to %v (99.5%% is 0.995).", MinObjective, MaxObjective)
	}
	if c.Tool != nil {
		if err := checkText("body.tool", *c.Tool, MaxRuleToolLen); err != nil {
			return err
		}
	}
	if c.WindowDays != nil && (*c.WindowDays < 1 || *c.WindowDays > MaxSLOWindowDays) {
		return telemetry.FieldError(telemetry.EINVALID, "body.window_days", "window_days must be 1 to %d.", MaxSLOWindowDays)
	}
	if c.Severity != nil && *c.Severity != SeverityTicket && *c.Severity != SeverityPage {
		return telemetry.FieldError(telemetry.EINVALID, "body.severity", "The severity must be ticket or page.")
	}
	if c.SnoozedUntil != nil && (c.SnoozedUntil.Year() < 1 || c.SnoozedUntil.Year() > 9999) {
		return telemetry.FieldError(telemetry.EINVALID, "body.snoozed_until", "snoozed_until must be an RFC 3339 time between years 1 and 9999.")
	}
	if c.RenotifyMinutes != nil && (*c.RenotifyMinutes < MinRenotifyMinutes || *c.RenotifyMinutes > MaxRenotifyMinutes) {
		return telemetry.FieldError(telemetry.EINVALID, "body.renotify_minutes", "renotify_minutes must be null or %d to %d.", MinRenotifyMinutes, MaxRenotifyMinutes)
	}
	return checkChannels(c.Channels)
}

// SLO returns the new SLO the create describes, in state ok, with its
// defaults filled in. Call Validate first.
func (c SLOCreate) SLO(id, mcpID string, now time.Time) SLO {
	s := SLO{ID: id, MCPID: mcpID, Name: c.Name, Kind: c.Kind, Objective: c.Objective,
		ThresholdMs: cloneFloat(c.ThresholdMs), Tool: cloneString(c.Tool), WindowDays: DefaultSLOWindowDays,
		Channels: slices.Clone(c.Channels), Severity: SeverityTicket, Enabled: c.Enabled == nil || *c.Enabled,
		State: SLOStateOK, SnoozedUntil: cloneTime(c.SnoozedUntil), NotifyOnResolve: c.NotifyOnResolve != nil && *c.NotifyOnResolve,
		RenotifyMinutes: cloneInt(c.RenotifyMinutes), CreatedAt: now.UTC()}
	if c.Kind == SLOAvailability {
		s.ErrorKinds = slices.Clone(c.ErrorKinds)
		if s.ErrorKinds == nil {
			s.ErrorKinds = DefaultBadErrorKinds()
		}
	}
	if c.WindowDays != nil {
		s.WindowDays = *c.WindowDays
	}
	if c.Severity != nil {
		s.Severity = *c.Severity
	}
	if s.SnoozedUntil != nil && !s.Snoozed(now) {
		s.SnoozedUntil = nil
	}
	return s
}

// SLOUpdate is the body of PATCH /v1/slos/{sloId}: absent fields keep
// their value.
type SLOUpdate struct {
	Name            *string        `json:"name,omitempty"`
	Objective       *float64       `json:"objective,omitempty"`
	ThresholdMs     *float64       `json:"threshold_ms,omitempty"`
	Tool            NullableString `json:"tool,omitzero"`
	ErrorKinds      []string       `json:"error_kinds,omitempty"`
	WindowDays      *int           `json:"window_days,omitempty"`
	Channels        []string       `json:"channels,omitempty"`
	Severity        *string        `json:"severity,omitempty"`
	Enabled         *bool          `json:"enabled,omitempty"`
	SnoozedUntil    NullableTime   `json:"snoozed_until,omitzero"`
	NotifyOnResolve *bool          `json:"notify_on_resolve,omitempty"`
	// RenotifyMinutes: absent keeps it, null stops re-notifying.
	RenotifyMinutes NullableInt `json:"renotify_minutes,omitzero"`
}

// Apply merges the update into s and validates the result. A change to
// what the SLO measures (objective, threshold, tool, kinds, window) or
// disabling it puts it back to ok: the next evaluation judges afresh.
func (u SLOUpdate) Apply(s SLO, now time.Time) (SLO, error) {
	c := SLOCreate{Name: s.Name, Kind: s.Kind, Objective: s.Objective, ThresholdMs: cloneFloat(s.ThresholdMs), Tool: cloneString(s.Tool),
		ErrorKinds: slices.Clone(s.ErrorKinds), WindowDays: &s.WindowDays, Channels: slices.Clone(s.Channels), Severity: &s.Severity,
		Enabled: &s.Enabled, SnoozedUntil: cloneTime(s.SnoozedUntil), NotifyOnResolve: &s.NotifyOnResolve, RenotifyMinutes: cloneInt(s.RenotifyMinutes)}
	setIf(&c.Name, u.Name)
	if u.Objective != nil {
		c.Objective = *u.Objective
	}
	if u.ThresholdMs != nil {
		c.ThresholdMs = cloneFloat(u.ThresholdMs)
	}
	if u.Tool.Set {
		c.Tool = cloneString(u.Tool.Value)
	}
	if u.ErrorKinds != nil {
		c.ErrorKinds = slices.Clone(u.ErrorKinds)
	}
	if u.WindowDays != nil {
		c.WindowDays = u.WindowDays
	}
	if u.Channels != nil {
		c.Channels = slices.Clone(u.Channels)
	}
	if u.Severity != nil {
		c.Severity = u.Severity
	}
	if u.Enabled != nil {
		c.Enabled = u.Enabled
	}
	if u.SnoozedUntil.Set {
		c.SnoozedUntil = cloneTime(u.SnoozedUntil.Value)
	}
	if u.NotifyOnResolve != nil {
		c.NotifyOnResolve = u.NotifyOnResolve
	}
	if u.RenotifyMinutes.Set {
		c.RenotifyMinutes = cloneInt(u.RenotifyMinutes.Value)
	}
	if err := c.Validate(); err != nil {
		return SLO{}, err
	}
	next := c.SLO(s.ID, s.MCPID, now)
	next.CreatedAt, next.State, next.LastAlertAt = s.CreatedAt, s.State, s.LastAlertAt
	if next.Redefines(s) || !next.Enabled {
		next.State = SLOStateOK
	}
	return next, nil
}

// Redefines reports whether s measures something else than old.
func (s SLO) Redefines(old SLO) bool {
	return s.Objective != old.Objective || !equalFloatPtr(s.ThresholdMs, old.ThresholdMs) || !equalStringPtr(s.Tool, old.Tool) ||
		!slices.Equal(s.ErrorKinds, old.ErrorKinds) || s.WindowDays != old.WindowDays
}

func setIf(dst *string, v *string) {
	if v != nil {
		*dst = *v
	}
}

func cloneFloat(p *float64) *float64 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func equalFloatPtr(a, b *float64) bool {
	return (a == nil && b == nil) || (a != nil && b != nil && *a == *b)
}

// SLOService manages SLOs; every read carries the SLO's current figures.
type SLOService interface {
	// CreateSLO validates c and stores a new SLO. Returns EINVALID,
	// ENOTFOUND (no such MCP) and ELIMITREACHED.
	CreateSLO(ctx context.Context, accountID, mcpID string, c SLOCreate) (SLO, error)
	// SLO returns one SLO. Returns ENOTFOUND.
	SLO(ctx context.Context, accountID, sloID string) (SLO, error)
	// SLOs returns the MCP's SLOs, oldest first. Returns ENOTFOUND.
	SLOs(ctx context.Context, accountID, mcpID string) ([]SLO, error)
	// UpdateSLO applies upd. Returns ENOTFOUND and EINVALID.
	UpdateSLO(ctx context.Context, accountID, sloID string, upd SLOUpdate) (SLO, error)
	// DeleteSLO removes an SLO and its history. Returns ENOTFOUND.
	DeleteSLO(ctx context.Context, accountID, sloID string) error
}
