package datatarget

import (
	"encoding/base64"
	"fmt"
	"net/textproto"
	"net/url"
	"strings"
	"unicode/utf8"
)

// URLProblem returns why raw is not a usable receiver URL, or "": the
// rule of a new outlet's URL, which the delivery also asks of outlets
// created before it refused what it refuses now. Where the URL points is
// checked when it is dialled (delivery), since a name may resolve
// elsewhere by then.
func URLProblem(raw string) string {
	if raw == "" {
		return "required"
	}
	if len(raw) > 2048 {
		return "too long"
	}
	if at, c, ok := invalidURLChar(raw); ok {
		return fmt.Sprintf("must be a valid URL: the character %q at byte %d is not allowed in one; percent-encode it (a space is %%20)", c, at)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Hostname() == "" {
		return "must be an absolute http or https URL"
	}
	return ""
}

// invalidURLChar finds the first character raw may not hold as a URL
// (RFC 3986): anything but letters, digits, -._~ and the delimiters
// :/?#[]@!$&'()*+,;=, and a % that does not start an escape (%XX). Go's
// parser lets such characters through and its client writes them as they
// are: a space in the query would cut the request line short, sending
// the receiver a broken request and the masking of the attempt log a
// query value it takes for the protocol version.
func invalidURLChar(raw string) (at int, c rune, ok bool) {
	for i, r := range raw {
		switch {
		case r < utf8.RuneSelf && urlChars[r]:
		case r == '%' && i+2 < len(raw) && isHex(raw[i+1]) && isHex(raw[i+2]):
		default:
			return i, r, true
		}
	}
	return 0, 0, false
}

// urlChars are the ASCII characters a URL may hold as they are (RFC 3986
// unreserved and reserved).
var urlChars = func() (t [utf8.RuneSelf]bool) {
	for _, c := range "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~:/?#[]@!$&'()*+,;=" {
		t[c] = true
	}
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// reservedHeaders are set by the delivery itself: framing, the host, and
// the signature headers.
var reservedHeaders = map[string]bool{
	"host": true, "content-length": true, "transfer-encoding": true, "connection": true, "keep-alive": true,
	"upgrade": true, "te": true, "trailer": true, "proxy-connection": true, "proxy-authorization": true,
	"webhook-id": true, "webhook-timestamp": true, "webhook-signature": true,
}

// checkHeaders returns the problems of an outlet's headers, by name. Two
// names that differ only in case are one HTTP header, whose value would
// be either, by map order: both are refused.
func checkHeaders(headers map[string]string) map[string]string {
	problems := map[string]string{}
	byKey := make(map[string]string, len(headers))
	for name, value := range headers {
		if reason := checkHeader(name, value); reason != "" {
			problems[name] = reason
			continue
		}
		key := textproto.CanonicalMIMEHeaderKey(name)
		if other, ok := byKey[key]; ok {
			const reason = "the same header as another, in another case"
			problems[name], problems[other] = reason, reason
		}
		byKey[key] = name
	}
	return problems
}

func checkHeader(name, value string) string {
	if name == "" || len(name) > 256 {
		return "bad header name"
	}
	for _, c := range []byte(name) {
		if !isTokenChar(c) {
			return "bad header name"
		}
	}
	if reservedHeaders[strings.ToLower(name)] {
		return "set by the service; not configurable"
	}
	if len(value) > 8192 || strings.ContainsFunc(value, isControl) {
		return "bad header value"
	}
	return ""
}

// isControl reports a control character other than tab: net/http refuses
// to send a header value holding one (RFC 9110 field-value), so an outlet
// with one could never deliver.
func isControl(r rune) bool { return r < ' ' && r != '\t' || r == 0x7f }

// isTokenChar reports whether c may appear in an HTTP header name (RFC 9110
// token).
func isTokenChar(c byte) bool {
	return c > ' ' && c < 0x7f && !strings.ContainsRune(`"(),/:;<=>?@[\]{}`, rune(c))
}

// SecretPrefix starts a Standard Webhooks signing secret.

// SecretKey returns the key bytes of a "whsec_<base64>" secret.
func SecretKey(secret string) ([]byte, error) {
	return base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, SecretPrefix))
}

func validSecret(s string) bool {
	if !strings.HasPrefix(s, SecretPrefix) {
		return false
	}
	key, err := SecretKey(s)
	return err == nil && len(key) >= 24 && len(key) <= 64
}
