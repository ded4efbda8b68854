package httpapi

import (
	"context"
	"net/http"
	"sort"
	"strings"
	"testing"

	"github.com/danielgtaylor/huma/v2"
)

// isolationBodies are minimal valid bodies, so that a request that gets
// past authentication reaches the handler (and its 404) instead of failing
// validation. Operations not listed get `{}` (with a method that takes a
// body).
var isolationBodies = map[string]string{
	"POST /v1/account/members":                      `{"email":"someone@example.com","role":"member"}`,
	"PATCH /v1/account/members/{user_id}":           `{"role":"member"}`,
	"POST /v1/mcps":                                 `{"name":"x"}`,
	"POST /v1/mcps/{id}/keys":                       `{"name":"x"}`,
	"POST /v1/mcps/{id}/rules":                      `{"name":"x","metric":"errors","comparator":">","threshold":1,"window_minutes":5,"channels":["in_app"]}`,
	"PATCH /v1/rules/{ruleId}":                      `{"name":"x"}`,
	"POST /v1/mcps/{id}/slos":                       `{"name":"x","kind":"availability","objective":0.99,"channels":["in_app"]}`,
	"PATCH /v1/slos/{sloId}":                        `{"name":"x"}`,
	"PUT /v1/account/channels/{channel}/webhook":    `{"url":"https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnop"}`,
	"PUT /v1/account/channels/{channel}/connection": `{"url":"https://hooks.slack.com/services/T0001/B0001/abcdefghijklmnop"}`,
	"POST /v1/account/inbox/read":                   `{"all":true}`,
	"POST /v1/account/tokens":                       `{"name":"x","scope":"read"}`,
}

// sharedParams name things every account has (the channel catalogue), not
// account A's resources: another account reaching them is no leak.
var sharedParams = map[string]bool{"channel": true}

