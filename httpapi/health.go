package httpapi

import (
	"context"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/danielgtaylor/huma/v2"
)

// HealthBody is the /health answer: each dependency's check, "ok" or the
// reason it failed.
type HealthBody struct {
	Status string            `json:"status" enum:"ok,degraded" doc:"ok when every check passes, degraded otherwise."`
	Checks map[string]string `json:"checks" doc:"Each dependency (postgres, clickhouse) and \"ok\" or why it failed."`
}

type healthOutput struct {
	Status       int
	CacheControl string `header:"Cache-Control"`
	Body         HealthBody
}

var healthOp = huma.Operation{
	OperationID: "health",
	Summary:     "Health check",
	Description: "200 with every check `ok`; 503 with `status: degraded` and the failing check when PostgreSQL or ClickHouse is unreachable or the write-ahead log cannot write (`wal`: disk full or I/O error; it clears by itself once a write succeeds). Needs no credential.",
	Tags:        []string{"Service"},
	Errors:      []int{http.StatusServiceUnavailable},
}

func (s *Server) health(ctx context.Context, _ *struct{}) (*healthOutput, error) {
	out := &healthOutput{Status: http.StatusOK, CacheControl: "no-store", Body: HealthBody{Status: "ok", Checks: map[string]string{}}}
	names := make([]string, 0, len(s.opts.Checks))
	for n := range s.opts.Checks {
		names = append(names, n)
	}
	sort.Strings(names)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, n := range names {
		wg.Add(1)
		go func(name string, check func(context.Context) error) {
			defer wg.Done()
			cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			res := "ok"
			if err := check(cctx); err != nil {
				res = "unavailable"
				loggerFrom(ctx).WarnContext(ctx, "health check failed", "check", name, "error", err.Error())
			}
			mu.Lock()
			out.Body.Checks[name] = res
			if res != "ok" {
				out.Status = http.StatusServiceUnavailable
				out.Body.Status = "degraded"
			}
			mu.Unlock()
		}(n, s.opts.Checks[n])
	}
	wg.Wait()
	return out, nil
}
