package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mcpscope/telemetry/accounts"
	"github.com/mcpscope/telemetry/analytics"
	"github.com/mcpscope/telemetry/clickhouse"
	"github.com/mcpscope/telemetry/ingest"
	"github.com/mcpscope/telemetry/internal/testkit/testdb"
	"github.com/mcpscope/telemetry/postgres"
	"github.com/mcpscope/telemetry/wal"
)

// accountServer is the API with the real account services on the package's
// PostgreSQL database.
func accountServer(t *testing.T, cfg accounts.AuthPolicy) *Server {
	t.Helper()
	opts, _, _ := accountOptions(t, cfg)
	return New(opts)
}

// accountOptions are the server options with the real account, ingest and
// metric services on the package's PostgreSQL database and a ClickHouse
// database of the test's own, and those databases.
func accountOptions(t *testing.T, cfg accounts.AuthPolicy) (Options, *postgres.DB, *clickhouse.DB) {
	t.Helper()
	ctx := context.Background()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	db, err := postgres.Open(ctx, postgres.Config{URL: pg.URL(t), MaxConns: 8}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	keys := postgres.NewKeyService(db, cfg.KeyCacheTTL)
	auth := postgres.NewAuthService(db, cfg, keys)
	ch := testClickHouse(t)
	return Options{Logger: quiet, Auth: auth, Sessions: auth, Accounts: postgres.NewAccountService(db),
		Members: postgres.NewMemberService(db), MCPs: postgres.NewMCPService(db, keys), Keys: keys, Tokens: postgres.NewTokenService(db),
		Inventory: postgres.NewInventoryService(db),
		Ingester:  testPipeline(t, ch), Analytics: ch.Reads, Exporter: ch.Reads, Deletions: postgres.NewDeletionService(db),
		Limits: analytics.UsageLimits{IngestPayloadsPerMinute: 600, MaxBatchItems: 1000, MaxBodyBytes: 1 << 20}}, db, ch
}

// testClickHouse opens a fresh migrated ClickHouse database, dropped when
// the test ends.
func testClickHouse(t *testing.T) *clickhouse.DB { return testdb.ClickHouse(t) }

// testPipeline runs a real ingest pipeline (write-ahead log in a temporary
// directory, flushing to ch) until the test ends.
func testPipeline(t *testing.T, ch *clickhouse.DB) *ingest.Pipeline {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	l, err := wal.Open(t.TempDir(), wal.Options{Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	p := ingest.New(l, ch.Sink, ingest.Options{Node: "test", RateLimitPerMinute: 600, DedupWindow: 24 * time.Hour,
		FlushInterval: 100 * time.Millisecond, FlushMaxRows: 10000, Logger: quiet})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = p.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done; l.Close() })
	return p
}

// uniqueEmail returns an address no other test uses.
func uniqueEmail(name string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return name + "-" + hex.EncodeToString(b) + "@example.com"
}

// call sends a JSON request with an optional bearer token and returns the
// status and the decoded body.
func call(t *testing.T, s *Server, method, path, token, body string) (int, map[string]any, http.Header) {
	t.Helper()
	var hdr []string
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	rec, m := do(t, s, method, path, body, hdr...)
	if rec.Code >= 500 {
		t.Errorf("%s %s: %d %s", method, path, rec.Code, rec.Body.String())
	}
	return rec.Code, m, rec.Header()
}

// expect fails unless the call answered status (and, for problems, code).
func expect(t *testing.T, s *Server, method, path, token, body string, status int, code string) map[string]any {
	t.Helper()
	got, m, _ := call(t, s, method, path, token, body)
	if got != status || (code != "" && m["code"] != code) {
		t.Fatalf("%s %s: got %d %v, want %d %s", method, path, got, m, status, code)
	}
	return m
}

func jsonString(v string) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func keysOf(m map[string]any) string {
	var ks []string
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return strings.Join(ks, ",")
}

func isUTCTime(v any) bool {
	s, ok := v.(string)
	if !ok || !strings.HasSuffix(s, "Z") {
		return false
	}
	_, err := time.Parse(time.RFC3339Nano, s)
	return err == nil
}

func signupBody(email, name string, extra ...string) string {
	b := `{"email":` + jsonString(email) + `,"password":"correct horse battery","name":` + jsonString(name)
	for i := 0; i+1 < len(extra); i += 2 {
		b += `,` + jsonString(extra[i]) + `:` + jsonString(extra[i+1])
	}
	return b + `}`
}

// TestNewUserWalkthrough is a new user's first steps: sign up, an MCP, a
// key, the account's members.
func TestNewUserWalkthrough(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	ada := uniqueEmail("ada")
	m := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(ada, "Ada Lovelace", "account_name", "Engines"), 201, "")
	if keysOf(m) != "account,expires_at,token,user" || !isUTCTime(m["expires_at"]) {
		t.Fatalf("signup body %v", m)
	}
	token := m["token"].(string)
	account := m["account"].(map[string]any)
	user := m["user"].(map[string]any)
	if !strings.HasPrefix(token, "sess_") || keysOf(account) != "id,name" || account["name"] != "Engines" ||
		keysOf(user) != "email,id,name" || user["email"] != ada || user["name"] != "Ada Lovelace" {
		t.Fatalf("signup body %v", m)
	}

	acc := expect(t, s, "GET", "/v1/account", token, "", 200, "")
	if keysOf(acc) != "created_at,effective_retention_days,id,kept_from,name,plan,retention_days,role" || acc["id"] != account["id"] || acc["role"] != "owner" || acc["plan"] != "free" || !isUTCTime(acc["created_at"]) {
		t.Fatalf("account %v", acc)
	}

	mcp := expect(t, s, "POST", "/v1/mcps", token, `{"name":"docs-search"}`, 201, "")
	if keysOf(mcp) != "created_at,description,id,name,redaction,session_idle_minutes" || mcp["session_idle_minutes"] != 30.0 || mcp["name"] != "docs-search" || mcp["description"] != "" {
		t.Fatalf("mcp %v", mcp)
	}
	mcpID := mcp["id"].(string)

	key := expect(t, s, "POST", "/v1/mcps/"+mcpID+"/keys", token, `{"name":"production"}`, 201, "")
	secret, _ := key["key"].(string)
	if keysOf(key) != "created_at,hint,id,key,name" || !strings.HasPrefix(secret, "ik_") || key["hint"] != "ik_••••••••"+secret[len(secret)-4:] {
		t.Fatalf("key %v", key)
	}
	list := expect(t, s, "GET", "/v1/mcps/"+mcpID+"/keys", token, "", 200, "")
	items := list["items"].([]any)
	if len(items) != 1 || keysOf(items[0].(map[string]any)) != "created_at,hint,id,last_used_at,name" || items[0].(map[string]any)["last_used_at"] != nil {
		t.Fatalf("keys %v", list)
	}
	rec, _ := do(t, s, "GET", "/v1/mcps/"+mcpID+"/keys", "", "Authorization", "Bearer "+token)
	if strings.Contains(rec.Body.String(), secret[3:]) {
		t.Fatal("the key list leaks the key")
	}

	grace := uniqueEmail("grace")
	status, inv, hdr := call(t, s, "POST", "/v1/account/members", token, `{"email":`+jsonString(grace)+`,"role":"member"}`)
	if status != 201 || hdr.Get("Cache-Control") != "no-store" {
		t.Fatalf("invitation: %d, Cache-Control %q (a one-time token must not be cached)", status, hdr.Get("Cache-Control"))
	}
	invitation, _ := inv["invitation"].(map[string]any)
	inviteToken, _ := inv["invite_token"].(string)
	if keysOf(inv) != "invitation,invite_token" || invitation["email"] != grace || invitation["role"] != "member" || !strings.HasPrefix(inviteToken, "inv_") {
		t.Fatalf("invitation %v", inv)
	}
	members := expect(t, s, "GET", "/v1/account/members", token, "", 200, "")
	if len(members["items"].([]any)) != 1 || len(members["invitations"].([]any)) != 1 {
		t.Fatalf("members %v", members)
	}
	if strings.Contains(keysOf(members["invitations"].([]any)[0].(map[string]any)), "token") {
		t.Fatalf("an invitation list shows a token: %v", members)
	}

	g := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(grace, "Grace Hopper", "invite_token", inviteToken), 201, "")
	if g["account"].(map[string]any)["id"] != account["id"] {
		t.Fatalf("colleague joined %v", g["account"])
	}
	graceToken := g["token"].(string)
	if r := expect(t, s, "GET", "/v1/account", graceToken, "", 200, ""); r["role"] != "member" {
		t.Fatalf("colleague's role %v", r)
	}
	expect(t, s, "POST", "/v1/mcps/"+mcpID+"/keys", graceToken, `{"name":"mine"}`, 403, "forbidden")
	if l := expect(t, s, "GET", "/v1/mcps", graceToken, "", 200, ""); len(l["items"].([]any)) != 1 {
		t.Fatalf("colleague's MCPs %v", l)
	}
	members = expect(t, s, "GET", "/v1/account/members", graceToken, "", 200, "")
	if len(members["items"].([]any)) != 2 || len(members["invitations"].([]any)) != 0 {
		t.Fatalf("members %v", members)
	}
	// The invitation is spent.
	expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("late"), "Late", "invite_token", inviteToken), 422, "invalid")

	// Logout ends that session only; login gets a new one.
	expect(t, s, "POST", "/v1/auth/logout", graceToken, "", 204, "")
	expect(t, s, "GET", "/v1/account", graceToken, "", 401, "unauthenticated")
	l := expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(strings.ToUpper(grace))+`,"password":"correct horse battery"}`, 200, "")
	if l["account"].(map[string]any)["id"] != account["id"] {
		t.Fatalf("login %v", l)
	}
	expect(t, s, "GET", "/v1/account", token, "", 200, "")

	// Deleting the key and the MCP.
	keyID := key["id"].(string)
	expect(t, s, "DELETE", "/v1/keys/"+keyID, token, "", 204, "")
	expect(t, s, "DELETE", "/v1/keys/"+keyID, token, "", 404, "not_found")
	expect(t, s, "DELETE", "/v1/mcps/"+mcpID, token, "", 204, "")
	expect(t, s, "GET", "/v1/mcps/"+mcpID, token, "", 404, "not_found")
}

