package telemetry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Base: time.Second, Max: 10 * time.Second}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second, 10 * time.Second, 10 * time.Second}
	for n, w := range want {
		if got := b.Delay(n); got != w {
			t.Errorf("Delay(%d) = %v, want %v", n, got, w)
		}
	}
	if got := b.Delay(1 << 20); got != 10*time.Second {
		t.Errorf("Delay(huge) = %v, want the cap", got)
	}
	j := Backoff{Base: time.Second, Max: 10 * time.Second, Jitter: true}
	for n := range 8 {
		full := b.Delay(n)
		if got := j.Delay(n); got < full/2 || got > full {
			t.Errorf("jittered Delay(%d) = %v, want within [%v, %v]", n, got, full/2, full)
		}
	}
	if got := (Backoff{Max: time.Second}).Delay(3); got != 0 {
		t.Errorf("zero base: %v", got)
	}
}

func TestBackoffRetry(t *testing.T) {
	b := Backoff{Base: time.Millisecond, Max: 4 * time.Millisecond}
	var waits []time.Duration
	calls := 0
	err := b.Retry(context.Background(), func() error {
		calls++
		if calls < 5 {
			return errors.New("down")
		}
		return nil
	}, func(_ error, wait time.Duration) { waits = append(waits, wait) })
	if err != nil || calls != 5 {
		t.Fatalf("Retry = %v after %d calls", err, calls)
	}
	want := []time.Duration{1, 2, 4, 4}
	for i := range want {
		if waits[i] != want[i]*time.Millisecond {
			t.Fatalf("waits = %v", waits)
		}
	}
	b.Reset()
	if got := b.Next(); got != time.Millisecond {
		t.Errorf("after Reset, Next = %v", got)
	}

	ctx, cancel := context.WithCancel(context.Background())
	slow := Backoff{Base: time.Hour, Max: time.Hour}
	err = slow.Retry(ctx, func() error { return errors.New("down") }, func(error, time.Duration) { cancel() })
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Retry after cancel = %v", err)
	}
}
