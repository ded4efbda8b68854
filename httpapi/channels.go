package httpapi

import (
	"context"
	"net/http"
	"reflect"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/alerting"
)

// ChannelsBody is the answer of GET and PUT /v1/account/channels.
type ChannelsBody struct {
	Channels    []alerting.Channel   `json:"channels" doc:"Every channel, connected or not, in display order: in_app, email, slack, discord."`
	Preferences alerting.Preferences `json:"preferences" doc:"The caller's switches for the personal channels in this account."`
}

type channelsOutput struct {
	Body ChannelsBody
}

// preferencesUpdate documents the PUT /v1/account/channels body, which
// the handler decodes itself (alerting.DecodePreferencesUpdate) to explain
// a team channel or unknown key better than a schema error would.
type preferencesUpdate struct {
	InApp *bool `json:"in_app,omitempty" doc:"Alerts in your inbox in the dashboard. Absent: unchanged."`
	Email *bool `json:"email,omitempty" doc:"Alerts recorded for email to your address (queued; nothing sends them yet). Absent: unchanged."`
}

// rawJSONInput is a JSON body the handler decodes itself.
type rawJSONInput struct {
	ContentType string `header:"Content-Type"`
	RawBody     []byte
}

type channelInput struct {
	Channel string `path:"channel" doc:"A team-chat channel: slack or discord."`
}

// WebhookConnection is the answer of PUT /v1/account/channels/{channel}/webhook.
type WebhookConnection struct {
	Channel     string `json:"channel" doc:"The channel connected."`
	Connected   bool   `json:"connected" doc:"Always true."`
	WebhookHint string `json:"webhook_hint" doc:"Host and path of the webhook with the trailing secret masked, e.g. hooks.slack.com/services/T0001/B0001/••••••••. The URL itself is never returned."`
}

// webhookRequest is the body of PUT /v1/account/channels/{channel}/webhook.
type webhookRequest struct {
	URL string `json:"url" doc:"The incoming webhook URL the provider gave you. Slack: https://hooks.slack.com/services/T…/B…/{secret}. Discord: https://discord.com/api/webhooks/{id}/{token} (also discordapp.com, ptb.discord.com, canary.discord.com, and /api/v{N}/webhooks/…, with optional thread_id and wait query parameters)."`
}

type connectWebhookInput struct {
	Channel string `path:"channel" doc:"A team-chat channel: slack or discord."`
	Body    webhookRequest
}

type connectWebhookOutput struct {
	Body WebhookConnection
}

const webhookHostRule = `The URL must be ` + "`https`" + `, with no user info and no port other than 443, on the
provider's own host: ` + "`slack`" + `: ` + "`hooks.slack.com`" + `, path ` + "`/services/T…/B…/{secret}`" + `; ` + "`discord`" + `:
` + "`discord.com`" + `, ` + "`discordapp.com`" + `, ` + "`ptb.discord.com`" + ` or ` + "`canary.discord.com`" + `, path
` + "`/api/webhooks/{id}/{token}`" + ` or ` + "`/api/v{N}/webhooks/{id}/{token}`" + `. Anything else (another host, a
look-alike or suffix host, an IP address, an internal name, a percent escape, the provider's app
pages, a wrong path) is refused with 422 ` + "`webhook_host_not_allowed`" + `: the service will post to
this URL, and the check is what keeps it from reaching internal or metadata addresses.`

