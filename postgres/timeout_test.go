package postgres

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/mcpscope/telemetry"
)

// A statement past the configured statement_timeout is cancelled by the
// server and answers EUNAVAILABLE; migrations still run on such a pool.
func TestStatementTimeout(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db, err := Open(ctx, Config{URL: pg.URL(t), MaxConns: 4, StatementTimeout: 200 * time.Millisecond}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = db.Pool.Exec(ctx, "SELECT pg_sleep(2)")
	if err = wrap(err); telemetry.ErrorCode(err) != telemetry.EUNAVAILABLE {
		t.Fatalf("slow statement: %v", err)
	}
	var setting string
	// Every pooled connection, including the one migrations used, keeps the bound.
	for i := 0; i < 4; i++ {
		if err := db.Pool.QueryRow(ctx, "SHOW statement_timeout").Scan(&setting); err != nil || setting != "200ms" {
			t.Fatalf("statement_timeout %q, %v", setting, err)
		}
	}
}

// A connection cut mid-statement (the server killed: pgx reads an
// unexpected EOF) is the database being unavailable, not an internal
// error.
func TestConnectionCutIsUnavailable(t *testing.T) {
	t.Parallel()
	for _, err := range []error{io.ErrUnexpectedEOF, fmt.Errorf("read: %w", io.ErrUnexpectedEOF), io.EOF} {
		if got := wrap(err); telemetry.ErrorCode(got) != telemetry.EUNAVAILABLE {
			t.Errorf("wrap(%v) = %v, want unavailable", err, got)
		}
	}
}
