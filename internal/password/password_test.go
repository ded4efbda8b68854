package password

import (
	"context"
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
