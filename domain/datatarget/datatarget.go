// Package datatarget holds datatargets (outbound queues of numbered
// messages), their webhook outlets and the rules of both: what a valid
// datatarget, outlet and message is, who may manage them, and how an
// outlet's content template turns messages into a request body. It stores
// and sends nothing: commands append its events, projections keep the
// queues, and delivery sends what outlets deliver.
package datatarget

import (
	"fmt"
	"strings"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// Type is the kind of a datatarget.
type Type string

// Datatarget types. A messages datatarget is a queue of free-form messages
// posted by clients; a datasync datatarget follows the changes of one
// entity type (Settings): the async projection "datasync" writes its
// messages, one per change, and clients cannot post to it.
const (
	Messages Type = "messages"
	Datasync Type = "datasync"
)

// Datatarget is an outbound queue. Its messages are numbered from 1 without
// gaps; LastMessageNumber is the number of the last one (0 when none).
type Datatarget struct {
	ID                string
	CompanyID         string
	Type              Type
	Name              string
	Description       string
	Enabled           bool
	CreatedAt         time.Time
	UpdatedAt         time.Time
	CreatedBy         string
	LastMessageNumber int64
	// Settings are a datasync datatarget's (zero for messages).
	Settings Settings
	// MessageRetentionDays is how long messages every outlet delivered
	// are kept (0: for ever); nil takes the server's default.
	MessageRetentionDays *int
	// Outlets are filled in by the read model, oldest first.
	Outlets []Outlet
}

// MayManage decides who creates and changes datatargets and outlets: the
// staff role (or more). An outlet makes the service send data to any URL,
// so a token without roles (an integration's, by default) may use
// datatargets (post, retrieve, read) but not configure them.
func MayManage(p access.Principal) error {
	if p.HasRole(access.RoleStaff) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "creating or changing datatargets and outlets requires the staff or admin role")
}

// Spec is what a client asks for when it creates a datatarget.
type Spec struct {
	Type        Type
	Name        string
	Description string
	// Settings are required for a datasync datatarget (a datatype) and
	// refused for a messages one.
	Settings Settings
	// MessageRetentionDays (admin role): see Datatarget.
	MessageRetentionDays *int
	// SegmentExists reports whether the company has a segment of the key
	// (archived ones included: a segment is never deleted). It is asked
	// for a datatarget of datatype segment only, and must be set then.
	SegmentExists func(key string) (bool, error)
}

// New decides whether p may create the datatarget of spec and returns it,
// enabled and empty.
func New(p access.Principal, id string, spec Spec, now time.Time) (Datatarget, error) {
	if err := MayManage(p); err != nil {
		return Datatarget{}, err
	}
	name := strings.TrimSpace(spec.Name)
	var problems []domain.FieldError
	switch spec.Type {
	case Messages, Datasync:
	case "":
		problems = append(problems, domain.FieldError{Field: "datatarget_type", Reason: "required"})
	default:
		problems = append(problems, domain.FieldError{Field: "datatarget_type", Reason: `must be "messages" or "datasync"`})
	}
	if t := spec.Settings.Datatype; spec.Type == Datasync && isKnown(t) && !t.Available() {
		// Known but not built: say so plainly, it is not the client's error.
		msg := fmt.Sprintf("datasync of %s is not available yet", t)
		return Datatarget{}, &domain.Error{Code: domain.Validation, Message: msg, Details: []domain.FieldError{{Field: "datatype", Reason: msg}}}
	}
	settings, bad := checkSettings(spec.Type, spec.Settings)
	problems = append(problems, bad...)
	problems = append(problems, checkName(name)...)
	problems = append(problems, checkDescription(spec.Description)...)
	bad, err := checkRetention(p, spec.MessageRetentionDays)
	if err != nil {
		return Datatarget{}, err
	}
	problems = append(problems, bad...)
	if len(problems) == 0 && settings.Datatype == Segment {
		bad, err := checkSegment(settings.SegmentKey, spec.SegmentExists)
		if err != nil {
			return Datatarget{}, err
		}
		problems = append(problems, bad...)
	}
	if len(problems) > 0 {
		return Datatarget{}, &domain.Error{Code: domain.Validation, Message: "invalid datatarget", Details: problems}
	}
	now = now.UTC()
	return Datatarget{
		ID: id, CompanyID: p.CompanyID, Type: spec.Type, Name: name, Description: spec.Description,
		Enabled: true, CreatedAt: now, UpdatedAt: now, CreatedBy: p.CreatedBy(), Settings: settings,
		MessageRetentionDays: spec.MessageRetentionDays,
	}, nil
}

// Patch is a change of a datatarget's name, description or whether it
// delivers (Enabled: false pauses every outlet of it, true resumes them
// where each stopped); nil fields stay as they are.
type Patch struct {
	Name, Description *string
	Enabled           *bool
	// MessageRetentionDays (admin role) replaces the retention of
	// delivered messages.
	MessageRetentionDays *int
}

// Apply decides whether p may change d with patch and returns d changed.
// changed is false when the patch changes nothing (then no event is due).
func (d Datatarget) Apply(p access.Principal, patch Patch, now time.Time) (out Datatarget, changed bool, err error) {
	if err := MayManage(p); err != nil {
		return d, false, err
	}
	if patch.Enabled != nil && *patch.Enabled != d.Enabled {
		if err := MayControl(p); err != nil {
			return d, false, err
		}
	}
	var problems []domain.FieldError
	out = d
	if patch.Enabled != nil {
		out.Enabled = *patch.Enabled
	}
	if patch.Name != nil {
		out.Name = strings.TrimSpace(*patch.Name)
		problems = append(problems, checkName(out.Name)...)
	}
	if patch.Description != nil {
		out.Description = *patch.Description
		problems = append(problems, checkDescription(out.Description)...)
	}
	if patch.MessageRetentionDays != nil && !sameDays(patch.MessageRetentionDays, d.MessageRetentionDays) {
		bad, err := checkRetention(p, patch.MessageRetentionDays)
		if err != nil {
			return d, false, err
		}
		problems = append(problems, bad...)
		days := *patch.MessageRetentionDays
		out.MessageRetentionDays = &days
	}
	if len(problems) > 0 {
		return d, false, &domain.Error{Code: domain.Validation, Message: "invalid datatarget", Details: problems}
	}
	if out.Name == d.Name && out.Description == d.Description && out.Enabled == d.Enabled &&
		sameDays(out.MessageRetentionDays, d.MessageRetentionDays) {
		return d, false, nil
	}
	out.UpdatedAt = now.UTC()
	return out, true, nil
}
