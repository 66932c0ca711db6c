package datatarget_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

// TestOutletChange: only admins change outlets; a change is validated as
// a creation; enabling clears the service's disabling; a patch that
// changes nothing is no change.
func TestOutletChange(t *testing.T) {
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	o, err := datatarget.NewOutlet(staff, d, "o1", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "https://example.com/"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	no, yes := false, true
	var de *domain.Error
	if _, _, err := o.Change(staff, datatarget.OutletPatch{Enabled: &no}); !errors.As(err, &de) || de.Code != domain.Forbidden {
		t.Errorf("staff pausing: %v", err)
	}
	if _, changed, err := o.Change(admin, datatarget.OutletPatch{Enabled: &yes}); err != nil || changed {
		t.Errorf("enabling an enabled outlet: changed %v, %v", changed, err)
	}
	bad := "ftp://x"
	if _, _, err := o.Change(admin, datatarget.OutletPatch{Request: &datatarget.RequestPatch{URL: &bad}}); !errors.As(err, &de) || de.Code != domain.Validation {
		t.Errorf("a bad URL: %v", err)
	}
	batched := true
	got, changed, err := o.Change(admin, datatarget.OutletPatch{IsBatched: &batched})
	if err != nil || !changed || got.MaxBatchSize != datatarget.BatchedMaxBatchSize || got.Request.URL != o.Request.URL {
		t.Errorf("batching: %+v %v %v", got, changed, err)
	}
	o.Enabled, o.DisabledReason = false, "the receiver answered 410 Gone"
	if got, _, _ := o.Change(admin, datatarget.OutletPatch{Enabled: &yes}); !got.Enabled || got.DisabledReason != "" {
		t.Errorf("enabled again: %+v", got)
	}
}

func TestFailurePolicyExceeded(t *testing.T) {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		policy   datatarget.FailurePolicy
		attempts int
		at       time.Time
		want     bool
	}{
		{"none", datatarget.FailurePolicy{}, 1000, first.Add(1000 * time.Hour), false},
		{"no failure yet", datatarget.FailurePolicy{MaxAttempts: 1}, 0, first, false},
		{"attempts reached", datatarget.FailurePolicy{MaxAttempts: 3}, 3, first, true},
		{"attempts below", datatarget.FailurePolicy{MaxAttempts: 3}, 2, first, false},
		{"age reached", datatarget.FailurePolicy{MaxAgeSeconds: 60}, 1, first.Add(time.Minute), true},
		{"age below", datatarget.FailurePolicy{MaxAgeSeconds: 60}, 1, first.Add(59 * time.Second), false},
		{"either", datatarget.FailurePolicy{MaxAttempts: 100, MaxAgeSeconds: 60}, 2, first.Add(2 * time.Minute), true},
	}
	for _, tt := range tests {
		if got := tt.policy.Exceeded(tt.attempts, first, tt.at); got != tt.want {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestOutletProblemsAreCapped: an outlet's problems are collected by
// domain.Problems, as every validation's are: a request with a thousand
// bad headers, created or changed, is answered with the first
// domain.MaxDetails problems and the count of the others.
func TestOutletProblemsAreCapped(t *testing.T) {
	headers := map[string]string{}
	for i := range 1000 {
		headers[fmt.Sprintf("Bad Header %d", i)] = "x"
	}
	d, _ := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "dt"}, now)
	_, created := datatarget.NewOutlet(staff, d, "o1", datatarget.OutletSpec{Type: "webhook",
		Request: datatarget.Request{URL: "https://example.com/", Headers: headers}}, now)
	o, err := datatarget.NewOutlet(staff, d, "o1", datatarget.OutletSpec{Type: "webhook", Request: datatarget.Request{URL: "https://example.com/"}}, now)
	if err != nil {
		t.Fatal(err)
	}
	_, _, changed := o.Change(admin, datatarget.OutletPatch{Request: &datatarget.RequestPatch{Headers: &headers}})
	for name, err := range map[string]error{"created": created, "changed": changed} {
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.Validation {
			t.Fatalf("%s: %v", name, err)
		}
		if len(de.Details) != domain.MaxDetails || de.More != 1000-domain.MaxDetails {
			t.Errorf("%s: %d details and %d more, want %d and %d", name, len(de.Details), de.More, domain.MaxDetails, 1000-domain.MaxDetails)
		}
	}
}
