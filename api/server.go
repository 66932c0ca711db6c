// Package api is Clientele's HTTP edge. It resolves the company from the
// request host, authenticates the caller, enforces token scopes and rate
// limits, decodes JSON, and maps errors to the one error body
// {"error": {"code", "message", "details"}}. It translates HTTP into the
// application's commands and queries (app.Application) and decides
// nothing itself: role checks and validation live in the commands and
// the domain, read rules in domain/access (a route that needs a role
// asks the domain's rule before it reads the body: requires).
//
// Every API path is served under four spellings: with and without the /api
// prefix and with and without the trailing slash (docs/openapi.yaml lists
// the canonical /api/.../ spelling).
package api

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/segment"
)

// validate reports what the API needs of the application and is
// missing.
func validate(a app.Application) error {
	var errs []error
	if a.Queries.Companies == nil {
		errs = append(errs, errors.New("api: Queries.Companies is nil"))
	}
	if a.Queries.Access == nil {
		errs = append(errs, errors.New("api: Queries.Access is nil"))
	}
	if a.Commands.Authenticator == nil {
		errs = append(errs, errors.New("api: Commands.Authenticator is nil"))
	}
	if a.Queries.Customers == nil || a.Queries.CustomerHistory == nil {
		errs = append(errs, errors.New("api: Queries.Customers or Queries.CustomerHistory is nil"))
	}
	if a.Queries.Datatargets == nil {
		errs = append(errs, errors.New("api: Queries.Datatargets is nil"))
	}
	if len(a.Commands.Importers) > 0 && a.Commands.Uploads == nil {
		errs = append(errs, errors.New("api: Commands.Uploads is nil but Commands.Importers is not empty"))
	}
	return errors.Join(errs...)
}

// Server is the HTTP API. It is an http.Handler.
type Server struct {
	cfg        Config
	engine     *gin.Engine
	log        *slog.Logger
	metrics    *metrics
	limiter    *limiter // requests per principal
	logins     *limiter // failed log-ins per company and email
	loginAddrs *limiter // failed log-ins per client address
	passwords  *gate    // password checks at once
	large      *largeBodies
	docsJSON   []byte

	companies app.Companies
	access    app.Access
	authn     app.Authenticator
	commands  commands.Commands
	ready     func(ctx context.Context) error
	stalled   func(ctx context.Context) (map[string]int, error)

	datatargets app.Datatargets
	campaigns   app.Campaigns
	segments    app.Segments

	importers    map[importing.Entity]imports.Importer
	uploads      app.Uploads
	imports      app.ImportRuns
	dataQueries  app.DataQueries
	uploadRoutes map[string]bool // paths (gin syntax) limited by MaxUploadBytes
	sftpKeys     app.SFTPKeys

	customers       app.Customers
	customerHistory app.CustomerHistory
	customerAsOf    app.CustomerAsOf
	changes         app.Changes
	shops           app.Retriever
	products        app.Retriever
	events          app.Retriever
	sales           app.Retriever
}

