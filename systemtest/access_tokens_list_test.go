package systemtest_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// tokensList is the answer of GET /api/access-tokens/.
type tokensList struct {
	AccessTokens []map[string]any `json:"access_tokens"`
}

// listTokens lists the tokens token sees on host h, and fails the test if
// the answer carries a secret value: a "token" field, or any of secrets.
func (e *env) listTokens(t *testing.T, token, h string, secrets []string) (ids []string, list tokensList) {
	t.Helper()
	res := e.do(http.MethodGet, "/api/access-tokens/", bearer(token), host(h))
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &list)
	if list.AccessTokens == nil {
		t.Fatalf("access_tokens missing or null: %s", res.body)
	}
	for _, s := range secrets {
		if strings.Contains(string(res.body), s) {
			t.Errorf("the list carries a token's value: %s", res.body)
		}
	}
	for _, tok := range list.AccessTokens {
		if _, ok := tok["token"]; ok {
			t.Errorf("token %v has a token field", tok["id"])
		}
		ids = append(ids, tok["id"].(string))
	}
	return ids, list
}

// TestListAccessTokens: the tokens the caller could revoke, by the rule
// of DELETE /api/access-tokens/<id>/: a staff user its own, an
// integration's token its integration's, an admin all of the company's;
// never another company's, never a value.
func TestListAccessTokens(t *testing.T) {
	e := newEnv(t)
	var secrets []string
	userToken := func(u user, h string) string {
		v := e.userToken(u, h)
		secrets = append(secrets, v)
		return v
	}
	admin := userToken(e.admin, acmeHost)
	staff := userToken(e.staff, acmeHost)
	staff2 := e.createToken(staff, map[string]any{"name": "staff's second", "scopes": []map[string]string{{"method": "GET", "path": "/api/access-tokens/"}}})
	secrets = append(secrets, staff2.AccessToken.Token)
	shop := e.createIntegration(admin, "shop")
	erp := e.createIntegration(admin, "erp")
	shopTok := e.createToken(admin, map[string]any{"name": "plugin", "owner_id": "integrations/" + shop})
	erpTok := e.createToken(admin, map[string]any{"owner_id": "integrations/" + erp, "transfer_privileges": true})
	secrets = append(secrets, shopTok.AccessToken.Token, erpTok.AccessToken.Token)
	globex := userToken(e.globexAd, globexHost)
	res := e.do(http.MethodPost, "/api/access-tokens/", bearer(globex), host(globexHost), jsonBody(map[string]any{}))
	res.wantStatus(t, http.StatusOK)
	var globex2 tokenAnswer
	res.decode(t, &globex2)
	secrets = append(secrets, globex2.AccessToken.Token)

	adminIDs, all := e.listTokens(t, admin, acmeHost, secrets)
	staffIDs, _ := e.listTokens(t, staff, acmeHost, secrets)
	shopIDs, _ := e.listTokens(t, shopTok.AccessToken.Token, acmeHost, secrets)
	globexIDs, _ := e.listTokens(t, globex, globexHost, secrets)

	if len(adminIDs) != 5 {
		t.Errorf("admin lists %d tokens, want acme's 5: %v", len(adminIDs), all)
	}
	owners := map[string]string{}
	for _, tok := range all.AccessTokens {
		owners[tok["id"].(string)] = tok["owner_id"].(string)
	}
	for name, c := range map[string]struct {
		ids   []string
		owner string
		n     int
	}{
		"staff":       {staffIDs, "users/" + e.staff.ID, 2},
		"integration": {shopIDs, "integrations/" + shop, 1},
	} {
		if len(c.ids) != c.n {
			t.Errorf("%s lists %d tokens, want %d", name, len(c.ids), c.n)
		}
		for _, id := range c.ids {
			if owners[id] != c.owner {
				t.Errorf("%s lists token %s of %q", name, id, owners[id])
			}
		}
	}
	if !slices.Contains(shopIDs, shopTok.AccessToken.ID) || !slices.Contains(staffIDs, staff2.AccessToken.ID) {
		t.Errorf("own tokens missing: staff %v, shop %v", staffIDs, shopIDs)
	}
	if len(globexIDs) != 2 {
		t.Errorf("globex lists %d tokens, want its 2", len(globexIDs))
	}
	for _, id := range globexIDs {
		if slices.Contains(adminIDs, id) {
			t.Errorf("token %s listed to both companies", id)
		}
	}

	// A token as the creation answers it, without its value.
	found := false
	for _, tok := range all.AccessTokens {
		if tok["id"] != shopTok.AccessToken.ID {
			continue
		}
		found = true
		want := map[string]any{
			"id": shopTok.AccessToken.ID, "owner_id": "integrations/" + shop, "name": "plugin",
			"hint": shopTok.AccessToken.Hint, "created_at": "2025-01-02T03:04:05Z", "created_by": "users/" + e.admin.ID,
			"transferred_roles": []any{}, "scopes": []any{},
		}
		if diff := cmp.Diff(want, tok); diff != "" {
			t.Errorf("listed token (-want +got):\n%s", diff)
		}
	}
	if !found {
		t.Errorf("the integration's token %s is not in the admin's list", shopTok.AccessToken.ID)
	}

	// A revoked token leaves the list; the others stay.
	e.do(http.MethodDelete, "/api/access-tokens/"+erpTok.AccessToken.ID+"/", bearer(admin)).wantStatus(t, http.StatusOK)
	after, _ := e.listTokens(t, admin, acmeHost, secrets)
	if slices.Contains(after, erpTok.AccessToken.ID) || len(after) != 4 {
		t.Errorf("after revoking %s: %v", erpTok.AccessToken.ID, after)
	}

	// A staff user's token scoped to the list reads it, and still only
	// its owner's tokens.
	scoped, _ := e.listTokens(t, staff2.AccessToken.Token, acmeHost, secrets)
	if diff := cmp.Diff(staffIDs, scoped); diff != "" {
		t.Errorf("scoped staff token's list (-staff's +scoped):\n%s", diff)
	}
	e.do(http.MethodGet, "/api/access-tokens/", bearer(shopTok.AccessToken.Token), host(globexHost)).
		wantError(t, http.StatusUnauthorized, "unauthorized")
	e.do(http.MethodGet, "/api/access-tokens/").wantError(t, http.StatusUnauthorized, "unauthorized")
	// A password is accepted by POST only.
	e.do(http.MethodGet, "/api/access-tokens/", basic(e.admin.Email, password)).wantError(t, http.StatusUnauthorized, "unauthorized")
}
