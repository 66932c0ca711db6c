package datatarget

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
)

// MayControl decides who pauses, resumes, changes and deletes outlets and
// datatargets, and who rewinds, redelivers or discards what an outlet
// sends: admins only. Each of these acts on what a receiver gets (a paused
// queue grows, a rewind sends data again, a changed URL sends it
// elsewhere), so it needs more than creating, which staff may.
func MayControl(p access.Principal) error {
	if p.HasRole(access.RoleAdmin) {
		return nil
	}
	return domain.Errorf(domain.Forbidden, "pausing, changing, deleting, rewinding or redelivering datatargets and outlets requires the admin role")
}

// MayDelete decides whether p may delete d.
func (d Datatarget) MayDelete(p access.Principal) error { return MayControl(p) }

// FailurePolicy says when a batch that keeps failing is parked, so that
// delivery goes on with the next messages: after MaxAttempts failed
// attempts, or once it has been failing for MaxAge. Zero values are
// "never"; the zero policy retries for ever.
type FailurePolicy struct {
	MaxAttempts   int   `json:"max_attempts,omitempty"`
	MaxAgeSeconds int64 `json:"max_age_seconds,omitempty"`
}

// IsZero reports whether the policy never parks.
func (f FailurePolicy) IsZero() bool { return f.MaxAttempts == 0 && f.MaxAgeSeconds == 0 }

// MaxFailurePolicyAge bounds max_age_seconds: a year.
const MaxFailurePolicyAge = 365 * 24 * time.Hour

// check adds what is wrong with the policy to problems.
func (f FailurePolicy) check(problems *domain.Problems) {
	if f.MaxAttempts < 0 || f.MaxAttempts > 1_000_000 {
		problems.Add("failure_policy.max_attempts", "must be between 1 and 1000000")
	}
	if f.MaxAgeSeconds < 0 || f.MaxAgeSeconds > int64(MaxFailurePolicyAge/time.Second) {
		problems.Add("failure_policy.max_age_seconds", "must be between 1 and 31536000")
	}
}

// RequestPatch is a change of an outlet's request; nil fields stay as
// they are. Headers, when given, replace the headers whole.
type RequestPatch struct {
	URL     *string            `json:"url"`
	Method  *string            `json:"method"`
	Headers *map[string]string `json:"headers"`
	Format  *string            `json:"format"`
	Content json.RawMessage    `json:"content"`
}

// OutletPatch is a change of an outlet (PATCH); nil fields stay as they
// are. Secret "" stops signing.
type OutletPatch struct {
	Enabled   *bool
	Request   *RequestPatch
	IsBatched *bool
	// MinRequestInterval is in milliseconds.
	MinRequestInterval *int64
	Secret             *string
	FailurePolicy      *FailurePolicy
}

// Change decides whether p may change o with patch and returns o changed.
// changed is false when the patch changes nothing (then no event is due).
// Enabling an outlet the service disabled (410 Gone) enables it again.
// The change applies from the outlet's next request: a batch being
// retried keeps its messages whatever is_batched becomes.
func (o Outlet) Change(p access.Principal, patch OutletPatch) (out Outlet, changed bool, err error) {
	if err := MayControl(p); err != nil {
		return o, false, err
	}
	out = o
	out.Request.Headers = copyHeaders(o.Request.Headers)
	interval := o.MinRequestInterval.Milliseconds()
	if r := patch.Request; r != nil {
		if r.URL != nil {
			out.Request.URL = *r.URL
		}
		if r.Method != nil {
			out.Request.Method = *r.Method
		}
		if r.Headers != nil {
			out.Request.Headers = keptByHint(*r.Headers, o.Request.Headers)
		}
		if r.Format != nil {
			out.Request.Format = *r.Format
		}
		if len(r.Content) > 0 && string(r.Content) != "null" {
			out.Request.Content = r.Content
		}
		out.Request = withRequestDefaults(out.Request)
	}
	if patch.IsBatched != nil {
		out.IsBatched = *patch.IsBatched
		out.MaxBatchSize = UnbatchedMaxBatchSize
		if out.IsBatched {
			out.MaxBatchSize = BatchedMaxBatchSize
		}
	}
	if patch.MinRequestInterval != nil {
		interval = *patch.MinRequestInterval
		out.MinRequestInterval = time.Duration(interval) * time.Millisecond
	}
	if patch.Secret != nil && (*patch.Secret != o.Hints.Secret || o.Secret == "") {
		out.Secret = *patch.Secret
	}
	if patch.FailurePolicy != nil {
		out.FailurePolicy = *patch.FailurePolicy
	}
	if patch.Enabled != nil {
		out.Enabled = *patch.Enabled
		if out.Enabled {
			out.DisabledReason = ""
		}
	}
	if err := checkOutlet(out, interval); err != nil {
		return o, false, err
	}
	if sameOutlet(o, out) {
		return o, false, nil
	}
	out.Hints = out.Credentials().Hints()
	return out, true, nil
}

// MayDelete decides whether p may delete o.
func (o Outlet) MayDelete(p access.Principal) error { return MayControl(p) }

// keptByHint returns the headers patched, where a value given as the
// hint of the value the header has (as answered: Credentials.Hints)
// keeps the value: a client that sends back the request it read, to
// change its URL, does not replace the credentials with their hints.
func keptByHint(patched, current map[string]string) map[string]string {
	out := copyHeaders(patched)
	for name, value := range out {
		if old, ok := current[name]; ok && strings.Contains(value, "*") && value == access.TokenHint(old) {
			out[name] = old
		}
	}
	return out
}

func copyHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}

// sameOutlet reports whether a and b are configured alike.
func sameOutlet(a, b Outlet) bool {
	x, _ := json.Marshal(outletChanged(a, time.Time{}))
	y, _ := json.Marshal(outletChanged(b, time.Time{}))
	return string(x) == string(y)
}

// Exceeded reports whether a batch that has failed attempts times, first
// at firstFailedAt, is to be parked at now.
func (f FailurePolicy) Exceeded(attempts int, firstFailedAt, now time.Time) bool {
	if attempts == 0 {
		return false
	}
	if f.MaxAttempts > 0 && attempts >= f.MaxAttempts {
		return true
	}
	return f.MaxAgeSeconds > 0 && !now.Before(firstFailedAt.Add(time.Duration(f.MaxAgeSeconds)*time.Second))
}

// Rewind decides whether p may rewind o to send again every message
// numbered above after; position is how far o has delivered. A number
// above it is Validation: those messages were never sent.
func (o Outlet) Rewind(p access.Principal, after, position int64) error {
	if err := MayControl(p); err != nil {
		return err
	}
	if after < 0 || after > position {
		return &domain.Error{Code: domain.Validation, Message: "invalid rewind", Details: []domain.FieldError{{
			Field: "after", Reason: fmt.Sprintf("must be between 0 and the outlet's last delivered message number (%d)", position),
		}}}
	}
	return nil
}
