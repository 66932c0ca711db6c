package datatarget

import (
	"encoding/json"
	"time"
)

// Event type names, as stored in the event log. They are durable: never
// rename one.
const (
	CreatedType        = "DatatargetCreated"
	UpdatedType        = "DatatargetUpdated"
	OutletCreatedType  = "OutletCreated"
	OutletDisabledType = "OutletDisabled"
	// DeletedType removes a datatarget; OutletChangedType records an
	// outlet's whole new configuration (PATCH, pause, resume);
	// OutletDeletedType removes an outlet.
	DeletedType       = "DatatargetDeleted"
	OutletChangedType = "OutletChanged"
	OutletDeletedType = "OutletDeleted"
	// MessagePostedType is one message of a messages datatarget. Its data
	// is the message itself, and its version in the datatarget's messages
	// stream is the message's number.
	MessagePostedType = "DatatargetMessagePosted"
)

// Created starts a datatarget's stream.
type Created struct {
	ID          string    `json:"id"`
	Type        Type      `json:"datatarget_type"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Enabled     bool      `json:"enabled"`
	CreatedAt   time.Time `json:"created_at"`
	CreatedBy   string    `json:"created_by"`
	// Settings: a datasync datatarget's; it follows from this event on.
	Settings *Settings `json:"settings,omitempty"`
	// MessageRetentionDays: the datatarget's own, nil for the server's.
	MessageRetentionDays *int `json:"message_retention_days,omitempty"`
}

// NewCreated returns the event that records d.
func NewCreated(d Datatarget) Created {
	e := Created{ID: d.ID, Type: d.Type, Name: d.Name, Description: d.Description, Enabled: d.Enabled, CreatedAt: d.CreatedAt, CreatedBy: d.CreatedBy,
		MessageRetentionDays: d.MessageRetentionDays}
	if !d.Settings.IsZero() {
		s := d.Settings
		e.Settings = &s
	}
	return e
}

// Datatarget returns the datatarget the event creates in companyID.
func (e Created) Datatarget(companyID string) Datatarget {
	d := Datatarget{ID: e.ID, CompanyID: companyID, Type: e.Type, Name: e.Name, Description: e.Description,
		Enabled: e.Enabled, CreatedAt: e.CreatedAt, UpdatedAt: e.CreatedAt, CreatedBy: e.CreatedBy, MessageRetentionDays: e.MessageRetentionDays}
	if e.Settings != nil {
		d.Settings = *e.Settings
	}
	return d
}

// Updated records a datatarget's new name, description and whether it
// delivers. It carries all of them whatever changed, so the last one
// applied is the state; Enabled is nil in the events written before a
// datatarget could be paused (then it stays as it was).
type Updated struct {
	ID          string    `json:"id"`
	Name        string    `json:"name"`
	Description string    `json:"description"`
	Enabled     *bool     `json:"enabled,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
	// MessageRetentionDays is the datatarget's own retention of
	// delivered messages, nil for the server's default.
	MessageRetentionDays *int `json:"message_retention_days,omitempty"`
}

// NewUpdated returns the event that records d's new values.
func NewUpdated(d Datatarget) Updated {
	enabled := d.Enabled
	return Updated{ID: d.ID, Name: d.Name, Description: d.Description, Enabled: &enabled, UpdatedAt: d.UpdatedAt,
		MessageRetentionDays: d.MessageRetentionDays}
}

// Apply returns d as the event leaves it.
func (e Updated) Apply(d Datatarget) Datatarget {
	d.Name, d.Description, d.UpdatedAt, d.MessageRetentionDays = e.Name, e.Description, e.UpdatedAt, e.MessageRetentionDays
	if e.Enabled != nil {
		d.Enabled = *e.Enabled
	}
	return d
}

// Deleted removes a datatarget: it answers 404 afterwards and its outlets
// stop. Its stream stays, so its id is never used again.
type Deleted struct {
	ID        string    `json:"id"`
	DeletedAt time.Time `json:"deleted_at"`
}

