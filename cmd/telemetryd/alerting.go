package main

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcpscope/telemetry/alerting"
)

// secretKey returns the key that seals webhook URLs: alerting.secret_key
// when set, else the file alerting.secret_key_file, which is created with a
// fresh random key (mode 0600) the first time. Several instances must share
// one key, so in production set secret_key (or point every instance at the
// same file); losing the key means reconnecting every webhook.
func secretKey(c AlertingConfig) ([]byte, error) {
	if c.SecretKey != "" {
		key, err := alerting.ParseSecretKey(c.SecretKey)
		if err != nil {
			return nil, fmt.Errorf("alerting.secret_key: %w", err)
		}
		return key, nil
	}
	path := c.SecretKeyFile
	text, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		text, err = createKeyFile(path)
	}
	if err != nil {
		return nil, fmt.Errorf("alerting.secret_key_file: %w", err)
	}
	key, err := alerting.ParseSecretKey(string(text))
	if err != nil {
		return nil, fmt.Errorf("alerting.secret_key_file %s: %w", path, err)
	}
	return key, nil
}

// createKeyFile writes a new random key to path, failing if the file
// appeared meanwhile (another instance starting at the same moment), in
// which case that instance's key is read instead.
func createKeyFile(path string) ([]byte, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, err
	}
	key := make([]byte, alerting.SecretKeyLen)
	if _, err := rand.Read(key); err != nil {
		return nil, err
	}
	text := []byte(base64.StdEncoding.EncodeToString(key) + "\n")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return os.ReadFile(path)
	}
	if err != nil {
		return nil, err
	}
	if _, err := f.Write(text); err != nil {
		f.Close()
		return nil, err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, err
	}
	return text, f.Close()
}
