package systemtest_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/access"
)

// TestScopePathIsTheRoutedPath tries to take a scoped token past its
// scope with encodings of the path: an escaped "?" or "#" (which the
// scope check once took for the end of the path), escaped slashes and
// dots, doubled slashes and trailing junk. Every attempt must be refused
// before any handler runs: 403 from the scope check, or 404 from the
// router (no route at all). Only the scoped path itself, in its four
// spellings, and escapes that decode to it (the router matches decoded
// paths) reach the handler.
func TestScopePathIsTheRoutedPath(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id, other := e.createDatatarget(admin, "one"), e.createDatatarget(admin, "other")
	integ := e.createIntegration(admin, "erp")
	scoped := func(path string) string {
		return e.createToken(admin, map[string]any{
			"owner_id": "integrations/" + integ,
			"scopes":   []access.Scope{{Path: path}},
		}).AccessToken.Token
	}
	retrieve := scoped("/api/datatargets/" + id + "/retrieve/")
	datatarget := scoped("/api/datatargets/" + id + "/")
	integration := scoped("/api/integrations/" + integ + "/")

	for _, tc := range []struct {
		token, method, path string
	}{
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve"},
		{retrieve, http.MethodGet, "/datatargets/" + id + "/retrieve/"},
		{retrieve, http.MethodGet, "/datatargets/" + id + "/retrieve"},
		{retrieve, http.MethodGet, "/api/datatargets%2F" + id + "%2Fretrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/%72etrieve/"},
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "/"},
		{integration, http.MethodGet, "/api/integrations/" + integ + "/"},
	} {
		if res := e.do(tc.method, tc.path, bearer(tc.token)); res.status != http.StatusOK {
			t.Errorf("%s %s: status %d, want 200; %s", tc.method, tc.path, res.status, res.body)
		}
	}

	for _, tc := range []struct {
		token, method, path string
	}{
		// The retrieve scope.
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "%3F/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve%3F/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/%3F"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve%23"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/%3F/../../" + other + "/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/%2e%2e/%2e%2e/" + other + "/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/../../" + other + "/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve%2F..%2F..%2F" + other + "%2Fretrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/%2e%2e/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + other + "/retrieve/"},
		{retrieve, http.MethodGet, "//api/datatargets/" + id + "/retrieve/"},
		{retrieve, http.MethodGet, "/api//datatargets/" + id + "/retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "//retrieve/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve//"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve/x"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/retrieve;x/"},
		{retrieve, http.MethodGet, "/api/datatargets/" + id + "/"},
		{retrieve, http.MethodPost, "/api/datatargets/" + id + "/post/"},
		// The datatarget's own path, exact: nothing below it.
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "%3F/retrieve/"},
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "%23/retrieve/"},
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "%3F/outlets/x/log/1/"},
		{datatarget, http.MethodPost, "/api/datatargets/" + id + "%3F/post/"},
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "%3F%2F..%2F/"},
		{datatarget, http.MethodGet, "/api/datatargets/" + id + "/retrieve/"},
		// An integration's path.
		{integration, http.MethodGet, "/api/integrations/" + integ + "%3F/"},
		{integration, http.MethodGet, "/api/integrations/" + integ + "%3F"},
		{integration, http.MethodGet, "/api/integrations/%3F/"},
	} {
		// Spellings of paths that are no path of the document, made to
		// hit the scope check; what they answer is asserted here.
		res := e.do(tc.method, tc.path, bearer(tc.token), rawBody(`{"messages": [{}]}`),
			outsideContract("a path spelt to slip past a token's scope"))
		var b errorBody
		if res.status == http.StatusForbidden || res.status == http.StatusNotFound {
			res.decode(t, &b)
		}
		routerMiss := res.status == http.StatusNotFound && strings.HasPrefix(b.Error.Message, "no such path")
		if res.status != http.StatusForbidden && !routerMiss {
			t.Errorf("%s %s reached a handler: status %d; %s", tc.method, tc.path, res.status, res.body)
		}
	}

	// A token without scopes is not affected: an escaped "?" is part of
	// the id, which names no datatarget.
	e.do(http.MethodGet, "/api/datatargets/"+id+"%3F/retrieve/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
}
