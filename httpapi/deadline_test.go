package httpapi

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// A handler still waiting on a dependency when its deadline passes answers
// 503 unavailable with Retry-After, not 500.
func TestHandlerDeadline(t *testing.T) {
	t.Parallel()
	s := testServer(t, Options{})
	op := huma.Operation{OperationID: "test-slow", Method: http.MethodGet, Path: "/v1/test/slow",
		Middlewares: huma.Middlewares{withDeadline(20 * time.Millisecond)}}
	register(s, op, Public, func(ctx context.Context, _ *struct{}) (*struct{}, error) {
		<-ctx.Done() // a dependency that does not answer in time
		return nil, ctx.Err()
	})
	rec, m := do(t, s, "GET", "/v1/test/slow", "")
	if rec.Code != 503 || m["code"] != "unavailable" || rec.Header().Get("Retry-After") != "1" {
		t.Fatalf("%d %v %v", rec.Code, m, rec.Header())
	}
	if d := (Deadlines{Reads: 5 * time.Second}); d.of(classRead) != 5*time.Second || d.of(classIngest) != DefaultDeadlines.Ingest || d.of(classOther) != DefaultDeadlines.Other {
		t.Fatalf("deadlines %v %v %v", d.of(classRead), d.of(classIngest), d.of(classOther))
	}
}

// A request whose client went away (its context cancelled) is no internal
// error: 503 with Retry-After, as when a deadline passes.
func TestCancelledRequestIsNoInternalError(t *testing.T) {
	t.Parallel()
	for _, err := range []error{context.Canceled, fmt.Errorf("ingest: %w", context.Canceled), context.DeadlineExceeded} {
		p := ProblemFromError(context.Background(), err)
		if p.Status != 503 || p.Code != "unavailable" || p.headers.Get("Retry-After") == "" {
			t.Errorf("%v: %d %s %v, want 503 unavailable with Retry-After", err, p.Status, p.Code, p.headers)
		}
	}
}
