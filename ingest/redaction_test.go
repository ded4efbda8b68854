package ingest

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
)

func TestCutTextRedactsCutsAndKeepsItsBudget(t *testing.T) {
	mail := accounts.NewRedactor(accounts.Redaction{Enabled: true, Patterns: []string{`[a-z]+@example\.com`}})
	items := []analytics.Item{{ErrorMessage: "mail ada@example.com"}, {ErrorMessage: strings.Repeat("x", 3000)}}
	if err := cutText(context.Background(), mail, items, 4096, DefaultRedactionBudget); err != nil {
		t.Fatal(err)
	}
	if items[0].ErrorMessage != "mail "+accounts.Redacted || len([]rune(items[1].ErrorMessage)) > analytics.MaxErrorMessage {
		t.Fatalf("redacted and cut: %q, %d characters", items[0].ErrorMessage, len([]rune(items[1].ErrorMessage)))
	}
	// Without redaction the text is only cut.
	plain := []analytics.Item{{ErrorMessage: "mail ada@example.com"}, {ErrorMessage: strings.Repeat("x", 3000)}}
	if err := cutText(context.Background(), nil, plain, 4096, DefaultRedactionBudget); err != nil ||
		plain[0].ErrorMessage != "mail ada@example.com" || len([]rune(plain[1].ErrorMessage)) > analytics.MaxErrorMessage {
		t.Fatalf("cut only: %v %q", err, plain[0].ErrorMessage)
	}
	// A pattern that costs quadratic time on the payload's strings runs
	// past the budget: the whole payload is refused.
	quad := accounts.NewRedactor(accounts.Redaction{Enabled: true, Patterns: []string{`a[^Z]*Z|a`}})
	var hostile []analytics.Item
	for range 250 {
		hostile = append(hostile, analytics.Item{ErrorMessage: strings.Repeat("a", 4000)})
	}
	start := time.Now()
	err := cutText(context.Background(), quad, hostile, 1<<20, DefaultRedactionBudget)
	if telemetry.ErrorCode(err) != telemetry.EREDACTIONBUDGET {
		t.Fatalf("quadratic pattern: %v", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("refusing took %s", took)
	}
}
