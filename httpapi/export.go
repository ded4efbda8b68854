package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
	"github.com/danielgtaylor/huma/v2/adapters/humagin"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// ExportLimits bound exports (per instance): PerMinute starts by one
// account in any minute, Concurrent running at once for one account, and
// Total running at once across accounts (each holds up to two ClickHouse
// connections of its own, beside the pool: docs/limits.md). Zero fields
// take the defaults.
type ExportLimits struct {
	PerMinute  int
	Concurrent int
	Total      int
}

// DefaultExportLimits are the defaults of ExportLimits.
var DefaultExportLimits = ExportLimits{PerMinute: 10, Concurrent: 2, Total: 8}

// exportBusyRetry is the Retry-After of an export refused because the
// instance runs Total exports already.
const exportBusyRetry = 10

// exportWriteIdle is how long one write of an export may block on a client
// that does not read: each write moves the connection's write deadline
// (server.write_timeout bounds ordinary responses, not a long stream).
const exportWriteIdle = 2 * time.Minute

// exportLimiter counts the exports of each account.
type exportLimiter struct {
	limits  ExportLimits
	starts  *accounts.AttemptLimiter
	mu      sync.Mutex
	running map[string]int
	total   int
}

func newExportLimiter(l ExportLimits) *exportLimiter {
	if l.PerMinute <= 0 {
		l.PerMinute = DefaultExportLimits.PerMinute
	}
	if l.Concurrent <= 0 {
		l.Concurrent = DefaultExportLimits.Concurrent
	}
	if l.Total <= 0 {
		l.Total = DefaultExportLimits.Total
	}
	return &exportLimiter{limits: l, starts: accounts.NewAttemptLimiter(l.PerMinute, time.Minute, 100_000), running: map[string]int{}}
}

// start admits an export of the account or refuses it: ERATELIMITED for
// the account's own limits, EUNAVAILABLE when the instance runs its total
// already (not the account's doing). release must be called once when an
// admitted export ends.
func (l *exportLimiter) start(account string, now time.Time) (release func(), err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.total >= l.limits.Total {
		return nil, &telemetry.Error{Code: telemetry.EUNAVAILABLE, RetryAfter: exportBusyRetry,
			Message: "The service runs as many exports as it may at once; try again shortly."}
	}
	if l.running[account] >= l.limits.Concurrent {
		return nil, &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: 5,
			Message: "This account already runs as many exports as it may at once; try again when one has finished."}
	}
	if wait, limited := l.starts.Attempt(account, now); limited {
		return nil, &telemetry.Error{Code: telemetry.ERATELIMITED, RetryAfter: telemetry.RetryAfterSeconds(wait),
			Message: "Too many exports started by this account in the last minute; try again later."}
	}
	l.running[account]++
	l.total++
	var once sync.Once
	return func() {
		once.Do(func() {
			l.mu.Lock()
			if l.running[account]--; l.running[account] <= 0 {
				delete(l.running, account)
			}
			l.total--
			l.mu.Unlock()
		})
	}, nil
}

type exportInput struct {
	ID     string `path:"id" maxLength:"64" doc:"The MCP's id."`
	Format string `query:"format" enum:"ndjson,csv" default:"ndjson" doc:"ndjson (application/x-ndjson) or csv (text/csv)."`
	RangeQuery
}

var exportOp = huma.Operation{OperationID: "export-items", Summary: "Export an MCP's items",
	Description: analytics.ExportDoc + rangeRulesDoc, Tags: []string{"Data"}, Errors: []int{400, 404, 422, 429, 503}}

// rangeRulesDoc is the range part of rangeDoc (an export has no figures).
const rangeRulesDoc = `

Takes ` + "`from`" + ` and ` + "`to`" + ` (inclusive YYYY-MM-DD, whole UTC days; defaults: the last 7 days
through today). A malformed date is 400 ` + "`invalid_date`" + `; ` + "`from`" + ` after ` + "`to`" + ` is 422
` + "`invalid_range`" + `; more than 1096 days is 422 ` + "`range_too_large`" + `; a format other than ndjson or csv is 422
` + "`invalid`" + ` at ` + "`query.format`" + `.`

// exportResponses documents the streamed 200, which is not JSON.
func exportResponses(_ *Server, op *huma.Operation) {
	op.Responses = map[string]*huma.Response{"200": {Description: "The items, streamed.",
		Headers: map[string]*huma.Param{"Content-Disposition": {Description: "attachment; filename=\"<mcp id>_<from>_<to>.<format>\"",
			Schema: &huma.Schema{Type: "string"}}},
		Content: map[string]*huma.MediaType{
			"application/x-ndjson": {Schema: &huma.Schema{Type: "string"}},
			"text/csv":             {Schema: &huma.Schema{Type: "string"}},
		}}}
}

func (s *Server) exportItems(ctx context.Context, in *exportInput) (*huma.StreamResponse, error) {
	format, err := analytics.ParseExportFormat(in.Format)
	if err != nil {
		return nil, err
	}
	r, err := s.mcpRange(ctx, in.ID, in.RangeQuery)
	if err != nil {
		return nil, err
	}
	release, err := s.exports.start(principal(ctx).AccountID, time.Now())
	if err != nil {
		return nil, err
	}
	return &huma.StreamResponse{Body: func(hctx huma.Context) {
		defer release()
		s.streamExport(hctx, in.ID, r, format)
	}}, nil
}

// streamExport writes the export through a 256 KiB buffer, flushing each
// full buffer to the client. An error before the first byte went out is a
// problem document; after it, the connection is aborted so that the client
// sees a truncated body, never a short export that looks complete.
func (s *Server) streamExport(hctx huma.Context, mcpID string, r analytics.Range, format string) {
	ctx := hctx.Context()
	w := humagin.Unwrap(hctx).Writer
	h := w.Header()
	ext := format
	if format == analytics.ExportCSV {
		h.Set("Content-Type", "text/csv; charset=utf-8")
	} else {
		h.Set("Content-Type", "application/x-ndjson")
	}
	h.Set("Content-Disposition", `attachment; filename="`+mcpID+"_"+r.FromDate()+"_"+r.ToDate()+"."+ext+`"`)
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	fw := &flushWriter{w: w, rc: http.NewResponseController(w)}
	ew := analytics.NewExportWriter(bufio.NewWriterSize(fw, 256<<10), format)
	err := s.opts.Exporter.Export(ctx, mcpID, r, ew.Write)
	if err == nil {
		err = ew.Flush()
	}
	if err == nil {
		fw.commit()
		return
	}
	if !fw.committed {
		for _, k := range []string{"Content-Disposition", "Cache-Control", "Content-Type"} {
			h.Del(k)
		}
		s.writeError(hctx, err)
		return
	}
	if ctx.Err() == nil {
		loggerFrom(ctx).ErrorContext(ctx, "export failed after the first bytes; aborting the response", "error", err)
	}
	panic(http.ErrAbortHandler)
}

// flushWriter sends each write to the client at once, moving the
// connection's write deadline forward first.
type flushWriter struct {
	w         http.ResponseWriter
	rc        *http.ResponseController
	committed bool
}

func (f *flushWriter) commit() {
	if !f.committed {
		f.committed = true
		f.w.WriteHeader(http.StatusOK)
	}
}

func (f *flushWriter) Write(p []byte) (int, error) {
	f.commit()
	_ = f.rc.SetWriteDeadline(time.Now().Add(exportWriteIdle))
	n, err := f.w.Write(p)
	if err != nil {
		return n, err
	}
	return n, f.rc.Flush()
}
