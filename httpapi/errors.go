package httpapi

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/danielgtaylor/huma/v2"

	"github.com/mcpscope/telemetry"
)

// Problem is the RFC 9457 problem document every non-2xx response carries.
// `code` is the stable, machine-readable part of the contract.
type Problem struct {
	Type      string         `json:"type" doc:"Always about:blank."`
	Title     string         `json:"title" doc:"The HTTP status text."`
	Status    int            `json:"status" doc:"The HTTP status code."`
	Detail    string         `json:"detail,omitempty" doc:"A human-readable explanation."`
	Code      string         `json:"code" doc:"Stable machine-readable error code, e.g. invalid_range."`
	RequestID string         `json:"request_id,omitempty" doc:"The X-Request-Id of the request, for support."`
	Errors    []ProblemField `json:"errors,omitempty" doc:"Per-field problems."`

	headers http.Header
}

// ProblemField locates one invalid input, e.g. query.from or body.items[3].id.
type ProblemField struct {
	Location string `json:"location,omitempty"`
	Message  string `json:"message"`
}

func (p *Problem) Error() string                  { return p.Detail }
func (p *Problem) GetStatus() int                 { return p.Status }
func (p *Problem) ContentType(string) string      { return "application/problem+json" }
func (p *Problem) GetHeaders() http.Header        { return p.headers }
func (p *Problem) ErrorDetail() *huma.ErrorDetail { return &huma.ErrorDetail{Message: p.Detail} }

// codeStatus is the one table from error codes to HTTP statuses: every code
// of error.go but EOTHER (which stands for whatever status the HTTP stack
// raised) has its row; TestEveryErrorCodeHasAStatus holds it so.
var codeStatus = map[string]int{
	telemetry.EBADREQUEST:         http.StatusBadRequest,
	telemetry.EINVALIDDATE:        http.StatusBadRequest,
	telemetry.EINVALID:            http.StatusUnprocessableEntity,
	telemetry.EINVALIDRANGE:       http.StatusUnprocessableEntity,
	telemetry.ERANGETOOLARGE:      http.StatusUnprocessableEntity,
	telemetry.EWEBHOOKHOST:        http.StatusUnprocessableEntity,
	telemetry.ELIMITREACHED:       http.StatusUnprocessableEntity,
	telemetry.EREDACTIONBUDGET:    http.StatusUnprocessableEntity,
	telemetry.EUNAUTHENTICATED:    http.StatusUnauthorized,
	telemetry.EINVALIDCREDENTIALS: http.StatusUnauthorized,
	telemetry.ECREDENTIAL:         http.StatusForbidden,
	telemetry.EFORBIDDEN:          http.StatusForbidden,
	telemetry.ENOTFOUND:           http.StatusNotFound,
	telemetry.ECONFLICT:           http.StatusConflict,
	telemetry.ETOOLARGE:           http.StatusRequestEntityTooLarge,
	telemetry.ETOOMANYITEMS:       http.StatusRequestEntityTooLarge,
	telemetry.EUNSUPPORTEDMEDIA:   http.StatusUnsupportedMediaType,
	telemetry.ERATELIMITED:        http.StatusTooManyRequests,
	telemetry.EUNAVAILABLE:        http.StatusServiceUnavailable,
	telemetry.EINTERNAL:           http.StatusInternalServerError,
	telemetry.EMETHODNOTALLOWED:   http.StatusMethodNotAllowed,
	telemetry.ENOTACCEPTABLE:      http.StatusNotAcceptable,
}

// statusCode is the default code for problems that huma or gin raise
// themselves (validation, malformed JSON, unknown routes).
var statusCode = map[int]string{
	http.StatusBadRequest:            telemetry.EBADREQUEST,
	http.StatusUnauthorized:          telemetry.EUNAUTHENTICATED,
	http.StatusForbidden:             telemetry.EFORBIDDEN,
	http.StatusNotFound:              telemetry.ENOTFOUND,
	http.StatusMethodNotAllowed:      telemetry.EMETHODNOTALLOWED,
	http.StatusNotAcceptable:         telemetry.ENOTACCEPTABLE,
	http.StatusConflict:              telemetry.ECONFLICT,
	http.StatusRequestEntityTooLarge: telemetry.ETOOLARGE,
	http.StatusUnsupportedMediaType:  telemetry.EUNSUPPORTEDMEDIA,
	http.StatusUnprocessableEntity:   telemetry.EINVALID,
	http.StatusTooManyRequests:       telemetry.ERATELIMITED,
	http.StatusServiceUnavailable:    telemetry.EUNAVAILABLE,
	http.StatusInternalServerError:   telemetry.EINTERNAL,
}

// newProblem builds a problem document for status with a human detail.
func newProblem(status int, code, detail string) *Problem {
	if code == "" {
		code = statusCode[status]
		if code == "" {
			code = telemetry.EOTHER
		}
	}
	return &Problem{Type: "about:blank", Title: http.StatusText(status), Status: status, Detail: detail, Code: code}
}

