package httpapi

import (
	"context"
	"net/http"
	"net/netip"
	"strings"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humagin"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
)

const (
	schemeSession = "sessionToken"
	schemeIngest  = "ingestKey"
	schemeToken   = "personalToken"
)

// Access says which credential an operation takes.
type Access int

// Access levels.
const (
	Public     Access = iota // no credential
	AnyMember                // a session token, any role
	Manager                  // a session token of an owner or admin
	IngestOnly               // an ingest key
	// SessionOnly is a session token of any role, never a personal access
	// token: managing the tokens themselves.
	SessionOnly
)

// tokenReads says whether a personal access token may call an operation:
// the reads (GET) a session may make (docs/mcp-endpoint.md).
func tokenReads(method string, access Access) bool {
	return (access == AnyMember || access == Manager) && (method == http.MethodGet || method == http.MethodHead)
}

// String names the access rule as /docs shows it (extension x-access).
func (a Access) String() string {
	switch a {
	case AnyMember:
		return "session"
	case Manager:
		return "session:admin"
	case IngestOnly:
		return "ingest_key"
	case SessionOnly:
		return "session:only"
	}
	return "public"
}

// register adds a huma operation with its access rule: the credential check
// runs as an operation middleware, before the body is read, so an
// unauthenticated caller learns nothing about validation.
func register[I, O any](s *Server, op huma.Operation, access Access, h func(context.Context, *I) (*O, error)) {
	switch access {
	case Public:
		// An explicit empty list: this operation needs no credential.
		op.Security = []map[string][]string{}
	case AnyMember, Manager, SessionOnly:
		op.Security = []map[string][]string{{schemeSession: {}}}
		if tokenReads(op.Method, access) {
			op.Security = append(op.Security, map[string][]string{schemeToken: {}})
		}
		op.Errors = appendStatus(op.Errors, http.StatusUnauthorized, http.StatusForbidden)
	case IngestOnly:
		op.Security = []map[string][]string{{schemeIngest: {}}}
		op.Errors = appendStatus(op.Errors, http.StatusUnauthorized, http.StatusForbidden)
	}
	if op.Extensions == nil {
		op.Extensions = map[string]any{}
	}
	// x-access publishes each operation's credential rule in /docs; the
	// isolation test enumerates operations from it.
	op.Extensions["x-access"] = access.String()
	if access != Public {
		op.Middlewares = append(huma.Middlewares{s.authenticate(access, tokenReads(op.Method, access))}, op.Middlewares...)
	}
	huma.Register(s.api, op, h)
}

func appendStatus(list []int, codes ...int) []int {
	for _, c := range codes {
		found := false
		for _, x := range list {
			found = found || x == c
		}
		if !found {
			list = append(list, c)
		}
	}
	return list
}

func (s *Server) authenticate(access Access, tokenOK bool) func(huma.Context, func(huma.Context)) {
	return func(hctx huma.Context, next func(huma.Context)) {
		p, err := s.principalFor(hctx.Context(), hctx.Header("Authorization"), access, tokenOK)
		if err != nil {
			prob := ProblemFromError(hctx.Context(), err)
			if prob.Status == http.StatusUnauthorized {
				hctx.SetHeader("WWW-Authenticate", `Bearer realm="telemetry"`)
			}
			for k, vs := range prob.headers {
				for _, v := range vs {
					hctx.SetHeader(k, v)
				}
			}
			_ = huma.WriteErr(s.api, hctx, prob.Status, prob.Detail, prob)
			return
		}
		next(huma.WithValue(hctx, keyPrincipal, p))
	}
}

