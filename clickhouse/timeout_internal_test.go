package clickhouse

import (
	"context"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
	"github.com/mcpscope/telemetry/internal/testkit/testenv"
)

// A read that runs past ReadTimeout is stopped by the server and answers
// EUNAVAILABLE (503), not a hung connection or a 500.
func TestReadTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{Addr: []string{testenv.ClickHouseAddr(t)}, Database: "default", ReadTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n uint8
	slow := "SELECT sleepEachRow(0.5) FROM numbers(8) SETTINGS max_block_size = 1"
	err = db.query(ctx, "slow read", slow, nil, func() []any { return []any{&n} })
	if telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
		t.Fatalf("slow read: %v", err)
	}
	if err := db.query(ctx, "quick read", "SELECT toUInt8(1)", nil, func() []any { return []any{&n} }); err != nil || n != 1 {
		t.Fatalf("quick read: %v %d", err, n)
	}
}
