package accounts

import (
	"strings"
	"testing"

	"github.com/mcpscope/telemetry"
)

func ptr(s string) *string { return &s }

// field returns the location of a validation error, "" for nil.
func field(t *testing.T, err error) string {
	t.Helper()
	if err == nil {
		return ""
	}
	if telemetry.ErrorCode(err) != telemetry.EINVALID {
		t.Fatalf("code %s, want invalid: %v", telemetry.ErrorCode(err), err)
	}
	return err.(*telemetry.Error).Field
}

func TestSignupValidate(t *testing.T) {
	ok := Signup{Email: "Ada@Example.com", Password: "correct horse", Name: "Ada"}
	cases := []struct {
		name  string
		edit  func(*Signup)
		field string
	}{
		{"valid", func(*Signup) {}, ""},
		{"unicode email", func(s *Signup) { s.Email = "zoë@bücher.de" }, ""},
		{"plus address", func(s *Signup) { s.Email = "ada+ops@example.co.uk" }, ""},
		{"accents and other scripts", func(s *Signup) { s.Email = "Ünal.Δημήτρης@bücher.de" }, ""},
		{"kelvin sign", func(s *Signup) { s.Email = "\u212aate@example.com" }, "body.email"},
		{"long s", func(s *Signup) { s.Email = "ro\u017fe@example.com" }, "body.email"},
		{"fullwidth", func(s *Signup) { s.Email = "\uff41da@example.com" }, "body.email"},
		{"mathematical bold", func(s *Signup) { s.Email = "\U0001d41a\U0001d41d\U0001d41a@example.com" }, "body.email"},
		{"ligature", func(s *Signup) { s.Email = "\ufb01n@example.com" }, "body.email"},
		{"lookalike in domain", func(s *Signup) { s.Email = "ada@exampl\uff45.com" }, "body.email"},
		{"no email", func(s *Signup) { s.Email = "" }, "body.email"},
		{"no at", func(s *Signup) { s.Email = "ada.example.com" }, "body.email"},
		{"two ats", func(s *Signup) { s.Email = "a@b@example.com" }, "body.email"},
		{"no dot in domain", func(s *Signup) { s.Email = "ada@localhost" }, "body.email"},
		{"space", func(s *Signup) { s.Email = "ada lovelace@example.com" }, "body.email"},
		{"display form", func(s *Signup) { s.Email = "Ada <ada@example.com>" }, "body.email"},
		{"control", func(s *Signup) { s.Email = "ada\x00@example.com" }, "body.email"},
		{"bidi override", func(s *Signup) { s.Email = "ada\u202e@example.com" }, "body.email"},
		{"email too long", func(s *Signup) { s.Email = strings.Repeat("a", 60) + "@" + strings.Repeat("b", 190) + ".com" }, "body.email"},
		{"local part too long", func(s *Signup) { s.Email = strings.Repeat("a", 65) + "@example.com" }, "body.email"},
		{"short password", func(s *Signup) { s.Password = "123456789" }, "body.password"},
		{"password of 10 characters", func(s *Signup) { s.Password = "ééééééééééé"[:20] }, ""},
		{"huge password", func(s *Signup) { s.Password = strings.Repeat("p", 1025) }, "body.password"},
		{"no name", func(s *Signup) { s.Name = "" }, "body.name"},
		{"long name", func(s *Signup) { s.Name = strings.Repeat("n", 201) }, "body.name"},
		{"name of 200 emoji", func(s *Signup) { s.Name = strings.Repeat("🦄", 200) }, ""},
		{"name with NUL", func(s *Signup) { s.Name = "a\x00b" }, "body.name"},
		{"name with spaces kept", func(s *Signup) { s.Name = "  Ada  " }, ""},
		{"long account name", func(s *Signup) { s.AccountName = strings.Repeat("n", 201) }, "body.account_name"},
		{"huge invite token", func(s *Signup) { s.InviteToken = strings.Repeat("i", 300) }, "body.invite_token"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ok
			tc.edit(&s)
			if got := field(t, s.Validate()); got != tc.field {
				t.Fatalf("field %q, want %q", got, tc.field)
			}
		})
	}
}

func TestLoginValidate(t *testing.T) {
	cases := []struct {
		in    Login
		field string
	}{
		{Login{Email: "not even an email", Password: "x"}, ""}, // format is not checked: wrong is 401
		{Login{Password: "x"}, "body.email"},
		{Login{Email: "a@b.c"}, "body.password"},
		{Login{Email: "a@b.c", Password: strings.Repeat("x", 1025)}, "body.password"},
		{Login{Email: strings.Repeat("a", 255), Password: "x"}, "body.email"},
	}
	for _, tc := range cases {
		if got := field(t, tc.in.Validate()); got != tc.field {
			t.Errorf("%+v: field %q, want %q", tc.in, got, tc.field)
		}
	}
}

