package api

import (
	"net/http"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/readmodels"
)

// What the console (package console) shows as the API shows it: the
// same masking of outlet credentials, the same parameters of campaign
// statistics, the same rule of who reads integrations. Written once,
// here, so that a page never shows what the API would hide.

// RevealsCredentials reports whether p may see outlet credentials as
// they are (the admin role); others see them masked.
func RevealsCredentials(p access.Principal) bool { return revealsCredentials(p) }

// MaskedOutletRequest is an outlet's URL and headers as the API answers
// them to p: credentials masked unless p may see them.
func MaskedOutletRequest(p access.Principal, o datatarget.Outlet) (url string, headers map[string]string) {
	j := newOutletJSON(o, revealsCredentials(p))
	return j.Request.URL, j.Request.Headers
}

// MaskedAttempt is an attempt's raw request and reply as
// GET /api/datatargets/<id>/outlets/<outlet_id>/log/<n>/ answers them to
// p: credential headers and query values masked unless p may see them.
func MaskedAttempt(p access.Principal, e datatarget.LogEntry) (request, reply string) {
	request, reply = e.HTTPRequest, e.HTTPReply
	if !revealsCredentials(p) {
		request, reply = maskRawHTTP(request), maskRawHTTP(reply)
	}
	return request, reply
}

// CampaignStatsQuery reads the query parameters of
// GET /api/beta/campaigns/ (keys, limit, order, from, sales_start,
// sales_end) from r, as that endpoint reads them.
func CampaignStatsQuery(r *http.Request, companyID string, loc *time.Location) (readmodels.StatsQuery, error) {
	return statsQuery(r, companyID, loc, true)
}

// MayReadIntegrations decides whether p may list the company's
// integrations, as GET /api/integrations/ does.
func MayReadIntegrations(p access.Principal) error { return mayReadIntegration(p, "") }

// CampaignStatsNext is the from parameter of the page after one whose
// readmodels.StatsPage.Next is next, as the statistics endpoints give it.
func CampaignStatsNext(next string) string { return encodeCursor(next) }
