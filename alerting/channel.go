// Package alerting is the alerting domain: the channels alerts are delivered
// on, the webhook connections of the team-chat channels, alert rules and
// their states, the deliveries a firing rule fans out to, the inbox built
// from them, and the service interfaces the postgres package implements. It
// reads numbers through analytics.WindowReader and imports no database.
//
// The model, from the contract: channels are destinations; a rule says on
// which channels it wants to be heard; a person says on which personal
// channels they are willing to hear. A delivery exists only where the rule
// and the person agree (personal channels), or where the rule names a team
// channel that an admin connected.
//
// The service interfaces (ChannelService, RuleService, InboxService,
// NotificationService, each beside its noun) are implemented by the postgres
// package and exposed by httpapi. Every method acts inside one account: a
// resource of another account is ENOTFOUND, never EFORBIDDEN, so its
// existence is not revealed. Role checks (owners and admins for webhooks and
// rules) are the caller's, made before the call with the accounts package;
// the services trust accountID and userID. Errors are *telemetry.Error;
// anything else is EINTERNAL (including EUNAVAILABLE when Postgres is down,
// if the implementation can tell). The rule pass itself (RuleEvaluator)
// lives here, on the storage interface EvaluationStore.
package alerting

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/mcpscope/telemetry"
)

// Channel ids. They are wire values (rule channels, delivery channel, the
// path of the webhook routes): never rename one.
const (
	ChannelInApp   = "in_app"
	ChannelEmail   = "email"
	ChannelSlack   = "slack"
	ChannelDiscord = "discord"
)

// Channel scopes. A personal channel is switched on or off by each person
// per account; a team channel is connected once by an admin with an incoming
// webhook, which posts to one fixed chat channel, so it is one destination
// for the whole team and cannot be a personal preference.
const (
	ScopePersonal = "personal"
	ScopeTeam     = "team"
)

// CatalogueEntry is the fixed description of one channel kind.
type CatalogueEntry struct {
	ID          string
	Label       string
	Description string
	// SendingDescription replaces Description when the channel is
	// configured to send (Sending).
	SendingDescription string
	// Delivers is true only for channels that send without configuration
	// (in_app). Email and team-chat deliveries send once the installation
	// configures them (Sending); until then they are recorded as queued.
	Delivers bool
	Scope    string
}

// catalogue lists every channel in the order clients show them: the
// registry of integrations (Register). Personal channels first, then team
// channels; PlanFanOut follows the same order.
func catalogue() []CatalogueEntry {
	all := Integrations()
	out := make([]CatalogueEntry, len(all))
	for i, in := range all {
		out[i] = in.CatalogueEntry
	}
	return out
}

// Sending says which channels the installation is configured to send
// (alerting.email.smtp_url, alerting.chat.enabled). The zero value sends
// nothing but in_app: the seed's behaviour.
type Sending struct {
	Email bool
	Chat  bool
}

// Sends reports whether deliveries on channel are actually sent: the
// integration's gate (Integration.Gate) is switched on.
func (s Sending) Sends(channel string) bool {
	in, ok := LookupIntegration(channel)
	if !ok {
		return false
	}
	switch in.Gate {
	case GateAlways:
		return true
	case GateEmail:
		return s.Email
	case GateChat:
		return s.Chat
	}
	return false
}

// Catalogue returns every channel kind, connected or not, in display order.
// The slice is a copy: callers may not change the catalogue.
func Catalogue() []CatalogueEntry {
	return catalogue()
}

func catalogueEntry(id string) (CatalogueEntry, bool) {
	in, ok := LookupIntegration(id)
	return in.CatalogueEntry, ok
}

// ValidChannel reports whether id is a known channel id.
func ValidChannel(id string) bool {
	_, ok := catalogueEntry(id)
	return ok
}

// IsTeamChannel reports whether id is a team-chat channel (one webhook for
// the whole account).
func IsTeamChannel(id string) bool {
	e, ok := catalogueEntry(id)
	return ok && e.Scope == ScopeTeam
}

// IsPersonalChannel reports whether id is a channel each person switches on
// or off for themselves.
func IsPersonalChannel(id string) bool {
	e, ok := catalogueEntry(id)
	return ok && e.Scope == ScopePersonal
}

// Channel is one entry of GET /v1/account/channels: the catalogue entry plus
// the account's connection state.
type Channel struct {
	ID          string `json:"id"`
	Label       string `json:"label"`
	Description string `json:"description"`
	Delivers    bool   `json:"delivers"`
	Scope       string `json:"scope"`
	// Connected is whether rules naming the channel get deliveries on it.
	// Personal channels need no connection and are always connected; a team
	// channel is connected while the account has a webhook for it.
	Connected bool `json:"connected"`
	// WebhookHint is the masked webhook (see WebhookHint); null unless a team
	// channel is connected. The URL itself is never returned.
	WebhookHint *string `json:"webhook_hint"`
	// Health is the team channel's sending record; nil for personal
	// channels.
	Health *ChannelHealth `json:"health"`
	// ConnectFields are the fields of a team channel's connect body (url,
	// routing_key); empty for personal channels.
	ConnectFields []string `json:"connect_fields"`
}

