package httpapi

import (
	"strings"
	"testing"

	"github.com/mcpscope/telemetry/accounts"
)

// TestPersonalTokens walks a token's life: shown once, listed by hint,
// reads as its person, refused for writes and token management, and
// refused from the request after its deletion.
func TestPersonalTokens(t *testing.T) {
	t.Parallel()
	s := accountServer(t, accounts.AuthPolicy{})
	owner := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("pat"), "Pat"), 201, "")["token"].(string)
	mcp := expect(t, s, "POST", "/v1/mcps", owner, `{"name":"m"}`, 201, "")["id"].(string)

	expect(t, s, "POST", "/v1/account/tokens", owner, `{"name":"x","scope":"write"}`, 422, "")
	expect(t, s, "POST", "/v1/account/tokens", owner, `{"name":"","scope":"read"}`, 422, "")
	created := expect(t, s, "POST", "/v1/account/tokens", owner, `{"name":"notebook","scope":"read"}`, 201, "")
	token, id := created["token"].(string), created["id"].(string)
	if !strings.HasPrefix(token, "pat_") || created["hint"] != "pat_••••••••"+token[len(token)-4:] || created["scope"] != "read" || created["name"] != "notebook" {
		t.Fatalf("created %v", created)
	}
	list := expect(t, s, "GET", "/v1/account/tokens", owner, "", 200, "")["items"].([]any)
	if len(list) != 1 || list[0].(map[string]any)["last_used_at"] != nil || list[0].(map[string]any)["token"] != nil ||
		list[0].(map[string]any)["hint"] != created["hint"] {
		t.Fatalf("list %v", list)
	}

	// Reads as its person.
	if got := expect(t, s, "GET", "/v1/mcps/"+mcp, token, "", 200, ""); got["id"] != mcp {
		t.Fatalf("read %v", got)
	}
	list = expect(t, s, "GET", "/v1/account/tokens", owner, "", 200, "")["items"].([]any)
	if list[0].(map[string]any)["last_used_at"] == nil {
		t.Fatalf("last_used_at not set after use: %v", list)
	}
	// Nothing else: writes, logout, token management.
	expect(t, s, "POST", "/v1/mcps", token, `{"name":"n"}`, 403, "credential_not_allowed")
	expect(t, s, "PATCH", "/v1/account/profile", token, `{"name":"n"}`, 403, "credential_not_allowed")
	expect(t, s, "POST", "/v1/auth/logout", token, "", 403, "credential_not_allowed")
	expect(t, s, "GET", "/v1/account/tokens", token, "", 403, "credential_not_allowed")
	expect(t, s, "POST", "/v1/account/tokens", token, `{"name":"y","scope":"read"}`, 403, "credential_not_allowed")
	expect(t, s, "DELETE", "/v1/account/tokens/"+id, token, "", 403, "credential_not_allowed")

	// Another person cannot delete it; its owner can, and it stops at once.
	other := expect(t, s, "POST", "/v1/auth/signup", "", signupBody(uniqueEmail("pat2"), "Other"), 201, "")["token"].(string)
	expect(t, s, "DELETE", "/v1/account/tokens/"+id, other, "", 404, "not_found")
	expect(t, s, "DELETE", "/v1/account/tokens/tok_garbage", owner, "", 404, "not_found")
	expect(t, s, "DELETE", "/v1/account/tokens/"+id, owner, "", 204, "")
	expect(t, s, "GET", "/v1/mcps/"+mcp, token, "", 401, "unauthenticated")
	if list := expect(t, s, "GET", "/v1/account/tokens", owner, "", 200, "")["items"].([]any); len(list) != 0 {
		t.Fatalf("after delete %v", list)
	}

	// A person removed from the account: their tokens there stop at once.
	member, memberID := join(t, s, owner, "member")
	memberPAT := expect(t, s, "POST", "/v1/account/tokens", member, `{"name":"m","scope":"read"}`, 201, "")["token"].(string)
	expect(t, s, "GET", "/v1/mcps/"+mcp, memberPAT, "", 200, "")
	expect(t, s, "DELETE", "/v1/account/members/"+memberID, owner, "", 204, "")
	expect(t, s, "GET", "/v1/mcps/"+mcp, memberPAT, "", 401, "unauthenticated")

	// The cap.
	for i := 0; i < accounts.MaxTokensPerPerson; i++ {
		expect(t, s, "POST", "/v1/account/tokens", other, `{"name":"n","scope":"read"}`, 201, "")
	}
	expect(t, s, "POST", "/v1/account/tokens", other, `{"name":"n","scope":"read"}`, 422, "limit_reached")
}
