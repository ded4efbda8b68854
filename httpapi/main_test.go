package httpapi

import (
	"testing"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// pg is this package's own PostgreSQL database, for the tests that drive
// the routes with the real account services.
var pg testenv.PostgresDB

// TestMain runs the tests 4 at once (testenv.RaiseParallel): each makes
// its own tenants, and those that read whole tables (the evaluator's pass)
// have a database of their own (testdb.Postgres).
func TestMain(m *testing.M) {
	testenv.RaiseParallel(4)
	pg.Main(m)
}
