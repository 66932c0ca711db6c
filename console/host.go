package console

import (
	"context"
	"net/http"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/readmodels"
)

// Host is the HTTP server the console is mounted on: the API's
// (*api.Server), which cmd hands to Mount. The console shares its engine
// and middleware (request ids, access log, metrics, panics, body limits,
// deadlines), its limits of password log-ins and of requests, its one
// mapping of errors to statuses, and its reading of the campaign
// statistics' parameters, so that it decides nothing the API decides
// differently. Declared here, by the console, so that the console knows
// the API only through what it uses.
type Host interface {
	// Handle registers handlers for method and path behind the host's
	// middleware; an upload route takes the host's upload bodies.
	Handle(method, path string, upload bool, handlers ...gin.HandlerFunc)
	// CompanyByHost resolves the company served at the request's Host.
	CompanyByHost(g *gin.Context) (company.Company, error)
	// Identify records the request's company and principal for the
	// access log.
	Identify(g *gin.Context, co company.Company, p *access.Principal)
	// CommandContext is the context of a command run for the request.
	CommandContext(g *gin.Context, source string) context.Context
	// LogInWithPassword checks a user's credentials within the company
	// under the host's limits of failed log-ins.
	LogInWithPassword(g *gin.Context, companyID, email, password, totpCode string) (access.Principal, error)
	// AllowRequest takes one request from the principal's budget.
	AllowRequest(p access.Principal) error
	// Problem maps err to the status, code and message the API answers.
	Problem(g *gin.Context, err error) (status int, code domain.Code, message string)
	// CampaignStatsQuery reads the campaign statistics' parameters as
	// GET /api/beta/campaigns/ reads them.
	CampaignStatsQuery(r *http.Request, companyID string, loc *time.Location) (readmodels.StatsQuery, error)
	// CampaignStatsNext is the from parameter of the page after next.
	CampaignStatsNext(next string) string
}