// OutletChanged records an outlet's whole configuration after a change,
// whatever changed, so the last one applied is the state. Its secret and
// header values are sealed in Credentials (Request's headers are then
// absent); the events written before they were sealed carry them in
// clear, in Secret and Request, and are read as they are (see
// OutletCreated).
type OutletChanged struct {
	ID            string             `json:"id"`
	Request       RequestData        `json:"request"`
	IsBatched     bool               `json:"is_batched"`
	MaxBatchSize  int                `json:"max_batch_size"`
	MinInterval   int64              `json:"min_request_interval_ms"`
	Secret        string             `json:"secret,omitempty"`
	Credentials   *SealedCredentials `json:"credentials,omitempty"`
	FailurePolicy *FailurePolicy     `json:"failure_policy,omitempty"`
	Enabled       bool               `json:"enabled"`
	ChangedAt     time.Time          `json:"changed_at"`
}

// NewOutletChanged returns the event that records o's configuration, its
// credentials sealed with s.
func NewOutletChanged(o Outlet, at time.Time, s Sealer) (OutletChanged, error) {
	e := outletChanged(o, at)
	sealed, err := SealCredentials(s, o.ID, o.Credentials())
	if err != nil {
		return OutletChanged{}, err
	}
	e.Request.Headers, e.Secret, e.Credentials = nil, "", &sealed
	return e, nil
}

// outletChanged is the event of o's configuration with its credentials
// in clear: what sameOutlet compares, never recorded.
func outletChanged(o Outlet, at time.Time) OutletChanged {
	e := OutletChanged{ID: o.ID, Request: newRequestData(o.Request), IsBatched: o.IsBatched, MaxBatchSize: o.MaxBatchSize,
		MinInterval: o.MinRequestInterval.Milliseconds(), Secret: o.Secret, Enabled: o.Enabled, ChangedAt: at}
	if !o.FailurePolicy.IsZero() {
		f := o.FailurePolicy
		e.FailurePolicy = &f
	}
	return e
}

// Apply returns o as the event leaves it, its credentials opened with s.
// Enabling clears the reason the service disabled it for.
func (e OutletChanged) Apply(o Outlet, s Sealer) (Outlet, error) {
	o.IsBatched, o.MaxBatchSize = e.IsBatched, e.MaxBatchSize
	o.MinRequestInterval = time.Duration(e.MinInterval) * time.Millisecond
	o.Enabled = e.Enabled
	o.FailurePolicy = FailurePolicy{}
	if e.FailurePolicy != nil {
		o.FailurePolicy = *e.FailurePolicy
	}
	if o.Enabled {
		o.DisabledReason = ""
	}
	return e.Stored().Open(o, s)
}

// Stored is the outlet's request and secret as the read model keeps them
// after the event.
func (e OutletChanged) Stored() StoredOutlet {
	return storedOutlet(e.Request, e.Secret, e.Credentials)
}

// OutletDeleted removes an outlet: it answers 404 afterwards and its
// delivery stops.
type OutletDeleted struct {
	ID        string    `json:"id"`
	DeletedAt time.Time `json:"deleted_at"`
}

// OutletCreated starts an outlet's stream. It carries the signing secret
// and the header values sealed (Credentials; Request's headers are then
// absent): the log is the record of the outlet's configuration, and
// never holds a credential in clear. The events written before they were
// sealed carry them in clear, in Secret and Request: they are read as
// they are (Outlet, Stored), in the log as in the read model, until the
// outlet is next changed, whose event seals them.
type OutletCreated struct {
	ID           string             `json:"id"`
	DatatargetID string             `json:"datatarget_id"`
	OutletType   string             `json:"outlet_type"`
	Request      RequestData        `json:"request"`
	IsBatched    bool               `json:"is_batched"`
	MaxBatchSize int                `json:"max_batch_size"`
	MinInterval  int64              `json:"min_request_interval_ms"`
	Secret       string             `json:"secret,omitempty"`
	Credentials  *SealedCredentials `json:"credentials,omitempty"`
	// FailurePolicy is nil when batches are retried for ever.
	FailurePolicy *FailurePolicy `json:"failure_policy,omitempty"`
	Enabled       bool           `json:"enabled"`
	CreatedAt     time.Time      `json:"created_at"`
	CreatedBy     string         `json:"created_by"`
}