func TestAuthErrors(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{LoginMaxFailures: 3})
	addr := uniqueEmail("err")
	expect(t, s, "POST", "/v1/auth/signup", "", signupBody(addr, "Err"), 201, "")
	m := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(strings.ToUpper(addr), "Again"), 409, "conflict")
	if errs, _ := m["errors"].([]any); len(errs) != 1 || errs[0].(map[string]any)["location"] != "body.email" {
		t.Errorf("conflict %v", m)
	}

	wrongPw := expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(addr)+`,"password":"nope nope nope"}`, 401, "invalid_credentials")
	wrongEmail := expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(uniqueEmail("ghost"))+`,"password":"nope nope nope"}`, 401, "invalid_credentials")
	delete(wrongPw, "request_id")
	delete(wrongEmail, "request_id")
	a, _ := json.Marshal(wrongPw)
	b, _ := json.Marshal(wrongEmail)
	if string(a) != string(b) {
		t.Errorf("wrong password %s, wrong email %s", a, b)
	}
	expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(addr)+`,"password":"nope nope nope"}`, 401, "invalid_credentials")
	expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(addr)+`,"password":"nope nope nope"}`, 401, "invalid_credentials")
	status, m, hdr := call(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(addr)+`,"password":"correct horse battery"}`)
	if status != 429 || m["code"] != "rate_limited" {
		t.Fatalf("after 3 failures: %d %v", status, m)
	}
	// 900 s from the third failure, less the seconds since (a busy
	// machine can take a few between the two requests).
	if ra, err := strconv.Atoi(hdr.Get("Retry-After")); err != nil || ra > 900 || ra < 870 {
		t.Fatalf("Retry-After %q, want about 900", hdr.Get("Retry-After"))
	}
	expect(t, s, "POST", "/v1/auth/logout", "", "", 401, "unauthenticated")
}

