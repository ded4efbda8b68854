package email

import (
	"crypto/x509"
	"errors"

	"github.com/mcpscope/telemetry/alerting"
)

// Config is the installation's email configuration, handed to New as
// alerting.NotifierDeps.Email.
type Config struct {
	SMTPURL string
	From    string
	RootCAs *x509.CertPool
}

// Integration describes email to the registry (alerting/notify/registry).
var Integration = alerting.Integration{
	CatalogueEntry: alerting.CatalogueEntry{ID: alerting.ChannelEmail, Label: "Email", Scope: alerting.ScopePersonal,
		Description:        "Alerts are recorded for email to your address; sending is not switched on yet.",
		SendingDescription: "Alerts are emailed to your address as soon as a rule fires."},
	Gate: alerting.GateEmail,
	New: func(d alerting.NotifierDeps) (alerting.Notifier, error) {
		c, ok := d.Email.(Config)
		if !ok {
			return nil, errors.New("email: no configuration")
		}
		srv, err := ParseURL(c.SMTPURL)
		if err != nil {
			return nil, err
		}
		return &Notifier{Server: srv, From: c.From, RootCAs: c.RootCAs}, nil
	},
}
