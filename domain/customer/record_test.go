package customer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/values"
)

// TestParseRecord checks the rules that concern a whole record: null,
// "", identities, flags, list operations and CSV-style records.
func TestParseRecord(t *testing.T) {
	tests := []struct {
		name   string
		record string
		want   customer.Record
		reason string // of the rejection; "" when accepted
	}{
		{
			name:   "null is absent",
			record: `{"external_id": "A", "first_name": null, "email": null}`,
			want:   customer.Record{ExternalID: "A", Changes: customer.Changes{Set: map[string]any{"external_id": "A"}}},
		},
		{
			name:   "empty string unsets, spaces too",
			record: `{"external_id": "A", "first_name": "", "email": "  ", "tags": "", "ACME__x": ""}`,
			want: customer.Record{ExternalID: "A", Changes: customer.Changes{
				Set: map[string]any{"external_id": "A"}, Unset: []string{"ACME__x", "email", "first_name", "tags"}}},
		},
		{
			name:   "identities normalised",
			record: `{"email": "A@Example.com", "phone_number": "+358 40 1234567"}`,
			want: customer.Record{Email: "a@example.com", Phone: "+358401234567", Changes: customer.Changes{
				Set: map[string]any{"email": "a@example.com", "phone_number": "+358401234567"}}},
		},
		{
			name: "list operations, flat and as objects",
			record: `{"external_id": "A", "tags.add": "x", "tags.remove": ["z", "y"],
				"mailing_lists": {"add": ["n2", "n1"], "remove": "old"}, "mailing_lists.add": "n3"}`,
			want: customer.Record{ExternalID: "A", Changes: customer.Changes{
				Set:    map[string]any{"external_id": "A"},
				Add:    map[string][]string{"tags": {"x"}, "mailing_lists": {"n1", "n2", "n3"}},
				Remove: map[string][]string{"tags": {"y", "z"}, "mailing_lists": {"old"}}}},
		},
		{
			name:   "empty list operations do nothing",
			record: `{"external_id": "A", "tags.add": "", "tags.remove": []}`,
			want:   customer.Record{ExternalID: "A", Changes: customer.Changes{Set: map[string]any{"external_id": "A"}}},
		},
		{
			name:   "CSV-style record: every value a string",
			record: `{"external_id": "12", "can_email": "true", "can_sms": "false", "tags": "vip", "date_joined": "2024-01-01 10:00:00", "is_deleted": "false", "is_forgotten": ""}`,
			want: customer.Record{ExternalID: "12", Changes: customer.Changes{Set: map[string]any{
				"external_id": "12", "can_email": true, "can_sms": false, "tags": []string{"vip"},
				"date_joined": "2024-01-01T08:00:00Z"}}},
		},
		{
			name:   "flags",
			record: `{"email": "a@example.com", "is_deleted": true, "is_forgotten": "TRUE"}`,
			want: customer.Record{Email: "a@example.com", Delete: true, Forget: true,
				Changes: customer.Changes{Set: map[string]any{"email": "a@example.com"}}},
		},
		{name: "no identity", record: `{"first_name": "Ann"}`, reason: customer.ReasonNoID},
		{name: "only removed identities", record: `{"email": "", "phone_number": "", "external_id": null}`, reason: customer.ReasonNoID},
		{name: "a list", record: `[{"email": "a@example.com"}]`, reason: "record must be a JSON object"},
		{name: "null", record: `null`, reason: "record must be a JSON object"},
		{
			name:   "unknown fields ignored, and listed",
			record: `{"email": "a@example.com", "colour": "red", "mage_type": "simple", "OTHER__x": "1", "ACME__": 1, "__size": "L", "store_id": null}`,
			want: customer.Record{Email: "a@example.com", Changes: customer.Changes{Set: map[string]any{"email": "a@example.com"}},
				Ignored: values.Ignored{"ACME__", "OTHER__x", "__size", "colour", "mage_type"}},
		},
		{name: "bad tags object", record: `{"email": "a@example.com", "tags": {"set": ["x"]}}`, reason: "an object here may only have the keys add and remove"},
	}
	p := customer.NewParser(acme)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := p.Parse([]byte(tt.record))
			if tt.reason != "" {
				var pr *customer.Problem
				if !errors.As(err, &pr) || pr.Reason != tt.reason {
					t.Fatalf("Parse = %v, want reason %q", err, tt.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if diff := cmp.Diff(tt.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

// TestParseNeverQuotesFieldLikeValues: a key that looks like data (a CSV
// whose header line is a data row) is ignored without being quoted.
func TestParseNeverQuotesFieldLikeValues(t *testing.T) {
	r, err := customer.NewParser(acme).Parse([]byte(`{"email": "a@example.com", "john.doe@example.com": "x", "Ann Smith": "y"}`))
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	if diff := cmp.Diff(values.Ignored{values.UnnamedField}, r.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
	if strings.Contains(fmt.Sprint(r), "john") {
		t.Errorf("record %+v quotes the key", r)
	}
}

func TestFieldNames(t *testing.T) {
	c := customer.Changes{
		Set:   map[string]any{"email": "a", "tags": []string{}},
		Unset: []string{"city"},
		Add:   map[string][]string{"tags": {"x"}, "mailing_lists": {"n"}},
	}
	want := []string{"city", "email", "mailing_lists", "tags"}
	if diff := cmp.Diff(want, c.FieldNames()); diff != "" {
		t.Errorf("FieldNames (-want +got):\n%s", diff)
	}
}