// NewOutletCreated returns the event that records o, its credentials
// sealed with s.
func NewOutletCreated(o Outlet, s Sealer) (OutletCreated, error) {
	sealed, err := SealCredentials(s, o.ID, o.Credentials())
	if err != nil {
		return OutletCreated{}, err
	}
	r := newRequestData(o.Request)
	r.Headers = nil
	e := OutletCreated{ID: o.ID, DatatargetID: o.DatatargetID, OutletType: o.Type, Request: r,
		IsBatched: o.IsBatched, MaxBatchSize: o.MaxBatchSize, MinInterval: o.MinRequestInterval.Milliseconds(),
		Credentials: &sealed, Enabled: o.Enabled, CreatedAt: o.CreatedAt, CreatedBy: o.CreatedBy}
	if !o.FailurePolicy.IsZero() {
		f := o.FailurePolicy
		e.FailurePolicy = &f
	}
	return e, nil
}

// Outlet returns the outlet the event creates in companyID, its
// credentials opened with s.
func (e OutletCreated) Outlet(companyID string, s Sealer) (Outlet, error) {
	o := Outlet{ID: e.ID, CompanyID: companyID, DatatargetID: e.DatatargetID, Type: e.OutletType,
		IsBatched: e.IsBatched, MaxBatchSize: e.MaxBatchSize, MinRequestInterval: time.Duration(e.MinInterval) * time.Millisecond,
		Enabled: e.Enabled, CreatedAt: e.CreatedAt, CreatedBy: e.CreatedBy}
	if e.FailurePolicy != nil {
		o.FailurePolicy = *e.FailurePolicy
	}
	return e.Stored().Open(o, s)
}

// Stored is the outlet's request and secret as the read model keeps them
// after the event.
func (e OutletCreated) Stored() StoredOutlet {
	return storedOutlet(e.Request, e.Secret, e.Credentials)
}

// storedOutlet is what the read model keeps of an event's request,
// secret and sealed credentials: the hints of the sealed ones (Request's
// headers are absent then), else the values in clear of an event
// written before they were sealed.
func storedOutlet(r RequestData, secret string, sealed *SealedCredentials) StoredOutlet {
	s := StoredOutlet{Request: r.request(), Secret: secret, Sealed: sealed}
	if sealed != nil {
		s.Request.Headers, s.Secret = copyHeaders(sealed.Hints.Headers), sealed.Hints.Secret
	}
	if s.Request.Headers == nil {
		s.Request.Headers = map[string]string{}
	}
	return s
}

// OutletDisabled stops an outlet's deliveries, e.g. when its receiver
// answered 410 Gone.
type OutletDisabled struct {
	ID         string    `json:"id"`
	Reason     string    `json:"reason"`
	DisabledAt time.Time `json:"disabled_at"`
}

// RequestData is Request as events record it: the content template as
// text, because the log keeps event data as jsonb, which would reorder the
// template's keys.
type RequestData struct {
	URL     string            `json:"url"`
	Method  string            `json:"method"`
	Headers map[string]string `json:"headers"`
	Format  string            `json:"format"`
	Content string            `json:"content"`
}

func newRequestData(r Request) RequestData {
	return RequestData{URL: r.URL, Method: r.Method, Headers: r.Headers, Format: r.Format, Content: string(r.Content)}
}

func (r RequestData) request() Request {
	return Request{URL: r.URL, Method: r.Method, Headers: r.Headers, Format: r.Format, Content: json.RawMessage(r.Content)}
}

// Event types of parked batches: an admin asks for a parked batch (or
// every one: ParkedID 0) to be sent again, or discards one.
const (
	ParkedRedeliveryRequestedType = "OutletParkedRedeliveryRequested"
	ParkedDiscardedType           = "OutletParkedDiscarded"
)

// ParkedRedeliveryRequested marks a parked batch of an outlet, or all of
// them when ParkedID is 0, to be sent again ahead of the queue.
type ParkedRedeliveryRequested struct {
	ID          string    `json:"id"`
	ParkedID    int64     `json:"parked_id,omitempty"`
	RequestedAt time.Time `json:"requested_at"`
}

// ParkedDiscarded drops a parked batch: it is never sent.
type ParkedDiscarded struct {
	ID          string    `json:"id"`
	ParkedID    int64     `json:"parked_id"`
	DiscardedAt time.Time `json:"discarded_at"`
}

// OutletRewoundType sends an outlet's messages again from a number.
const OutletRewoundType = "OutletRewound"

// OutletRewound asks an outlet to send again every message numbered above
// After, in order.
type OutletRewound struct {
	ID        string    `json:"id"`
	After     int64     `json:"after"`
	RewoundAt time.Time `json:"rewound_at"`
}
