package accounts

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzValidate feeds outside input to the validators of signup and member
// invitations: they must never panic, and whatever they accept must keep
// the promises the stores rely on (no NUL, bounded length, a sane email).
func FuzzValidate(f *testing.F) {
	f.Add("ada@example.com", "correct horse", "Ada")
	f.Add("zoë@bücher.de", "ééééééééééé", "🦄")
	f.Add("a@b@c.d", "short", "")
	f.Add("\x00@x.y", strings.Repeat("p", 1025), "a\x00b")
	f.Add("ada@example.com.", "\xff\xfe\xfd\xfc\xfb\xfa\xf9\xf8\xf7\xf6", "\u202e")
	f.Fuzz(func(t *testing.T, email, password, name string) {
		s := Signup{Email: email, Password: password, Name: name}
		if s.Validate() == nil {
			if strings.ContainsRune(name, 0) || utf8.RuneCountInString(name) > MaxNameLen || name == "" {
				t.Fatalf("accepted name %q", name)
			}
			if n := utf8.RuneCountInString(password); n < MinPasswordLen || n > MaxPasswordLen {
				t.Fatalf("accepted password of %d characters", n)
			}
			checkAcceptedEmail(t, email)
		}
		if (NewMember{Email: email, Role: RoleMember}).Validate() == nil {
			checkAcceptedEmail(t, email)
		}
		_ = Login{Email: email, Password: password, AccountID: name}.Validate()
	})
}

func checkAcceptedEmail(t *testing.T, email string) {
	t.Helper()
	at := strings.IndexByte(email, '@')
	if len(email) > MaxEmailBytes || strings.Count(email, "@") != 1 || at < 1 || !strings.Contains(email[at:], ".") ||
		!utf8.ValidString(email) || strings.ContainsAny(email, " \t\r\n\x00<>") {
		t.Fatalf("accepted email %q", email)
	}
}