// describeChannels documents the schemas of these routes.
func (s *Server) describeChannels() {
	s.documentSchema(alerting.Channel{}, "A destination for alerts.", map[string]string{
		"id":           "Channel id: in_app, email (personal), slack, discord (team chat).",
		"label":        "Short name to show.",
		"description":  "One sentence saying what the channel does.",
		"delivers":     "True for channels that actually send: in_app always; email once the installation configures an SMTP server, slack and discord once it switches chat sending on. Otherwise their deliveries are recorded as queued and not sent.",
		"health":       "A team channel's sending record (last_sent_at, last_failed_at, last_error, broken); null for personal channels.",
		"scope":        "personal: each person switches it on or off for themselves; team: an admin connects it once with an incoming webhook, one destination for the whole team.",
		"connected":    "Whether rules naming the channel get deliveries on it. Personal channels are always connected; a team channel while the account has a webhook for it.",
		"webhook_hint": "The connected webhook with its secret masked; null unless a team channel is connected. The URL is never returned.",
	})
	s.documentSchema(alerting.ChannelHealth{}, "What the service last saw of a team channel's webhook.", map[string]string{
		"last_sent_at":   "When a message last reached it (a delivery or a test); null if never.",
		"last_failed_at": "When a send to it last failed; null if never.",
		"last_error":     "The last failure's short code (http_500, timeout, webhook_revoked, …); never a secret.",
		"broken":         "The provider said the webhook no longer exists: deliveries fail with webhook_revoked until an admin connects a new one (or a test succeeds).",
	})
	s.documentSchema(alerting.TestResult{}, "The outcome of a test message.", map[string]string{
		"status": "sent or failed.",
		"error":  "Why it failed (a short code: sending_not_configured, not_connected, http_404, timeout, smtp_550, …); null when sent.",
	})
	s.documentSchema(alerting.Preferences{}, "A person's switches for the personal channels in one account. Someone who never changed them hears on every channel.", map[string]string{
		"in_app": "Alerts in the inbox.",
		"email":  "Alerts recorded for email.",
	})
}

var listChannelsOp = huma.Operation{
	OperationID: "list-channels",
	Summary:     "List channels and your preferences",
	Description: `Every destination an alert can go to, connected or not, with your own switches for the
personal channels in this account. A notification is delivered only where the rule and the
person agree: a rule names channels; each person says on which personal channels they listen.`,
	Tags: []string{"Alerting"},
}

func (s *Server) listChannels(ctx context.Context, _ *struct{}) (*channelsOutput, error) {
	p := principal(ctx)
	chans, prefs, err := s.opts.Channels.Channels(ctx, p.AccountID, p.UserID)
	if err != nil {
		return nil, err
	}
	return &channelsOutput{Body: ChannelsBody{Channels: chans, Preferences: prefs}}, nil
}

var updatePreferencesOp = huma.Operation{
	OperationID:  "update-preferences",
	Summary:      "Change your channel preferences",
	MaxBodyBytes: 4096,
	// The body is decoded by alerting.DecodePreferencesUpdate, which
	// explains a team-chat key better than a schema error; the schema
	// (preferencesRequestBody) is for the reference only.
	SkipValidateBody: true,
	Description: `Merges: only the switches sent change, so ` + "`{\"email\": false}`" + ` turns email off and keeps
in-app as it was. Answers like GET. The keys are the personal channels ` + "`in_app`" + ` and ` + "`email`" + `, each
true or false. A team-chat key (` + "`slack`" + `, ` + "`discord`" + `) is refused with 422: those are connected for
the whole team by an admin, not switched per person. Any other key is refused with 422 too.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusUnsupportedMediaType},
}

// preferencesRequestBody documents the body update-preferences decodes
// itself.
func preferencesRequestBody(s *Server, op *huma.Operation) {
	op.RequestBody = &huma.RequestBody{Required: true, Content: map[string]*huma.MediaType{
		"application/json": {Schema: s.api.OpenAPI().Components.Schemas.Schema(reflect.TypeOf(preferencesUpdate{}), true, "")},
	}}
}

func (s *Server) updatePreferences(ctx context.Context, in *rawJSONInput) (*channelsOutput, error) {
	if err := requireMediaType(in.ContentType, "application/json"); err != nil {
		return nil, err
	}
	upd, err := alerting.DecodePreferencesUpdate(in.RawBody)
	if err != nil {
		return nil, err
	}
	p := principal(ctx)
	chans, prefs, err := s.opts.Channels.UpdatePreferences(ctx, p.AccountID, p.UserID, upd)
	if err != nil {
		return nil, err
	}
	return &channelsOutput{Body: ChannelsBody{Channels: chans, Preferences: prefs}}, nil
}

var connectWebhookOp = huma.Operation{
	OperationID: "connect-webhook",
	Summary:     "Connect a team-chat channel",
	Description: `Owners and admins. Stores the incoming webhook of ` + "`slack`" + ` or ` + "`discord`" + ` for the whole
account, replacing any previous one. From then on rules naming the channel get one queued
delivery per firing there. The URL is a secret: it is stored encrypted and no read ever returns
it, only the masked ` + "`webhook_hint`" + `.

` + webhookHostRule + `

An unknown channel is 404; a personal channel (` + "`in_app`" + `, ` + "`email`" + `) is 422 ` + "`invalid`" + `.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) connectWebhook(ctx context.Context, in *connectWebhookInput) (*connectWebhookOutput, error) {
	p := principal(ctx)
	hint, err := s.opts.Channels.ConnectWebhook(ctx, p.AccountID, p.UserID, in.Channel, in.Body.URL)
	if err != nil {
		return nil, err
	}
	return &connectWebhookOutput{Body: WebhookConnection{Channel: in.Channel, Connected: true, WebhookHint: hint}}, nil
}

