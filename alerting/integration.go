package alerting

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"
)

// Gates: which switch of the installation turns an integration's sending
// on (Sending). GateAlways sends without configuration (in_app).
const (
	GateAlways = "always"
	GateEmail  = "email"
	GateChat   = "chat"
)

// Integration is one destination kind as it describes itself: the
// catalogue entry (id, scope, label, sentences), what its connection
// holds and how that is checked, and how its sender is made. Every list of
// channels (the catalogue, the rule channels, the /docs enums, the
// outbox's dispatch, the connect routes, the dashboard) reads the
// registry of integrations (Register), so a destination is one package
// under alerting/notify/<id> and one line in alerting/notify/registry.
type Integration struct {
	CatalogueEntry
	// Gate is GateAlways, GateEmail or GateChat.
	Gate string
	// Connection describes a team channel's connection; nil for personal
	// channels.
	Connection *ConnectionSpec
	// ResolvesAlways: a resolve is delivered on this channel whether or
	// not the rule has notify_on_resolve, and even while it is snoozed.
	// For incident tools (PagerDuty), where a firing opens an incident that
	// stays open until told otherwise: an incident left open is worse than
	// a notice nobody asked for.
	ResolvesAlways bool
	// New makes the sender; nil for a channel that sends nothing (in_app).
	New func(NotifierDeps) (Notifier, error)
}

// NotifierDeps is what the installation gives a sender: the outbound HTTP
// client (proxy, roots, no redirects, no internal addresses without a
// proxy) and the configuration of email.
type NotifierDeps struct {
	// HTTP returns the shared outbound client (made once).
	HTTP func() (*http.Client, error)
	// Proxied is true when an outbound proxy is configured: then the proxy,
	// not this service, decides which addresses are reachable.
	Proxied bool
	// Email is the raw email configuration (smtp URL, from address and
	// extra roots); only the email integration reads it.
	Email any
}

// ConnectionSpec is what connecting a team channel takes.
type ConnectionSpec struct {
	// Fields are the connect body's fields (all strings, required unless
	// Optional), in order, e.g. url or routing_key.
	Fields []ConnectionField
	// URLKind: the connection is one URL ({url}); PUT …/webhook accepts it.
	URLKind bool
	// Open checks a connect body and returns what is stored: the secret
	// (sealed before it reaches the database, the sender's Envelope.To),
	// the hint reads show, and values shown once in the connect answer
	// (a generated signing secret). Errors are *telemetry.Error on the
	// body field at fault.
	Open func(ctx context.Context, body map[string]string, env ConnectEnv) (Sealed, error)
	// Rotate, when set, makes a new shown-once secret for a stored
	// connection (its opened secret), e.g. a new signing secret.
	Rotate func(stored string) (Sealed, error)
}

// ConnectionField is one field of a connect body.
type ConnectionField struct {
	Name string
	Doc  string
	// Optional: the body may leave it out (Open sees ""); present, it
	// must still be a non-empty string.
	Optional bool
}

// Sealed is a checked connection: Secret is stored sealed, Hint in clear,
// Shown goes back once in the connect answer and is never readable again.
type Sealed struct {
	Secret string
	Hint   string
	Shown  map[string]string
}

// ConnectEnv is what a connection check may need from the installation.
type ConnectEnv struct {
	// LookupHost resolves a host name for the check of internal addresses
	// at connect time; nil when an outbound proxy is configured (the
	// proxy decides then).
	LookupHost func(ctx context.Context, host string) ([]netip.Addr, error)
}

var (
	registryMu sync.Mutex
	registry   atomic.Pointer[[]Integration]
	channelID  = regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
)

func init() {
	Register(Integration{CatalogueEntry: CatalogueEntry{ID: ChannelInApp, Label: "In-app", Scope: ScopePersonal, Delivers: true,
		Description: "Alerts appear in your inbox in the dashboard as soon as a rule fires."}, Gate: GateAlways})
}

// Register adds integrations to the registry, in display order within
// their scope (personal channels list before team channels). It panics on
// a malformed or repeated id, a team channel without a connection or an
// unknown scope or gate: registration happens at start-up, before any
// request. Register is safe for concurrent use; readers see either the old
// or the new list.
func Register(list ...Integration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	var cur []Integration
	if p := registry.Load(); p != nil {
		cur = *p
	}
	next := append([]Integration(nil), cur...)
	for _, in := range list {
		switch {
		case !channelID.MatchString(in.ID):
			panic(fmt.Sprintf("alerting.Register: malformed channel id %q", in.ID))
		case in.Scope != ScopePersonal && in.Scope != ScopeTeam:
			panic("alerting.Register: " + in.ID + ": unknown scope " + in.Scope)
		case in.Scope == ScopeTeam && (in.Connection == nil || in.Connection.Open == nil):
			panic("alerting.Register: team channel " + in.ID + " has no connection")
		case in.Gate != GateAlways && in.Gate != GateEmail && in.Gate != GateChat:
			panic("alerting.Register: " + in.ID + ": unknown gate " + in.Gate)
		}
		for _, e := range next {
			if e.ID == in.ID {
				panic("alerting.Register: channel " + in.ID + " registered twice")
			}
		}
		next = append(next, in)
	}
	sort.SliceStable(next, func(i, j int) bool {
		return next[i].Scope == ScopePersonal && next[j].Scope == ScopeTeam
	})
	registry.Store(&next)
}

// Integrations returns the registered integrations in display order. The
// slice is shared: callers must not change it.
func Integrations() []Integration {
	if p := registry.Load(); p != nil {
		return *p
	}
	return nil
}

// LookupIntegration returns the integration of a channel id.
func LookupIntegration(id string) (Integration, bool) {
	for _, in := range Integrations() {
		if in.ID == id {
			return in, true
		}
	}
	return Integration{}, false
}

// ChannelIDs returns every channel id in display order (the enum of the
// channel fields in /docs).
func ChannelIDs() []string {
	all := Integrations()
	out := make([]string, len(all))
	for i, in := range all {
		out[i] = in.ID
	}
	return out
}

// ChannelIDsOf returns the ids of one scope, in display order.
func ChannelIDsOf(scope string) []string {
	var out []string
	for _, in := range Integrations() {
		if in.Scope == scope {
			out = append(out, in.ID)
		}
	}
	return out
}

// ResolvesAlways reports whether a channel gets resolves whatever the
// rule's notify_on_resolve (Integration.ResolvesAlways).
func ResolvesAlways(id string) bool {
	in, ok := LookupIntegration(id)
	return ok && in.ResolvesAlways
}