// TestBadInput: invalid bodies are 4xx with the field's location, never 5xx.
func TestBadInput(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	owner := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("bad"), "Bad"), 201, "")
	token := owner["token"].(string)
	mcpID := expect(t, s, "POST", "/v1/mcps", token, `{"name":"x"}`, 201, "")["id"].(string)
	long := strings.Repeat("x", 201)
	cases := []struct {
		name, method, path, body string
		auth                     bool
		status                   int
		location                 string
	}{
		{"missing email", "POST", "/v1/auth/signup", `{"password":"correct horse battery","name":"A"}`, false, 422, "body.email"},
		{"short password", "POST", "/v1/auth/signup", `{"email":"a@b.co","password":"123456789","name":"A"}`, false, 422, "body.password"},
		{"bad email", "POST", "/v1/auth/signup", signupBody("not-an-email", "A"), false, 422, "body.email"},
		{"email with display name", "POST", "/v1/auth/signup", signupBody("A <a@b.co>", "A"), false, 422, "body.email"},
		{"long name", "POST", "/v1/auth/signup", signupBody(uniqueEmail("a"), long), false, 422, "body.name"},
		{"NUL in name", "POST", "/v1/auth/signup", signupBody(uniqueEmail("a"), "a\x00b"), false, 422, "body.name"},
		{"name is a number", "POST", "/v1/auth/signup", `{"email":"a@b.co","password":"correct horse battery","name":5}`, false, 422, "body.name"},
		{"unknown field", "POST", "/v1/auth/signup", signupBody(uniqueEmail("a"), "A", "admin", "true"), false, 422, ""},
		{"bad invite", "POST", "/v1/auth/signup", signupBody(uniqueEmail("a"), "A", "invite_token", "inv_forged"), false, 422, "body.invite_token"},
		{"null password", "POST", "/v1/auth/login", `{"email":"a@b.co","password":null}`, false, 422, "body.password"},
		{"login to a foreign account", "POST", "/v1/auth/login", `{"email":"a@b.co","password":"x","account_id":"` + strings.Repeat("a", 65) + `"}`, false, 422, "body.account_id"},
		{"not JSON", "POST", "/v1/auth/login", `{"email":`, false, 400, ""},
		{"array body", "POST", "/v1/mcps", `[]`, true, 422, ""},
		{"empty MCP name", "POST", "/v1/mcps", `{"name":""}`, true, 422, "body.name"},
		{"MCP plan field", "PATCH", "/v1/account", `{"plan":"enterprise"}`, true, 422, ""},
		{"bad role", "POST", "/v1/account/members", `{"email":"a@b.co","role":"god"}`, true, 422, "body.role"},
		{"bad member email", "POST", "/v1/account/members", `{"email":"nobody","role":"member"}`, true, 422, "body.email"},
		{"key without name", "POST", "/v1/mcps/" + mcpID + "/keys", `{}`, true, 422, "body.name"},
		{"huge key name", "POST", "/v1/mcps/" + mcpID + "/keys", `{"name":"` + strings.Repeat("🦄", 100000) + `"}`, true, 422, "body.name"},
		{"company website", "PATCH", "/v1/account/company", `{"website":"ftp://x.test"}`, true, 422, "body.website"},
		{"company empty string", "PUT", "/v1/account/company", `{"legal_name":""}`, true, 422, "body.legal_name"},
		{"company wrong type", "PATCH", "/v1/account/company", `{"vat_id":7}`, true, 422, "body.vat_id"},
		{"company unknown field", "PATCH", "/v1/account/company", `{"iban":"DE00"}`, true, 422, ""},
		{"profile email taken shape", "PATCH", "/v1/account/profile", `{"email":"x"}`, true, 422, "body.email"},
		{"NUL in path", "GET", "/v1/mcps/%00", "", true, 404, ""},
		{"invalid UTF-8 in path", "GET", "/v1/mcps/%ff%fe", "", true, 404, ""},
		{"very long id", "GET", "/v1/mcps/mcp_" + strings.Repeat("a", 10000), "", true, 404, ""},
		{"slash in id", "PATCH", "/v1/mcps/a%2Fb", `{}`, true, 404, ""},
		{"unknown member", "DELETE", "/v1/account/members/usr_AAAAAAAAAAAAAAAA", "", true, 404, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tok := ""
			if tc.auth {
				tok = token
			}
			status, m, _ := call(t, s, tc.method, tc.path, tok, tc.body)
			if status != tc.status {
				t.Fatalf("status %d, want %d: %v", status, tc.status, m)
			}
			if tc.location != "" {
				errs, _ := m["errors"].([]any)
				if len(errs) == 0 || errs[0].(map[string]any)["location"] != tc.location {
					t.Fatalf("errors %v, want location %s", m["errors"], tc.location)
				}
			}
		})
	}
}