var disconnectWebhookOp = huma.Operation{
	OperationID:   "disconnect-webhook",
	Summary:       "Disconnect a team-chat channel",
	DefaultStatus: http.StatusNoContent,
	Description: `Owners and admins. Removes the channel's webhook; 204 also when it was not connected.
Rules naming the channel are kept and get no deliveries there until it is connected again.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusUnprocessableEntity},
}

func (s *Server) disconnectWebhook(ctx context.Context, in *channelInput) (*struct{}, error) {
	return nil, s.opts.Channels.DisconnectWebhook(ctx, principal(ctx).AccountID, in.Channel)
}

type testChannelOutput struct {
	Body alerting.TestResult
}

var testChannelOp = huma.Operation{
	OperationID: "test-channel",
	Summary:     "Send a test message",
	Description: `Sends a test message on the channel now and answers ` + "`{status: \"sent\" | \"failed\", error}`" + `:
` + "`email`" + ` to your own address (any member); ` + "`slack`" + ` and ` + "`discord`" + ` to the connected webhook (owners
and admins). A failure is an answer, not an error: ` + "`error`" + ` is a short code such as
` + "`sending_not_configured`" + `, ` + "`not_connected`" + `, ` + "`http_404`" + ` or ` + "`timeout`" + `. A successful test of a team
channel clears ` + "`broken`" + ` in its health. ` + "`in_app`" + ` is 422; an unknown channel 404.

Email goes only to a verified address: while yours is not verified the answer is ` + "`failed`" + ` with
` + "`address_unverified`" + ` and nothing is sent (verify it from your profile). Every test is an outbound send and is
budgeted: at most 10 an hour per person and 30 an hour per account (counted per instance); beyond, 429
` + "`rate_limited`" + ` with ` + "`Retry-After`" + `.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusForbidden, http.StatusNotFound, http.StatusUnprocessableEntity, http.StatusTooManyRequests},
}

func (s *Server) testChannel(ctx context.Context, in *channelInput) (*testChannelOutput, error) {
	p := principal(ctx)
	if alerting.IsTeamChannel(in.Channel) && !p.Role.CanManage() {
		return nil, telemetry.Errorf(telemetry.EFORBIDDEN, "Testing a team channel needs the owner or admin role; yours is %s.", p.Role)
	}
	s.testLimits.init(s.opts.ChannelTestLimits)
	if err := s.testLimits.allow(p); err != nil {
		return nil, err
	}
	res, err := s.opts.ChannelTests.TestChannel(ctx, p.AccountID, p.UserID, in.Channel)
	if err != nil {
		return nil, err
	}
	return &testChannelOutput{Body: res}, nil
}
