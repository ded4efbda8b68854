//go:build !unix

package wal

import (
	"os"
	"path/filepath"
)

// lockDir only creates the LOCK file where flock is not available; the
// service runs on Linux, where lock_unix.go applies.
func lockDir(dir string) (*os.File, error) {
	return os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
}
