package accounts

import (
	"errors"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcpscope/telemetry"
)

func TestRedactorBuiltinsAndCustom(t *testing.T) {
	r := NewRedactor(Redaction{Enabled: true, Patterns: []string{`\bcustomer-[0-9]{6}\b`}})
	for _, c := range []struct{ in, want string }{
		{"mail ada.lovelace+x@example.co.uk now", "mail [redacted] now"},
		{"Authorization: Bearer abc.DEF-123_~+/=", "Authorization: [redacted]"},
		{"bearer eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl", "[redacted]"},
		{"jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4", "jwt [redacted]"},
		{"key sk_live_4eC39HqLyjWDarjtT1zdp7dc!", "key [redacted]!"},
		{"openai sk-proj-abcdefghijklmnopqrstuvwx", "openai [redacted]"},
		{"gh ghp_abcdefghijklmnopqrstuvwxyz0123456789", "gh [redacted]"},
		{"aws AKIAIOSFODNN7EXAMPLE.", "aws [redacted]."},
		{"google AIzaSyA-abcdefghijklmnopqrstuvwxyz01234", "google [redacted]"},
		{"slack xoxb-1234567890-abcdef", "slack [redacted]"},
		{"ours ik_AbCdEfGhIjKlMnOpQrSt", "ours [redacted]"},
		{"card 4242 4242 4242 4242 declined", "card [redacted] declined"},
		{"card 4111-1111-1111-1111", "card [redacted]"},
		{"card 378282246310005", "card [redacted]"},
		{"order 1234567890123456 (not Luhn)", "order 1234567890123456 (not Luhn)"},
		{"lookup failed for customer-123456 (ada@example.com)", "lookup failed for [redacted] ([redacted])"},
		{"nothing secret here: took 182 ms, status=500", "nothing secret here: took 182 ms, status=500"},
		{"", ""},
	} {
		if got := r.String(c.in); got != c.want {
			t.Errorf("%q: got %q, want %q", c.in, got, c.want)
		}
	}
	var off *Redactor = NewRedactor(Redaction{Enabled: false, Patterns: []string{"x"}})
	if off != nil || off.String("ada@example.com") != "ada@example.com" {
		t.Error("a disabled redaction must leave strings alone")
	}
}

func TestValidateRedaction(t *testing.T) {
	many := make([]string, MaxRedactionPatterns+1)
	for i := range many {
		many[i] = "x"
	}
	for _, c := range []struct {
		patterns []string
		loc      string // "" = valid
	}{
		{nil, ""},
		{[]string{`\bcustomer-[0-9]{6}\b`, `(?i)secret=\S+`}, ""},
		{[]string{"ok", "(unclosed"}, "body.redaction.patterns[1]"},
		{[]string{`(?<=x)y`}, "body.redaction.patterns[0]"}, // lookbehind: not RE2
		{[]string{`a*`}, "body.redaction.patterns[0]"},      // matches ""
		{[]string{`(x{1000}){1000}`}, "body.redaction.patterns[0]"},
		{[]string{`((a{100}){100}){10}`}, "body.redaction.patterns[0]"},
		{[]string{""}, "body.redaction.patterns[0]"},
		{[]string{strings.Repeat("a", MaxRedactionPatternLen+1)}, "body.redaction.patterns[0]"},
		{many, "body.redaction.patterns"},
	} {
		err := ValidateRedaction(c.patterns)
		if c.loc == "" {
			if err != nil {
				t.Errorf("%q: %v", c.patterns, err)
			}
			continue
		}
		var te *telemetry.Error
		if err == nil || telemetry.ErrorCode(err) != telemetry.EINVALID {
			t.Errorf("%.40q: got %v, want invalid at %s", c.patterns, err, c.loc)
			continue
		}
		if ok := errors.As(err, &te); !ok || te.Field != c.loc {
			t.Errorf("%.40q: location %+v, want %s", c.patterns, te, c.loc)
		}
	}
}

// BenchmarkRedact is the cost redaction adds per item on ingest: an
// error message and three attribute values of typical length, one secret.
func BenchmarkRedact(b *testing.B) {
	r := NewRedactor(Redaction{Enabled: true, Patterns: []string{`\bcustomer-[0-9]{6}\b`}})
	msg := "upstream timed out after 30000 ms while calling https://api.example.com/v1/search for ada@example.com"
	attrs := []string{"eu-west-1", "claude-desktop 0.9.1", "search_docs"}
	b.ReportAllocs()
	for b.Loop() {
		_ = r.String(msg)
		for _, a := range attrs {
			_ = r.String(a)
		}
	}
}

// TestReplaceEmailsMatchesThePattern checks the hand-written matcher
// against the email pattern itself.
func TestReplaceEmailsMatchesThePattern(t *testing.T) {
	re := regexp.MustCompile(BuiltinRedactions[0].Pattern)
	for _, s := range []string{
		"ada@example.com", "mail ada.lovelace+x@example.co.uk now", "a@b.c", "a@b.cd", "x@example.com123", "x@example.com.",
		"x@a..b.com", "x@.com", "@example.com", "a@b.com@c.org", "a@b@c.org", "first a@b.io, then c_d%e@f-g.h.ij!",
		"x@1.2.3.com", "x@host", "x@host.c0m", "noise@@x.com", "é@x.com", "a@b.c.de.f", "a.@-.co", "trailing@",
		"upstream timed out after 30000 ms while calling https://api.example.com/v1/search for ada@example.com",
	} {
		if got, _ := replaceEmails(s, len(s)); got != re.ReplaceAllLiteralString(s, Redacted) {
			t.Errorf("%q: got %q, the pattern gives %q", s, got, re.ReplaceAllLiteralString(s, Redacted))
		}
	}
}

