// Package console is Clientele's web console: server-rendered HTML pages
// for the people of a company (its users), mounted on the API server's
// engine under /console/ on every company's host. It is an adapter beside
// package api and holds no rule of its own: it reads and acts through the
// same application value as the API (app.Application), asks the read
// rules of domain/access, and every action it offers is one the API
// offers too (an upload, a customer record that deletes or forgets).
// docs/console.md describes it.
//
// Security in short (docs/console.md has the reasons): a log-in is a
// row of console_sessions named by a random value in an HttpOnly,
// SameSite=Strict, host-only cookie (Secure over TLS) and checked within
// the company of the host; every state-changing request must come from
// the console's own origin (net/http.CrossOriginProtection); pages carry
// a Content-Security-Policy that allows no inline script and nothing
// from another origin; log-ins share the API's limits of failed log-ins.
package console

import (
	"context"
	"errors"
	"log/slog"
	"net/http"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
)

// Prefix is where the console is served on every company's host.
const Prefix = "/console"

// Config configures the console.
type Config struct {
	// Logger logs what the access log does not say; nil discards.
	Logger *slog.Logger
}

// Console serves the pages.
type Console struct {
	srv   Host
	app   app.Application
	log   *slog.Logger
	pages *pages
	// origin refuses state-changing requests from other origins.
	origin *http.CrossOriginProtection
}