// NewServer builds the server and its routes on the application a: the
// routes of an optional query or command are served when a has it. It
// fails when the configuration or the application is incomplete or
// invalid.
func NewServer(cfg Config, a app.Application) (*Server, error) {
	if err := errors.Join(cfg.Validate(), validate(a)); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	m, err := newMetrics(cfg.Registerer, cfg.Gatherer, cfg.Logger)
	if err != nil {
		return nil, err
	}
	docsJSON, err := openAPIJSON()
	if err != nil {
		return nil, err
	}
	ready := a.Queries.Ready
	if ready == nil {
		ready = func(context.Context) error { return nil }
	}
	// gin's debug mode prints every route to stdout; the access log and
	// docs/openapi.yaml already say all of it.
	if gin.IsDebugging() {
		gin.SetMode(gin.ReleaseMode)
	}
	s := &Server{
		cfg:        cfg,
		log:        cfg.Logger,
		metrics:    m,
		limiter:    newLimiter(cfg.RateLimit, cfg.RateBurst, cfg.Now),
		logins:     newLoginLimiter(loginBurst, loginEvery, cfg.Now),
		loginAddrs: newLoginLimiter(addrBurst, addrEvery, cfg.Now),
		passwords:  newGate(cfg.PasswordChecks, cfg.PasswordCheckWait),
		large:      newLargeBodies(),
		docsJSON:   docsJSON,
		companies:  a.Queries.Companies,
		access:     a.Queries.Access,
		authn:      a.Commands.Authenticator,
		commands:   a.Commands.Commands,
		ready:      ready,
		stalled:    a.Queries.Stalled,

		datatargets: a.Queries.Datatargets,
		campaigns:   a.Queries.Campaigns,
		segments:    a.Queries.Segments,

		importers:    a.Commands.Importers,
		uploads:      a.Commands.Uploads,
		dataQueries:  a.Commands.DataQueries,
		imports:      a.Queries.Imports,
		uploadRoutes: map[string]bool{},
		sftpKeys:     a.Queries.SFTPKeys,

		customers:       a.Queries.Customers,
		customerHistory: a.Queries.CustomerHistory,
		customerAsOf:    a.Queries.CustomerAsOf,
		changes:         a.Queries.Changes,
		shops:           a.Queries.Shops,
		products:        a.Queries.Products,
	}
	// A nil Activity is a nil Retriever, not one holding a nil pointer.
	if a.Queries.Events != nil {
		s.events = a.Queries.Events
	}
	if a.Queries.Sales != nil {
		s.sales = a.Queries.Sales
	}
	e := gin.New()
	// Both spellings of every path are registered, so a redirect would only
	// turn a POST into a GET in some clients.
	e.RedirectTrailingSlash = false
	e.RedirectFixedPath = false
	// Routes match the decoded path as sent (gin's defaults, set here
	// because scope checks depend on them): no raw path, no cleaning of
	// "//". A path routes as written or not at all, and authorize checks
	// the path of the route it matched (routedPath).
	e.UseRawPath = false
	e.UseEscapedPath = false
	e.RemoveExtraSlash = false
	e.HandleMethodNotAllowed = true
	// gin believes X-Forwarded-For from any peer unless told otherwise;
	// the client address counts failed log-ins, so only the configured
	// proxies are believed (none by default: a nil list trusts none).
	if err := e.SetTrustedProxies(cfg.TrustedProxies); err != nil {
		return nil, fmt.Errorf("api: TrustedProxies: %w", err)
	}
	e.Use(s.requestID, s.observe, s.recoverer, s.limitBody, s.deadlines)
	e.NoRoute(s.adapt(s.handleNoRoute))
	e.NoMethod(s.adapt(s.handleNoMethod))
	s.engine = e
	s.routes()
	return s, nil
}

// ServeHTTP serves one request.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.engine.ServeHTTP(w, r) }

// HTTPServer returns an http.Server serving s, whose timeouts keep slow
// and idle clients from holding connections for ever: headers must
// arrive within Config.ReadHeaderTimeout and a kept-alive connection is
// closed after Config.IdleTimeout without a request. Its ReadTimeout and
// WriteTimeout stay 0, as they would cut uploads short: s sets
// per-request deadlines instead (deadlines).
func (s *Server) HTTPServer() *http.Server {
	return &http.Server{
		Handler:           s,
		ReadHeaderTimeout: s.cfg.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.IdleTimeout,
	}
}

// deadlines sets the connection deadlines of one request
// (Config.ReadTimeout, Config.WriteTimeout). An upload streams for as
// long as it needs, but each wait for more of its body is bounded; any
// other body must have arrived by the deadline, and any other answer be
// written by its own. Each request sets both, as net/http keeps a write
// deadline from one request of a connection to the next.
func (s *Server) deadlines(c *gin.Context) {
	rc := http.NewResponseController(c.Writer)
	start := time.Now()
	next := func() time.Time { return start.Add(s.cfg.ReadTimeout) }
	if s.uploadRoutes[c.FullPath()] {
		next = func() time.Time { return time.Now().Add(s.cfg.ReadTimeout) }
		_ = rc.SetWriteDeadline(time.Time{})
	} else {
		// An httptest recorder has no connection: it goes without.
		_ = rc.SetWriteDeadline(start.Add(s.cfg.WriteTimeout))
	}
	if c.Request.Body != nil && c.Request.Body != http.NoBody {
		_ = rc.SetReadDeadline(next())
		c.Request.Body = &deadlineBody{ReadCloser: c.Request.Body, rc: rc, next: next, timeout: s.cfg.ReadTimeout}
	}
	if s.uploadRoutes[c.FullPath()] {
		// An upload streams for as long as it needs: its credential is
		// checked again while it does (authority.go).
		s.withAuthority(c)
	}
	c.Next()
}