func FuzzReplaceEmails(f *testing.F) {
	re := regexp.MustCompile(BuiltinRedactions[0].Pattern)
	for _, s := range []string{"ada@example.com", "a@b..c.de", "x@y.z@w.com"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if got, _ := replaceEmails(s, len(s)); got != re.ReplaceAllLiteralString(s, Redacted) {
			t.Errorf("%q: got %q, the pattern gives %q", s, got, re.ReplaceAllLiteralString(s, Redacted))
		}
	})
}

func TestRequiredLiteral(t *testing.T) {
	for p, want := range map[string]string{
		`\bcustomer-[0-9]{6}\b`: "customer-",
		`(?i)secret=\S+`:        "",
		`ab|cd`:                 "",
		`token:[a-z]+;x`:        "token:",
		`x{3}`:                  "",
		`abc`:                   "abc",
	} {
		if got := requiredLiteral(p); got != want {
			t.Errorf("%q: %q, want %q", p, got, want)
		}
	}
}

func TestEffectiveAndValidRetention(t *testing.T) {
	n := func(v int) *int { return &v }
	for _, c := range []struct {
		own          *int
		installation int
		want         int
	}{{nil, 1096, 1096}, {n(30), 1096, 30}, {n(0), 60, 60}, {n(90), 60, 60}, {nil, 0, 0}, {n(30), 0, 30}} {
		if got := EffectiveRetention(c.own, c.installation); got != c.want {
			t.Errorf("EffectiveRetention(%v, %d) = %d, want %d", c.own, c.installation, got, c.want)
		}
	}
	for _, c := range []struct {
		days, installation int
		ok                 bool
	}{{0, 60, true}, {1, 60, true}, {60, 60, true}, {61, 60, false}, {-1, 60, false}, {36500, 0, true}, {36501, 0, false}} {
		if err := ValidateRetention(c.days, c.installation); (err == nil) != c.ok {
			t.Errorf("ValidateRetention(%d, %d) = %v", c.days, c.installation, err)
		}
	}
}

// TestRedactorFieldCutsAfterRedacting: a secret straddling the cut is
// replaced whole, text from beyond the cut never moves into the room a
// short replacement leaves, and text past the cut and its margin is not
// read.
func TestRedactorFieldCutsAfterRedacting(t *testing.T) {
	r := NewRedactor(Redaction{Enabled: true, Patterns: []string{`SECRET-[0-9]{8}`, `K[0-9]+`}})
	x := strings.Repeat("x", 1020)
	for _, c := range []struct{ name, in, want string }{
		{"straddling", x + "SECRET-12345678 tail", x + "[red"},
		{"short", "a SECRET-12345678 b", "a [redacted] b"},
		// 901 characters become 10: the 123 y's before the cut stay, the
		// SECRET after it does not move in, redacted or not.
		{"no sliding", "K" + strings.Repeat("7", 900) + strings.Repeat("y", 200) + "SECRET-1234567", "[redacted]" + strings.Repeat("y", 123)},
		{"multibyte cut", strings.Repeat("é", 1100), strings.Repeat("é", 1024)},
		// A match running past the margin: its prefix within it matches.
		{"straddling the margin", x + "K" + strings.Repeat("7", 1100) + "Z", x + "[red"},
	} {
		got, err := r.Field(c.in, 1024, nil)
		if err != nil || got != c.want {
			t.Errorf("%s: %v\n got %.80q… (%d chars)\nwant %.80q… (%d chars)", c.name, err, got, utf8.RuneCountInString(got), c.want, utf8.RuneCountInString(c.want))
		}
	}
	var off *Redactor
	if got, _ := off.Field(strings.Repeat("ü", 2000), 1024, nil); got != strings.Repeat("ü", 1024) {
		t.Errorf("without redaction, the field is cut alone: %d chars", utf8.RuneCountInString(got))
	}
}

// countingBudget refuses once more than limit bytes were asked for.
type countingBudget struct{ asked, limit int }

func (b *countingBudget) Spend(n int) error {
	if b.asked += n; b.asked > b.limit {
		return errors.New("over budget")
	}
	return nil
}

// TestRedactorFieldAsksTheBudget: a pattern whose searches read to the end
// of the string (quadratic under ReplaceAll) asks the budget before each
// search, so redaction stops once the budget says so.
func TestRedactorFieldAsksTheBudget(t *testing.T) {
	r := NewRedactor(Redaction{Enabled: true, Patterns: []string{`a[^Z]*Z|a`}})
	s := strings.Repeat("a", 1000)
	b := &countingBudget{limit: 1 << 30}
	got, err := r.Field(s, -1, b)
	if err != nil || got != strings.Repeat(Redacted, 1000) {
		t.Fatalf("%v %.40q", err, got)
	}
	if b.asked < 1000*1001/2 {
		t.Fatalf("the searches asked for %d bytes, they read %d", b.asked, 1000*1001/2)
	}
	if _, err := r.Field(s, -1, &countingBudget{limit: 10_000}); err == nil || err.Error() != "over budget" {
		t.Fatalf("over budget: %v", err)
	}
}
