package access_test

import (
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

func TestNormalizePath(t *testing.T) {
	tests := map[string]string{
		"/api/datatargets/7/retrieve/":                             "/datatargets/7/retrieve",
		"/datatargets/7/retrieve":                                  "/datatargets/7/retrieve",
		"https://acme.example.com/api/datatargets/7/retrieve/?a=1": "/datatargets/7/retrieve",
		"http://localhost:8080/datatargets/7/retrieve#x":           "/datatargets/7/retrieve",
		"/api":                    "/",
		"/api/":                   "/",
		"":                        "/",
		"datatargets/":            "/datatargets",
		"/apis/x":                 "/apis/x",
		"/api/customers/upload//": "/customers/upload",
		"/api/customers/a%20b/":   "/customers/a b",
		"/x%3Fy?z":                "/x?y",
	}
	for in, want := range tests {
		if got := access.NormalizePath(in); got != want {
			t.Errorf("NormalizePath(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestScopesAllow(t *testing.T) {
	retrieve := []access.Scope{{Path: "/api/datatargets/7/retrieve/"}}
	tests := []struct {
		name   string
		scopes []access.Scope
		method string
		path   string
		want   bool
	}{
		{"no scopes allow everything", nil, "POST", "/api/customers/upload/", true},
		{"same path", retrieve, "GET", "/api/datatargets/7/retrieve/", true},
		{"without api prefix and slash", retrieve, "GET", "/datatargets/7/retrieve", true},
		{"any method when none given", retrieve, "POST", "/datatargets/7/retrieve", true},
		{"other datatarget", retrieve, "GET", "/api/datatargets/8/retrieve/", false},
		{"sub path of exact scope", retrieve, "GET", "/api/datatargets/7/retrieve/x/", false},
		{"parent path", retrieve, "GET", "/api/datatargets/7/", false},
		{"dot segments refused", retrieve, "GET", "/api/datatargets/7/retrieve/../retrieve/", false},
		{"full URL scope", []access.Scope{{Path: "https://acme.example.com/api/datatargets/7/retrieve/?after=1"}}, "GET", "/api/datatargets/7/retrieve/", true},
		{"method matches case-insensitively", []access.Scope{{Method: "get", Path: "/datatargets/7/retrieve"}}, "GET", "/api/datatargets/7/retrieve/", true},
		{"method differs", []access.Scope{{Method: "GET", Path: "/datatargets/7/retrieve"}}, "POST", "/api/datatargets/7/retrieve/", false},
		{"second scope matches", []access.Scope{{Method: "POST", Path: "/customers/upload"}, {Path: "/datatargets/7/retrieve"}}, "GET", "/datatargets/7/retrieve/", true},
		{"subtree prefix: itself", []access.Scope{{Path: "/api/datatargets/7/*"}}, "GET", "/api/datatargets/7/", true},
		{"subtree prefix: below", []access.Scope{{Path: "/api/datatargets/7/*"}}, "GET", "/api/datatargets/7/outlets/3/log/", true},
		{"subtree prefix: sibling", []access.Scope{{Path: "/api/datatargets/7/*"}}, "GET", "/api/datatargets/70/", false},
		{"string prefix", []access.Scope{{Path: "/api/datatargets/7*"}}, "GET", "/api/datatargets/70/", true},
		{"string prefix: other", []access.Scope{{Path: "/api/datatargets/7*"}}, "GET", "/api/datatargets/8/", false},
		{"root prefix", []access.Scope{{Path: "/*"}}, "DELETE", "/api/anything/", true},
		{"api root prefix", []access.Scope{{Path: "/api/*"}}, "GET", "/api/data/customers/", true},
		// The request path is the routed, decoded path: a "?" or "#" in
		// it was sent escaped (%3F, %23) and is part of a segment.
		{"decoded ? is not the end of the path", []access.Scope{{Path: "/api/datatargets/7/"}}, "GET", "/api/datatargets/7?/retrieve/", false},
		{"decoded # is not the end of the path", []access.Scope{{Path: "/api/datatargets/7/"}}, "GET", "/api/datatargets/7#/retrieve/", false},
		{"decoded ? after the scope's path", retrieve, "GET", "/api/datatargets/7/retrieve?", false},
		{"dot segments after a decoded ?", []access.Scope{{Path: "/datatargets/7/*"}}, "GET", "/api/datatargets/7?/../../8/retrieve/", false},
		{"decoded ? inside a subtree stays inside", []access.Scope{{Path: "/datatargets/7/*"}}, "GET", "/api/datatargets/7/x?y/", true},
		{"empty segment", retrieve, "GET", "/api/datatargets//7/retrieve/", false},
		{"two trailing slashes", retrieve, "GET", "/api/datatargets/7/retrieve//", false},
		{"relative path", retrieve, "GET", "datatargets/7/retrieve", false},
		{"escaped scope path matches the decoded path", []access.Scope{{Path: "/api/customers/a%20b%3F/history/"}}, "GET", "/api/customers/a b?/history/", true},
		{"escaped scope path: full URL", []access.Scope{{Path: "https://x.example.com/api/customers/a%2Fb/"}}, "GET", "/api/customers/a/b/", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := access.ScopesAllow(tt.scopes, tt.method, tt.path); got != tt.want {
				t.Errorf("ScopesAllow(%v, %s, %s) = %v, want %v", tt.scopes, tt.method, tt.path, got, tt.want)
			}
		})
	}
}

func TestScopesCover(t *testing.T) {
	s := func(method, path string) access.Scope { return access.Scope{Method: method, Path: path} }
	tests := []struct {
		name       string
		have, want []access.Scope
		covered    bool
	}{
		{"unlimited covers all", nil, nil, true},
		{"limited does not cover unlimited", []access.Scope{s("", "/a")}, nil, false},
		{"same path", []access.Scope{s("", "/api/a/")}, []access.Scope{s("GET", "/a")}, true},
		{"method narrower", []access.Scope{s("GET", "/a")}, []access.Scope{s("", "/a")}, false},
		{"exact does not cover prefix", []access.Scope{s("", "/a")}, []access.Scope{s("", "/a/*")}, false},
		{"subtree covers below", []access.Scope{s("", "/a/*")}, []access.Scope{s("", "/a/b"), s("", "/a/c/*"), s("", "/a")}, true},
		{"subtree does not cover string prefix", []access.Scope{s("", "/a/*")}, []access.Scope{s("", "/a*")}, false},
		{"subtree does not cover sibling", []access.Scope{s("", "/a/*")}, []access.Scope{s("", "/ab")}, false},
		{"string prefix covers longer", []access.Scope{s("", "/a*")}, []access.Scope{s("", "/ab/*"), s("", "/a")}, true},
		{"one uncovered fails all", []access.Scope{s("", "/a/*")}, []access.Scope{s("", "/a/b"), s("", "/b")}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := access.ScopesCover(tt.have, tt.want); got != tt.covered {
				t.Errorf("ScopesCover(%v, %v) = %v, want %v", tt.have, tt.want, got, tt.covered)
			}
		})
	}
}

func TestValidateScopes(t *testing.T) {
	good, err := access.ValidateScopes([]access.Scope{{Method: " get ", Path: " /api/datatargets/7/retrieve/ "}, {Path: "https://x.example.com/api/x/"}, {Path: "/a/*"}})
	if err != nil {
		t.Fatal(err)
	}
	if good[0].Method != "GET" || good[0].Path != "/api/datatargets/7/retrieve/" {
		t.Errorf("normalised scope = %+v", good[0])
	}
	for _, bad := range []access.Scope{
		{Path: ""},
		{Method: "FETCH", Path: "/a"},
		{Path: "/a/*/b"},
		{Path: "ftp://x.example.com/a"},
		{Path: "relative/path"},
	} {
		if _, err := access.ValidateScopes([]access.Scope{bad}); domain.ErrorCode(err) != domain.Validation {
			t.Errorf("ValidateScopes(%+v) = %v, want a validation error", bad, err)
		}
	}
}