// deadlineBody sets the read deadline before each read of a request body
// and lifts it once the body has ended: net/http then reads on to see
// whether the client goes away, and a deadline passing there would cancel
// the request's context while its handler still works.
type deadlineBody struct {
	io.ReadCloser
	rc      *http.ResponseController
	next    func() time.Time
	timeout time.Duration
}

func (b *deadlineBody) Read(p []byte) (int, error) {
	_ = b.rc.SetReadDeadline(b.next())
	n, err := b.ReadCloser.Read(p)
	switch {
	case err == io.EOF:
		_ = b.rc.SetReadDeadline(time.Time{})
	case errors.Is(err, os.ErrDeadlineExceeded):
		// The client's fault, not ours: a 400, not an internal error.
		err = domain.Errorf(domain.Invalid, "the request body did not arrive in time (each request body within %s of the request; uploads with no pause of %s)", b.timeout, b.timeout)
	case errors.Is(err, io.ErrUnexpectedEOF):
		// The client closed before its Content-Length: said here, where
		// the reader is surely the body, since a database connection that
		// drops mid-reply fails with the same error, and that is a 503.
		err = domain.Errorf(domain.Invalid, "the request body ends before its declared length (Content-Length)")
	}
	return n, err
}

// Route is one registered method and path, in gin's syntax (":id").
type Route struct {
	Method string
	Path   string
}

// Routes lists every registered method and path, all spellings included.
func (s *Server) Routes() []Route {
	var out []Route
	for _, r := range s.engine.Routes() {
		out = append(out, Route{Method: r.Method, Path: r.Path})
	}
	return out
}

