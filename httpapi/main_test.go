package httpapi

import (
	"testing"

	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// pg is this package's own PostgreSQL database, for the tests that drive
// the routes with the real account services.
var pg testenv.PostgresDB

func TestMain(m *testing.M) { pg.Main(m) }