// principalFor resolves the bearer credential of a request to an operation
// taking access; tokenOK says whether a personal access token may call it.
func (s *Server) principalFor(ctx context.Context, header string, access Access, tokenOK bool) (*accounts.Principal, error) {
	token, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		token, ok = strings.CutPrefix(header, "bearer ")
	}
	token = strings.TrimSpace(token)
	if !ok || token == "" {
		return nil, telemetry.Errorf(telemetry.EUNAUTHENTICATED, "This endpoint needs a credential in an `Authorization: Bearer …` header.")
	}
	if s.opts.Auth == nil {
		return nil, telemetry.Errorf(telemetry.EUNAVAILABLE, "Authentication is not configured.")
	}
	switch {
	case strings.HasPrefix(token, accounts.SessionTokenPrefix):
		p, err := s.opts.Auth.AuthenticateSession(ctx, token)
		if err != nil {
			return nil, err
		}
		if access == IngestOnly {
			return nil, telemetry.Errorf(telemetry.ECREDENTIAL, "Session tokens cannot post telemetry; use an ingest key.")
		}
		if access == Manager && !p.Role.CanManage() {
			return nil, telemetry.Errorf(telemetry.EFORBIDDEN, "This needs the owner or admin role; yours is %s.", p.Role)
		}
		return p, nil
	case strings.HasPrefix(token, accounts.IngestKeyPrefix):
		p, err := s.opts.Auth.AuthenticateIngestKey(ctx, token)
		if err != nil {
			return nil, err
		}
		if access != IngestOnly {
			return nil, telemetry.Errorf(telemetry.ECREDENTIAL, "Ingest keys can only post telemetry; use a session token.")
		}
		return p, nil
	case strings.HasPrefix(token, accounts.PersonalTokenPrefix):
		p, err := s.opts.Auth.AuthenticatePersonalToken(ctx, token)
		if err != nil {
			return nil, err
		}
		switch {
		case access == IngestOnly:
			return nil, telemetry.Errorf(telemetry.ECREDENTIAL, "Personal access tokens cannot post telemetry; use an ingest key.")
		case !tokenOK:
			return nil, telemetry.Errorf(telemetry.ECREDENTIAL, "Personal access tokens may only read; this needs a session token.")
		case access == Manager && !p.Role.CanManage():
			return nil, telemetry.Errorf(telemetry.EFORBIDDEN, "This needs the owner or admin role; yours is %s.", p.Role)
		}
		return p, nil
	}
	return nil, telemetry.Errorf(telemetry.EUNAUTHENTICATED, "The credential is not valid.")
}

// principal returns the authenticated principal of a request.
func principal(ctx context.Context) *accounts.Principal {
	p, _ := ctx.Value(keyPrincipal).(*accounts.Principal)
	if p == nil {
		// Only reachable if a route was registered without access; never
		// serve data without a principal.
		panic("httpapi: operation without principal")
	}
	return p
}

// limitClient counts a sign-in attempt against the client's address
// (Options.ClientLimit) and answers 429 with Retry-After past the limit.
func (s *Server) limitClient(hctx huma.Context, next func(huma.Context)) {
	key := clientKey(humagin.Unwrap(hctx).ClientIP())
	if wait, limited := s.opts.ClientLimit.Attempt(key, time.Now()); limited {
		s.writeError(hctx, &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(wait),
			Message: "Too many sign-in attempts from your address; try again later."})
		return
	}
	next(hctx)
}

// whenStoreReady answers metric reads 503 while the metrics store is not
// ready (the service started during a ClickHouse outage and has not
// migrated it yet); ingest goes on meanwhile, into the write-ahead log.
func (s *Server) whenStoreReady(hctx huma.Context, next func(huma.Context)) {
	if s.opts.StoreReady != nil && !s.opts.StoreReady() {
		s.writeError(hctx, &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: 5,
			Message: "The metrics store is unavailable; ingest is still accepted. Try again shortly."})
		return
	}
	next(hctx)
}

// writeError answers a middleware's refusal with the usual problem document.
func (s *Server) writeError(hctx huma.Context, err error) {
	p := ProblemFromError(hctx.Context(), err)
	for k, vs := range p.headers {
		for _, v := range vs {
			hctx.SetHeader(k, v)
		}
	}
	_ = huma.WriteErr(s.api, hctx, p.Status, p.Detail, p)
}

// clientKey is the address a client is limited by: IPv4 as is, IPv6 by
// its /64 (one host usually holds a whole /64).
func clientKey(ip string) string {
	addr, err := netip.ParseAddr(ip)
	if err != nil || addr.Is4() || addr.Is4In6() {
		return ip
	}
	p, _ := addr.Prefix(64)
	return p.String()
}
