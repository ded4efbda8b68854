package main

import (
	"net/http"
	"sync"

	"github.com/mcpscope/telemetry/alerting"
	"github.com/mcpscope/telemetry/alerting/notify/email"
	_ "github.com/mcpscope/telemetry/alerting/notify/registry" // registers every destination
)

// buildNotifiers returns a sender per channel the configuration switches
// on (docs/delivery.md), from the registry of integrations: those gated by
// email with alerting.email.smtp_url, those gated by chat (every team
// channel) with alerting.chat.enabled. None: deliveries stay queued.
func buildNotifiers(c AlertingConfig) (map[string]alerting.Notifier, alerting.Sending, error) {
	out := map[string]alerting.Notifier{}
	sending := alerting.Sending{Email: c.Email.SMTPURL != "", Chat: c.Chat.Enabled}
	ob := c.Outbound.notify()
	roots, err := ob.RootCAs()
	if err != nil {
		return nil, sending, err
	}
	var (
		once   sync.Once
		client *http.Client
		cerr   error
	)
	deps := alerting.NotifierDeps{
		HTTP: func() (*http.Client, error) {
			once.Do(func() { client, cerr = ob.HTTPClient() })
			return client, cerr
		},
		Proxied: ob.ProxyURL != "",
		Email:   email.Config{SMTPURL: c.Email.SMTPURL, From: c.Email.From, RootCAs: roots},
	}
	for _, in := range alerting.Integrations() {
		if in.New == nil || in.Gate == alerting.GateAlways || !sending.Sends(in.ID) {
			continue
		}
		n, err := in.New(deps)
		if err != nil {
			return nil, sending, err
		}
		out[in.ID] = n
	}
	return out, sending, nil
}
