package postgres

import (
	"context"
	"time"

	"github.com/mcpscope/telemetry"
)

// The stores that can answer without PostgreSQL (sessions from their
// mirror, span sources from memory) share one view of an outage through
// DB.tryOrFallBack: once one of them finds PostgreSQL unreachable, none of
// them asks it again for a pause, so during an outage a request that has a
// fallback costs no connection attempt and no wait.
const (
	// fallbackTimeout bounds a statement that has a fallback; past it the
	// fallback answers, so ingest never waits long for PostgreSQL.
	fallbackTimeout = 2 * time.Second
	// fallbackPause is how long, after a statement with a fallback failed
	// as unavailable, the others go to their fallback without asking (a
	// PostgreSQL that does not answer would cost each of them
	// fallbackTimeout).
	fallbackPause = time.Second
)

// errPaused stands for the failure that began the current pause.
var errPaused = &telemetry.Error{Code: telemetry.EUNAVAILABLE, Message: "The database is unavailable."}

// tryOrFallBack runs fn within timeout unless the pause of an earlier
// failure runs (then it returns errPaused without calling fn). When fn
// fails as unavailable, a pause begins for every caller on db. The caller
// falls back on any EUNAVAILABLE.
func (db *DB) tryOrFallBack(ctx context.Context, timeout, pause time.Duration, fn func(context.Context) error) error {
	if time.Now().UnixNano() < db.retryAt.Load() {
		return errPaused
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	err := fn(tctx)
	cancel()
	if err != nil && ctx.Err() == nil && telemetry.ErrorCode(err) == telemetry.EUNAVAILABLE {
		db.retryAt.Store(time.Now().Add(pause).UnixNano())
	}
	return err
}
