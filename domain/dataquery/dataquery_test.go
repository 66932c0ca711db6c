package dataquery_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/dataquery"
	"github.com/clientele/clientele/domain/importing"
)

func TestParse(t *testing.T) {
	q, err := dataquery.Parse([]byte(`{"datatype": "Events", "match": {"type": "BROWSE", "label.exists": false, "sentiment_value": 5, "path": null}, "update": {"is_deleted": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := false
	want := dataquery.Query{Datatype: importing.Events, Match: []dataquery.Condition{
		{Field: "label", Exists: &f},
		{Field: "path", Exists: &f},
		{Field: "sentiment_value", Value: json.RawMessage(`5`)},
		{Field: "type", Value: json.RawMessage(`"BROWSE"`)},
	}, Update: map[string]any{"is_deleted": true}}
	if diff := cmp.Diff(want, q); diff != "" {
		t.Errorf("query (-want +got):\n%s", diff)
	}
}

func TestParseRefuses(t *testing.T) {
	tests := []struct {
		name, body string
		code       domain.Code
		field      string
	}{
		{"not JSON", `{`, domain.Invalid, ""},
		{"unknown key", `{"datatype": "events", "match": {"a": 1}, "update": {"is_deleted": true}, "x": 1}`, domain.Invalid, ""},
		{"unknown datatype", `{"datatype": "orders", "match": {"a": 1}, "update": {"b": 1}}`, domain.Validation, "datatype"},
		{"empty match", `{"datatype": "events", "match": {}, "update": {"is_deleted": true}}`, domain.Validation, "match"},
		{"exists not boolean", `{"datatype": "events", "match": {"label.exists": "yes"}, "update": {"is_deleted": true}}`, domain.Validation, "match.label.exists"},
		{"object value", `{"datatype": "events", "match": {"label": {"a": 1}}, "update": {"is_deleted": true}}`, domain.Validation, "match.label"},
		{"bad field name", `{"datatype": "events", "match": {"a b": 1}, "update": {"is_deleted": true}}`, domain.Validation, "match"},
		{"empty update", `{"datatype": "customers", "match": {"city": "Espoo"}, "update": {}}`, domain.Validation, "update"},
		{"events other than deletion", `{"datatype": "events", "match": {"type": "BROWSE"}, "update": {"label": "x"}}`, domain.Validation, "update"},
		{"events undeletion", `{"datatype": "events", "match": {"type": "BROWSE"}, "update": {"is_deleted": false}}`, domain.Validation, "update"},
		{"identifier in update", `{"datatype": "customers", "match": {"city": "Espoo"}, "update": {"email": "a@x.com"}}`, domain.Validation, "update.email"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := dataquery.Parse([]byte(tt.body))
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != tt.code {
				t.Fatalf("error %v, want code %s", err, tt.code)
			}
			if tt.field != "" && (len(de.Details) == 0 || de.Details[0].Field != tt.field) {
				t.Errorf("details %+v, want field %s", de.Details, tt.field)
			}
		})
	}
}

func TestRecord(t *testing.T) {
	q := dataquery.Query{Datatype: importing.Customers, Update: map[string]any{"city": "Espoo"}}
	rec, ok := q.Record(map[string]any{"email": "a@x.com", "phone_number": "+358401234567", "city": "Turku"})
	if diff := cmp.Diff(map[string]any{"email": "a@x.com", "city": "Espoo"}, rec); !ok || diff != "" {
		t.Errorf("customer record (-want +got):\n%s", diff)
	}
	rec, ok = q.Record(map[string]any{"external_id": "A", "customer_token": "tok", "city": "Turku"})
	if diff := cmp.Diff(map[string]any{"customer_token": "tok", "city": "Espoo"}, rec); !ok || diff != "" {
		t.Errorf("customer record with a token (-want +got):\n%s", diff)
	}
	if _, ok := q.Record(map[string]any{"city": "Turku"}); ok {
		t.Error("a customer without identifiers (forgotten) got a record")
	}
	ev := dataquery.Query{Datatype: importing.Events, Update: map[string]any{"is_deleted": true}}
	rec, _ = ev.Record(map[string]any{"id": json.Number("12"), "type": "BROWSE"})
	if diff := cmp.Diff(map[string]any{"id": json.Number("12"), "is_deleted": true}, rec); diff != "" {
		t.Errorf("event record (-want +got):\n%s", diff)
	}
}
