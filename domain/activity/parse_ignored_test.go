package activity_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/values"
)

// TestParseIgnoresUnknownFields: a key that is no field of an event (a
// shop plugin's own, a customer field events do not carry, another
// company's field, a company prefix without a name) is ignored and
// listed, never stored; a key that looks like data is listed as
// values.UnnamedField, never quoted; a known field with a bad value still
// rejects, naming it.
func TestParseIgnoresUnknownFields(t *testing.T) {
	r := parse(t, acme, `{"type": "BROWSE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1", "label": "x",
		"store_id": 1, "mage_type": "simple", "can_email": true, "OTHER__size": "L", "acme__": "x",
		"secret, ann@example.com": "1", "ACME__size": "M", "colour": null}`)
	want := values.Ignored{values.UnnamedField, "OTHER__size", "acme__", "can_email", "mage_type", "store_id"}
	if diff := cmp.Diff(want, r.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"label": "x", "ACME__size": "M"}, r.Fields); diff != "" {
		t.Errorf("fields (-want +got):\n%s", diff)
	}
	if _, ok := r.Customer.Changes.Set["can_email"]; ok {
		t.Errorf("an ignored key changes the customer: %+v", r.Customer.Changes)
	}

	_, err := activity.NewParser(acme).Parse([]byte(`{"type": "BROWSE", "date": "2024-07-01T12:00:00Z", "customer_id": "C-1",
		"label": "x", "store_id": 1, "sentiment_value": "secret"}`))
	var prob *activity.Problem
	if !errors.As(err, &prob) || prob.Field != "sentiment_value" || strings.Contains(prob.Reason, "secret") {
		t.Errorf("a bad known field beside an unknown one: %v, want a rejection naming sentiment_value", err)
	}
}
