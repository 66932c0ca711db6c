package api

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

// What another HTTP adapter mounted on the server's engine (the console,
// package console) shares with the API: the engine and its middleware
// (request ids, access log, metrics, panics, body limits, deadlines), the
// limits of password log-ins, the one mapping of errors to statuses, and
// the reading of the campaign statistics' query parameters. The console
// declares what it uses of the server as console.Host; cmd hands it the
// server. The adapter answers in its own form (HTML) but decides nothing the API
// decides differently.

// Handle registers handlers for method and path on the server's engine,
// behind its middleware, under that exact spelling. An upload route
// (upload true) takes bodies up to Config.MaxUploadBytes, streamed with no
// overall deadline, as the API's uploads do.
func (s *Server) Handle(method, path string, upload bool, handlers ...gin.HandlerFunc) {
	if upload {
		s.uploadRoutes[path] = true
	}
	s.engine.Handle(method, path, append([]gin.HandlerFunc{routeName(path)}, handlers...)...)
}

// LogInWithPassword checks a user's email, password and TOTP code within
// the company, under exactly the limits of the API's password log-ins:
// the same tables of failed log-ins per account and per client address
// (so guesses spread over both doors are counted once) and the same
// bound on password checks at once. Failures are domain.Unauthorized or
// a rate-limit error (Problem answers it 429 with Retry-After).
func (s *Server) LogInWithPassword(c *gin.Context, companyID, email, password, totpCode string) (access.Principal, error) {
	if email == "" || password == "" {
		// Refused before any check, and not counted: nothing was guessed.
		return access.Principal{}, domain.Errorf(domain.Unauthorized, "give an email and a password")
	}
	p, err := s.passwordLogIn(c, companyID, email, password, totpCode)
	if err != nil {
		return access.Principal{}, err
	}
	if p.CompanyID != companyID {
		return access.Principal{}, domain.Errorf(domain.Unauthorized, "invalid credentials")
	}
	return p, nil
}

// AllowRequest takes one request from the principal's budget of requests
// (Config.RateLimit, Config.RateBurst; one budget per company and actor,
// as for the API's own routes), or refuses it with a rate-limit error.
func (s *Server) AllowRequest(p access.Principal) error {
	if ok, wait := s.limiter.allow(p.CompanyID + "/" + p.Actor()); !ok {
		return &rateLimitError{what: "requests", wait: wait}
	}
	return nil
}

// Problem maps err to the status and message the API would answer,
// logs it when it is a server-side error, records its code in the access
// log and sets the Retry-After header it calls for. The caller writes
// the body. A server-side error's message never carries its cause.
func (s *Server) Problem(c *gin.Context, err error) (status int, code domain.Code, message string) {
	status, body := s.problem(c, err)
	return status, body.Error.Code, body.Error.Message
}

// CompanyByHost resolves the company served at a request's Host header,
// as every API route does, or returns a domain.NotFound error.
func (s *Server) CompanyByHost(c *gin.Context) (company.Company, error) {
	host := requestHost(c.Request.Host)
	co, err := s.companies.ByHost(c.Request.Context(), host)
	if domain.ErrorCode(err) == domain.NotFound {
		err = s.unknownHost(host)
	}
	return co, err
}

// Identify records the request's company and principal for the access
// log, as the API's own routes do.
func (s *Server) Identify(c *gin.Context, co company.Company, p *access.Principal) {
	c.Set(keyCompany, co)
	if p != nil {
		c.Set(keyPrincipal, *p)
	}
}

// CommandContext is the context for a command run for the request: its
// events carry source and the request id as correlation id.
func (s *Server) CommandContext(c *gin.Context, source string) context.Context {
	return commands.WithRequest(c.Request.Context(), source, c.GetString(keyRequestID))
}

// CampaignStatsQuery reads the query parameters of
// GET /api/beta/campaigns/ (keys, limit, order, from, sales_start,
// sales_end) from r, as that endpoint reads them, so that the console
// shows the figures the API answers.
func (s *Server) CampaignStatsQuery(r *http.Request, companyID string, loc *time.Location) (readmodels.StatsQuery, error) {
	return statsQuery(r, companyID, loc, true)
}

// CampaignStatsNext is the from parameter of the page after one whose
// readmodels.StatsPage.Next is next, as the statistics endpoints give it.
func (s *Server) CampaignStatsNext(next string) string { return encodeCursor(next) }
