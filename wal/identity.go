package wal

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// identityName is the file that holds a log's identity.
const identityName = "identity"

// loadIdentity returns the identity of the log in dir, creating it when the
// directory holds no log yet. A log's sequence numbers start again at 1 when
// its directory is replaced (an operator deletes a damaged log), so sequence
// numbers alone do not name a record for good: the identity, random and made
// with the directory, does, and callers key stored records by both.
//
// A directory written before identities existed (segments or a checkpoint
// but no identity file) keeps the empty identity, so that the records it
// holds keep the key they were stored under.
func loadIdentity(dir string) (string, error) {
	path := filepath.Join(dir, identityName)
	b, err := os.ReadFile(path)
	switch {
	case err == nil:
		id := strings.TrimSpace(string(b))
		if len(id) != 16 || strings.Trim(id, "0123456789abcdef") != "" {
			return "", fmt.Errorf("%w: %s holds %q, not a log identity", ErrCorrupt, path, b)
		}
		return id, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", fmt.Errorf("wal: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return "", fmt.Errorf("wal: %w", err)
	}
	for _, e := range entries {
		if _, ok := parseSegmentName(e.Name()); ok || e.Name() == checkpointName {
			return "", nil // a log from before identities
		}
	}
	var raw [8]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return "", fmt.Errorf("wal: identity: %w", err)
	}
	id := hex.EncodeToString(raw[:])
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return "", fmt.Errorf("wal: identity: %w", err)
	}
	_, err = f.WriteString(id + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		return "", fmt.Errorf("wal: identity: %w", err)
	}
	return id, nil
}

// ID returns the log's identity: 16 hex digits made with its directory, or
// "" for a directory written before identities existed.
func (l *Log) ID() string { return l.id }
