package console

import (
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
)

// logInView is what the log-in page shows.
type logInView struct {
	Email, Next, Error string
	// LoggedOut is true on the page a log-out leads to.
	LoggedOut bool
}

// maxFormBytes bounds the forms the console reads (log-in, confirmations):
// an email, a password of at most access.MaxPasswordLength and a code.
const maxFormBytes = 16 << 10

func (c *Console) handleLogInForm(g *gin.Context) error {
	if _, err := c.sessionUser(g.Request.Context(), companyOf(g).ID, sessionToken(g.Request)); err == nil {
		g.Redirect(http.StatusSeeOther, safeNext(g.Query("next")))
		return nil
	}
	c.render(g, http.StatusOK, "login", "Log in", "", logInView{Next: safeNext(g.Query("next")), LoggedOut: g.Query("logged_out") != ""})
	return nil
}

// handleLogIn checks the email, password and TOTP code with the API's
// password log-in, under its limits, and starts a session.
func (c *Console) handleLogIn(g *gin.Context) error {
	g.Request.Body = http.MaxBytesReader(g.Writer, g.Request.Body, maxFormBytes)
	if err := g.Request.ParseForm(); err != nil {
		return domain.Errorf(domain.Invalid, "the form could not be read: %v", err)
	}
	co := companyOf(g)
	email := strings.TrimSpace(g.Request.PostForm.Get("email"))
	next := safeNext(g.Request.PostForm.Get("next"))
	p, err := c.srv.LogInWithPassword(g, co.ID, email, g.Request.PostForm.Get("password"), g.Request.PostForm.Get("totp"))
	if err != nil {
		status, code, msg := c.srv.Problem(g, err)
		if status >= http.StatusInternalServerError {
			c.render(g, status, "error", http.StatusText(status), "", errorView{Status: status, Code: code, Message: msg})
			return nil
		}
		if status == http.StatusUnauthorized {
			// The API's message names its header; the form has a field.
			msg = "Invalid email, password or two-factor code."
		}
		c.render(g, status, "login", "Log in", "", logInView{Email: email, Next: next, Error: msg})
		return nil
	}
	// A session value the browser had before the log-in is never reused:
	// a value planted by someone else would otherwise be logged in too.
	if old := sessionToken(g.Request); old != "" {
		if err := c.app.Commands.Sessions.Revoke(g.Request.Context(), co.ID, old); err != nil {
			return err
		}
	}
	token, err := c.app.Commands.Sessions.Create(g.Request.Context(), co.ID, p.UserID, p.Roles)
	if err != nil {
		return err
	}
	setSessionCookie(g, token, c.app.Commands.Sessions.Lifetime())
	g.Redirect(http.StatusSeeOther, next)
	return nil
}

// handleLogOut ends the session for good (its row is deleted) and clears
// the cookie.
func (c *Console) handleLogOut(g *gin.Context) error {
	if token := sessionToken(g.Request); token != "" {
		if err := c.app.Commands.Sessions.Revoke(g.Request.Context(), companyOf(g).ID, token); err != nil {
			return err
		}
	}
	clearSessionCookie(g)
	g.Redirect(http.StatusSeeOther, Prefix+"/login?logged_out=1")
	return nil
}

// safeNext is where to go after the log-in: a console path, never
// another site ("//evil.example", "/\evil.example").
func safeNext(next string) string {
	if !strings.HasPrefix(next, Prefix+"/") || strings.ContainsAny(next, "\\\r\n") || strings.HasPrefix(next, "//") {
		return Prefix + "/"
	}
	return next
}

func (c *Console) handleHome(g *gin.Context) error {
	// The console's home is the overview (overview.go).
	return c.handleOverview(g)
}
