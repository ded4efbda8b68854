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
	custom []customPattern
}

// customPattern is one of the MCP's patterns with a literal every match
// contains (when the pattern has one of at least 3 bytes), tested first.
type customPattern struct {
	re      *regexp.Regexp
	literal string
}

// NewRedactor compiles r; nil when redaction is off. Stored patterns were
// validated on save; one that no longer compiles is skipped (the built-in
// patterns still apply).
func NewRedactor(r Redaction) *Redactor {
	if !r.Enabled {
		return nil
	}
	rd := &Redactor{}
	for _, p := range r.Patterns {
		if re, err := compilePattern(p); err == nil {
			rd.custom = append(rd.custom, customPattern{re: re, literal: requiredLiteral(p)})
		}
	}
	return rd
}

// String returns s with every match replaced by Redacted.
func (r *Redactor) String(s string) string {
	if r == nil || s == "" {
		return s
	}
	for _, c := range r.custom {
		if c.literal == "" || strings.Contains(s, c.literal) {
			s = c.re.ReplaceAllLiteralString(s, Redacted)
		}
	}
	last := len(builtinPatterns) - 1
	for i, re := range builtinPatterns[:last] {
		switch {
		case !BuiltinRedactions[i].Maybe(s):
		case i == 0:
			s = replaceEmails(s) // the pattern's matches, found by hand: 10x faster
		default:
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

func isLocalChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'
}

func isLabelChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

// replaceEmails replaces what the email pattern of BuiltinRedactions
// matches (leftmost, longest, as regexp does): a run of local-part
// characters, '@', labels separated by single dots, and a last label of
// at least two letters after a dot.
func replaceEmails(s string) string {
	var b strings.Builder
	done := 0 // s[:done] is written or matched already
	for i := 0; i < len(s); i++ {
		if s[i] != '@' {
			continue
		}
		start := i
		for start > done && isLocalChar(s[start-1]) {
			start--
		}
		if start == i {
			continue
		}
		end := emailDomainEnd(s, i+1)
		if end < 0 {
			continue
		}
		b.WriteString(s[done:start])
		b.WriteString(Redacted)
		done, i = end, end-1
	}
	if done == 0 {
		return s
	}
	b.WriteString(s[done:])
	return b.String()
}

// emailDomainEnd returns the end of the longest domain the pattern accepts
// at s[from:], or -1.
func emailDomainEnd(s string, from int) int {
	k := from
	for k < len(s) && (isLabelChar(s[k]) || s[k] == '.') {
		k++
	}
	best := -1
	labelStart, valid := from, true // valid: s[from:p] is non-empty labels joined by single dots
	for p := from; p < k; p++ {
		if s[p] != '.' {
			continue
		}
		if p == labelStart {
			valid = false
		}
		if !valid {
			break
		}
		l := p + 1
		for l < len(s) && isLetter(s[l]) {
			l++
		}
		if l-(p+1) >= 2 {
			best = l
		}
		labelStart = p + 1
	}
	return best
}

// requiredLiteral returns the longest case-sensitive literal of at least 3
// bytes that every match of pattern contains (a literal part of its
// top-level concatenation), or "".
func requiredLiteral(pattern string) string {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return ""
	}
	re = re.Simplify()
	best := ""
	consider := func(r *syntax.Regexp) {
		if r.Op == syntax.OpLiteral && r.Flags&syntax.FoldCase == 0 && len(string(r.Rune)) > len(best) {
			best = string(r.Rune)
		}
	}
	switch re.Op {
	case syntax.OpLiteral:
		consider(re)
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			consider(sub)
		}
	}
	if len(best) < 3 {
		return ""
	}
	return best
}
