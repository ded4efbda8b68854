package alerting

import (
	"context"
	"time"
)

// The service interfaces below are implemented by the postgres package and
// exposed by httpapi. Every method acts inside one account: a resource of
// another account is ENOTFOUND, never EFORBIDDEN, so its existence is not
// revealed. Role checks (owners and admins for webhooks and rules) are the
// caller's, made before the call with the accounts package; the services
// trust accountID and userID. Errors are *telemetry.Error; anything else is
// EINTERNAL (including EUNAVAILABLE when Postgres is down, if the
// implementation can tell).

// ChannelService manages the channel catalogue as one account sees it: each
// person's preferences and the team channels' webhooks.
type ChannelService interface {
	// Channels returns every channel (ListChannels order) with the account's
	// connection state, and the person's preferences in the account
	// (DefaultPreferences if never saved).
	Channels(ctx context.Context, accountID, userID string) ([]Channel, Preferences, error)

	// UpdatePreferences merges upd into the person's stored preferences and
	// returns the same as Channels afterwards. An empty update changes
	// nothing. Returns EINVALID only through DecodePreferencesUpdate, which
	// the caller runs first.
	UpdatePreferences(ctx context.Context, accountID, userID string, upd PreferencesUpdate) ([]Channel, Preferences, error)

	// ConnectWebhook checks rawURL with ValidateWebhookURL, stores it sealed
	// in a SecretBox (bound with WebhookAssociatedData) together with its
	// hint, replacing any previous webhook of the channel, and returns the
	// hint. userID is the admin connecting it, kept for the record. Returns
	// ENOTFOUND (unknown channel), EINVALID (personal channel) and
	// EWEBHOOKHOST (the URL fails the check).
	ConnectWebhook(ctx context.Context, accountID, userID, channel, rawURL string) (hint string, err error)

	// DisconnectWebhook removes the channel's webhook. Disconnecting a channel
	// that is not connected succeeds (DELETE is idempotent). Rules naming the
	// channel are kept and simply get no deliveries there. Returns ENOTFOUND
	// (unknown channel) and EINVALID (personal channel).
	DisconnectWebhook(ctx context.Context, accountID, channel string) error
}

// RuleService manages alert rules.
type RuleService interface {
	// CreateRule validates c and stores a new rule in state ok. Returns
	// EINVALID and ENOTFOUND (no such MCP in the account).
	CreateRule(ctx context.Context, accountID, mcpID string, c RuleCreate) (Rule, error)

	// Rule returns one rule. Returns ENOTFOUND.
	Rule(ctx context.Context, accountID, ruleID string) (Rule, error)

	// Rules returns the MCP's rules, oldest first. Returns ENOTFOUND (no such
	// MCP in the account).
	Rules(ctx context.Context, accountID, mcpID string) ([]Rule, error)

	// UpdateRule applies upd (RuleUpdate.Apply, including its state reset)
	// and returns the whole rule. Returns ENOTFOUND and EINVALID.
	UpdateRule(ctx context.Context, accountID, ruleID string, upd RuleUpdate) (Rule, error)

	// DeleteRule removes a rule; its deliveries stay. Returns ENOTFOUND.
	DeleteRule(ctx context.Context, accountID, ruleID string) error
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

// NotificationService reads the account's delivery log (admins only).
type NotificationService interface {
	// Notifications returns a page of the account's deliveries on every
	// channel, newest first. Call f.Validate first. Returns EBADREQUEST for
	// a malformed cursor (ParseDeliveryCursor).
	Notifications(ctx context.Context, accountID string, f NotificationFilter) (NotificationPage, error)
}

// Evaluator evaluates rules: every minute (configurable) for all enabled
// rules, and on demand for POST /v1/rules/{ruleId}/evaluate. Rule values come
// from analytics.WindowReader (Rule.Value picks a rule's figure out of its
// MCP's window stats); alerting never sees ClickHouse. One evaluation of a
// rule is:
//
//  1. value, ok := rule.Value(stats of rule.Window(now)).
//  2. next, fired, resolved := Transition(rule.State, rule.Breached(value, ok)).
//  3. In one Postgres transaction that locks the rule row and re-checks its
//     state (so two instances, or a manual evaluation racing the ticker,
//     cannot both fire it): store next; when fired, set last_fired_at and
//     insert PlanFanOut(rule, value, members now, connected team channels)
//     as deliveries, each recording the rule's name.
//  4. resolved creates no deliveries (the contract names none).
//
// A metrics error leaves the rule's state unchanged: an outage of ClickHouse
// must neither fire nor resolve anything. A disabled rule is skipped by the
// ticker; evaluating it on demand measures and reports the value but does
// not change its state or fire.
type Evaluator interface {
	// EvaluateRule evaluates one rule at now and returns the outcome.
	// Returns ENOTFOUND, EUNAVAILABLE (metrics could not be read).
	EvaluateRule(ctx context.Context, accountID, ruleID string, now time.Time) (Evaluation, error)

	// EvaluateAll evaluates every enabled rule at now; one rule's failure
	// does not stop the others, and the returned error joins them. The
	// summary counts what the pass did, for the service's metrics.
	EvaluateAll(ctx context.Context, now time.Time) (PassSummary, error)
}

// PassSummary counts what one evaluation pass did.
type PassSummary struct {
	// Skipped is true when another instance was running a pass at the same
	// time, so this one left the rules to it.
	Skipped  bool
	Rules    int // enabled rules measured
	Fired    int // ok -> firing transitions this pass made
	Resolved int // firing -> ok transitions this pass made
	Failed   int // rules left unchanged because of an error
}
