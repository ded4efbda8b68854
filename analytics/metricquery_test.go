package analytics

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestFanOutFirstErrorCancelsTheRest(t *testing.T) {
	boom := errors.New("boom")
	var sawCancel bool
	start := time.Now()
	err := fanOut(context.Background(),
		func(context.Context) error { return boom },
		nil, // a read not asked for
		func(ctx context.Context) error {
			select {
			case <-ctx.Done():
				sawCancel = true
				return ctx.Err()
			case <-time.After(10 * time.Second):
				return nil
			}
		})
	if !errors.Is(err, boom) || !sawCancel || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v, cancelled %v, took %s", err, sawCancel, time.Since(start))
	}
	ran := 0
	if err := fanOut(context.Background(), func(context.Context) error { ran++; return nil }, when(false, nil)); err != nil || ran != 1 {
		t.Fatalf("all ok: err %v, ran %d", err, ran)
	}
}
