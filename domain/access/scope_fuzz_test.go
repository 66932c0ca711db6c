package access_test

import (
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/access"
)

// FuzzScopes checks scope matching and scope parsing on any method and
// path: whether a scope allows a request does not depend on the casing of
// either method, on the "/api" prefix or a trailing slash of the path, or
// on ValidateScopes' normal form of the scope; "/*" allows every path
// without dot or empty segments; and a token limited to a scope that
// ScopesCover says lies within another's is never allowed a request the
// other is refused.
func FuzzScopes(f *testing.F) {
	type seed struct{ method, path, haveMethod, havePath, reqMethod, reqPath string }
	for _, s := range []seed{
		{"", "/api/datatargets/7/retrieve/", "", "/datatargets/7/*", "get", "/api/datatargets/7/retrieve"},
		{"GET", "https://acme.example.com/api/datatargets/7/retrieve/?after=3", "get", "/datatargets/7*", "GET", "/datatargets/7/retrieve/"},
		{"post", "/datatargets/7*", "", "/datatargets/*", "POST", "/datatargets/70"},
		{"", "/*", "", "/*", "DELETE", "/datatargets/7/../8"},
		{"", "/customers/a%20b/", "", "/customers/*", "GET", "/customers/a b"},
		{"", "/datatargets/7/*", "", "/datatargets/7", "GET", "/datatargets/7%3F/retrieve"},
		{"PATCH", "/x", "", "/*", "patch", "/api//x"},
	} {
		f.Add(s.method, s.path, s.haveMethod, s.havePath, s.reqMethod, s.reqPath)
	}
	f.Fuzz(func(t *testing.T, method, path, haveMethod, havePath, reqMethod, reqPath string) {
		want := []access.Scope{{Method: method, Path: path}}
		allowed := access.ScopesAllow(want, reqMethod, reqPath)
		same := func(what string, scopes []access.Scope, m, p string) {
			t.Helper()
			if got := access.ScopesAllow(scopes, m, p); got != allowed {
				t.Fatalf("%v allows %s %q: %v, but %s (%v %s %q): %v", want, reqMethod, reqPath, allowed, what, scopes, m, p, got)
			}
		}
		if ascii(reqMethod) {
			same("with the method upper-cased", want, strings.ToUpper(reqMethod), reqPath)
			same("with the method lower-cased", want, strings.ToLower(reqMethod), reqPath)
		}
		if ascii(method) {
			same("with the scope's method lower-cased", []access.Scope{{Method: strings.ToLower(method), Path: path}}, reqMethod, reqPath)
		}
		if strings.HasPrefix(reqPath, "/") && reqPath != "/api" && !strings.HasPrefix(reqPath, "/api/") {
			same(`with "/api" before the path`, want, reqMethod, "/api"+reqPath)
		}
		if strings.HasPrefix(reqPath, "/") && !strings.HasSuffix(reqPath, "/") {
			same("with a trailing slash", want, reqMethod, reqPath+"/")
		}
		// Stored scopes are ValidateScopes' normal form, whose method is
		// trimmed: "  " there is no method, unlike in a scope as given.
		if valid, err := access.ValidateScopes(want); err == nil {
			if method == strings.TrimSpace(method) {
				same("in its normal form", valid, reqMethod, reqPath)
			}
			if again, err := access.ValidateScopes(valid); err != nil || again[0] != valid[0] {
				t.Fatalf("ValidateScopes(%v) = %v, which is valid as %v %v", want, valid, again, err)
			}
		}
		if got := access.ScopesAllow([]access.Scope{{Path: "/*"}}, reqMethod, reqPath); got != routable(reqPath) {
			t.Fatalf(`"/*" allows %q: %v`, reqPath, got)
		}
		have, errHave := access.ValidateScopes([]access.Scope{{Method: haveMethod, Path: havePath}})
		valid, errWant := access.ValidateScopes(want)
		if errHave == nil && errWant == nil && access.ScopesCover(have, valid) &&
			access.ScopesAllow(valid, reqMethod, reqPath) && !access.ScopesAllow(have, reqMethod, reqPath) {
			t.Fatalf("%v covers %v, but only the latter allows %s %q", have, valid, reqMethod, reqPath)
		}
	})
}

// routable reports whether a request path is one scopes compare: it
// starts with a slash and has no dot or empty segment.
func routable(p string) bool {
	if p == "/" {
		return true
	}
	if !strings.HasPrefix(p, "/") {
		return false
	}
	for _, seg := range strings.Split(strings.TrimSuffix(p[1:], "/"), "/") {
		if seg == "" || seg == "." || seg == ".." {
			return false
		}
	}
	return true
}

func ascii(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}
