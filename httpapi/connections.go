package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

type connectChannelInput struct {
	Channel     string `path:"channel" doc:"A team channel id of the catalogue (slack, discord, pagerduty, teams, google_chat, webhook, …)."`
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

type connectionOutput struct {
	Body alerting.ConnectionResult
}

// describeConnections documents the schemas of the connection routes.
func (s *Server) describeConnections() {
	s.documentSchema(alerting.ConnectionResult{}, "A connected team channel.", map[string]string{
		"channel":        "The channel connected.",
		"connected":      "Always true.",
		"hint":           "The destination without its secret, e.g. hooks.slack.com/services/T0001/B0001/•••••••• or a routing key's last four characters; the same as the channel list's webhook_hint.",
		"signing_secret": "A signed webhook's secret (whsec_ and base64), present only in the answer that made it (connect or rotate): store it now, it is never shown again.",
	})
}

// connectionRequestBody documents the connect body: the fields of every
// team channel of the registry, each saying which channels take it.
func connectionRequestBody(_ *Server, op *huma.Operation) {
	props := map[string]*huma.Schema{}
	for _, in := range alerting.Integrations() {
		if in.Connection == nil {
			continue
		}
		for _, f := range in.Connection.Fields {
			p, ok := props[f.Name]
			if !ok {
				p = &huma.Schema{Type: huma.TypeString}
				props[f.Name] = p
			}
			p.Description = strings.TrimSpace(p.Description + " `" + in.ID + "`: " + f.Doc)
		}
	}
	op.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
		"application/json": {Schema: &huma.Schema{Type: huma.TypeObject, Properties: props,
			Description: "The destination's own fields: " + connectionFieldsDoc() + "."}},
	}}
}

// connectionFieldsDoc lists each team channel with its connect body.
func connectionFieldsDoc() string {
	var parts []string
	for _, in := range alerting.Integrations() {
		if in.Connection == nil {
			continue
		}
		names := make([]string, len(in.Connection.Fields))
		for i, f := range in.Connection.Fields {
			names[i] = f.Name
			if f.Optional {
				names[i] += " (optional)"
			}
		}
		parts = append(parts, "`"+in.ID+"` {"+strings.Join(names, ", ")+"}")
	}
	return strings.Join(parts, "; ")
}

var connectChannelOp = huma.Operation{
	OperationID:      "connect-channel",
	Summary:          "Connect a team channel",
	MaxBodyBytes:     alerting.MaxConnectionBody,
	SkipValidateBody: true,
	Description: `Owners and admins. Connects a team channel for the whole account with the destination's own
body, replacing any previous connection (and clearing its health): ` + "`{\"url\": …}`" + ` for the URL kinds
(Slack, Discord, Microsoft Teams, Google Chat, signed webhooks), ` + "`{\"routing_key\": …, \"region\": \"us\" | \"eu\"}`" + ` for PagerDuty
(region optional, default us; eu sends to events.eu.pagerduty.com).
The secret (the URL, the key) is stored encrypted; no read returns it, only the ` + "`hint`" + `. A signed
webhook's answer carries its ` + "`signing_secret`" + ` this once. Each destination checks its own body: a URL on
the provider's hosts, an HTTPS URL that does not name or resolve to an internal address, a key of the
right form; a refused URL is 422 ` + "`webhook_host_not_allowed`" + ` saying why, a missing or extra field 422
` + "`invalid`" + `. An unknown channel is 404, a personal one 422. ` + "`PUT …/webhook`" + ` keeps working for the URL kinds.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusBadRequest, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType},
}

func (s *Server) connectChannel(ctx context.Context, in *connectChannelInput) (*connectionOutput, error) {
	integ, err := alerting.TeamIntegration(in.Channel)
	if err != nil {
		return nil, err
	}
	if err := requireMediaType(in.ContentType, "application/json"); err != nil {
		return nil, err
	}
	body, err := alerting.DecodeConnectionBody(integ, in.RawBody)
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	res, err := s.opts.Connections.Connect(ctx, p.AccountID, p.UserID, in.Channel, body)
	if err != nil {
		return nil, err
	}
	return &connectionOutput{Body: res}, nil
}

var disconnectChannelOp = huma.Operation{
	OperationID:   "disconnect-channel",
	Summary:       "Disconnect a team channel",
	DefaultStatus: http.StatusNoContent,
	Description: `Owners and admins. Removes the channel's connection (URL, key, signing secret); 204 also
when it was not connected. Rules naming the channel are kept and get no deliveries there until it is
connected again.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

var rotateSecretOp = huma.Operation{
	OperationID: "rotate-channel-secret",
	Summary:     "Rotate a signed webhook's secret",
	Description: `Owners and admins. Makes a new signing secret for a connected ` + "`webhook`" + ` channel and answers it
this once (` + "`signing_secret`" + `). For 24 hours events carry two signatures in ` + "`webhook-signature`" + `, by
the new and the previous secret, so the receiver can switch without losing events. A destination
without a signing secret is 422; a channel that is not connected 404.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) rotateSecret(ctx context.Context, in *channelInput) (*connectionOutput, error) {
	p := principal(ctx)
	res, err := s.opts.Connections.RotateSecret(ctx, p.AccountID, p.UserID, in.Channel)
	if err != nil {
		return nil, err
	}
	return &connectionOutput{Body: res}, nil
}
