package alerting

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// SecretKeyLen is the key size of a SecretBox: AES-256.
const SecretKeyLen = 32

// ErrSecretOpen is returned by SecretBox.Open for a ciphertext that does not
// authenticate: tampered, truncated, sealed under another key, or bound to
// other associated data (a row copied to another account). It is an internal
// error, never shown to a client.
var ErrSecretOpen = errors.New("alerting: secret does not authenticate")

// SecretBox encrypts webhook URLs at rest with AES-256-GCM. A webhook URL is
// a bearer credential (whoever has it may post to the team's chat), so the
// database holds only ciphertext; reads return the hint, which is stored
// beside it.
type SecretBox struct {
	aead cipher.AEAD
}

// NewSecretBox returns a box for a 32-byte key.
func NewSecretBox(key []byte) (*SecretBox, error) {
	if len(key) != SecretKeyLen {
		return nil, fmt.Errorf("alerting: secret key must be %d bytes, got %d", SecretKeyLen, len(key))
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("alerting: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("alerting: %w", err)
	}
	return &SecretBox{aead: aead}, nil
}

// ParseSecretKey reads a key from configuration text: 64 hex digits, or
// standard or URL-safe base64 (padded or not) of 32 bytes. Surrounding
// whitespace is ignored, since keys come from files and environment
// variables. Anything that does not decode to exactly 32 bytes is refused, as
// is the all-zero key, which is a placeholder, not a key. Generate one with
// `openssl rand -base64 32`. The error never quotes the text.
func ParseSecretKey(text string) ([]byte, error) {
	text = strings.TrimSpace(text)
	if text == "" {
		return nil, errors.New("alerting: secret key is empty")
	}
	key, ok := decodeKeyText(text)
	if !ok {
		return nil, fmt.Errorf("alerting: secret key must be %d bytes as 64 hex digits or base64 (openssl rand -base64 32)", SecretKeyLen)
	}
	zero := true
	for _, b := range key {
		zero = zero && b == 0
	}
	if zero {
		return nil, errors.New("alerting: secret key is all zeros")
	}
	return key, nil
}

func decodeKeyText(text string) ([]byte, bool) {
	if len(text) == 2*SecretKeyLen {
		if k, err := hex.DecodeString(text); err == nil {
			return k, true
		}
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding, base64.URLEncoding, base64.RawURLEncoding} {
		if k, err := enc.Strict().DecodeString(text); err == nil && len(k) == SecretKeyLen {
			return k, true
		}
	}
	return nil, false
}

// Seal encrypts plaintext, bound to associatedData, and returns a fresh
// random nonce followed by the ciphertext and tag. Sealing the same text
// twice gives different outputs. Use WebhookAssociatedData for webhooks.
func (b *SecretBox) Seal(plaintext, associatedData []byte) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize(), b.aead.NonceSize()+len(plaintext)+b.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("alerting: nonce: %w", err)
	}
	return b.aead.Seal(nonce, nonce, plaintext, associatedData), nil
}

// Open decrypts what Seal returned with the same associated data. Any
// mismatch returns ErrSecretOpen.
func (b *SecretBox) Open(ciphertext, associatedData []byte) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(ciphertext) < n+b.aead.Overhead() {
		return nil, ErrSecretOpen
	}
	out, err := b.aead.Open(nil, ciphertext[:n], ciphertext[n:], associatedData)
	if err != nil {
		return nil, ErrSecretOpen
	}
	return out, nil
}

// WebhookAssociatedData binds a sealed webhook URL to its account and
// channel, so that a ciphertext copied to another account's row, or from the
// slack row to the discord row, does not open. Each part is length-prefixed,
// so no two (account, channel) pairs encode alike.
func WebhookAssociatedData(accountID, channel string) []byte {
	return associatedData("alerting.webhook.v1", accountID, channel)
}

// associatedData is label followed by each part, length-prefixed.
func associatedData(label string, parts ...string) []byte {
	ad := []byte(label)
	for _, part := range parts {
		ad = binary.AppendUvarint(ad, uint64(len(part)))
		ad = append(ad, part...)
	}
	return ad
}