// routes registers every endpoint. Keep docs/openapi.yaml in step: a test
// compares the two.
func (s *Server) routes() {
	s.plain(http.MethodGet, "/healthz", s.handleHealthz)
	s.plain(http.MethodGet, "/readyz", s.handleReadyz)
	s.plain(http.MethodGet, "/metrics", s.handleMetrics)
	s.plain(http.MethodGet, "/api/openapi.yaml", s.handleOpenAPIYAML)
	s.plain(http.MethodGet, "/api/openapi.json", s.handleOpenAPIJSON)

	s.tenant(http.MethodGet, "/api/access-tokens/", s.handleListAccessTokens)
	s.tenant(http.MethodPost, "/api/access-tokens/", s.handleCreateAccessToken, allowPassword)
	s.tenant(http.MethodDelete, "/api/access-tokens/:id/", s.handleRevokeAccessToken)
	s.tenant(http.MethodGet, "/api/integrations/", s.handleListIntegrations)
	s.tenant(http.MethodPost, "/api/integrations/", s.handleCreateIntegration, requires(access.MayCreateIntegration))
	s.tenant(http.MethodGet, "/api/integrations/:id/", s.handleGetIntegration)
	if s.sftpKeys != nil {
		s.tenant(http.MethodGet, "/api/sftp-keys/", s.handleListSFTPKeys)
		s.tenant(http.MethodPost, "/api/sftp-keys/", s.handleAddSFTPKey, requires(access.MayManageSFTPKeys))
		s.tenant(http.MethodDelete, "/api/sftp-keys/:id/", s.handleRemoveSFTPKey)
	}
	s.tenant(http.MethodGet, "/api/exchange-rates/", s.handleGetExchangeRates)
	s.tenant(http.MethodPut, "/api/exchange-rates/", s.handlePutExchangeRates, requires(access.MayChangeCompanySettings))

	s.uploadRoutesOf(importing.Customers, "/api/customers/upload/", "/api/customer/upload/")
	if s.imports != nil {
		s.tenant(http.MethodGet, "/api/imports/", s.handleListImports)
		s.tenant(http.MethodGet, "/api/imports/:id/", s.handleGetImport)
	}

	s.tenant(http.MethodGet, "/api/data/customers/", s.handleRetrieveCustomers)
	s.tenant(http.MethodGet, "/api/customers/:id/history/", s.handleCustomerHistory)
	if s.customerAsOf != nil {
		s.tenant(http.MethodGet, "/api/data/customers/:id/", s.handleGetCustomer)
	}
	if s.changes != nil {
		s.tenant(http.MethodGet, "/api/changes/", s.handleChanges)
	}

	s.uploadRoutesOf(importing.Shops, "/api/shops/upload/")
	if s.shops != nil {
		s.tenant(http.MethodGet, "/api/data/shops/", s.retrieveWith(s.shops, "shops"))
	}
	s.uploadRoutesOf(importing.Products, "/api/products/upload/")
	if s.products != nil {
		s.tenant(http.MethodGet, "/api/data/products/", s.retrieveWith(s.products, "products"))
	}
	if s.events != nil {
		s.tenant(http.MethodGet, "/api/data/events/", s.retrieveWith(s.events, "events"))
	}
	if s.sales != nil {
		s.tenant(http.MethodGet, "/api/data/sales/", s.retrieveWith(s.sales, "sales"))
	}
	s.uploadRoutesOf(importing.Events, "/api/events/upload/", "/api/events/")
	s.uploadRoutesOf(importing.Sales, "/api/sales/upload/")
	if s.dataQueries != nil {
		s.tenant(http.MethodPost, "/api/data/query/", s.handleDataQuery)
	}

	s.tenant(http.MethodGet, "/api/datatargets/", s.handleListDatatargets)
	s.tenant(http.MethodPost, "/api/datatargets/", s.handleCreateDatatarget, requires(datatarget.MayManage))
	s.tenant(http.MethodGet, "/api/datatargets/:id/", s.handleGetDatatarget)
	s.tenant(http.MethodPatch, "/api/datatargets/:id/", s.handleUpdateDatatarget, requires(datatarget.MayManage))
	s.tenant(http.MethodDelete, "/api/datatargets/:id/", s.handleDeleteDatatarget, requires(datatarget.MayControl))
	s.tenant(http.MethodPost, "/api/datatargets/:id/post/", s.handlePostMessages)
	s.tenant(http.MethodGet, "/api/datatargets/:id/retrieve/", s.handleRetrieve)
	s.tenant(http.MethodPost, "/api/datatargets/:id/outlets/", s.handleCreateOutlet, requires(datatarget.MayManage))
	s.tenant(http.MethodGet, "/api/datatargets/:id/outlets/:outlet_id/", s.handleGetOutlet)
	s.tenant(http.MethodPatch, "/api/datatargets/:id/outlets/:outlet_id/", s.handleChangeOutlet, requires(datatarget.MayControl))
	s.tenant(http.MethodDelete, "/api/datatargets/:id/outlets/:outlet_id/", s.handleDeleteOutlet, requires(datatarget.MayControl))
	s.tenant(http.MethodPost, "/api/datatargets/:id/outlets/:outlet_id/rewind/", s.handleRewindOutlet, requires(datatarget.MayControl))
	s.tenant(http.MethodGet, "/api/datatargets/:id/outlets/:outlet_id/parked/", s.handleListParked)
	s.tenant(http.MethodPost, "/api/datatargets/:id/outlets/:outlet_id/parked/redeliver/", s.handleRedeliverParked, requires(datatarget.MayControl))
	s.tenant(http.MethodPost, "/api/datatargets/:id/outlets/:outlet_id/parked/:parked_id/redeliver/", s.handleRedeliverParked, requires(datatarget.MayControl))
	s.tenant(http.MethodDelete, "/api/datatargets/:id/outlets/:outlet_id/parked/:parked_id/", s.handleDiscardParked, requires(datatarget.MayControl))
	s.tenant(http.MethodGet, "/api/datatargets/:id/outlets/:outlet_id/log/", s.handleOutletLog)
	s.tenant(http.MethodGet, "/api/datatargets/:id/outlets/:outlet_id/log/:entry/", s.handleOutletLogEntry)

	if s.campaigns != nil {
		s.tenant(http.MethodGet, "/api/campaigns/", s.handleListCampaigns)
		s.tenant(http.MethodPost, "/api/campaigns/", s.handleCreateCampaign, requires(campaign.MayManage))
		s.tenant(http.MethodGet, "/api/campaigns/:key/", s.handleGetCampaign)
		s.tenant(http.MethodPatch, "/api/campaigns/:key/", s.handlePatchCampaign, requires(campaign.MayManage))
		s.tenant(http.MethodGet, "/api/campaign/actions/", s.handleCampaignStats)
		s.tenant(http.MethodGet, "/api/beta/campaigns/", s.handleBetaCampaignStats)
	}
	if s.segments != nil {
		s.tenant(http.MethodGet, "/api/segments/", s.handleListSegments)
		s.tenant(http.MethodPost, "/api/segments/", s.handleCreateSegment, requires(segment.MayManage))
		s.tenant(http.MethodGet, "/api/segments/:key/", s.handleGetSegment)
		s.tenant(http.MethodPost, "/api/segments/preview/", s.handlePreviewSegment, requires(segment.MayManage))
		s.tenant(http.MethodPatch, "/api/segments/:key/", s.handlePatchSegment, requires(segment.MayManage))
		s.tenant(http.MethodGet, "/api/segments/:key/customers/", s.handleSegmentCustomers)
		s.tenant(http.MethodGet, "/api/segments/:key/history/", s.handleSegmentHistory)
		s.tenant(http.MethodGet, "/api/customers/:id/segments/", s.handleCustomerSegments)
	}
}

