package main

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/mcpscope/telemetry/alerting"
)

func TestSecretKeyFileIsCreatedOnceWithMode0600(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sub", "secret.key")
	k1, err := secretKey(AlertingConfig{SecretKeyFile: path})
	if err != nil || len(k1) != alerting.SecretKeyLen {
		t.Fatalf("first start: %d bytes, %v", len(k1), err)
	}
	st, err := os.Stat(path)
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, %v", st.Mode(), err)
	}
	k2, err := secretKey(AlertingConfig{SecretKeyFile: path})
	if err != nil || string(k1) != string(k2) {
		t.Fatalf("second start read another key: %v", err)
	}
}

func TestSecretKeyFromConfiguration(t *testing.T) {
	t.Parallel()
	const b64 = "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=" // bytes 1..32
	path := filepath.Join(t.TempDir(), "unused.key")
	k, err := secretKey(AlertingConfig{SecretKey: b64, SecretKeyFile: path})
	if err != nil || k[0] != 1 || k[31] != 32 {
		t.Fatalf("key %v, %v", k, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the file was touched although secret_key is set: %v", err)
	}
	for _, bad := range []string{"short", "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA="} {
		if _, err := secretKey(AlertingConfig{SecretKey: bad}); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	garbage := filepath.Join(t.TempDir(), "garbage.key")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secretKey(AlertingConfig{SecretKeyFile: garbage}); err == nil {
		t.Fatal("a garbage key file was accepted")
	}
}
