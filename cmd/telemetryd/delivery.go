package main

import (
	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify/discord"
	"github.com/mcpscope/telemetry/alerting/notify/email"
	"github.com/mcpscope/telemetry/alerting/notify/slack"
)

// buildNotifiers returns a sender per channel the configuration switches
// on (docs/delivery.md): email with alerting.email.smtp_url, Slack and
// Discord with alerting.chat.enabled. None: deliveries stay queued.
func buildNotifiers(c AlertingConfig) (map[string]alerting.Notifier, alerting.Sending, error) {
	out := map[string]alerting.Notifier{}
	var sending alerting.Sending
	ob := c.Outbound.notify()
	if c.Email.SMTPURL != "" {
		srv, err := email.ParseURL(c.Email.SMTPURL)
		if err != nil {
			return nil, sending, err
		}
		roots, err := ob.RootCAs()
		if err != nil {
			return nil, sending, err
		}
		out[alerting.ChannelEmail] = &email.Notifier{Server: srv, From: c.Email.From, RootCAs: roots}
		sending.Email = true
	}
	if c.Chat.Enabled {
		client, err := ob.HTTPClient()
		if err != nil {
			return nil, sending, err
		}
		out[alerting.ChannelSlack] = &slack.Notifier{Client: client}
		out[alerting.ChannelDiscord] = &discord.Notifier{Client: client}
		sending.Chat = true
	}
	return out, sending, nil
}