// TestCredentialAndTenantIsolation enumerates every operation of the
// router's own OpenAPI document, so a route added later is covered without
// anyone remembering, and checks each against the contract: no credential
// and garbage are 401; the wrong kind of credential is 403
// credential_not_allowed; another account's session on account A's ids is
// 404; a member where an admin is needed is 403 forbidden. A personal
// access token answers every read (GET) exactly as its person's session
// does, and is 403 credential_not_allowed on everything else.
func TestCredentialAndTenantIsolation(t *testing.T) {
	t.Parallel()
	s, _ := alertingServer(t)
	ops := operations(s)
	hasIngest := false
	for _, op := range ops {
		hasIngest = hasIngest || op.access == "ingest_key"
	}
	if !hasIngest {
		// Until the ingest route is registered here, a stand-in keeps the
		// session-on-ingest case exercised.
		register(s, huma.Operation{OperationID: "test-ingest", Method: http.MethodPost, Path: "/v1/test/ingest"}, IngestOnly,
			func(context.Context, *struct{}) (*struct{}, error) { return nil, nil })
		ops = operations(s)
	}

	// Account A: an owner, a member, an MCP with a key. Account B: an owner.
	a := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("a"), "A"), 201, "")
	ownerA := a["token"].(string)
	mcpA := expect(t, s, "POST", "/v1/mcps", ownerA, `{"name":"a"}`, 201, "")["id"].(string)
	keyA := expect(t, s, "POST", "/v1/mcps/"+mcpA+"/keys", ownerA, `{"name":"a"}`, 201, "")
	inv := expect(t, s, "POST", "/v1/account/members", ownerA, `{"email":"member-`+mcpA+`@example.com","role":"member"}`, 201, "")
	m := expect(t, s, "POST", "/v1/auth/signup", "", signupBody("member-"+mcpA+"@example.com", "M", "invite_token", inv["invite_token"].(string)), 201, "")
	memberA := m["token"].(string)
	ruleA := expect(t, s, "POST", "/v1/mcps/"+mcpA+"/rules", ownerA, isolationBodies["POST /v1/mcps/{id}/rules"], 201, "")["id"].(string)
	sloA := expect(t, s, "POST", "/v1/mcps/"+mcpA+"/slos", ownerA, isolationBodies["POST /v1/mcps/{id}/slos"], 201, "")["id"].(string)
	params := map[string]string{
		"id":         mcpA,
		"sloId":      sloA,
		"keyId":      keyA["id"].(string),
		"user_id":    m["user"].(map[string]any)["id"].(string),
		"ruleId":     ruleA,
		"channel":    "slack",
		"name":       "search_docs",
		"session_id": "s-1",
		// A release A's MCP may have: the route answers A's reads and
		// 404 to the others by the MCP, whether or not it was seen.
		"server_version": "1.0.0",
	}
	ownerB := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("b"), "B"), 201, "")["token"].(string)
	ingestKey := keyA["key"].(string)
	pat := func(session string) (id, token string) {
		t.Helper()
		m := expect(t, s, "POST", "/v1/account/tokens", session, `{"name":"matrix","scope":"read"}`, 201, "")
		return m["id"].(string), m["token"].(string)
	}
	tokenA, patA := pat(ownerA)
	params["tokenId"] = tokenA
	_, patMemberA := pat(memberA)
	_, patB := pat(ownerB)

	checked := 0
	for _, op := range ops {
		t.Run(op.method+" "+op.path, func(t *testing.T) {
			path, hasParams := fillPath(t, op.path, params)
			body := isolationBodies[op.method+" "+op.path]
			if body == "" && (op.method == "POST" || op.method == "PUT" || op.method == "PATCH") {
				body = "{}"
			}
			try := func(who, header string, status int, code string) {
				t.Helper()
				var hdr []string
				if header != "" {
					hdr = []string{"Authorization", header}
				}
				rec, got := do(t, s, op.method, path, body, hdr...)
				if rec.Code != status || got["code"] != code {
					t.Errorf("%s: got %d %v, want %d %s", who, rec.Code, got, status, code)
				}
			}
			switch op.access {
			case "public":
				return
			case "session", "session:admin", "session:only", "ingest_key":
			default:
				t.Fatalf("unknown x-access %q: every operation must be registered through register()", op.access)
			}
			try("no credential", "", 401, "unauthenticated")
			for _, garbage := range []string{"Bearer garbage", "Bearer sess_" + strings.Repeat("A", 32), "Bearer ik_" + strings.Repeat("A", 32),
				"Bearer pat_" + strings.Repeat("A", 32), "Bearer ", "Basic " + ownerA, ownerA} {
				try("garbage "+garbage[:min(len(garbage), 12)], garbage, 401, "unauthenticated")
			}
			if op.access == "ingest_key" {
				try("session token", "Bearer "+ownerA, 403, "credential_not_allowed")
				try("personal token", "Bearer "+patA, 403, "credential_not_allowed")
				return
			}
			try("ingest key", "Bearer "+ingestKey, 403, "credential_not_allowed")
			if op.access == "session:admin" {
				try("member", "Bearer "+memberA, 403, "forbidden")
			}
			if hasParams {
				try("another account", "Bearer "+ownerB, 404, "not_found")
			}
			if op.method != "GET" || op.access == "session:only" {
				try("personal token", "Bearer "+patA, 403, "credential_not_allowed")
				return
			}
			// A read: the token answers as its person's session does.
			session, _ := do(t, s, op.method, path, body, "Authorization", "Bearer "+ownerA)
			rec, got := do(t, s, op.method, path, body, "Authorization", "Bearer "+patA)
			if rec.Code != session.Code || rec.Code == 401 || rec.Code == 403 {
				t.Errorf("personal token: got %d %v, session got %d", rec.Code, got, session.Code)
			}
			if op.access == "session:admin" {
				try("member's personal token", "Bearer "+patMemberA, 403, "forbidden")
			}
			if hasParams {
				try("another account's personal token", "Bearer "+patB, 404, "not_found")
			}
			checked++
		})
	}
	if checked < 15 {
		t.Fatalf("only %d session operations checked: is the route table complete?", checked)
	}

	// Nothing above changed account A.
	expect(t, s, "GET", "/v1/mcps/"+mcpA, ownerA, "", 200, "")
	if keys := expect(t, s, "GET", "/v1/mcps/"+mcpA+"/keys", ownerA, "", 200, "")["items"].([]any); len(keys) != 1 {
		t.Fatalf("keys %v", keys)
	}
	if ms := expect(t, s, "GET", "/v1/account/members", ownerA, "", 200, "")["items"].([]any); len(ms) != 2 {
		t.Fatalf("members %v", ms)
	}
	expect(t, s, "GET", "/v1/account", memberA, "", 200, "")
	if r := expect(t, s, "GET", "/v1/rules/"+ruleA, memberA, "", 200, ""); r["name"] != "x" {
		t.Fatalf("rule %v", r)
	}
}

type operation struct {
	method, path, access string
}

func operations(s *Server) []operation {
	var ops []operation
	for path, item := range s.API().OpenAPI().Paths {
		for method, op := range map[string]*huma.Operation{"GET": item.Get, "POST": item.Post, "PUT": item.Put, "PATCH": item.Patch, "DELETE": item.Delete, "HEAD": item.Head, "OPTIONS": item.Options} {
			if op == nil {
				continue
			}
			access, _ := op.Extensions["x-access"].(string)
			ops = append(ops, operation{method: method, path: path, access: access})
		}
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].path+ops[i].method < ops[j].path+ops[j].method })
	return ops
}

// fillPath puts account A's real ids into the path's parameters. An
// unknown parameter fails the test: a new route needs its fixture here.
func fillPath(t *testing.T, path string, params map[string]string) (string, bool) {
	t.Helper()
	filled := false
	for {
		i := strings.Index(path, "{")
		if i < 0 {
			return path, filled
		}
		j := strings.Index(path[i:], "}")
		name := path[i+1 : i+j]
		v, ok := params[name]
		if !ok {
			t.Fatalf("no fixture for path parameter {%s}: add account A's resource to the isolation test", name)
		}
		path = path[:i] + v + path[i+j+1:]
		filled = filled || !sharedParams[name]
	}
}
