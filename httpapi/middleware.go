package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"runtime/debug"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/mcpscope/telemetry"
)

type ctxKey int

const (
	keyRequestID ctxKey = iota
	keyLogger
	keyPrincipal
)

func requestID(ctx context.Context) string {
	id, _ := ctx.Value(keyRequestID).(string)
	return id
}

func loggerFrom(ctx context.Context) *slog.Logger {
	if l, ok := ctx.Value(keyLogger).(*slog.Logger); ok {
		return l
	}
	return slog.Default()
}

// writeProblem writes a problem document outside huma (gin-level failures).
func writeProblem(c *gin.Context, p *Problem) {
	if p.RequestID == "" {
		p.RequestID = requestID(c.Request.Context())
	}
	for k, vs := range p.headers {
		for _, v := range vs {
			c.Writer.Header().Add(k, v)
		}
	}
	body, _ := json.Marshal(p)
	c.Data(p.Status, "application/problem+json", body)
	c.Abort()
}

// requestContext gives each request an id (echoed in X-Request-Id), a logger
// carrying it, the wire version header and, on a legacy host, the
// deprecation headers. It also writes one access-log line per request.
func (s *Server) requestContext(c *gin.Context) {
	start := time.Now()
	id := c.GetHeader("X-Request-Id")
	if id == "" || len(id) > 64 || strings.ContainsAny(id, "\r\n") {
		var b [8]byte
		_, _ = rand.Read(b[:])
		id = hex.EncodeToString(b[:])
	}
	log := s.log.With(slog.String("request_id", id))
	ctx := context.WithValue(c.Request.Context(), keyRequestID, id)
	ctx = context.WithValue(ctx, keyLogger, log)
	c.Request = c.Request.WithContext(ctx)

	h := c.Writer.Header()
	h.Set("API-Version", "1")
	h.Set("X-Request-Id", id)
	if s.isLegacyHost(c.Request.Host) {
		h.Set("Deprecation", "true")
		h.Set("Link", "<"+s.opts.BaseURL+">; rel=\"successor-version\"")
	}

	c.Next()

	status := c.Writer.Status()
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	route := c.FullPath()
	if s.metrics != nil {
		s.metrics.observe(c.Request.Method, route, status, time.Since(start))
	}
	log.Log(ctx, level, "request",
		slog.String("method", c.Request.Method),
		slog.String("path", c.Request.URL.Path),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Int("bytes", c.Writer.Size()),
		slog.Duration("duration", time.Since(start)),
		slog.String("remote", c.ClientIP()),
	)
}

// recoverPanics turns a panic into a 500 `internal` problem; the panic value
// and stack go to the log only.
func recoverPanics(c *gin.Context) {
	defer func() {
		if r := recover(); r != nil {
			if r == http.ErrAbortHandler {
				panic(r)
			}
			ctx := c.Request.Context()
			loggerFrom(ctx).ErrorContext(ctx, "panic", slog.Any("panic", r), slog.String("stack", string(debug.Stack())))
			if !c.Writer.Written() {
				writeProblem(c, newProblem(http.StatusInternalServerError, telemetry.EINTERNAL, "Internal error."))
			}
			c.Abort()
		}
	}()
	c.Next()
}

func (s *Server) isLegacyHost(host string) bool {
	if len(s.opts.LegacyHosts) == 0 {
		return false
	}
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	for _, l := range s.opts.LegacyHosts {
		if strings.EqualFold(l, host) {
			return true
		}
	}
	return false
}

func noRoute(c *gin.Context) {
	writeProblem(c, newProblem(http.StatusNotFound, telemetry.ENOTFOUND, "No route matches "+c.Request.Method+" "+c.Request.URL.Path+"."))
}

func noMethod(c *gin.Context) {
	writeProblem(c, newProblem(http.StatusMethodNotAllowed, telemetry.EMETHODNOTALLOWED, "Method "+c.Request.Method+" is not allowed on "+c.Request.URL.Path+"."))
}
