package accounts

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

// Input limits. They are published in /docs through the httpapi tags that
// repeat them; raising one is compatible, lowering one is a breaking change.
const (
	MaxEmailBytes     = 254 // RFC 5321 path limit, in octets
	MinPasswordLen    = 10
	MaxPasswordLen    = 1024 // bounds the hashing work one request can ask for
	MaxNameLen        = 200
	MaxDescriptionLen = 2000
)

// EmailKey is the form an email is looked up and kept unique by: addresses
// differing only in case belong to one person. The address itself is stored
// and returned exactly as sent.
//
// Lower-casing alone would let a look-alike collide with a real address:
// strings.ToLower turns U+212A KELVIN SIGN into "k", so "\u212aate@x.io"
// would log in as "kate@x.io". New addresses holding a character that case
// folding or Unicode compatibility mapping turns into an ASCII character
// (asciiLookalike) are therefore refused; every other character, accented
// or not, stays allowed and is only lower-cased.
func EmailKey(email string) string { return strings.ToLower(email) }

// asciiLookalike reports whether r is a non-ASCII character that case
// folding (the Kelvin sign, the long s) or compatibility mapping
// (fullwidth forms, mathematical alphanumerics, letterlike symbols,
// enclosed, superscript and subscript letters and digits) makes an ASCII
// one, as NFKC with case folding would.
func asciiLookalike(r rune) bool {
	if r < utf8.RuneSelf {
		return false
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return true
		}
	}
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // fullwidth ASCII
		return true
	case r >= 0x1D400 && r <= 0x1D7FF: // mathematical alphanumeric symbols
		return true
	case r >= 0x2100 && r <= 0x214F && (unicode.IsLetter(r) || unicode.IsDigit(r)): // letterlike: ℂ ℎ Å ℓ …
		return true
	case r >= 0x2460 && r <= 0x24FF: // enclosed alphanumerics: ① ⓐ
		return true
	case r >= 0x2070 && r <= 0x209F: // superscripts and subscripts: ⁱ ₐ ²
		return true
	case r == 0xB2 || r == 0xB3 || r == 0xB9 || r == 0xAA || r == 0xBA: // ² ³ ¹ ª º
		return true
	case r >= 0x1D2C && r <= 0x1D6A: // modifier letters: ᴬ ᵃ
		return true
	case r >= 0xFB00 && r <= 0xFB06: // Latin ligatures: ﬀ ﬁ
		return true
	}
	return false
}

// checkText validates a free-text field: its length in characters and the
// absence of NUL, which PostgreSQL text cannot hold. Everything else is
// stored exactly as sent, with no trimming or normalisation.
func checkText(field, s string, minLen, maxLen int) error {
	n := utf8.RuneCountInString(s)
	switch {
	case n < minLen && n == 0:
		return telemetry.FieldError(telemetry.EINVALID, field, "is required")
	case n < minLen:
		return telemetry.FieldError(telemetry.EINVALID, field, "must be at least %d characters", minLen)
	case n > maxLen:
		return telemetry.FieldError(telemetry.EINVALID, field, "must be at most %d characters", maxLen)
	case strings.ContainsRune(s, 0):
		return telemetry.FieldError(telemetry.EINVALID, field, "must not contain NUL characters")
	}
	return nil
}

// checkEmail is a sanity check, not RFC 5322: one @, a local part of at most
// 64 octets, a dotted domain, no spaces, controls or the characters that
// only quoted or display forms use. Internationalised addresses pass.
func checkEmail(field, s string) error {
	if s == "" {
		return telemetry.FieldError(telemetry.EINVALID, field, "is required")
	}
	if len(s) > MaxEmailBytes {
		return telemetry.FieldError(telemetry.EINVALID, field, "must be at most %d bytes", MaxEmailBytes)
	}
	bad := telemetry.FieldError(telemetry.EINVALID, field, "must be an email address such as ada@example.com")
	at := strings.IndexByte(s, '@')
	if at <= 0 || at != strings.LastIndexByte(s, '@') || at > 64 {
		return bad
	}
	domain := s[at+1:]
	if !strings.Contains(domain, ".") || strings.HasPrefix(domain, ".") || strings.HasSuffix(domain, ".") ||
		strings.Contains(domain, "..") || strings.HasPrefix(s, ".") || strings.Contains(s, ".@") {
		return bad
	}
	if strings.ContainsAny(s, "\"(),:;<>[\\]") {
		return bad
	}
	for _, r := range s {
		if r == utf8.RuneError || unicode.IsSpace(r) || !unicode.IsPrint(r) {
			return bad
		}
		if asciiLookalike(r) {
			return telemetry.FieldError(telemetry.EINVALID, field,
				"must not contain %q (U+%04X): it reads as an ASCII character, so the address could pass for another", r, r)
		}
	}
	return nil
}

// checkRole validates a role named in a request.
func checkRole(field string, r Role) error {
	if !r.Valid() {
		return telemetry.FieldError(telemetry.EINVALID, field, "must be owner, admin or member")
	}
	return nil
}

func fieldInvalid(field, msg string) error {
	return telemetry.FieldError(telemetry.EINVALID, field, "%s", msg)
}
