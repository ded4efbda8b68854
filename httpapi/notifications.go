package httpapi

import (
	"context"
	"net/http"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry/alerting"
)

type notificationsInput struct {
	PageQuery
	Channel  channelParam `query:"channel" doc:"Only deliveries on this channel."`
	Status   string       `query:"status" enum:"delivered,queued,sent,failed" doc:"Only deliveries in this status."`
	Severity string       `query:"severity" enum:"critical,error,warning,info" doc:"Only deliveries of rules of this severity (as it was when the delivery was made)."`
}

type notificationsOutput struct {
	Body alerting.NotificationPage
}

// describeNotifications documents the schemas of these routes.
func (s *Server) describeNotifications() {
	s.documentSchema(alerting.Notification{}, "One delivery of a rule firing (or resolving, for a rule with notify_on_resolve) on one channel.", map[string]string{
		"id":                "The delivery's id.",
		"rule_id":           "The rule that fired; it may have been deleted since.",
		"mcp_id":            "The MCP the rule measures.",
		"channel":           "A channel id of the catalogue (in_app, email, slack, pagerduty, …).",
		"severity":          "The rule's severity when the delivery was made: critical, error, warning or info.",
		"recipient_user_id": "The person of an in_app or email delivery; null for team chat, which goes to the whole team.",
		"status":            "delivered (in_app, in the person's inbox); for email and team chat queued (waiting for its next attempt, or for sending to be configured), sent or failed. Tolerate unknown values.",
		"attempts":          "Send attempts made (0 for in_app).",
		"last_attempt_at":   "When the last attempt was made; null before the first.",
		"next_attempt_at":   "While queued: when the next attempt is due; null otherwise.",
		"last_error":        "The last failure's short code (e.g. http_500, timeout, webhook_revoked, smtp_550); never a secret; null when none or once sent.",
		"sent_at":           "When the provider accepted it; null unless sent.",
		"message_id":        "The id of the message it went out in; deliveries sent together in one digest share it. Email: the Message-ID header's local part.",
		"title":             "The notification's one-line title.",
		"created_at":        "When the rule fired (or resolved).",
	})
	s.documentSchema(alerting.NotificationPage{}, "A page of the account's delivery log, newest first.", map[string]string{
		"items":       "The deliveries of this page.",
		"next_cursor": "Pass as cursor to get the next page; null on the last page.",
	})
}

var listNotificationsOp = huma.Operation{
	OperationID: "list-notifications",
	Summary:     "Read the account's delivery log",
	Description: `Owners and admins. Every delivery of every rule firing in this account, on every channel,
newest first (ties by id), paginated; filter by ` + "`channel`" + `, ` + "`status`" + ` and ` + "`severity`" + `. Bodies and read markers
are each recipient's own business and are not shown. A malformed cursor is 400.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusBadRequest, http.StatusUnprocessableEntity},
}

func (s *Server) listNotifications(ctx context.Context, in *notificationsInput) (*notificationsOutput, error) {
	f := alerting.NotificationFilter{Channel: string(in.Channel), Status: in.Status, Severity: in.Severity, Limit: in.Limit, Cursor: in.Cursor}
	if err := f.Validate(); err != nil {
		return nil, err
	}
	page, err := s.opts.Notifications.Notifications(ctx, principal(ctx).AccountID, f)
	if err != nil {
		return nil, err
	}
	return &notificationsOutput{Body: page}, nil
}

type retryNotificationInput struct {
	ID string `path:"id" doc:"A delivery id from the log."`
}

type retryNotificationOutput struct {
	Body alerting.Notification
}

var retryNotificationOp = huma.Operation{
	OperationID: "retry-notification",
	Summary:     "Retry a failed delivery now",
	Description: `Owners and admins. Queues a ` + "`failed`" + ` email, Slack or Discord delivery again, due now, with
a fresh round of attempts (up to 10 within 24 hours), and answers the delivery as the log shows
it. A delivery that is not failed (or an in_app one) is 409 ` + "`conflict`" + `; an unknown id is 404.`,
	Tags:   []string{"Alerting"},
	Errors: []int{http.StatusNotFound, http.StatusConflict},
}

func (s *Server) retryNotification(ctx context.Context, in *retryNotificationInput) (*retryNotificationOutput, error) {
	n, err := s.opts.Notifications.RetryNotification(ctx, principal(ctx).AccountID, in.ID)
	if err != nil {
		return nil, err
	}
	return &retryNotificationOutput{Body: n}, nil
}