func TestCompanyUpdate(t *testing.T) {
	cur := Company{LegalName: ptr("Acme"), Website: ptr("https://acme.test"), VATID: ptr("DE1")}
	patch := CompanyUpdate{LegalName: To(ptr("Acme GmbH")), VATID: To[string](nil)}
	got := patch.Apply(cur)
	if *got.LegalName != "Acme GmbH" || got.VATID != nil || *got.Website != "https://acme.test" || got.Address != nil {
		t.Fatalf("merge: %+v", got)
	}
	got = ReplaceCompany(Company{Address: ptr("1 Road")}).Apply(cur)
	if got.LegalName != nil || got.Website != nil || *got.Address != "1 Road" {
		t.Fatalf("replace: %+v", got)
	}

	cases := []struct {
		upd   CompanyUpdate
		field string
	}{
		{CompanyUpdate{}, ""},
		{ReplaceCompany(Company{}), ""},
		{CompanyUpdate{Website: To(ptr("http://acme.test/about"))}, ""},
		{CompanyUpdate{Website: To(ptr("javascript:alert(1)"))}, "body.website"},
		{CompanyUpdate{Website: To(ptr("acme.test"))}, "body.website"},
		{CompanyUpdate{BillingEmail: To(ptr("billing"))}, "body.billing_email"},
		{CompanyUpdate{LegalName: To(ptr(""))}, "body.legal_name"},
		{CompanyUpdate{Address: To(ptr(strings.Repeat("a", 1001)))}, "body.address"},
		{CompanyUpdate{VATID: To(ptr(strings.Repeat("v", 65)))}, "body.vat_id"},
	}
	for i, tc := range cases {
		if got := field(t, tc.upd.Validate()); got != tc.field {
			t.Errorf("case %d: field %q, want %q", i, got, tc.field)
		}
	}
}

func TestCheckRoleChange(t *testing.T) {
	const none Role = ""
	cases := []struct {
		caller, from, to Role
		ok               bool
	}{
		{RoleOwner, RoleMember, RoleAdmin, true},
		{RoleOwner, RoleAdmin, RoleOwner, true},
		{RoleOwner, RoleOwner, RoleMember, true},
		{RoleOwner, RoleOwner, none, true},
		{RoleOwner, none, RoleOwner, true},
		{RoleAdmin, RoleMember, RoleAdmin, true},
		{RoleAdmin, RoleAdmin, RoleMember, true},
		{RoleAdmin, RoleMember, none, true},
		{RoleAdmin, none, RoleAdmin, true},
		{RoleAdmin, RoleAdmin, RoleOwner, false},
		{RoleAdmin, RoleOwner, RoleAdmin, false},
		{RoleAdmin, RoleOwner, none, false},
		{RoleAdmin, none, RoleOwner, false},
		{RoleMember, RoleMember, RoleAdmin, false},
		{RoleMember, none, RoleMember, false},
	}
	for _, tc := range cases {
		err := CheckRoleChange(tc.caller, tc.from, tc.to)
		if (err == nil) != tc.ok || (err != nil && telemetry.ErrorCode(err) != telemetry.EFORBIDDEN) {
			t.Errorf("%s moving %q to %q: %v", tc.caller, tc.from, tc.to, err)
		}
	}
}

func TestKeyHint(t *testing.T) {
	if got := KeyHint("ik_abcdefghijklmnopqrstuvwxyza1b2"); got != "ik_••••••••a1b2" {
		t.Fatalf("hint %q", got)
	}
}

func TestMCPValidate(t *testing.T) {
	if field(t, NewMCP{Name: "docs"}.Validate()) != "" {
		t.Error("minimal MCP refused")
	}
	if field(t, NewMCP{Name: ""}.Validate()) != "body.name" {
		t.Error("empty name accepted")
	}
	if field(t, NewMCP{Name: "x", Description: strings.Repeat("d", 2001)}.Validate()) != "body.description" {
		t.Error("long description accepted")
	}
	if field(t, MCPUpdate{Name: ptr("")}.Validate()) != "body.name" {
		t.Error("empty new name accepted")
	}
	if field(t, MCPUpdate{Description: ptr("")}.Validate()) != "" {
		t.Error("clearing the description refused")
	}
}
