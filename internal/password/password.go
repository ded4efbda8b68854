// Package password hashes and verifies passwords with argon2id, bounded
// to a few hashes at a time: each costs 19 MiB of memory, and a login
// flood must queue, not exhaust memory.
package password

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/crypto/argon2"

	"github.com/mcpscope/telemetry/internal/ids"
)

// Params are argon2id's cost settings. The defaults are OWASP's
// (19 MiB, 2 passes, 1 lane): about 27 ms per hash on the 2-core machines
// this was measured on. They are written into every hash, so raising them
// later does not invalidate existing passwords.
type Params struct {
	Memory  uint32 // KiB
	Time    uint32
	Threads uint8
	KeyLen  uint32
	SaltLen int
}

// Default are OWASP's settings.
var Default = Params{Memory: 19 * 1024, Time: 2, Threads: 1, KeyLen: 32, SaltLen: 16}

// Hasher hashes and verifies passwords, a few at a time.
type Hasher struct {
	p     Params
	slots chan struct{}
	// waiting counts callers queued for a slot, at most maxWaiting.
	waiting    atomic.Int64
	maxWaiting int
	// dummy is verified against when the email is unknown, so that a wrong
	// email costs the same time as a wrong password.
	dummy string
}

// New returns a hasher making hashes with p.
func New(p Params) *Hasher {
	slots := 2 * runtime.GOMAXPROCS(0)
	pw := &Hasher{p: p, slots: make(chan struct{}, slots), maxWaiting: 4 * slots}
	pw.dummy = pw.encode(randomBytes(p.SaltLen), []byte(ids.RandomBase62(24)))
	return pw
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return b
}

// ErrBusy is returned when every hashing slot is taken and the queue in
// front of them is full, or a caller waited MaxWait in it: the caller
// should answer 503 with Retry-After rather than pile up requests that
// each hold 19 MiB once they run.
var ErrBusy = errors.New("password: hashing is saturated")

// MaxWait is how long a hash waits for a slot before ErrBusy.
const MaxWait = time.Second

func (pw *Hasher) acquire(ctx context.Context) error {
	select {
	case pw.slots <- struct{}{}:
		return nil
	default:
	}
	if pw.waiting.Add(1) > int64(pw.maxWaiting) {
		pw.waiting.Add(-1)
		return ErrBusy
	}
	defer pw.waiting.Add(-1)
	t := time.NewTimer(MaxWait)
	defer t.Stop()
	select {
	case pw.slots <- struct{}{}:
		return nil
	case <-t.C:
		return ErrBusy
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (pw *Hasher) release() { <-pw.slots }

// Hash returns the PHC string of password:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash> (unpadded base64).
func (pw *Hasher) Hash(ctx context.Context, password string) (string, error) {
	if err := pw.acquire(ctx); err != nil {
		return "", err
	}
	defer pw.release()
	return pw.encode(randomBytes(pw.p.SaltLen), []byte(password)), nil
}

func (pw *Hasher) encode(salt, password []byte) string {
	key := argon2.IDKey(password, salt, pw.p.Time, pw.p.Memory, pw.p.Threads, pw.p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, pw.p.Memory, pw.p.Time, pw.p.Threads,
		base64.RawStdEncoding.EncodeToString(salt), base64.RawStdEncoding.EncodeToString(key))
}

// Verify reports whether password matches the PHC string, comparing in
// constant time with the parameters stored in the hash. An empty phc means
// "no such person": the dummy hash is checked instead and false returned.
func (pw *Hasher) Verify(ctx context.Context, password, phc string) (bool, error) {
	known := phc != ""
	if !known {
		phc = pw.dummy
	}
	p, salt, want, err := decodePHC(phc)
	if err != nil {
		return false, err
	}
	if err := pw.acquire(ctx); err != nil {
		return false, err
	}
	defer pw.release()
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1 && known, nil
}

func decodePHC(phc string) (Params, []byte, []byte, error) {
	var p Params
	parts := strings.Split(phc, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return p, nil, nil, fmt.Errorf("password: not an argon2id hash")
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return p, nil, nil, fmt.Errorf("password: unsupported argon2 version %q", parts[2])
	}
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &p.Memory, &p.Time, &p.Threads); err != nil {
		return p, nil, nil, fmt.Errorf("password: bad argon2 parameters: %w", err)
	}
	salt, err := base64.RawStdEncoding.DecodeString(parts[4])
	if err != nil {
		return p, nil, nil, fmt.Errorf("password: bad argon2 salt: %w", err)
	}
	key, err := base64.RawStdEncoding.DecodeString(parts[5])
	if err != nil || len(key) == 0 {
		return p, nil, nil, fmt.Errorf("password: bad argon2 hash")
	}
	return p, salt, key, nil
}