// routedPath is the path of the route the request matched, its
// parameters as the handlers read them: the path token scopes are checked
// against. With the engine's settings (NewServer) it equals the decoded
// URL path; it is built from the match so that it stays the routed path
// if they change. It is "" (allowed by no scope) when there is no match or
// a parameter holds a "/" (possible only with UseRawPath): the path would
// then have segments the route has not.
func routedPath(c *gin.Context) string {
	full := c.FullPath()
	if full == "" {
		return ""
	}
	var b strings.Builder
	for {
		i := strings.IndexAny(full, ":*")
		if i < 0 {
			b.WriteString(full)
			return b.String()
		}
		b.WriteString(full[:i])
		end := strings.IndexByte(full[i:], '/')
		if end < 0 {
			end = len(full) - i
		}
		v := c.Param(full[i+1 : i+end])
		if full[i] == '*' {
			v = strings.TrimPrefix(v, "/") // a catch-all value starts with the slash the pattern has
		} else if strings.Contains(v, "/") {
			return ""
		}
		b.WriteString(v)
		full = full[i+end:]
	}
}

// handlerFunc is a handler that returns its error instead of writing it;
// adapt writes it with the one error mapping.
type handlerFunc func(c *gin.Context) error

func (s *Server) adapt(h handlerFunc) gin.HandlerFunc {
	return func(c *gin.Context) {
		if err := h(c); err != nil {
			s.writeError(c, err)
		}
	}
}

// plain registers a path that needs no company and no credentials, under
// its exact spelling only.
func (s *Server) plain(method, path string, h handlerFunc) {
	s.engine.Handle(method, path, routeName(path), s.adapt(h))
}

// routeOption changes how a tenant route authenticates, or what it
// requires of the caller before it reads the body.
type routeOption struct {
	password bool
	role     func(access.Principal) error
}

// allowPassword accepts a user's email and password (HTTP basic) besides
// access tokens.
var allowPassword = routeOption{password: true}

// requires checks the caller's role with the domain's rule (the command
// checks it again) before the handler reads a byte of the body: a caller
// without the role is 403 at the cost of a look-up, never a 400 that
// cost a parse of whatever it sent.
func requires(rule func(access.Principal) error) routeOption { return routeOption{role: rule} }

// tenant registers an API path under all its spellings, behind tenancy,
// authentication, rate limiting and scope checks.
func (s *Server) tenant(method, path string, h handlerFunc, opts ...routeOption) {
	password := false
	chain := []gin.HandlerFunc{routeName(path), s.checkInput, s.resolveCompany}
	var roles []gin.HandlerFunc
	for _, o := range opts {
		password = password || o.password
		if o.role != nil {
			roles = append(roles, s.requireRole(o.role))
		}
	}
	chain = append(chain, s.authenticate(password), s.rateLimit, s.authorize)
	chain = append(append(chain, roles...), s.oneLargeBody, s.adapt(h))
	for _, p := range spellings(path) {
		s.engine.Handle(method, p, chain...)
	}
}

// requireRole answers 403 unless the caller meets rule.
func (s *Server) requireRole(rule func(access.Principal) error) gin.HandlerFunc {
	return func(c *gin.Context) {
		p, _ := principalOf(c)
		if err := rule(p); err != nil {
			s.writeError(c, err)
		}
	}
}

// spellings returns the four spellings of an /api path: with and without
// the prefix, with and without the trailing slash.
func spellings(path string) []string {
	base := strings.TrimSuffix(path, "/")
	out := []string{base + "/", base}
	if rest, ok := strings.CutPrefix(base, "/api"); ok && rest != "" {
		out = append(out, rest+"/", rest)
	}
	return out
}