// TestStringsStoredAsSent: no trimming, no normalisation, hostile Unicode
// included.
func TestStringsStoredAsSent(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	names := []string{"  padded  ", "e\u0301 (decomposed)", "\u202eevil\u202c", "🦄👩‍👩‍👧", "<script>alert(1)</script>", "tab\there", "Z̤͔ͧ̑̓ä͖̭̈̇lͮ̒ͫǧ̗͚̚o̙̔ͮ̇͐̇", strings.Repeat("ß", 200)}
	owner := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("uni"), names[0]), 201, "")
	token := owner["token"].(string)
	if owner["user"].(map[string]any)["name"] != names[0] {
		t.Fatalf("name %q", owner["user"].(map[string]any)["name"])
	}
	for _, n := range names {
		m := expect(t, s, "POST", "/v1/mcps", token, `{"name":`+jsonString(n)+`,"description":`+jsonString(n)+`}`, 201, "")
		got := expect(t, s, "GET", "/v1/mcps/"+m["id"].(string), token, "", 200, "")
		if got["name"] != n || got["description"] != n {
			t.Errorf("stored %q as %q", n, got["name"])
		}
	}
}

func TestCompanyMerge(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	token := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("co"), "Co"), 201, "")["token"].(string)
	empty := expect(t, s, "GET", "/v1/account/company", token, "", 200, "")
	if keysOf(empty) != "address,billing_email,legal_name,vat_id,website" || empty["legal_name"] != nil {
		t.Fatalf("empty company %v", empty)
	}
	c := expect(t, s, "PUT", "/v1/account/company", token, `{"legal_name":"Acme","website":"https://acme.test","vat_id":"DE1"}`, 200, "")
	if c["legal_name"] != "Acme" || c["address"] != nil || c["vat_id"] != "DE1" {
		t.Fatalf("put %v", c)
	}
	c = expect(t, s, "PATCH", "/v1/account/company", token, `{"vat_id":null,"address":" 1 Road "}`, 200, "")
	if c["legal_name"] != "Acme" || c["website"] != "https://acme.test" || c["vat_id"] != nil || c["address"] != " 1 Road " {
		t.Fatalf("patch %v", c)
	}
	c = expect(t, s, "PATCH", "/v1/account/company", token, `{}`, 200, "")
	if c["legal_name"] != "Acme" || c["address"] != " 1 Road " {
		t.Fatalf("empty patch %v", c)
	}
	c = expect(t, s, "PUT", "/v1/account/company", token, `{"billing_email":"billing@acme.test"}`, 200, "")
	if c["legal_name"] != nil || c["address"] != nil || c["billing_email"] != "billing@acme.test" {
		t.Fatalf("put replaces %v", c)
	}
	if got := expect(t, s, "GET", "/v1/account/company", token, "", 200, ""); got["billing_email"] != "billing@acme.test" || got["website"] != nil {
		t.Fatalf("get %v", got)
	}
}

