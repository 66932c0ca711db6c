// Package console is Clientele's web console: server-rendered HTML pages
// for the people of a company (its users), mounted on the API server's
// engine under /console/ on every company's host. It is an adapter beside
// package api and holds no rule of its own: it reads through the API's
// read models and acts through the API's commands (api.Deps), and every
// action it offers is one the API offers too (an upload, a customer
// record that deletes or forgets). docs/console.md describes it.
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
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

// Prefix is where the console is served on every company's host.
const Prefix = "/console"

// DefaultSessionTTL is how long a log-in lasts.
const DefaultSessionTTL = 12 * time.Hour

// Config configures the console.
type Config struct {
	// SessionTTL is how long a log-in lasts, from the log-in; 0 is
	// DefaultSessionTTL.
	SessionTTL time.Duration
	// Now is the clock of sessions; nil is time.Now.
	Now func() time.Time
	// Logger logs what the access log does not say; nil discards.
	Logger *slog.Logger
}

// Users reads users; readmodels.Access implements it.
type Users interface {
	// User returns a user of the company, or a domain.NotFound error.
	User(ctx context.Context, companyID, id string) (access.User, error)
}

// ImportRuns lists and reads import runs; readmodels.Imports implements
// it.
type ImportRuns interface {
	api.ImportRuns
	// Runs returns a page of the company's runs, newest first, and the
	// cursor of the next page.
	Runs(ctx context.Context, companyID, before string, limit int) ([]readmodels.ImportRun, string, error)
}

// CustomerDocs reads one customer as retrieval shows it;
// readmodels.Customers implements it.
type CustomerDocs interface {
	// Doc returns the customer, or a domain.NotFound error when retrieval
	// does not show it.
	Doc(ctx context.Context, companyID, customerID string) (json.RawMessage, error)
}

// CustomerActivity reads a customer's newest events or sales, as
// retrieval shows them; readmodels.Events and readmodels.Sales implement
// it.
type CustomerActivity interface {
	OfCustomer(ctx context.Context, companyID, customerID string, limit int) ([]json.RawMessage, error)
}

// Deps are what the console serves.
type Deps struct {
	// API are the API server's dependencies: the console reads and acts
	// through the same read models and commands.
	API api.Deps
	// Users looks up the user of a session on each request.
	Users Users
	// Imports lists import runs (the Imports pages).
	Imports ImportRuns
	// Customer reads the customer of a customer's page, by its key.
	Customer CustomerDocs
	// Events and Sales read the events and sales beside it; nil shows
	// none.
	Events, Sales CustomerActivity
	// Pool holds the sessions (readmodels.ConsoleSessions).
	Pool *pgxpool.Pool

	// The dependencies of the later pages (overview, datatargets,
	// campaigns, access; newPhase2): nil takes the read model on Pool,
	// and a nil Projections leaves the lag off the overview.
	Tokens      AccessTokens
	Outlets     OutletStates
	ImportDays  ImportDays
	Projections ProjectionStatus
}

// Console serves the pages.
type Console struct {
	srv      *api.Server
	deps     api.Deps
	users    Users
	imports  ImportRuns
	customer CustomerDocs
	events   CustomerActivity
	sales    CustomerActivity
	sessions *readmodels.ConsoleSessions
	p2       phase2
	log      *slog.Logger
	pages    *pages
	// origin refuses state-changing requests from other origins.
	origin *http.CrossOriginProtection
}

// Mount serves the console on srv's engine: under Prefix, and "/" sends
// browsers there.
func Mount(srv *api.Server, cfg Config, deps Deps) (*Console, error) {
	if srv == nil || deps.Users == nil || deps.Imports == nil || deps.Pool == nil || deps.Customer == nil ||
		deps.API.Customers == nil || deps.API.CustomerHistory == nil {
		return nil, errors.New("console: Mount: server, Users, Imports, Pool, Customer, API.Customers and API.CustomerHistory are required")
	}
	if len(deps.API.Importers) > 0 && deps.API.Uploads == nil {
		return nil, errors.New("console: Mount: API.Uploads is nil but API.Importers is not empty")
	}
	if cfg.SessionTTL <= 0 {
		cfg.SessionTTL = DefaultSessionTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	c := &Console{
		srv: srv, deps: deps.API, users: deps.Users, imports: deps.Imports,
		customer: deps.Customer, events: deps.Events, sales: deps.Sales,
		sessions: newSessions(deps.Pool, cfg),
		p2:       newPhase2(deps),
		log:      cfg.Logger, pages: p,
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
	in(http.MethodGet, "/customers", false, c.handleCustomers)
	in(http.MethodGet, "/customers/:id", false, c.handleCustomer)
	in(http.MethodGet, "/customers/:id/:action", false, c.handleConfirmDestroy)
	in(http.MethodPost, "/customers/:id/:action", false, c.handleDestroy)
	in(http.MethodGet, "/imports", false, c.handleImports)
	in(http.MethodGet, "/imports/:id", false, c.handleImport)
	in(http.MethodGet, "/imports/:id/status", false, c.handleImportStatus)
	if len(c.deps.Importers) > 0 {
		in(http.MethodPost, "/uploads", true, c.handleUpload)
	}
	c.routesPhase2(in) // overview, datatargets, campaigns, access (overview.go)
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
	api.Identify(g, co, nil)
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
	api.Identify(g, co, &p)
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
	userID, err := c.sessions.Lookup(ctx, companyID, token)
	if domain.ErrorCode(err) == domain.NotFound {
		return access.User{}, errLoggedOut()
	}
	if err != nil {
		return access.User{}, err
	}
	u, err := c.users.User(ctx, companyID, userID)
	if domain.ErrorCode(err) == domain.NotFound {
		// The user was removed: the session ends with it.
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