// ProblemFromError turns any error into the problem the client sees. Domain
// errors keep their code and message; everything else is an internal error
// whose detail never leaves the server (it is logged with the request id).
func ProblemFromError(ctx context.Context, err error) *Problem {
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	var te *telemetry.Error
	if errors.As(err, &te) && te.Code != telemetry.EINTERNAL {
		status, ok := codeStatus[te.Code]
		if !ok {
			status = http.StatusBadRequest
		}
		p = newProblem(status, te.Code, te.Message)
		if te.Field != "" {
			p.Errors = []ProblemField{{Location: te.Field, Message: te.Message}}
		}
		if te.RetryAfter > 0 {
			p.headers = http.Header{"Retry-After": []string{strconv.Itoa(te.RetryAfter)}}
		}
		p.RequestID = requestID(ctx)
		return p
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		// The handler's deadline (Options.Deadlines) passed while a
		// dependency was still working: the dependency is too slow now.
		// Or the client gave up (or the server is stopping): nothing was
		// done, and were the answer read, a retry is right. Not an
		// internal error either way.
		p = newProblem(http.StatusServiceUnavailable, telemetry.EUNAVAILABLE, "The request took too long; try again shortly.")
		p.headers = http.Header{"Retry-After": []string{"1"}}
		p.RequestID = requestID(ctx)
		return p
	}
	loggerFrom(ctx).ErrorContext(ctx, "internal error", slog.String("error", err.Error()))
	p = newProblem(http.StatusInternalServerError, telemetry.EINTERNAL, "Internal error.")
	p.RequestID = requestID(ctx)
	return p
}

// humaError replaces huma.NewErrorWithContext so that every error huma
// writes (validation, malformed bodies, handler errors) is one of ours.
func humaError(hctx huma.Context, status int, msg string, errs ...error) huma.StatusError {
	ctx := context.Background()
	if hctx != nil {
		ctx = hctx.Context()
	}
	for _, e := range errs {
		// A problem built by us (the authentication middleware passes one
		// to huma.WriteErr) keeps its own code: 403 may be forbidden or
		// credential_not_allowed.
		var own *Problem
		if errors.As(e, &own) {
			return own
		}
	}
	if status == http.StatusInternalServerError {
		for _, e := range errs {
			if e != nil {
				p := ProblemFromError(ctx, e)
				if hctx != nil {
					// huma applies error headers before it calls us; a
					// domain error's Retry-After is set here instead.
					for k, vs := range p.headers {
						for _, v := range vs {
							hctx.SetHeader(k, v)
						}
					}
				}
				return p
			}
		}
	}
	if status == http.StatusUnprocessableEntity && hasFormatError(errs) {
		// huma reports a parameter it could not parse (limit=abc) as 422;
		// the contract calls a bad parameter format a malformed request.
		status = http.StatusBadRequest
	}
	p := newProblem(status, "", msg)
	p.RequestID = requestID(ctx)
	for _, e := range errs {
		if e == nil {
			continue
		}
		var d *huma.ErrorDetail
		if errors.As(e, &d) {
			p.Errors = append(p.Errors, ProblemField{Location: fieldLocation(d), Message: d.Message})
		} else {
			p.Errors = append(p.Errors, ProblemField{Message: e.Error()})
		}
	}
	switch {
	case status == http.StatusUnprocessableEntity && len(p.Errors) > 0:
		p.Detail = "Validation failed: " + p.Errors[0].Location + " " + p.Errors[0].Message + "."
	case status == http.StatusBadRequest && len(p.Errors) > 0:
		p.Detail = "Malformed request: " + p.Errors[0].Message + "."
	case status == http.StatusRequestEntityTooLarge:
		p.Detail = "The request body is too large."
	case status == http.StatusUnsupportedMediaType:
		p.Detail = "Request bodies must be application/json."
	}
	return p
}

var installErrorModel sync.Once

// useProblemErrors makes huma write every error as our Problem. huma takes
// its error constructor from package variables, not from the API's
// configuration, so this is process-wide; New installs it (once) before it
// registers any operation, and nothing else in the process uses huma.
func useProblemErrors() {
	installErrorModel.Do(func() {
		huma.NewErrorWithContext = humaError
		huma.NewError = func(status int, msg string, errs ...error) huma.StatusError {
			return humaError(nil, status, msg, errs...)
		}
	})
}

// hasFormatError reports whether huma could not parse a path, query or
// header parameter into its type (as opposed to a value that parsed but
// breaks a rule, which stays 422).
func hasFormatError(errs []error) bool {
	for _, e := range errs {
		var d *huma.ErrorDetail
		if !errors.As(e, &d) {
			continue
		}
		param := strings.HasPrefix(d.Location, "query.") || strings.HasPrefix(d.Location, "path.") || strings.HasPrefix(d.Location, "header.")
		switch {
		case !param:
		case d.Message == "invalid integer", d.Message == "invalid float", d.Message == "invalid floating value",
			d.Message == "invalid boolean", d.Message == "invalid url.URL value",
			strings.HasPrefix(d.Message, "invalid date/time"), strings.HasPrefix(d.Message, "invalid value: "):
			return true
		}
	}
	return false
}

// fieldLocation points a missing-property error at the property itself
// (body.email, not body), so that every 422 names the field to fix.
func fieldLocation(d *huma.ErrorDetail) string {
	name, ok := strings.CutPrefix(d.Message, "expected required property ")
	if name, ok2 := strings.CutSuffix(name, " to be present"); ok && ok2 && name != "" {
		return d.Location + "." + name
	}
	return d.Location
}
