package systemtest_test

import (
	"net/http"
	"testing"
)

func TestIntegrations(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)

	res := e.do(http.MethodPost, "/api/integrations/", bearer(admin), jsonBody(map[string]any{
		"integration_name": "shopify",
		"parameters":       map[string]string{"name": "Web shop", "description": "Orders from the web shop"},
	}))
	res.wantStatus(t, http.StatusOK)
	var created struct {
		Integration struct {
			ID string `json:"id"`
		} `json:"integration"`
	}
	res.decode(t, &created)
	id := created.Integration.ID
	golden(t, "integration", res.body, id, "<integration_id>")

	// Read back, alone and in the list.
	res = e.do(http.MethodGet, "/api/integrations/"+id+"/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	golden(t, "integration", res.body, id, "<integration_id>")
	e.do(http.MethodGet, "/api/integrations/nope/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")

	// The legacy body.
	res = e.do(http.MethodPost, "/api/integrations/", bearer(admin), jsonBody(map[string]string{"name": "ERP"}))
	res.wantStatus(t, http.StatusOK)
	var legacy struct {
		Integration struct {
			ID         string            `json:"id"`
			Name       string            `json:"name"`
			Parameters map[string]string `json:"parameters"`
		} `json:"integration"`
	}
	res.decode(t, &legacy)
	if legacy.Integration.Name != "ERP" || legacy.Integration.Parameters["name"] != "ERP" {
		t.Errorf("legacy body: %s", res.body)
	}

	res = e.do(http.MethodGet, "/api/integrations/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	var list struct {
		Integrations []struct {
			ID string `json:"id"`
		} `json:"integrations"`
	}
	res.decode(t, &list)
	if len(list.Integrations) != 2 || list.Integrations[0].ID != id || list.Integrations[1].ID != legacy.Integration.ID {
		t.Errorf("list: %s", res.body)
	}

	// A token for the integration, without the creator's roles.
	res = e.do(http.MethodPost, "/api/access-tokens/", bearer(admin), jsonBody(map[string]any{
		"name":     "web shop",
		"owner_id": "integrations/" + id,
		"scopes":   []map[string]string{{"path": "/api/integrations/" + id + "/"}},
	}))
	res.wantStatus(t, http.StatusOK)
	var tok tokenAnswer
	res.decode(t, &tok)
	checkHint(t, tok.AccessToken.Hint, tok.AccessToken.Token)
	golden(t, "access_token_integration", res.body,
		tok.AccessToken.ID, "<token_id>", id, "<integration_id>", e.admin.ID, "<admin_id>",
		tok.AccessToken.Token, "<token>", tok.AccessToken.Hint, "<hint>")

	// It reads its own integration.
	e.do(http.MethodGet, "/api/integrations/"+id+"/", bearer(tok.AccessToken.Token)).wantStatus(t, http.StatusOK)

	// With the creator's roles.
	withRoles := e.createToken(admin, map[string]any{"owner_id": "integrations/" + id, "transfer_privileges": true})
	if got := withRoles.AccessToken.TransferredRoles; len(got) != 1 || len(got[0]) != 1 || got[0][0] != "admin" {
		t.Errorf("transferred_roles %v, want [[admin]]", got)
	}
	e.do(http.MethodPost, "/api/integrations/", bearer(withRoles.AccessToken.Token), jsonBody(map[string]string{"name": "Via integration"})).
		wantStatus(t, http.StatusOK)
}

func TestIntegrationsRefused(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	id := e.createIntegration(admin, "Shop")
	integration := e.createToken(admin, map[string]any{"owner_id": "integrations/" + id}).AccessToken.Token
	body := jsonBody(map[string]any{"parameters": map[string]string{"name": "X"}})

	tests := []struct {
		name         string
		token        string
		method, path string
		opts         []option
		status       int
		code         string
	}{
		{"staff creates", staff, http.MethodPost, "/api/integrations/", []option{body}, http.StatusForbidden, "forbidden"},
		{"integration without roles creates", integration, http.MethodPost, "/api/integrations/", []option{body}, http.StatusForbidden, "forbidden"},
		{"integration without roles lists", integration, http.MethodGet, "/api/integrations/", nil, http.StatusForbidden, "forbidden"},
		{"no name", admin, http.MethodPost, "/api/integrations/", []option{jsonBody(map[string]any{"parameters": map[string]string{}})}, http.StatusUnprocessableEntity, "validation_error"},
		{"no body", admin, http.MethodPost, "/api/integrations/", nil, http.StatusBadRequest, "invalid_request"},
		{"parameters not an object", admin, http.MethodPost, "/api/integrations/", []option{rawBody(`{"parameters": []}`)}, http.StatusBadRequest, "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e.do(tt.method, tt.path, append([]option{bearer(tt.token)}, tt.opts...)...).wantError(t, tt.status, tt.code)
		})
	}
	// Staff read.
	e.do(http.MethodGet, "/api/integrations/", bearer(staff)).wantStatus(t, http.StatusOK)
}
