// Package telemetry holds what every domain package of the service shares:
// the coded error type, the page cursors' wire scheme and the retry
// backoff. Domain packages (analytics, accounts, alerting) sit beside it;
// implementations live in packages named after their dependency
// (clickhouse, postgres, httpapi).
package telemetry

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. They are part of the wire contract: httpapi maps each one to an
// HTTP status and uses it as the problem document's `code`. Never rename one.
const (
	EINVALID            = "invalid"                   // 422, well-formed but invalid input
	EBADREQUEST         = "bad_request"               // 400, malformed input
	EUNAUTHENTICATED    = "unauthenticated"           // 401, no or unknown credential
	EINVALIDCREDENTIALS = "invalid_credentials"       // 401, wrong email or password
	ECREDENTIAL         = "credential_not_allowed"    // 403, wrong kind of credential
	EFORBIDDEN          = "forbidden"                 // 403, role may not do this
	ENOTFOUND           = "not_found"                 // 404
	ECONFLICT           = "conflict"                  // 409
	ETOOLARGE           = "payload_too_large"         // 413
	ETOOMANYITEMS       = "too_many_items"            // 413
	EUNSUPPORTEDMEDIA   = "unsupported_media_type"    // 415
	ERATELIMITED        = "rate_limited"              // 429
	EUNAVAILABLE        = "unavailable"               // 503
	EINTERNAL           = "internal"                  // 500, never carries detail
	EINVALIDDATE        = "invalid_date"              // 400
	EINVALIDRANGE       = "invalid_range"             // 422
	ERANGETOOLARGE      = "range_too_large"           // 422
	EWEBHOOKHOST        = "webhook_host_not_allowed"  // 422
	ELIMITREACHED       = "limit_reached"             // 422, a per-account quota (alert rules)
	EREDACTIONBUDGET    = "redaction_budget_exceeded" // 422, a payload's redaction cost more than its budget
	EMETHODNOTALLOWED   = "method_not_allowed"        // 405, a known path without that method
	ENOTACCEPTABLE      = "not_acceptable"            // 406
	EOTHER              = "error"                     // any other status the HTTP stack raises itself
)

// Error is the service's one error type. Message is safe to show to a client;
// for EINTERNAL it is replaced by a generic text at the edge.
type Error struct {
	Code    string
	Message string
	// Field names the offending input, as huma locations do ("body.email",
	// "query.from"); empty when the error is not about one field.
	Field string
	// RetryAfter, in whole seconds, for ERATELIMITED and EUNAVAILABLE.
	RetryAfter int
	// Err is the cause, for logs and errors.Is/As; never shown to clients.
	Err error
}

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("%s: %s (%s)", e.Code, e.Message, e.Field)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// FieldError returns an *Error about one input field.
func FieldError(code, field, format string, args ...any) *Error {
	return &Error{Code: code, Field: field, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of err, or EINTERNAL when err is not an *Error.
func ErrorCode(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return EINTERNAL
}

// ErrorMessage returns the client-safe message of err.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) && e.Code != EINTERNAL {
		return e.Message
	}
	return "Internal error."
}

// RetryAfterSeconds rounds a wait up to the whole seconds of a Retry-After
// header, at least 1.
func RetryAfterSeconds(wait time.Duration) int {
	return max(1, int((wait+time.Second-1)/time.Second))
}