func TestMembersRoles(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	owner := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("own"), "Own"), 201, "")
	token := owner["token"].(string)
	ownerID := owner["user"].(map[string]any)["id"].(string)
	m := expect(t, s, "PATCH", "/v1/account/members/"+ownerID, token, `{"role":"admin"}`, 409, "conflict")
	if !strings.Contains(m["detail"].(string), "at least one owner") {
		t.Errorf("detail %v", m["detail"])
	}
	expect(t, s, "DELETE", "/v1/account/members/"+ownerID, token, "", 409, "conflict")

	// An existing person is added directly with the member shape.
	other := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("oth"), "Oth"), 201, "")
	otherUser := other["user"].(map[string]any)
	added := expect(t, s, "POST", "/v1/account/members", token, `{"email":`+jsonString(otherUser["email"].(string))+`,"role":"admin"}`, 201, "")
	if keysOf(added) != "email,email_verified,joined_at,name,role,user_id" || added["user_id"] != otherUser["id"] || added["role"] != "admin" || !isUTCTime(added["joined_at"]) {
		t.Fatalf("added %v", added)
	}
	expect(t, s, "POST", "/v1/account/members", token, `{"email":`+jsonString(otherUser["email"].(string))+`,"role":"member"}`, 409, "conflict")
	adminLogin := expect(t, s, "POST", "/v1/auth/login", "", `{"email":`+jsonString(otherUser["email"].(string))+
		`,"password":"correct horse battery","account_id":`+jsonString(owner["account"].(map[string]any)["id"].(string))+`}`, 200, "")
	adminToken := adminLogin["token"].(string)
	expect(t, s, "PATCH", "/v1/account/members/"+ownerID, adminToken, `{"role":"member"}`, 403, "forbidden")
	expect(t, s, "POST", "/v1/account/members", adminToken, `{"email":"boss@example.com","role":"owner"}`, 403, "forbidden")
	if r := expect(t, s, "PATCH", "/v1/account/members/"+otherUser["id"].(string), token, `{"role":"member"}`, 200, ""); r["role"] != "member" {
		t.Fatalf("demoted %v", r)
	}
	// The role applies at once: the ex-admin cannot manage any more.
	expect(t, s, "POST", "/v1/mcps", adminToken, `{"name":"x"}`, 403, "forbidden")
	expect(t, s, "DELETE", "/v1/account/members/"+otherUser["id"].(string), token, "", 204, "")
	expect(t, s, "GET", "/v1/account", adminToken, "", 401, "unauthenticated")
	// Their own account is untouched.
	expect(t, s, "GET", "/v1/account", other["token"].(string), "", 200, "")
}

func TestProfile(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	first := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("p1"), "P1"), 201, "")
	second := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("p2"), "P2"), 201, "")
	token := first["token"].(string)
	p := expect(t, s, "GET", "/v1/account/profile", token, "", 200, "")
	if keysOf(p) != "email,email_verified,name,user_id" || p["user_id"] != first["user"].(map[string]any)["id"] {
		t.Fatalf("profile %v", p)
	}
	p = expect(t, s, "PATCH", "/v1/account/profile", token, `{"name":"Renamed"}`, 200, "")
	if p["name"] != "Renamed" || p["email"] != first["user"].(map[string]any)["email"] {
		t.Fatalf("patched %v", p)
	}
	taken := strings.ToUpper(second["user"].(map[string]any)["email"].(string))
	expect(t, s, "PATCH", "/v1/account/profile", token, `{"email":`+jsonString(taken)+`}`, 409, "conflict")
	a := expect(t, s, "PATCH", "/v1/account", token, `{"name":"New name"}`, 200, "")
	if a["name"] != "New name" || a["role"] != "owner" {
		t.Fatalf("account %v", a)
	}
}
