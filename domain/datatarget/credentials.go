package datatarget

import (
	"net/url"
	"strings"

	"github.com/clientele/clientele/domain/access"
)

// Credentials of outlets. An outlet's request may carry the receiver's
// credentials (an API key, a bearer token, a cookie, a signature), which
// anyone who reads them could use elsewhere. The signing secret and the
// header values are sealed at rest and shown to everyone in hint form
// (Credentials, sealed.go). The rest is masked when answering: the URL's
// password and query values to whoever may not access.MayReadCredentials
// (RequestFor), and, in the attempt log, the header values of the raw
// request to everyone (the worker stores it masked: MaskRawHeaders), its
// request line, the raw reply and the failure reason to others
// (LogEntry.For). Since a
// credential may hide under any header or query parameter name, what is
// masked is everything but what is known to be harmless: every header
// value but those of harmlessHeaders, every value of the URL's query,
// and the URL's password. What is sent is never changed. Texts the
// service writes itself about an attempt (its failure reason, its log
// lines) name the URL masked (MaskURL, MaskText) whoever reads them, so
// that no credential is kept where it is not needed.

// Masked replaces a credential shown to a principal that may not see it.
const Masked = "****"

// RequestFor is the outlet's request as p may see it: its header values
// in hint form (Hints), whoever p is; its URL as it is when
// access.MayReadCredentials(p), else masked (MaskURL). Its headers are a
// copy, never nil.
func (o Outlet) RequestFor(p access.Principal) Request {
	r := o.Request
	r.Headers = copyHeaders(o.Hints.Headers)
	if !access.MayReadCredentials(p) {
		r.URL = MaskURL(r.URL)
	}
	return r
}

// For is the attempt as p may see it: its raw request with its header
// values masked whoever p is (MaskRawHeaders: the worker stores it so,
// and this masks those stored before it did); its request line, raw
// reply and failure reason as they are when access.MayReadCredentials(p),
// else with their credentials masked (MaskRawHTTP, MaskText). Every answer and page that
// shows an attempt shows For's.
func (e LogEntry) For(p access.Principal) LogEntry {
	if access.MayReadCredentials(p) {
		e.HTTPRequest = MaskRawHeaders(e.HTTPRequest, nil)
		return e
	}
	e.FailReason = MaskText(e.FailReason)
	e.HTTPRequest, e.HTTPReply = MaskRawHTTP(e.HTTPRequest), MaskRawHTTP(e.HTTPReply)
	return e
}

// harmlessHeaders name, in lower case, the headers whose values are shown
// to everyone: they describe the content and the client, or frame the
// message (Transfer-Encoding and Connection, which outlets cannot set,
// only appear in raw texts), or identify a signed message without being
// its signature (webhook-signature is masked).
var harmlessHeaders = map[string]bool{
	"content-type": true, "content-length": true, "accept": true, "accept-encoding": true, "accept-language": true,
	"user-agent": true, "host": true, "transfer-encoding": true, "connection": true,
	"webhook-id": true, "webhook-timestamp": true,
}

// harmlessHeader reports whether the value of a header named name may be
// shown to everyone; every other header's value is masked.
func harmlessHeader(name string) bool {
	return harmlessHeaders[strings.ToLower(strings.TrimSpace(name))]
}

// MaskURL masks the password and every query value of an outlet's URL,
// keeping the names (?api_key=****). A URL that does not parse, which an
// outlet's cannot be, is masked whole.
func MaskURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return Masked
	}
	if u.User == nil && u.RawQuery == "" {
		return raw
	}
	u.RawQuery = maskQuery(u.RawQuery)
	return u.Redacted()
}

// maskQuery masks every value of a raw query, keeping the names: a=1&b
// becomes a=****&****, as a part without = may itself be a credential.
// The value runs to the next &, so a ; within it is masked with it.
func maskQuery(raw string) string {
	parts := strings.Split(raw, "&")
	for i, part := range parts {
		if part == "" {
			continue
		}
		if name, _, ok := strings.Cut(part, "="); ok {
			parts[i] = name + "=" + Masked
		} else {
			parts[i] = Masked
		}
	}
	return strings.Join(parts, "&")
}

// maskRequestLine masks the query values of a raw request line
// (METHOD target HTTP/1.1), which may be cut short; a status line is
// returned as it is. The target runs to the last " HTTP/", not to the
// first space: a URL stored before spaces were refused (URLProblem) was
// sent with its spaces, and the query after one is masked too.
func maskRequestLine(line string) string {
	method, rest, ok := strings.Cut(line, " ")
	if !ok || strings.HasPrefix(method, "HTTP/") {
		return line
	}
	target, version, hasVersion := rest, "", false
	if i := strings.LastIndex(rest, " HTTP/"); i >= 0 {
		target, version, hasVersion = rest[:i], rest[i+1:], true
	}
	path, query, hasQuery := strings.Cut(target, "?")
	if !hasQuery {
		return line
	}
	line = method + " " + path + "?" + maskQuery(query)
	if hasVersion {
		line += " " + version
	}
	return line
}

