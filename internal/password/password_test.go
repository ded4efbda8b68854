package password

import (
	"context"
	"errors"
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	pw := New(Default)
	h, err := pw.Hash(ctx, "hunter2hunter2")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=19456,t=2,p=1$") || strings.Contains(h, "hunter2") {
		t.Fatalf("hash %q", h)
	}
	h2, _ := pw.Hash(ctx, "hunter2hunter2")
	if h == h2 {
		t.Fatal("same hash twice: no salt")
	}
	for _, tc := range []struct {
		pw, hash string
		ok       bool
	}{
		{"hunter2hunter2", h, true},
		{"hunter2hunter3", h, false},
		{"", h, false},
		{"hunter2hunter2", "", false}, // unknown person: the dummy never matches
	} {
		ok, err := pw.Verify(ctx, tc.pw, tc.hash)
		if err != nil || ok != tc.ok {
			t.Errorf("verify(%q): %v %v", tc.pw, ok, err)
		}
	}
	// Hashes made with other parameters still verify: they are in the string.
	cheap := New(Params{Memory: 1024, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 8})
	old, _ := cheap.Hash(ctx, "legacy password")
	if ok, err := pw.Verify(ctx, "legacy password", old); !ok || err != nil {
		t.Errorf("old parameters: %v %v", ok, err)
	}
	for _, bad := range []string{"$argon2i$v=19$m=1,t=1,p=1$AAAA$AAAA", "$argon2id$v=19$m=x$AAAA$AAAA", "plain"} {
		if _, err := pw.Verify(ctx, "x", bad); err == nil {
			t.Errorf("malformed hash %q accepted", bad)
		}
	}
}

// When every slot is taken and the queue is full, a hash answers ErrBusy
// at once; a queued one gives up after MaxWait; a freed slot serves the
// next caller.
func TestBoundedPool(t *testing.T) {
	ctx := context.Background()
	pw := New(Params{Memory: 64, Time: 1, Threads: 1, KeyLen: 16, SaltLen: 8})
	for i := 0; i < cap(pw.slots); i++ {
		if err := pw.acquire(ctx); err != nil {
			t.Fatal(err)
		}
	}
	pw.waiting.Store(int64(pw.maxWaiting)) // the queue is full
	if _, err := pw.Hash(ctx, "correct horse"); !errors.Is(err, ErrBusy) {
		t.Fatalf("full queue: %v", err)
	}
	pw.waiting.Store(0)
	if _, err := pw.Hash(ctx, "correct horse"); !errors.Is(err, ErrBusy) {
		t.Fatalf("queued past MaxWait: %v", err)
	}
	if pw.waiting.Load() != 0 {
		t.Fatalf("waiting count leaked: %d", pw.waiting.Load())
	}
	pw.release()
	if _, err := pw.Hash(ctx, "correct horse"); err != nil {
		t.Fatalf("a free slot: %v", err)
	}
}
