package datatarget

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// OutletWebhook is the only outlet type.
const OutletWebhook = "webhook"

// Batch sizes: a batched outlet sends up to BatchedMaxBatchSize messages
// per request (the interface's value), any other one message.
const (
	BatchedMaxBatchSize   = 100
	UnbatchedMaxBatchSize = 1
)

// MaxMinRequestInterval bounds min_request_interval (milliseconds).
const MaxMinRequestInterval = time.Hour

// Request is how an outlet calls its receiver.
type Request struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	// Format is "json", the only format.
	Format string `json:"format"`
	// Content is the body template, any JSON value; see Template.
	Content json.RawMessage `json:"content"`
}

// Outlet sends a datatarget's messages, in order, to a receiver.
type Outlet struct {
	ID           string
	CompanyID    string
	DatatargetID string
	Type         string
	Request      Request
	IsBatched    bool
	MaxBatchSize int
	// MinRequestInterval is the least time between the starts of two
	// requests.
	MinRequestInterval time.Duration
	// Secret, when set, signs every request (Standard Webhooks). It and
	// the values of Request.Headers are in clear only where opened (the
	// commands, the deliverer: see Credentials); read from the read model
	// they are absent, and Hints shows them.
	Secret string
	// Hints are the secret and the header values in hint form: what every
	// answer shows.
	Hints Credentials
	// FailurePolicy says when a failing batch is parked (zero: never).
	FailurePolicy FailurePolicy
	Enabled       bool
	// DisabledReason is why the service disabled the outlet (a receiver
	// that answered 410 Gone); "" when it is enabled, or paused by an
	// admin.
	DisabledReason string
	CreatedAt      time.Time
	CreatedBy      string
	// Progress is filled in by the read model from the delivery state.
	Progress Progress
}

// Progress is how far an outlet has delivered.
type Progress struct {
	LastDeliveredMessageNumber int64
	DeliveredBatchCount        int64
	// ParkedCount is how many batches are parked (FailurePolicy).
	ParkedCount int64
	// State is delivering, retrying (the batch being sent has failed),
	// paused (by an admin, or with its datatarget) or disabled (by the
	// service: a 410 Gone).
	State string
	// OldestUndeliveredAt is when the first undelivered message was
	// posted; nil when the outlet is caught up.
	OldestUndeliveredAt *time.Time
}

// OutletSpec is what a client asks for when creating an outlet.
type OutletSpec struct {
	Type      string
	Request   Request
	IsBatched bool
	// MinRequestInterval is in milliseconds.
	MinRequestInterval int64
	Secret             string
	FailurePolicy      FailurePolicy
}

// NewOutlet decides whether p may add an outlet to d and returns it,
// enabled. Defaults: method POST, format json, content "{(data)}" (the
// body is the message, or the list of messages).
func NewOutlet(p access.Principal, d Datatarget, id string, spec OutletSpec, now time.Time) (Outlet, error) {
	if err := MayManage(p); err != nil {
		return Outlet{}, err
	}
	size := UnbatchedMaxBatchSize
	if spec.IsBatched {
		size = BatchedMaxBatchSize
	}
	o := Outlet{
		ID: id, CompanyID: d.CompanyID, DatatargetID: d.ID, Type: spec.Type, Request: withRequestDefaults(spec.Request),
		IsBatched: spec.IsBatched, MaxBatchSize: size,
		MinRequestInterval: time.Duration(spec.MinRequestInterval) * time.Millisecond,
		Secret:             spec.Secret, FailurePolicy: spec.FailurePolicy, Enabled: true, CreatedAt: now.UTC(), CreatedBy: p.CreatedBy(),
	}
	if err := checkOutlet(o, spec.MinRequestInterval); err != nil {
		return Outlet{}, err
	}
	o.Hints = o.Credentials().Hints()
	return o, nil
}

// withRequestDefaults fills in what a request may leave out: method POST,
// format json, content "{(data)}", no headers.
func withRequestDefaults(r Request) Request {
	r.Method = strings.ToUpper(strings.TrimSpace(r.Method))
	if r.Method == "" {
		r.Method = "POST"
	}
	if r.Format == "" {
		r.Format = "json"
	}
	if len(r.Content) == 0 || string(r.Content) == "null" {
		r.Content = json.RawMessage(`"` + Placeholder + `"`)
	}
	if r.Headers == nil {
		r.Headers = map[string]string{}
	}
	return r
}

// checkOutlet returns what is wrong with an outlet's configuration, as
// created or changed, as one Validation error (nil when nothing is);
// intervalMS is min_request_interval as asked for.
func checkOutlet(o Outlet, intervalMS int64) error {
	var problems domain.Problems
	r := o.Request
	if o.Type != OutletWebhook {
		problems.Add("outlet_type", `must be "webhook"`)
	}
	if reason := URLProblem(r.URL); reason != "" {
		problems.Add("request.url", reason)
	}
	switch r.Method {
	case "POST", "PUT", "PATCH":
	default:
		problems.Add("request.method", "must be POST, PUT or PATCH")
	}
	for name, reason := range checkHeaders(r.Headers) {
		problems.Add("request.headers."+name, reason)
	}
	if r.Format != "json" {
		problems.Add("request.format", `must be "json"`)
	}
	if _, err := CompileTemplate(r.Content); err != nil {
		problems.Add("request.content", "must be JSON")
	}
	if intervalMS < 0 || intervalMS > MaxMinRequestInterval.Milliseconds() {
		problems.Add("min_request_interval", "must be between 0 and 3600000 milliseconds")
	}
	if o.Secret != "" && !validSecret(o.Secret) {
		problems.Add("secret", `must be "whsec_" followed by 24 to 64 bytes in base64`)
	}
	o.FailurePolicy.check(&problems)
	return problems.Err(domain.Validation, "invalid outlet")
}

const SecretPrefix = "whsec_"
