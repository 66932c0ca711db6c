package console

import (
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain/access"
)

// A session is a row of console_sessions, named by a random value that
// only the browser's cookie holds. The sessions themselves (their table,
// values, expiry and bound per user) are the application's
// (app.Commands.Sessions, authn.ConsoleSessions), so that the console
// runs no SQL of its own; this file is their cookie.

// sessionCookie names the session cookie. It is host-only (no Domain), so
// the browser sends it to the company's host alone, and its path is the
// console's, so the API never sees it.
const sessionCookie = "clientele_console"

// sessionToken is the session value the request carries, "" for none.
func sessionToken(r *http.Request) string {
	ck, err := r.Cookie(sessionCookie)
	if err != nil {
		return ""
	}
	// A value the console made is 43 base64url characters; anything else
	// is no session, and is not looked up.
	if len(ck.Value) != access.ConsoleSessionLength {
		return ""
	}
	return ck.Value
}

// secure reports whether the request came over TLS, to this server or to
// the proxy in front of it: the cookie is then marked Secure. Believing
// X-Forwarded-Proto from anyone is harmless: it can only make the
// client's own cookie stricter.
func secure(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

func setSessionCookie(g *gin.Context, token string, ttl time.Duration) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name: sessionCookie, Value: token, Path: Prefix + "/", MaxAge: int(ttl.Seconds()),
		HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
}

func clearSessionCookie(g *gin.Context) {
	http.SetCookie(g.Writer, &http.Cookie{
		Name: sessionCookie, Value: "", Path: Prefix + "/", MaxAge: -1,
		HttpOnly: true, Secure: secure(g.Request), SameSite: http.SameSiteStrictMode,
	})
}

func urlQueryEscape(s string) string { return url.QueryEscape(s) }
