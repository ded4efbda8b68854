package accounts

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
	"unicode/utf8"

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
	// MaxPatternInsts bounds the compiled program of a pattern saved: a
	// search costs up to the program's size per byte (a[^Z]{0,200}Z keeps
	// 200 threads alive over a run of a's: 20 ms per 2 KiB), and one
	// search cannot be interrupted, so the program bounds how far a
	// search may overrun the payload's redaction budget.
	MaxPatternInsts = 100
	// maxStoredPatternInsts is the bound of patterns saved before
	// MaxPatternInsts: they still apply, within the budget.
	maxStoredPatternInsts = 5000
)

// RedactMargin is how far past the cut a field is redacted: a match that
// starts before the cut and ends within RedactMargin bytes after it is
// replaced whole before the cut, so no part of it is kept. Bytes beyond
// the cut plus the margin are never read.
const RedactMargin = 1024

// A RedactionBudget bounds the work of redacting one payload.
type RedactionBudget interface {
	// Spend is told before each search how many bytes it may read; an
	// error stops redaction and is returned as is.
	Spend(bytes int) error
}

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
		if re, err := compilePattern(p, maxStoredPatternInsts); err == nil {
			rd.custom = append(rd.custom, customPattern{re: re, literal: requiredLiteral(p)})
		}
	}
	return rd
}

// String returns s with every match replaced by Redacted, without a budget
// nor a cut.
func (r *Redactor) String(s string) string {
	out, _ := r.Field(s, -1, nil)
	return out
}

// Field redacts the free-text field s, then cuts the result to at most
// maxChars characters (no cut when negative), in that order: a match that
// straddles the cut is replaced whole, and nothing from beyond the cut
// takes the room a shorter replacement leaves. Only the first maxChars
// characters and RedactMargin more bytes are read. A nil r only cuts; a
// nil b does not limit. Errors: what b.Spend returns.
func (r *Redactor) Field(s string, maxChars int, b RedactionBudget) (string, error) {
	cut := len(s) // byte offset of the cut
	if maxChars >= 0 {
		cut = charsPrefix(s, maxChars)
	}
	if r == nil || s == "" {
		return s[:cut], nil
	}
	if end := cut + RedactMargin; end < len(s) {
		for end > cut && !utf8.RuneStart(s[end]) { // a whole character
			end--
		}
		s = s[:end]
	}
	var err error
	for _, c := range r.custom {
		if c.literal == "" || strings.Contains(s, c.literal) {
			if s, cut, err = replace(c.re, s, cut, b, nil); err != nil {
				return "", err
			}
		}
	}
	last := len(builtinPatterns) - 1
	for i, re := range builtinPatterns[:last] {
		switch {
		case !BuiltinRedactions[i].Maybe(s):
		case i == 0:
			if err = spend(b, len(s)); err != nil {
				return "", err
			}
			s, cut = replaceEmails(s, cut) // the pattern's matches, found by hand: 10x faster
		default:
			if s, cut, err = replace(re, s, cut, b, nil); err != nil {
				return "", err
			}
		}
	}
	// Card numbers go only when they pass the Luhn check.
	if BuiltinRedactions[last].Maybe(s) {
		if s, cut, err = replace(builtinPatterns[last], s, cut, b, luhn); err != nil {
			return "", err
		}
	}
	s = s[:cut]
	if maxChars >= 0 { // a replacement straddling the cut is kept in part
		s = s[:charsPrefix(s, maxChars)]
	}
	return s, nil
}

// charsPrefix is the byte length of the first n characters of s.
func charsPrefix(s string, n int) int {
	if n >= len(s) {
		return len(s)
	}
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

func spend(b RedactionBudget, n int) error {
	if b == nil {
		return nil
	}
	return b.Spend(n)
}

// replace replaces the matches of re in s that keep accepts (nil: all)
// with Redacted (a match keep refuses stays, and the search goes on after
// it), one search at a time so that the budget is asked before
// each: ReplaceAll searches again from each match's end, so a pattern
// whose failed attempts read to the end of s (a[^Z]*Z|a over a run of a's)
// costs the square of s's length, and it would be one call. A search
// starts after the previous match as at the beginning of the text (^ and
// \b may match there again: more is redacted, never less). Empty matches
// are skipped. cut, a byte offset in s, is returned as the offset of the
// same place in the result, moved past a replacement that straddles it.
func replace(re *regexp.Regexp, s string, cut int, b RedactionBudget, keep func(string) bool) (string, int, error) {
	var out strings.Builder
	done, newCut := 0, -1 // s[:done] is written; newCut is set once cut is passed
	for pos := 0; pos < len(s); {
		if err := spend(b, len(s)-pos); err != nil {
			return "", 0, err
		}
		loc := re.FindStringIndex(s[pos:])
		if loc == nil {
			break
		}
		start, end := pos+loc[0], pos+loc[1]
		if end == start { // go on after the next character
			_, w := utf8.DecodeRuneInString(s[start:])
			pos = start + max(w, 1)
			continue
		}
		if keep != nil && !keep(s[start:end]) { // as ReplaceAllStringFunc
			pos = end
			continue
		}
		if newCut < 0 && start >= cut {
			newCut = out.Len() + cut - done
		}
		if done == 0 && out.Len() == 0 {
			out.Grow(len(s))
		}
		out.WriteString(s[done:start])
		out.WriteString(Redacted)
		if newCut < 0 && end >= cut {
			newCut = out.Len()
		}
		done, pos = end, end
	}
	if done == 0 {
		return s, cut, nil
	}
	if newCut < 0 {
		newCut = out.Len() + cut - done
	}
	out.WriteString(s[done:])
	return out.String(), newCut, nil
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
// (RE2) syntax, a program of at most MaxPatternInsts instructions, and not
// matching the empty string (which would put Redacted between every
// character).
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
		re, err := compilePattern(p, MaxPatternInsts)
		if err != nil {
			return telemetry.FieldError(telemetry.EINVALID, loc, "Pattern %d: %v.", i, err)
		}
		if re.MatchString("") {
			return telemetry.FieldError(telemetry.EINVALID, loc, "Pattern %d matches the empty string.", i)
		}
	}
	return nil
}

func compilePattern(p string, maxInsts int) (*regexp.Regexp, error) {
	parsed, err := syntax.Parse(p, syntax.Perl)
	if err != nil {
		return nil, err
	}
	prog, err := syntax.Compile(parsed.Simplify())
	if err != nil {
		return nil, err
	}
	if len(prog.Inst) > maxInsts {
		return nil, fmt.Errorf("too complex (%d instructions compiled, at most %d; write x{20,} rather than x{20,200})", len(prog.Inst), maxInsts)
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
// at least two letters after a dot. cut is moved as replace moves it.
func replaceEmails(s string, cut int) (string, int) {
	var b strings.Builder
	done, newCut := 0, -1 // s[:done] is written or matched already
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
		if newCut < 0 && start >= cut {
			newCut = b.Len() + cut - done
		}
		b.WriteString(s[done:start])
		b.WriteString(Redacted)
		if newCut < 0 && end >= cut {
			newCut = b.Len()
		}
		done, i = end, end-1
	}
	if done == 0 {
		return s, cut
	}
	if newCut < 0 {
		newCut = b.Len() + cut - done
	}
	b.WriteString(s[done:])
	return b.String(), newCut
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
