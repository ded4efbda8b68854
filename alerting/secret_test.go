package alerting

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func testKey(b byte) []byte { return bytes.Repeat([]byte{b}, SecretKeyLen) }

func newTestBox(t *testing.T, b byte) *SecretBox {
	t.Helper()
	box, err := NewSecretBox(testKey(b))
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestSecretBoxRoundTrip(t *testing.T) {
	box := newTestBox(t, 7)
	ad := WebhookAssociatedData("acct-1", ChannelSlack)
	for _, plain := range []string{"", slackOK, strings.Repeat("x", 5000)} {
		sealed, err := box.Seal([]byte(plain), ad)
		if err != nil {
			t.Fatal(err)
		}
		if plain != "" && bytes.Contains(sealed, []byte(plain)) {
			t.Fatal("ciphertext contains the plaintext")
		}
		got, err := box.Open(sealed, ad)
		if err != nil || string(got) != plain {
			t.Fatalf("Open = %q, %v; want %q", got, err, plain)
		}
	}
}

func TestSecretBoxFreshNonce(t *testing.T) {
	box := newTestBox(t, 7)
	a, _ := box.Seal([]byte(slackOK), nil)
	b, _ := box.Seal([]byte(slackOK), nil)
	if bytes.Equal(a, b) || bytes.Equal(a[:12], b[:12]) {
		t.Fatal("two seals of the same text share a nonce")
	}
}

func TestSecretBoxRefuses(t *testing.T) {
	box := newTestBox(t, 7)
	ad := WebhookAssociatedData("acct-1", ChannelSlack)
	sealed, err := box.Seal([]byte(slackOK), ad)
	if err != nil {
		t.Fatal(err)
	}
	flip := func(i int) []byte {
		c := bytes.Clone(sealed)
		c[i] ^= 0x01
		return c
	}
	tests := []struct {
		name string
		box  *SecretBox
		ct   []byte
		ad   []byte
	}{
		{"nonce flipped", box, flip(0), ad},
		{"body flipped", box, flip(20), ad},
		{"tag flipped", box, flip(len(sealed) - 1), ad},
		{"truncated", box, sealed[:len(sealed)-1], ad},
		{"shorter than a nonce", box, sealed[:5], ad},
		{"empty", box, nil, ad},
		{"extended", box, append(bytes.Clone(sealed), 0), ad},
		{"other key", newTestBox(t, 8), sealed, ad},
		{"other account", box, sealed, WebhookAssociatedData("acct-2", ChannelSlack)},
		{"other channel", box, sealed, WebhookAssociatedData("acct-1", ChannelDiscord)},
		{"no associated data", box, sealed, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.box.Open(tt.ct, tt.ad)
			if !errors.Is(err, ErrSecretOpen) || got != nil {
				t.Fatalf("Open = %q, %v; want ErrSecretOpen", got, err)
			}
		})
	}
}

func TestWebhookAssociatedDataUnambiguous(t *testing.T) {
	if bytes.Equal(WebhookAssociatedData("ab", "c"), WebhookAssociatedData("a", "bc")) {
		t.Fatal("different (account, channel) pairs encode alike")
	}
}

func TestNewSecretBoxKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 24, 31, 33, 64} {
		if _, err := NewSecretBox(make([]byte, n)); err == nil {
			t.Errorf("accepted a %d-byte key", n)
		}
	}
}

func TestParseSecretKey(t *testing.T) {
	key := []byte("0123456789abcdef0123456789ABCDEF")
	tests := []struct {
		name string
		text string
		ok   bool
	}{
		{"hex", hex.EncodeToString(key), true},
		{"upper-case hex", strings.ToUpper(hex.EncodeToString(key)), true},
		{"base64", base64.StdEncoding.EncodeToString(key), true},
		{"raw base64", base64.RawStdEncoding.EncodeToString(key), true},
		{"url base64", base64.URLEncoding.EncodeToString(key), true},
		{"surrounding whitespace", "  " + base64.StdEncoding.EncodeToString(key) + "\n", true},
		{"empty", "", false},
		{"blank", " \n", false},
		{"16-byte key", base64.StdEncoding.EncodeToString(key[:16]), false},
		{"31-byte key", hex.EncodeToString(key[:31]), false},
		{"48-byte key", base64.StdEncoding.EncodeToString(append(key, key[:16]...)), false},
		{"passphrase", "correct horse battery staple", false},
		{"all zeros", hex.EncodeToString(make([]byte, 32)), false},
		{"hex with a bad digit", "g" + hex.EncodeToString(key)[1:], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseSecretKey(tt.text)
			if !tt.ok {
				if err == nil {
					t.Fatalf("accepted %q", tt.text)
				}
				if len(tt.text) > 8 && strings.Contains(err.Error(), strings.TrimSpace(tt.text)) {
					t.Errorf("error quotes the key text: %v", err)
				}
				return
			}
			if err != nil || !bytes.Equal(got, key) {
				t.Fatalf("ParseSecretKey = %x, %v; want %x", got, err, key)
			}
		})
	}
}