// MaskRawHTTP masks a raw HTTP/1.1 message as the attempt log keeps it:
// the query values of its request line, and the values of its header
// lines up to the first empty line but those of harmless headers (and
// the continuation lines of folded values); the body, which is the
// datatarget's data, is left alone. A message cut short (the log caps
// its size) keeps the lines it has masked; a name cut before its colon
// shows no value.
func MaskRawHTTP(raw string) string { return maskRawHTTP(raw, true, nil) }

// MaskRawHeaders masks the header values of a raw HTTP/1.1 message as
// MaskRawHTTP does, and also those of the headers an outlet sets
// (headers, which may be nil), harmless as their names may be: every one
// of them is the outlet's credential (Credentials). Its request line is
// left as it is. The worker stores an attempt's request so, and admins
// read it so.
func MaskRawHeaders(raw string, headers map[string]string) string {
	configured := make(map[string]bool, len(headers))
	for name := range headers {
		configured[strings.ToLower(name)] = true
	}
	return maskRawHTTP(raw, false, configured)
}

// maskRawHTTP is MaskRawHTTP, of the request line too when maskLine, that
// masks the headers named in configured (lower case) whatever their name.
func maskRawHTTP(raw string, maskLine bool, configured map[string]bool) string {
	var b strings.Builder
	b.Grow(len(raw))
	for n := 0; raw != ""; n++ {
		line, rest, more := strings.Cut(raw, "\n")
		text := strings.TrimSuffix(line, "\r")
		if n > 0 && text == "" {
			b.WriteString(raw) // the end of the headers, and the body
			break
		}
		switch name, _, ok := strings.Cut(text, ":"); {
		case n == 0:
			if maskLine {
				line = maskRequestLine(text) + line[len(text):]
			}
		case text[0] == ' ' || text[0] == '\t':
			// The continuation of a folded header's value.
			line = text[:1] + Masked + line[len(text):]
		case ok && (!harmlessHeader(name) || configured[strings.ToLower(strings.TrimSpace(name))]):
			line = name + ": " + Masked + line[len(text):]
		}
		b.WriteString(line)
		if more {
			b.WriteByte('\n')
		}
		raw = rest
	}
	return b.String()
}

// MaskText masks every http or https URL in a text written about a
// request (a failure reason, an error): its password and query values
// (MaskURL). A URL runs to the next space, control character or quote;
// one that opens right after a double quote, as Go quotes it in errors
// (Post "http://...": ...), runs to the closing quote, escaped quotes
// included, so that no part of its query is left out.
func MaskText(text string) string {
	var b strings.Builder
	for {
		i := indexURL(text)
		if i < 0 {
			b.WriteString(text)
			return b.String()
		}
		b.WriteString(text[:i])
		n := urlEnd(text[i:], i > 0 && text[i-1] == '"')
		b.WriteString(maskTextURL(text[i : i+n]))
		text = text[i+n:]
	}
}

// indexURL is the index of the first "http://" or "https://" of text,
// in any case, or -1.
func indexURL(text string) int {
	lower := strings.ToLower(text)
	i := strings.Index(lower, "http://")
	if j := strings.Index(lower, "https://"); j >= 0 && (i < 0 || j < i) {
		i = j
	}
	return i
}

// urlEnd is the length of the URL text starts with (see MaskText).
func urlEnd(text string, quoted bool) int {
	for i := 0; i < len(text); i++ {
		c := text[i]
		switch {
		case quoted && c == '\\' && i+1 < len(text):
			i++ // an escaped character, \" included
		case c == '"':
			return i
		case !quoted && (c <= ' ' || c == 0x7f || c == '\'' || c == '<' || c == '>'):
			return i
		}
	}
	return len(text)
}

// maskTextURL masks one URL found in a text, which may have been escaped
// (Go's %q) and so not parse: its query values then, and everything
// between its scheme and its host (the user information).
func maskTextURL(u string) string {
	if masked := MaskURL(u); masked != Masked {
		return masked
	}
	scheme, rest, _ := strings.Cut(u, "://")
	if at := strings.LastIndex(rest, "@"); at >= 0 && !strings.ContainsAny(rest[:at], "/?#") {
		rest = Masked + rest[at:]
	}
	if path, query, ok := strings.Cut(rest, "?"); ok {
		rest = path + "?" + maskQuery(query)
	}
	return scheme + "://" + rest
}
