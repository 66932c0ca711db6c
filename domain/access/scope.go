package access

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/clientele/clientele/domain"
)

// Scope matching.
//
// A scope allows a request when its method, if any, equals the request's
// method (case-insensitively) and its path equals the request's path. Both
// paths are normalised first: a scope path may be a full URL (only its path
// counts: scheme, host, query and fragment are dropped), the "/api" prefix
// is optional and a trailing slash is ignored, so
// "https://acme.example.com/api/datatargets/7/retrieve/?after=3" and
// "/datatargets/7/retrieve" are the same scope.
//
// Our addition: a scope path ending in "*" is a prefix. "/datatargets/7/*"
// allows "/datatargets/7" and every path below it; a "*" that does not
// follow a slash is a plain string prefix ("/datatargets/7*" also allows
// "/datatargets/70"). "/*" allows every path.
//
// The request side is the path the router matched, taken as it is: its
// query was never part of it, so a "?" or "#" in it (a %3F or %23 sent in
// the path) is an ordinary character, not the end of the path. Cutting it
// there made "/datatargets/7%3F/retrieve" pass as "/datatargets/7" while
// the router served the retrieve route. A scope path is written like a
// URL: its query and fragment are dropped, and its percent-escapes are
// decoded, since the router matches decoded paths too.
//
// A request path with "." or ".." segments, or with an empty segment
// ("//"), is never allowed by a scope: the comparison is on the path as
// routed, so such paths are refused rather than resolved.

// ScopesAllow reports whether a token with scopes may make a request with
// method and path: the path the router matched, decoded, without query
// (see the package's scope matching). An empty list allows everything.
func ScopesAllow(scopes []Scope, method, path string) bool {
	if len(scopes) == 0 {
		return true
	}
	p, ok := requestPath(path)
	if !ok {
		return false
	}
	for _, s := range scopes {
		if s.Method != "" && !strings.EqualFold(s.Method, method) {
			continue
		}
		if matchPath(s.Path, p) {
			return true
		}
	}
	return false
}

// requestPath normalises a routed request path: the "/api" prefix and the
// trailing slash made uniform, nothing cut. ok is false for a path that
// does not start with a slash or has a dot or empty segment.
func requestPath(p string) (string, bool) {
	if !strings.HasPrefix(p, "/") {
		return "", false
	}
	if p != "/" {
		for _, seg := range strings.Split(strings.TrimSuffix(p, "/")[1:], "/") {
			if seg == "" || seg == "." || seg == ".." {
				return "", false
			}
		}
	}
	return trimPath(p), true
}

// matchPath reports whether the scope path allows the normalised request
// path p.
func matchPath(scopePath, p string) bool {
	base, prefix, segment := splitScopePath(scopePath)
	switch {
	case !prefix:
		return p == base
	case segment:
		return base == "/" || p == base || strings.HasPrefix(p, base+"/")
	default:
		return strings.HasPrefix(p, base)
	}
}

// splitScopePath normalises a scope path. prefix reports a trailing "*";
// segment reports that the "*" followed a slash (a subtree, not a string
// prefix).
func splitScopePath(s string) (base string, prefix, segment bool) {
	raw := pathOf(s)
	if strings.HasSuffix(raw, "*") {
		raw = strings.TrimSuffix(raw, "*")
		prefix = true
		segment = raw == "" || strings.HasSuffix(raw, "/")
	}
	return trimPath(unescape(raw)), prefix, segment
}

// pathOf returns the path of a scope path that may be a full URL, without
// query or fragment, still escaped.
func pathOf(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.Index(s, "://"); i > 0 && !strings.Contains(s[:i], "/") {
		if u, err := url.Parse(s); err == nil {
			return u.EscapedPath()
		}
	}
	if i := strings.IndexAny(s, "?#"); i >= 0 {
		s = s[:i]
	}
	return s
}

// unescape decodes the percent-escapes of a scope path; one that is not
// validly escaped is kept as written.
func unescape(p string) string {
	if u, err := url.PathUnescape(p); err == nil {
		return u
	}
	return p
}

// NormalizePath returns a path (or full URL) in the form scopes are
// compared in: no scheme, host, query or fragment, no "/api" prefix, a
// leading slash and no trailing slash ("/" for the root).
func NormalizePath(p string) string {
	return trimPath(unescape(pathOf(p)))
}

// trimPath makes the "/api" prefix and the trailing slash of a path
// without query uniform.
func trimPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		p = "/" + p
	}
	if p == "/api" || strings.HasPrefix(p, "/api/") {
		p = p[len("/api"):]
	}
	for len(p) > 1 && strings.HasSuffix(p, "/") {
		p = p[:len(p)-1]
	}
	if p == "" {
		p = "/"
	}
	return p
}

var httpMethods = map[string]bool{
	"GET": true, "HEAD": true, "POST": true, "PUT": true, "PATCH": true,
	"DELETE": true, "OPTIONS": true,
}

// ValidateScopes checks scopes given for a new token and returns them with
// methods upper-cased and whitespace trimmed. Paths are kept as given, so
// the token shows what its creator wrote.
func ValidateScopes(scopes []Scope) ([]Scope, error) {
	out := make([]Scope, 0, len(scopes))
	var problems domain.Problems
	for i, s := range scopes {
		s.Method = strings.ToUpper(strings.TrimSpace(s.Method))
		s.Path = strings.TrimSpace(s.Path)
		field := "scopes." + strconv.Itoa(i)
		if s.Method != "" && !httpMethods[s.Method] {
			problems.Add(field+".method", "not an HTTP method: "+s.Method)
		}
		switch {
		case s.Path == "":
			problems.Add(field+".path", "required")
		case strings.Contains(strings.TrimSuffix(s.Path, "*"), "*"):
			problems.Add(field+".path", `"*" is allowed only at the end`)
		case strings.Contains(s.Path, "://"):
			u, err := url.Parse(s.Path)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				problems.Add(field+".path", "not a path or an http(s) URL")
			}
		case !strings.HasPrefix(s.Path, "/"):
			problems.Add(field+".path", `must start with "/" or be an http(s) URL`)
		}
		out = append(out, s)
	}
	if err := problems.Err(domain.Validation, "invalid scopes"); err != nil {
		return nil, err
	}
	return out, nil
}

// ScopesCover reports whether a principal limited to have may hand out a
// token limited to want: every wanted scope must lie within one of have.
// Without limits (empty have) everything is covered; an unlimited want is
// covered only by an unlimited have.
func ScopesCover(have, want []Scope) bool {
	if len(have) == 0 {
		return true
	}
	if len(want) == 0 {
		return false
	}
	for _, w := range want {
		if !scopeCovered(have, w) {
			return false
		}
	}
	return true
}

func scopeCovered(have []Scope, w Scope) bool {
	wBase, wPrefix, wSegment := splitScopePath(w.Path)
	for _, h := range have {
		if h.Method != "" && !strings.EqualFold(h.Method, w.Method) {
			continue
		}
		hBase, hPrefix, hSegment := splitScopePath(h.Path)
		switch {
		case !hPrefix:
			if !wPrefix && wBase == hBase {
				return true
			}
		case hSegment:
			if hBase == "/" || wBase == hBase && (wSegment || !wPrefix) || strings.HasPrefix(wBase, hBase+"/") {
				return true
			}
		default:
			// Whatever w allows starts with wBase, so with hBase too.
			if strings.HasPrefix(wBase, hBase) {
				return true
			}
		}
	}
	return false
}
