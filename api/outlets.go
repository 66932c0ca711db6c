package api

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/gin-gonic/gin"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
)

// outletJSON is a webhook outlet as answered. The secret and the header
// values are shown in hint form to everyone, admins included: they are
// sealed at rest and never read back (datatarget.Credentials);
// has_secret and secret_hint (additions) say whether and with what
// requests are signed. The URL's query values and password are shown
// only to admins; others see them masked (datatarget.Outlet.RequestFor).
type outletJSON struct {
	ID                         string      `json:"id"`
	OutletType                 string      `json:"outlet_type"`
	Enabled                    bool        `json:"enabled"`
	Request                    requestJSON `json:"request"`
	IsBatched                  bool        `json:"is_batched"`
	MaxBatchSize               int         `json:"max_batch_size"`
	LastDeliveredMessageNumber int64       `json:"last_delivered_message_number"`
	DeliveredBatchCount        int64       `json:"delivered_batch_count"`
	MinRequestInterval         string      `json:"min_request_interval"`
	HasSecret                  bool        `json:"has_secret"`
	// SecretHint is null without a secret.
	SecretHint *string `json:"secret_hint"`
	CreatedAt  string  `json:"created_at"`
	// FailurePolicy is null when a failing batch is retried for ever.
	FailurePolicy *datatarget.FailurePolicy `json:"failure_policy"`
	ParkedCount   int64                     `json:"parked_count"`
	// State and OldestUndeliveredAt (null when caught up) are additions.
	State               string  `json:"state"`
	OldestUndeliveredAt *string `json:"oldest_undelivered_at"`
}

type requestJSON struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Format  string            `json:"format"`
	Content json.RawMessage   `json:"content"`
}

// newOutletJSON answers o to p, its credentials in hint form and its URL
// as p may see it (datatarget.Outlet.RequestFor).
func newOutletJSON(o datatarget.Outlet, p access.Principal) outletJSON {
	r := o.RequestFor(p)
	out := outletJSON{
		ID: o.ID, OutletType: o.Type, Enabled: o.Enabled,
		Request:   requestJSON{URL: r.URL, Method: r.Method, Headers: r.Headers, Format: r.Format, Content: r.Content},
		IsBatched: o.IsBatched, MaxBatchSize: o.MaxBatchSize,
		LastDeliveredMessageNumber: o.Progress.LastDeliveredMessageNumber,
		DeliveredBatchCount:        o.Progress.DeliveredBatchCount,
		MinRequestInterval:         strconv.FormatInt(o.MinRequestInterval.Milliseconds(), 10),
		HasSecret:                  o.HasSecret(), CreatedAt: timestamp(o.CreatedAt),
		FailurePolicy: policyJSON(o.FailurePolicy), ParkedCount: o.Progress.ParkedCount,
		State: o.Progress.State,
	}
	if o.HasSecret() {
		hint := o.Hints.Secret
		out.SecretHint = &hint
	}
	if t := o.Progress.OldestUndeliveredAt; t != nil {
		at := timestamp(*t)
		out.OldestUndeliveredAt = &at
	}
	return out
}

// policyJSON is a failure policy as answered: null for none.
func policyJSON(f datatarget.FailurePolicy) *datatarget.FailurePolicy {
	if f.IsZero() {
		return nil
	}
	return &f
}

// createOutletRequest is the body of POST /api/datatargets/<id>/outlets/.
// min_request_interval (milliseconds) is accepted as a number or a
// numeric string, as it is answered as a string.
type createOutletRequest struct {
	OutletType         string             `json:"outlet_type"`
	Request            datatarget.Request `json:"request"`
	IsBatched          bool               `json:"is_batched"`
	Secret             string             `json:"secret"`
	MinRequestInterval json.RawMessage    `json:"min_request_interval"`
	// FailurePolicy (addition) parks a batch that keeps failing.
	FailurePolicy *datatarget.FailurePolicy `json:"failure_policy"`
}

// handleCreateOutlet serves POST /api/datatargets/<id>/outlets/ (staff
// role): a webhook outlet that delivers the datatarget's messages from the
// first one.
func (s *Server) handleCreateOutlet(c *gin.Context) error {
	var req createOutletRequest
	if err := decodeJSON(c.Request, &req, false); err != nil {
		return err
	}
	interval, err := parseInterval(req.MinRequestInterval)
	if err != nil {
		return err
	}
	var ms int64
	if interval != nil {
		ms = *interval
	}
	p, _ := principalOf(c)
	o, err := s.commands.CreateOutlet.Handle(commandContext(c), commands.CreateOutlet{
		Principal: p, DatatargetID: c.Param("id"),
		Spec: datatarget.OutletSpec{Type: req.OutletType, Request: req.Request, IsBatched: req.IsBatched,
			MinRequestInterval: ms, Secret: req.Secret, FailurePolicy: policyOf(req.FailurePolicy)},
	})
	if err != nil {
		return err
	}
	// The read model is inline: it holds the outlet, with its state.
	return s.answerOutlet(c, o.ID, true)
}

// handleGetOutlet serves GET /api/datatargets/<id>/outlets/<outlet_id>/.
func (s *Server) handleGetOutlet(c *gin.Context) error {
	return s.answerOutlet(c, c.Param("outlet_id"), false)
}

// outletWarningJSON is a warning of an answer that succeeded: the field it is
// about and why (the form of the details of an error).
type outletWarningJSON struct {
	Field  string `json:"field"`
	Reason string `json:"reason"`
}

// outletURLCheckTimeout bounds the look-up of an outlet's host name for
// its warning; a name that does not resolve within it gets none.
const outletURLCheckTimeout = 2 * time.Second

// answerOutlet answers {"outlet": ...} with the outlet id of the
// datatarget of the route, as the read model has it, and, when warn
// (a creation or a change) and the delivery's guard will refuse its URL
// (Config.RefusedOutletURL), {"warnings": [{"field": "request.url",
// "reason": ...}]}: the outlet is kept as asked, and each of its attempts
// will fail the same way until its URL is changed or the network allowed.
func (s *Server) answerOutlet(c *gin.Context, id string, warn bool) error {
	p, _ := principalOf(c)
	o, err := s.datatargets.Outlet(c.Request.Context(), p.CompanyID, c.Param("id"), id)
	if err != nil {
		return err
	}
	answer := gin.H{"outlet": newOutletJSON(o, p)}
	if warn && s.cfg.RefusedOutletURL != nil {
		// A name is resolved: within a bound, the answer is not held up.
		ctx, cancel := context.WithTimeout(c.Request.Context(), outletURLCheckTimeout)
		defer cancel()
		if why := s.cfg.RefusedOutletURL(ctx, o.Request.URL); why != "" {
			answer["warnings"] = []outletWarningJSON{{Field: "request.url", Reason: why}}
		}
	}
	c.JSON(http.StatusOK, answer)
	return nil
}

// parseInterval reads min_request_interval (milliseconds), a number or a
// numeric string, as it is answered as a string; nil when absent or null.
func parseInterval(raw json.RawMessage) (*int64, error) {
	v := strings.Trim(string(raw), `" `)
	if v == "" || v == "null" {
		return nil, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return nil, &domain.Error{Code: domain.Validation, Message: "invalid outlet",
			Details: []domain.FieldError{{Field: "min_request_interval", Reason: "must be a whole number of milliseconds"}}}
	}
	return &n, nil
}

// policyOf is the policy asked for; nil (absent, or null) is none.
func policyOf(f *datatarget.FailurePolicy) datatarget.FailurePolicy {
	if f == nil {
		return datatarget.FailurePolicy{}
	}
	return *f
}
