package telemetry

import (
	"context"
	"math/rand/v2"
	"time"
)

// Backoff is the exponential wait between attempts that every retry in the
// service uses: the ingest flusher's inserts, the revocation listener, the
// ClickHouse migrations at start, the delivery outbox and the Go client.
// The wait after the n-th failure is Base·2^(n-1), at most Max.
//
// With Jitter the wait is a random point in the upper half of that ("equal
// jitter"): parties that failed together (clients of one outage, deliveries
// of one dead endpoint) do not retry together, yet each still waits.
type Backoff struct {
	Base, Max time.Duration
	Jitter    bool

	failures int // for Next and Retry
}

// Delay is the wait before retry n+1 after n+1 failures (n = 0 for the
// first retry).
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base
	if d <= 0 {
		return 0
	}
	for i := 0; i < n && d < b.Max; i++ {
		d *= 2
	}
	d = min(d, b.Max)
	if b.Jitter {
		d = d/2 + rand.N(d/2+1)
	}
	return d
}

// Next counts one more failure and returns the wait before the next try.
func (b *Backoff) Next() time.Duration {
	d := b.Delay(b.failures)
	if b.failures < 64 {
		b.failures++
	}
	return d
}

// Reset starts the schedule over, as after a success that lasted.
func (b *Backoff) Reset() { b.failures = 0 }

// Retry calls f until it returns nil or ctx ends, waiting Next() after
// each failure; failed (when not nil) hears of each failure and the wait
// before the next try, for logs and metrics. It returns nil once f
// succeeded, ctx.Err() when ctx ended first.
func (b *Backoff) Retry(ctx context.Context, f func() error, failed func(err error, wait time.Duration)) error {
	for {
		err := f()
		if err == nil {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		wait := b.Next()
		if failed != nil {
			failed(err, wait)
		}
		if err := Sleep(ctx, wait); err != nil {
			return err
		}
	}
}

// Sleep waits d, or less when ctx ends first (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
