package alerting

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/mcpscope/telemetry"
)

// MaxConnectionBody caps a connect body in bytes.
const MaxConnectionBody = 8192

// ConnectionResult is the answer of PUT /v1/account/channels/{channel}/connection
// and of a secret rotation: the hint, and the values shown this once.
type ConnectionResult struct {
	Channel   string `json:"channel"`
	Connected bool   `json:"connected"`
	// Hint identifies the destination without its secret (the same as the
	// channel list's webhook_hint).
	Hint string `json:"hint"`
	// SigningSecret is a signed webhook's secret (whsec_…), present only
	// in the answer that made it: it is never readable again.
	SigningSecret *string `json:"signing_secret,omitempty"`
}

// ConnectionService connects team channels with their destination's own
// body (Integration.Connection) and rotates generated secrets.
type ConnectionService interface {
	// Connect checks body with the channel's ConnectionSpec.Open, stores
	// the secret sealed (replacing any previous connection, clearing its
	// health) and returns the hint and the shown-once values. userID is
	// the admin, kept for the record. Returns ENOTFOUND (unknown channel),
	// EINVALID (personal channel, a missing, extra or non-string field)
	// and EWEBHOOKHOST (a URL the destination refuses).
	Connect(ctx context.Context, accountID, userID, channel string, body map[string]string) (ConnectionResult, error)
	// RotateSecret makes a new generated secret for a connected channel
	// whose destination has one (a signed webhook). Returns ENOTFOUND
	// (unknown or not connected channel) and EINVALID (a destination
	// without a generated secret).
	RotateSecret(ctx context.Context, accountID, userID, channel string) (ConnectionResult, error)
}

// TeamIntegration returns the integration of a team channel: ENOTFOUND on
// path.channel for an unknown id, EINVALID for a personal channel.
func TeamIntegration(channel string) (Integration, error) {
	if err := CheckTeamChannel(channel); err != nil {
		return Integration{}, err
	}
	in, _ := LookupIntegration(channel)
	return in, nil
}

// DecodeConnectionBody decodes a connect body for in: a JSON object with
// exactly the connection's fields, each a non-empty string. Malformed JSON
// is EBADREQUEST; a missing, unknown or non-string field EINVALID on it.
func DecodeConnectionBody(in Integration, raw []byte) (map[string]string, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, telemetry.Errorf(telemetry.EBADREQUEST, "The body must be a JSON object such as %s.", exampleBody(in))
	}
	out := make(map[string]string, len(in.Connection.Fields))
	for _, f := range in.Connection.Fields {
		v, ok := m[f.Name]
		if !ok && f.Optional {
			continue
		}
		if !ok {
			return nil, telemetry.FieldError(telemetry.EINVALID, "body."+f.Name, "%s is connected with %s; %s is missing.", in.Label, exampleBody(in), f.Name)
		}
		var s string
		if err := json.Unmarshal(v, &s); err != nil || s == "" {
			return nil, telemetry.FieldError(telemetry.EINVALID, "body."+f.Name, "%s must be a non-empty string.", f.Name)
		}
		out[f.Name] = s
		delete(m, f.Name)
	}
	for k := range m {
		return nil, telemetry.FieldError(telemetry.EINVALID, "body."+k, "%s is connected with %s; %s is not one of its fields.", in.Label, exampleBody(in), k)
	}
	return out, nil
}

func exampleBody(in Integration) string {
	parts := make([]string, len(in.Connection.Fields))
	for i, f := range in.Connection.Fields {
		parts[i] = `"` + f.Name + `": "…"`
		if f.Optional {
			parts[i] += " (optional)"
		}
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// FieldInvalid is EINVALID on a field, for the connection checks of the
// destinations.
func FieldInvalid(field, msg string) error {
	return telemetry.FieldError(telemetry.EINVALID, field, "%s", msg)
}
