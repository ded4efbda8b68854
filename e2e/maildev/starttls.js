// starttls.js: MailDev with STARTTLS, for the delivery end-to-end tests
// (cmd/telemetryd/delivery_test.go, docs/delivery.md).
//
// MailDev 2 offers TLS only as implicit TLS (--incoming-secure) and hides
// STARTTLS. This launcher replaces its SMTP listener, before it listens,
// with one of the same library (smtp-server) and the same handlers
// (authentication, storing the mail) that offers STARTTLS with the
// certificate given by --incoming-cert/--incoming-key. Everything else is
// MailDev as shipped: its web API reads the mail back.
//
// Usage: node starttls.js --smtp PORT --web PORT --ip 127.0.0.1
//   --incoming-cert CERT --incoming-key KEY [--incoming-user U --incoming-pass P]
const fs = require('fs');
const { SMTPServer } = require('smtp-server');
const mailserver = require('maildev/lib/mailserver');

const create = mailserver.create;
mailserver.create = function (port, host, mailDir, user, password, hideExtensions, isSecure, certPath, keyPath) {
  create.apply(this, arguments);
  if (isSecure || !certPath || !keyPath) {
    return;
  }
  const shipped = mailserver.smtp.options;
  mailserver.smtp = new SMTPServer({
    secure: false,
    key: fs.readFileSync(keyPath),
    cert: fs.readFileSync(certPath),
    onAuth: shipped.onAuth,
    onData: shipped.onData,
    logger: false,
    hideSTARTTLS: false,
    // AUTH only after STARTTLS (smtp-server refuses it in clear).
    disabledCommands: user && password ? [] : ['AUTH'],
  });
  mailserver.smtp.on('error', mailserver.onSmtpError);
};

const MailDev = require("maildev/index.js");
new MailDev().listen();
