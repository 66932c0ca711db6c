package systemtest_test

import (
	"net/http"
	"strings"
	"testing"
)

func TestTokenCarriers(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)
	carriers := []struct {
		name string
		opt  option
	}{
		{"bearer", bearer(token)},
		{"token scheme", withHeader("Authorization", "Token "+token)},
		{"basic access-token", basic("access-token", token)},
		{"query", withQuery("access-token", token)},
	}
	for _, c := range carriers {
		t.Run(c.name, func(t *testing.T) {
			e.do(http.MethodGet, "/api/integrations/", c.opt).wantStatus(t, http.StatusOK)
		})
	}
	if logs := e.logs.String(); strings.Contains(logs, token) {
		t.Errorf("token value in the logs:\n%s", logs)
	}
}

func TestPathSpellings(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)
	for _, p := range []string{"/api/integrations/", "/api/integrations", "/integrations/", "/integrations"} {
		t.Run(p, func(t *testing.T) {
			e.do(http.MethodGet, p, bearer(token)).wantStatus(t, http.StatusOK)
		})
	}
	for _, p := range []string{"/api/access-tokens", "/access-tokens/", "/access-tokens"} {
		t.Run(p, func(t *testing.T) {
			e.do(http.MethodPost, p, basic(e.admin.Email, password)).wantStatus(t, http.StatusOK)
		})
	}
}

func TestAuthenticationRefused(t *testing.T) {
	e := newEnv(t)
	acme := e.userToken(e.admin, acmeHost)
	globex := e.userToken(e.globexAd, globexHost)
	tests := []struct {
		name    string
		opts    []option
		message string // part of the error message, if any
	}{
		{"no credentials", nil, "missing credentials"},
		{"unknown token", []option{bearer("clt_00000000000000000000000000000000")}, ""},
		{"garbage token", []option{bearer("garbage")}, ""},
		{"empty bearer", []option{withHeader("Authorization", "Bearer ")}, ""},
		{"unknown scheme", []option{withHeader("Authorization", "Digest abc")}, "unsupported"},
		{"basic access-token without token", []option{basic("access-token", "")}, ""},
		{"token of another company", []option{bearer(globex)}, ""},
		{"password outside token creation", []option{basic(e.admin.Email, password)}, "/api/access-tokens/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := e.do(http.MethodGet, "/api/integrations/", tt.opts...)
			b := res.wantError(t, http.StatusUnauthorized, "unauthorized")
			if !strings.Contains(b.Error.Message, tt.message) {
				t.Errorf("message %q does not mention %q", b.Error.Message, tt.message)
			}
			if res.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without WWW-Authenticate")
			}
		})
	}
	// The same token works on its own company's host.
	e.do(http.MethodGet, "/api/integrations/", bearer(acme)).wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/api/integrations/", host(globexHost), bearer(globex)).wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/api/integrations/", host(globexHost), bearer(acme)).wantError(t, http.StatusUnauthorized, "unauthorized")
}

func TestUnknownHost(t *testing.T) {
	e := newEnv(t)
	token := e.userToken(e.admin, acmeHost)
	for _, h := range []string{"initech.localhost", "localhost", "acme.example.com", "127.0.0.1"} {
		t.Run(h, func(t *testing.T) {
			e.do(http.MethodGet, "/api/integrations/", host(h), bearer(token)).wantError(t, http.StatusNotFound, "not_found")
		})
	}
	// A port and upper case do not matter.
	e.do(http.MethodGet, "/api/integrations/", host("ACME.localhost:8080"), bearer(token)).wantStatus(t, http.StatusOK)
	// Operations need no company.
	e.do(http.MethodGet, "/healthz", host("initech.localhost")).wantStatus(t, http.StatusOK)
}

func TestScopes(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id := e.createIntegration(admin, "Shop")
	other := e.createIntegration(admin, "ERP")

	// A token of the integration, limited to reading it.
	one := e.createToken(admin, map[string]any{
		"owner_id": "integrations/" + id,
		"scopes":   []map[string]string{{"method": "GET", "path": "/api/integrations/" + id + "/"}},
	}).AccessToken.Token
	// An admin token limited to GET on the list.
	list := e.createToken(admin, map[string]any{
		"owner_id":            "integrations/" + id,
		"transfer_privileges": true,
		"scopes":              []map[string]string{{"method": "GET", "path": "/api/integrations/"}},
	}).AccessToken.Token

	tests := []struct {
		name         string
		token        string
		method, path string
		body         any
		status       int
	}{
		{"scoped path", one, http.MethodGet, "/api/integrations/" + id + "/", nil, http.StatusOK},
		{"scoped path, other spelling", one, http.MethodGet, "/integrations/" + id, nil, http.StatusOK},
		{"other integration", one, http.MethodGet, "/api/integrations/" + other + "/", nil, http.StatusForbidden},
		{"list", one, http.MethodGet, "/api/integrations/", nil, http.StatusForbidden},
		{"token creation", one, http.MethodPost, "/api/access-tokens/", map[string]any{}, http.StatusForbidden},
		{"list scope", list, http.MethodGet, "/api/integrations/", nil, http.StatusOK},
		{"list scope, other method", list, http.MethodPost, "/api/integrations/", map[string]any{"name": "X"}, http.StatusForbidden},
		{"list scope, other path", list, http.MethodGet, "/api/integrations/" + id + "/", nil, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := []option{bearer(tt.token)}
			if tt.body != nil {
				opts = append(opts, jsonBody(tt.body))
			}
			res := e.do(tt.method, tt.path, opts...)
			if tt.status == http.StatusOK {
				res.wantStatus(t, http.StatusOK)
				return
			}
			res.wantError(t, tt.status, "forbidden")
		})
	}
}
