package ingest

import (
	"context"
	"runtime"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

// DefaultRedactionBudget is the default of Options.RedactionBudget: CPU
// time redaction may spend per MiB of decoded payload (docs/limits.md).
const DefaultRedactionBudget = 40 * time.Millisecond

// minRedactionBudget is what the smallest payload may spend.
const minRedactionBudget = 2 * time.Millisecond

// redactionCheckBytes and redactionCheckSearches space the budget's clock
// reads (a system call): a search over at most a few KiB costs well under
// a millisecond unless the pattern is a large program.
const (
	redactionCheckBytes    = 64 << 10
	redactionCheckSearches = 256
)

// Payload is one request's items on their way to the log. Every ingest
// path (the JSON batch, OTLP traces) hands its items over as one, to
// Accept: redaction and the cut are the pipeline's, so no path can forget
// them.
type Payload struct {
	AccountID, MCPID string
	Items            []analytics.Item
	// Dropped counts the items the decoder dropped (invalid ones).
	Dropped int
	// Redactor is the MCP's redaction (the ingest key's principal); nil:
	// none, the free text is only cut.
	Redactor *accounts.Redactor
	// BodyBytes is the decoded body's size: redaction may spend
	// Options.RedactionBudget of CPU per MiB of it.
	BodyBytes int
	// Expand, when set, turns the redacted and cut Items into the items
	// ingested: OTLP metrics redact each point's text once, then expand the
	// point into its calls.
	Expand func(redacted []analytics.Item) []analytics.Item
}

// Accept redacts (when the MCP has redaction on) and cuts the free text of
// every item of the payload, then ingests them (Ingest). Errors:
// EREDACTIONBUDGET (nothing of the payload is stored), Ingest's.
func (a *Acceptor) Accept(ctx context.Context, pl Payload) (accepted, totalDropped int, err error) {
	if err := cutText(ctx, pl.Redactor, pl.Items, pl.BodyBytes, a.opts.RedactionBudget); err != nil {
		return 0, 0, err
	}
	if pl.Expand != nil {
		pl.Items = pl.Expand(pl.Items)
		if len(pl.Items) == 0 {
			return 0, pl.Dropped, nil
		}
	}
	return a.Ingest(ctx, pl.AccountID, pl.MCPID, pl.Items, pl.Dropped)
}

// cutText redacts (when the MCP has redaction on) and then cuts the free
// text of every item to its limit (analytics.Item.CutText), within the
// payload's redaction budget: perMiB of the calling thread's CPU time per
// MiB of the decoded body (at least minRedactionBudget), and the request's
// context. Over budget, the whole payload is refused with
// EREDACTIONBUDGET: what the sender's data and the MCP's own patterns
// cost is theirs, and nothing of the payload is stored.
func cutText(ctx context.Context, r *accounts.Redactor, items []analytics.Item, bodyBytes int, perMiB time.Duration) error {
	var budget accounts.RedactionBudget // nil: no redaction, a nil Redactor only cuts
	var b *redactionBudget
	if r != nil {
		runtime.LockOSThread() // the thread's CPU clock is the goroutine's while locked
		defer runtime.UnlockOSThread()
		b = &redactionBudget{ctx: ctx, start: threadCPU(), bodyBytes: bodyBytes,
			limit: max(minRedactionBudget, time.Duration(float64(perMiB)*float64(bodyBytes)/(1<<20)))}
		budget = b
	}
	cut := func(s string, maxChars int) (string, error) { return r.Field(s, maxChars, budget) }
	for i := range items {
		if err := items[i].CutText(cut); err != nil {
			return err
		}
	}
	if b != nil {
		return b.check()
	}
	return nil
}

// redactionBudget is accounts.RedactionBudget over the thread's CPU time.
type redactionBudget struct {
	ctx                        context.Context
	start, limit               time.Duration
	bodyBytes, bytes, searches int
}

func (b *redactionBudget) Spend(n int) error {
	b.bytes += n
	b.searches++
	if b.bytes < redactionCheckBytes && b.searches < redactionCheckSearches {
		return nil
	}
	return b.check()
}

func (b *redactionBudget) check() error {
	b.bytes, b.searches = 0, 0
	if err := b.ctx.Err(); err != nil {
		return err
	}
	if used := threadCPU() - b.start; used > b.limit {
		return telemetry.Errorf(telemetry.EREDACTIONBUDGET,
			"Redacting this payload took more than its budget (%s of CPU for %d KiB): the MCP's redaction patterns cost too much on "+
				"these strings. Nothing of the payload was stored. Simplify the patterns (a literal every match contains makes a pattern "+
				"cheap) or send shorter strings.", b.limit.Round(time.Millisecond/10), (b.bodyBytes+1023)/1024)
	}
	return nil
}

var processStart = time.Now()

// monotonic is the time since the process started.
func monotonic() time.Duration { return time.Since(processStart) }
