package accounts

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"

	"github.com/mcpscope/telemetry"
)

// Redaction is an MCP's server-side redaction setting. Off by default, so
// that strings stay exactly as sent; when on, the built-in patterns and the
// MCP's own Patterns (Go regular expressions, RE2 syntax) replace matches in
// error_message and attribute values with Redacted before an item is
// written anywhere.
type Redaction struct {
	Enabled  bool     `json:"enabled"`
	Patterns []string `json:"patterns"`
}

// Redacted replaces every match.
const Redacted = "[redacted]"

// Limits of custom redaction patterns.
const (
	MaxRedactionPatterns   = 20
	MaxRedactionPatternLen = 512
	// maxPatternInsts bounds the compiled program of one pattern: Go's
	// regexp runs in linear time, but a pattern such as (x{1000}){1000}
	// is a program of a million instructions run over every string.
	maxPatternInsts = 5000
)

// BuiltinRedactions name the built-in patterns, in the order they apply.
// Each has a cheap test (Maybe) that must hold for the pattern to match
// anywhere in a string, so that most strings cost a few scans instead of
// regular expression runs.
var BuiltinRedactions = []struct {
	Name, Pattern string
	Maybe         func(string) bool
}{
	{"email address", `[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}`,
		func(s string) bool { return strings.IndexByte(s, '@') > 0 }},
	{"bearer token", `(?i)\bbearer\s+[A-Za-z0-9\-._~+/]+=*`, func(s string) bool { return containsFold(s, "bearer") }},
	{"JSON web token", `\beyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{5,}`,
		func(s string) bool { return strings.Contains(s, "eyJ") }},
	{"API key", `\b(?:` +
		`(?:sk|pk|rk)_(?:live|test)_[A-Za-z0-9]{10,}` + // Stripe
		`|sk-[A-Za-z0-9_\-]{20,}` + // OpenAI, Anthropic
		`|gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{30,}` + // GitHub
		`|AKIA[0-9A-Z]{16}` + // AWS access key id
		`|AIza[0-9A-Za-z_\-]{35}` + // Google
		`|xox[abposr]-[A-Za-z0-9\-]{10,}` + // Slack
		`|(?:ik|sess)_[A-Za-z0-9_\-]{16,}` + // this service's own credentials
		`)`, maybeAPIKey},
	{"card number", `\b(?:\d[ \-]?){12,18}\d\b`, func(s string) bool { return countDigits(s) >= 13 }},
}

// apiKeyMarks are substrings one of which every API-key shape contains.
var apiKeyMarks = []string{"_live_", "_test_", "sk-", "ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_", "AKIA", "AIza", "xox", "ik_", "sess_"}

func maybeAPIKey(s string) bool {
	for _, m := range apiKeyMarks {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}

// containsFold reports whether s contains the lower-case ASCII word w in
// any case.
func containsFold(s, w string) bool {
	for i := 0; i+len(w) <= len(s); i++ {
		if s[i]|0x20 == w[0] && strings.EqualFold(s[i:i+len(w)], w) {
			return true
		}
	}
	return false
}

func countDigits(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] >= '0' && s[i] <= '9' {
			n++
		}
	}
	return n
}

var builtinPatterns = func() []*regexp.Regexp {
	res := make([]*regexp.Regexp, len(BuiltinRedactions))
	for i, b := range BuiltinRedactions {
		res[i] = regexp.MustCompile(b.Pattern)
	}
	return res
}()

// Redactor applies a Redaction. A nil *Redactor leaves strings alone.
type Redactor struct {
	custom *regexp.Regexp // nil without custom patterns
}

// NewRedactor compiles r; nil when redaction is off. Stored patterns were
// validated on save; one that no longer compiles is skipped (the built-in
// patterns still apply).
func NewRedactor(r Redaction) *Redactor {
	if !r.Enabled {
		return nil
	}
	var parts []string
	for _, p := range r.Patterns {
		if _, err := compilePattern(p); err == nil {
			parts = append(parts, "(?:"+p+")")
		}
	}
	rd := &Redactor{}
	if len(parts) > 0 {
		rd.custom = regexp.MustCompile(strings.Join(parts, "|"))
	}
	return rd
}

// String returns s with every match replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	if r.custom != nil {
		s = r.custom.ReplaceAllLiteralString(s, Redacted)
	}
	last := len(builtinPatterns) - 1
	for i, re := range builtinPatterns[:last] {
		if BuiltinRedactions[i].Maybe(s) {
			s = re.ReplaceAllLiteralString(s, Redacted)
		}
	}
	// Card numbers go only when they pass the Luhn check.
	if BuiltinRedactions[last].Maybe(s) {
		s = builtinPatterns[last].ReplaceAllStringFunc(s, func(m string) string {
			if luhn(m) {
				return Redacted
			}
			return m
		})
	}
	return s
}

// luhn reports whether the digits of s pass the Luhn check.
func luhn(s string) bool {
	sum, n := 0, 0
	for i := len(s) - 1; i >= 0; i-- {
		c := s[i]
		if c < '0' || c > '9' {
			continue
		}
		d := int(c - '0')
		if n%2 == 1 {
			if d *= 2; d > 9 {
				d -= 9
			}
		}
		sum += d
		n++
	}
	return n >= 13 && sum%10 == 0
}

// ValidateRedaction checks the custom patterns of r: at most
// MaxRedactionPatterns, each at most MaxRedactionPatternLen bytes, valid Go
// (RE2) syntax, not too large a program, and not matching the empty string
// (which would put Redacted between every character).
// Errors: EINVALID at body.redaction.patterns[i].
func ValidateRedaction(patterns []string) error {
	if len(patterns) > MaxRedactionPatterns {
		return telemetry.FieldError(telemetry.EINVALID, "body.redaction.patterns", "At most %d patterns.", MaxRedactionPatterns)
	}
	for i, p := range patterns {
		loc := fmt.Sprintf("body.redaction.patterns[%d]", i)
		if p == "" || len(p) > MaxRedactionPatternLen {
			return telemetry.FieldError(telemetry.EINVALID, loc, "A pattern has 1 to %d bytes.", MaxRedactionPatternLen)
		}
		re, err := compilePattern(p)
		if err != nil {
			return telemetry.FieldError(telemetry.EINVALID, loc, "Pattern %d: %v.", i, err)
		}
		if re.MatchString("") {
			return telemetry.FieldError(telemetry.EINVALID, loc, "Pattern %d matches the empty string.", i)
		}
	}
	return nil
}

func compilePattern(p string) (*regexp.Regexp, error) {
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxPatternInsts {
		return nil, fmt.Errorf("too complex (%d instructions compiled, at most %d)", len(prog.Inst), maxPatternInsts)
	}
	return regexp.Compile(p)
}