// Mount serves the console on srv's engine: under Prefix, and "/" sends
// browsers there. It reads and acts through a, as srv does; the
// datatargets and campaigns pages are served when a has their queries.
func Mount(srv Host, cfg Config, a app.Application) (*Console, error) {
	q := a.Queries
	if srv == nil || q.Access == nil || q.Imports == nil || a.Commands.Sessions == nil || q.Customers == nil ||
		q.CustomerHistory == nil {
		return nil, errors.New("console: Mount: server, Queries.Access, Queries.Imports, Commands.Sessions, Queries.Customers and Queries.CustomerHistory are required")
	}
	if len(a.Commands.Importers) > 0 && a.Commands.Uploads == nil {
		return nil, errors.New("console: Mount: Commands.Uploads is nil but Commands.Importers is not empty")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{
		srv: srv, app: a, log: cfg.Logger, pages: p,
		origin: http.NewCrossOriginProtection(),
	}
	c.routes()
	return c, nil
}

func (c *Console) routes() {
	c.srv.Handle(http.MethodGet, "/", false, func(g *gin.Context) {
		g.Redirect(http.StatusSeeOther, Prefix+"/")
	})
	c.srv.Handle(http.MethodGet, Prefix, false, func(g *gin.Context) {
		g.Redirect(http.StatusSeeOther, Prefix+"/")
	})
	c.srv.Handle(http.MethodGet, Prefix+"/static/:file", false, c.headers, c.handleStatic)

	open := func(method, path string, h handler) {
		c.srv.Handle(method, Prefix+path, false, c.headers, c.company, c.sameOrigin, c.adapt(h))
	}
	open(http.MethodGet, "/login", c.handleLogInForm)
	open(http.MethodPost, "/login", c.handleLogIn)
	open(http.MethodPost, "/logout", c.handleLogOut)

	in := func(method, path string, upload bool, h handler) {
		c.srv.Handle(method, Prefix+path, upload, c.headers, c.company, c.sameOrigin, c.session, c.adapt(h))
	}
	in(http.MethodGet, "/", false, c.handleHome)
	in(http.MethodGet, "/operations", false, c.handleOperations)
	in(http.MethodGet, "/customers", false, c.handleCustomers)
	in(http.MethodGet, "/customers/:id", false, c.handleCustomer)
	in(http.MethodGet, "/customers/:id/document", false, c.handleCustomerDocument)
	in(http.MethodGet, "/customers/:id/:action", false, c.handleConfirmDestroy)
	in(http.MethodPost, "/customers/:id/:action", false, c.handleDestroy)
	in(http.MethodGet, "/imports", false, c.handleImports)
	in(http.MethodGet, "/imports/:id", false, c.handleImport)
	in(http.MethodGet, "/imports/:id/status", false, c.handleImportStatus)
	if len(c.app.Commands.Importers) > 0 {
		in(http.MethodPost, "/uploads", true, c.handleUpload)
	}
	if c.app.Queries.Datatargets != nil {
		in(http.MethodGet, "/datatargets", false, c.handleDatatargets)
		in(http.MethodGet, "/datatargets/:id", false, c.handleDatatarget)
		in(http.MethodGet, "/datatargets/:id/outlets/:outlet", false, c.handleOutlet)
		in(http.MethodGet, "/datatargets/:id/outlets/:outlet/log/:entry", false, c.handleAttempt)
		in(http.MethodGet, "/datatargets/:id/messages/:number", false, c.handleMessage)
		in(http.MethodGet, "/datatargets/:id/outlets/:outlet/content", false, c.handleOutletContent)
		in(http.MethodGet, "/datatargets/:id/outlets/:outlet/log/:entry/:part", false, c.handleAttemptRaw)
		in(http.MethodGet, "/datatargets/:id/outlets/:outlet/control/:action", false, c.handleConfirmOutletAction)
		in(http.MethodPost, "/datatargets/:id/outlets/:outlet/control/:action", false, c.handleOutletAction)
	}
	if c.app.Queries.Campaigns != nil {
		in(http.MethodGet, "/campaigns", false, c.handleCampaigns)
		in(http.MethodGet, "/campaigns/:key", false, c.handleCampaign)
	}
	if c.app.Queries.Segments != nil {
		in(http.MethodGet, "/segments", false, c.handleSegments)
		in(http.MethodGet, "/segments/:key", false, c.handleSegment)
		in(http.MethodGet, "/segments/:key/rule", false, c.handleSegmentRule)
		// The builder is not under /segments/, whose names are keys.
		in(http.MethodGet, "/new-segment", false, c.handleBuilder)
		in(http.MethodPost, "/new-segment", false, c.handleBuild)
		in(http.MethodPost, "/new-segment/count", false, c.handleBuilderCount)
	}
	in(http.MethodGet, "/access", false, c.handleAccess)
	in(http.MethodPost, "/access/tokens", false, c.handleCreateToken)
	in(http.MethodPost, "/access/tokens/:token/revoke", false, c.handleRevokeToken)
	in(http.MethodPost, "/access/integrations", false, c.handleCreateIntegration)
	if c.app.Queries.SFTPKeys != nil {
		in(http.MethodPost, "/access/sftp-keys", false, c.handleAddSFTPKey)
		in(http.MethodPost, "/access/sftp-keys/:key/remove", false, c.handleRemoveSFTPKey)
	}
}

// handler is a page handler that returns its error instead of writing
// it; adapt renders it as an error page.
type handler func(g *gin.Context) error

func (c *Console) adapt(h handler) gin.HandlerFunc {
	return func(g *gin.Context) {
		if err := h(g); err != nil {
			c.fail(g, err)
		}
	}
}

// Keys of what the middleware leaves in the gin context.
const (
	keyCompany = "console.company"
	keyUser    = "console.user"
	keyToken   = "console.session"
)

// contentSecurityPolicy lets a page load only the console's own script,
// style and images, post forms and make requests only to its own origin,
// and be framed by nobody. No inline script or style is allowed
// anywhere: charts are SVG elements styled by the stylesheet.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"

// headers sets the security headers of every console answer.
func (c *Console) headers(g *gin.Context) {
	h := g.Writer.Header()
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	g.Next()
}

// company resolves the company of the host, as the API does.
func (c *Console) company(g *gin.Context) {
	co, err := c.srv.CompanyByHost(g)
	if err != nil {
		c.fail(g, err)
		g.Abort()
		return
	}
	g.Set(keyCompany, co)
	c.srv.Identify(g, co, nil)
	g.Next()
}

// sameOrigin refuses a state-changing request (POST) that a browser says
// comes from another origin (Sec-Fetch-Site, else Origin against Host):
// the CSRF protection of every form (docs/console.md, "CSRF").
func (c *Console) sameOrigin(g *gin.Context) {
	if err := c.origin.Check(g.Request); err != nil {
		c.fail(g, domain.Errorf(domain.Forbidden, "this form was sent from another site; open the console at its own address and send it from there"))
		g.Abort()
		return
	}
	g.Next()
}

// session authenticates the request by its session cookie. A request
// without a valid session is sent to the log-in page (GET) or refused.
func (c *Console) session(g *gin.Context) {
	co := companyOf(g)
	token := sessionToken(g.Request)
	u, err := c.sessionUser(g.Request.Context(), co.ID, token)
	if err != nil {
		if domain.ErrorCode(err) != domain.Unauthorized {
			c.fail(g, err)
			g.Abort()
			return
		}
		if token != "" {
			clearSessionCookie(g)
		}
		if g.Request.Method == http.MethodGet && !wantsJSON(g.Request) {
			g.Redirect(http.StatusSeeOther, Prefix+"/login?next="+urlQueryEscape(g.Request.URL.RequestURI()))
			g.Abort()
			return
		}
		c.fail(g, err)
		g.Abort()
		return
	}
	p := u.Principal()
	c.srv.Identify(g, co, &p)
	// A user's pages count against the same limit of requests as the
	// API's calls of any principal.
	if err := c.srv.AllowRequest(p); err != nil {
		c.fail(g, err)
		g.Abort()
		return
	}
	g.Set(keyUser, u)
	g.Set(keyToken, token)
	g.Next()
}

// sessionUser is the user of the session token within the company, or a
// domain.Unauthorized error.
func (c *Console) sessionUser(ctx context.Context, companyID, token string) (access.User, error) {
	if token == "" {
		return access.User{}, errLoggedOut()
	}
	// A session ends with its user's removal, and when they lose a role
	// they had at its log-in (Unauthorized: its message says so).
	u, err := c.app.Commands.Sessions.Lookup(ctx, companyID, token)
	if domain.ErrorCode(err) == domain.NotFound {
		return access.User{}, errLoggedOut()
	}
	return u, err
}

func errLoggedOut() error {
	return domain.Errorf(domain.Unauthorized, "you are not logged in, or your session has ended; log in again")
}

func companyOf(g *gin.Context) company.Company {
	co, _ := g.Get(keyCompany)
	out, _ := co.(company.Company)
	return out
}

func userOf(g *gin.Context) access.User {
	u, _ := g.Get(keyUser)
	out, _ := u.(access.User)
	return out
}

// principalOf is who acts for the request: the session's user, with its
// roles as they are now.
func principalOf(g *gin.Context) access.Principal { return userOf(g).Principal() }
