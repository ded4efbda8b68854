package alerting

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestErrorTextNeverLeaks(t *testing.T) {
	secret := "https://hooks.slack.com/services/T0/B0/SECRETSECRET"
	if got := ErrorText(errors.New("Post " + secret + ": dial tcp")); strings.Contains(got, "SECRET") {
		t.Errorf("ErrorText leaked: %s", got)
	}
	if got := ErrorText(&SendError{Code: "http_404: <b>No_Service</b>\n" + secret}); strings.ContainsAny(got, "<>/\n") {
		t.Errorf("CleanCode kept markup: %s", got)
	}
}

func TestEllipsis(t *testing.T) {
	for _, tt := range []struct {
		in   string
		n    int
		want string
	}{{"hello", 10, "hello"}, {"hello", 5, "hello"}, {"hello!", 5, "hell…"}, {"ééééé", 3, "éé…"}, {"x", 0, ""}} {
		if got := Ellipsis(tt.in, tt.n); got != tt.want {
			t.Errorf("Ellipsis(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
		}
	}
}

func FuzzCleanCode(f *testing.F) {
	f.Add("http_404: no_service")
	f.Add("\x00<script>é")
	f.Fuzz(func(t *testing.T, s string) {
		got := CleanCode(s)
		if got == "" || len(got) > 80 || !utf8.ValidString(got) || strings.ContainsAny(got, "<>&/\\\"'\r\n") {
			t.Fatalf("CleanCode(%q) = %q", s, got)
		}
		if out := Ellipsis(s, 10); utf8.RuneCountInString(out) > 10 {
			t.Fatalf("Ellipsis(%q) = %q", s, out)
		}
	})
}
