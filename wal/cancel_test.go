package wal

import (
	"bytes"
	"context"
	"testing"
	"time"
)

// A caller whose context ends after its records were queued still gets
// the true outcome: they are committed, and Append says so with their
// sequence numbers, so a client that gave up and retries is recognised as a
// duplicate instead of being told "not stored".
func TestAppendIsNotCutShortOnceQueued(t *testing.T) {
	l := openLog(t, t.TempDir(), Options{})
	ctx, cancel := context.WithCancel(context.Background())
	type result struct {
		first, last uint64
		err         error
	}
	done := make(chan result, 1)
	// Stall the writer until the caller's context has ended.
	stalled, resume := make(chan struct{}), make(chan struct{})
	beforeCommit = func() { close(stalled); <-resume }
	defer func() { beforeCommit = func() {} }()
	go func() {
		f, la, err := l.Append(ctx, []byte("queued, then cancelled"))
		done <- result{f, la, err}
	}()
	<-stalled // the append is queued and the writer has woken for it
	beforeCommit = func() {}
	cancel()
	select {
	case r := <-done:
		t.Fatalf("Append returned while its records waited for the writer: %+v", r)
	case <-time.After(50 * time.Millisecond):
	}
	close(resume)
	r := <-done
	if r.err != nil || r.first == 0 || r.first != r.last {
		t.Fatalf("Append after its context ended: %d..%d %v", r.first, r.last, r.err)
	}
	recs := readAll(t, l, 0)
	if len(recs) != 1 || recs[0].Seq != r.first || !bytes.Equal(recs[0].Data, []byte("queued, then cancelled")) {
		t.Fatalf("log holds %+v", recs)
	}
	// Before queueing, an ended context still refuses.
	if _, _, err := l.Append(ctx, []byte("never")); err == nil {
		t.Fatal("Append with an ended context was accepted")
	}
}