// ChannelHealth is what the outbox last saw of a team channel's webhook.
type ChannelHealth struct {
	LastSentAt   *time.Time `json:"last_sent_at"`
	LastFailedAt *time.Time `json:"last_failed_at"`
	// LastError is the short code of the last failure (never a secret).
	LastError *string `json:"last_error"`
	// Broken: the provider said the webhook no longer exists; deliveries
	// fail with webhook_revoked until an admin connects a new one.
	Broken bool `json:"broken"`
}

// Connection is a connected team channel as the store reads it.
type Connection struct {
	Hint   string
	Health ChannelHealth
}

// ListChannels builds the full channel list from the catalogue and the
// account's webhook hints, keyed by team channel id, with nothing
// configured to send. A team channel absent from hints is not connected.
func ListChannels(hints map[string]string) []Channel {
	conns := make(map[string]Connection, len(hints))
	for k, h := range hints {
		conns[k] = Connection{Hint: h}
	}
	return BuildChannels(conns, Sending{})
}

// BuildChannels builds the full channel list from the catalogue, the
// account's connections and what the installation sends.
func BuildChannels(conns map[string]Connection, sending Sending) []Channel {
	entries := catalogue()
	out := make([]Channel, 0, len(entries))
	for _, e := range entries {
		c := Channel{ID: e.ID, Label: e.Label, Description: e.Description, Delivers: sending.Sends(e.ID), Scope: e.Scope, ConnectFields: []string{}}
		if in, ok := LookupIntegration(e.ID); ok && in.Connection != nil {
			for _, f := range in.Connection.Fields {
				c.ConnectFields = append(c.ConnectFields, f.Name)
			}
		}
		if c.Delivers && e.SendingDescription != "" {
			c.Description = e.SendingDescription
		}
		if e.Scope == ScopePersonal {
			c.Connected = true
		} else {
			h := ChannelHealth{}
			if conn, ok := conns[e.ID]; ok {
				c.Connected = true
				hint := conn.Hint
				c.WebhookHint = &hint
				h = conn.Health
			}
			c.Health = &h
		}
		out = append(out, c)
	}
	return out
}

// Preferences are one person's switches for the personal channels in one
// account. A person who never saved preferences hears on every personal
// channel (DefaultPreferences): alerts are opt-out, not opt-in.
type Preferences struct {
	InApp bool `json:"in_app"`
	Email bool `json:"email"`
}

// DefaultPreferences returns the preferences of a person who never changed
// them: everything on.
func DefaultPreferences() Preferences {
	return Preferences{InApp: true, Email: true}
}

// Allows reports whether the preferences let channel deliver to the person.
// Team channels are not personal preferences, so they are never allowed
// here; PlanFanOut handles them separately.
func (p Preferences) Allows(channel string) bool {
	switch channel {
	case ChannelInApp:
		return p.InApp
	case ChannelEmail:
		return p.Email
	}
	return false
}

// PreferencesUpdate is the body of PUT /v1/account/channels. It merges: a nil
// field keeps the stored value, so {"email": false} changes only email.
type PreferencesUpdate struct {
	InApp *bool `json:"in_app,omitempty"`
	Email *bool `json:"email,omitempty"`
}

// Apply returns p with the fields set in u changed.
func (u PreferencesUpdate) Apply(p Preferences) Preferences {
	if u.InApp != nil {
		p.InApp = *u.InApp
	}
	if u.Email != nil {
		p.Email = *u.Email
	}
	return p
}

// DecodePreferencesUpdate decodes a PUT /v1/account/channels body. It exists
// to give a useful answer for the two mistakes a generic decoder reports
// poorly: a team channel key (EINVALID, telling the caller that team channels
// are connected with a webhook, not switched per person) and a key that is no
// channel at all (EINVALID). A value must be true or false; null is refused
// rather than read as "keep", so a client bug cannot pass for a no-op.
// Malformed JSON is EBADREQUEST.
func DecodePreferencesUpdate(body []byte) (PreferencesUpdate, error) {
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil || raw == nil {
		return PreferencesUpdate{}, telemetry.Errorf(telemetry.EBADREQUEST, "The body must be a JSON object of channel switches, such as {\"email\": false}.")
	}
	var u PreferencesUpdate
	for key, v := range raw {
		field := "body." + key
		switch {
		case IsTeamChannel(key):
			return PreferencesUpdate{}, telemetry.FieldError(telemetry.EINVALID, field,
				"%s is a team channel: an admin connects it with PUT /v1/account/channels/%s/connection; it is not a personal switch.", key, key)
		case !IsPersonalChannel(key):
			return PreferencesUpdate{}, telemetry.FieldError(telemetry.EINVALID, field,
				"Unknown channel %q; the personal channels are in_app and email.", key)
		}
		b, err := decodeBool(v)
		if err != nil {
			return PreferencesUpdate{}, telemetry.FieldError(telemetry.EINVALID, field, "%s must be true or false.", key)
		}
		switch key {
		case ChannelInApp:
			u.InApp = &b
		case ChannelEmail:
			u.Email = &b
		}
	}
	return u, nil
}

func decodeBool(v json.RawMessage) (bool, error) {
	switch string(bytes.TrimSpace(v)) {
	case "true":
		return true, nil
	case "false":
		return false, nil
	}
	return false, fmt.Errorf("not a boolean: %s", v)
}

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
