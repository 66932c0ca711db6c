package datatarget_test

import (
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
)

func TestNewDatasync(t *testing.T) {
	spec := datatarget.Spec{Type: datatarget.Datasync, Name: "crm", Settings: datatarget.Settings{
		Datatype: datatarget.Customers, Fields: []string{" email ", "first_name", "email", "COMPANY__tier"}, FromStart: true,
	}}
	d, err := datatarget.New(staff, "d1", spec, now)
	if err != nil {
		t.Fatal(err)
	}
	want := datatarget.Settings{Datatype: datatarget.Customers, Fields: []string{"email", "first_name", "COMPANY__tier"}, FromStart: true}
	if d.Type != datatarget.Datasync || d.Settings.Datatype != want.Datatype || !slices.Equal(d.Settings.Fields, want.Fields) || !d.Settings.FromStart {
		t.Errorf("settings %+v, want %+v", d.Settings, want)
	}
	// The event carries the settings, and gives them back.
	b, _ := json.Marshal(datatarget.NewCreated(d))
	var ev datatarget.Created
	if err := json.Unmarshal(b, &ev); err != nil || !slices.Equal(ev.Datatarget("c1").Settings.Fields, want.Fields) {
		t.Errorf("event %s: %v", b, err)
	}
	// An empty list is every field.
	spec.Settings.Fields = []string{}
	if d, err := datatarget.New(staff, "d1", spec, now); err != nil || d.Settings.Fields != nil {
		t.Errorf("empty fields: %v %v", d.Settings.Fields, err)
	}
	// A messages datatarget has no settings, and its event none either.
	m, _ := datatarget.New(staff, "d2", datatarget.Spec{Type: datatarget.Messages, Name: "m"}, now)
	if b, _ := json.Marshal(datatarget.NewCreated(m)); strings.Contains(string(b), "settings") {
		t.Errorf("messages event %s", b)
	}
}

func TestNewDatasyncRefused(t *testing.T) {
	tests := []struct {
		name     string
		typ      datatarget.Type
		settings datatarget.Settings
		field    string
		message  string
	}{
		{"no datatype", datatarget.Datasync, datatarget.Settings{}, "datatype", "invalid datatarget"},
		{"unknown datatype", datatarget.Datasync, datatarget.Settings{Datatype: "orders"}, "datatype", "invalid datatarget"},
		{"empty field", datatarget.Datasync, datatarget.Settings{Datatype: datatarget.Customers, Fields: []string{"email", " "}}, "fields[1]", "invalid datatarget"},
		{"settings on messages", datatarget.Messages, datatarget.Settings{Datatype: datatarget.Customers}, "datatype", "invalid datatarget"},
	}
	for _, tt := range tests {
		_, err := datatarget.New(staff, "d1", datatarget.Spec{Type: tt.typ, Name: "x", Settings: tt.settings}, now)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.Validation || de.Message != tt.message || !slices.Contains(fields(err), tt.field) {
			t.Errorf("%s: %v %v", tt.name, err, fields(err))
		}
	}
	for _, d := range []datatarget.Datatype{datatarget.Customers, datatarget.Products, datatarget.Events, datatarget.Sales, datatarget.Shops} {
		if !d.Available() {
			t.Errorf("%s available: %v", d, d.Available())
		}
	}
}

// TestNewDatasyncSegment: datatype segment follows the segment
// segment_key names, which must exist; segment_key is refused elsewhere.
func TestNewDatasyncSegment(t *testing.T) {
	exists := func(key string) (bool, error) { return key == "hel", nil }
	spec := datatarget.Spec{Type: datatarget.Datasync, Name: "crm", SegmentExists: exists,
		Settings: datatarget.Settings{Datatype: datatarget.Segment, SegmentKey: "hel", Fields: []string{"email"}}}
	d, err := datatarget.New(staff, "d1", spec, now)
	if err != nil || d.Settings.SegmentKey != "hel" || d.Settings.Datatype != datatarget.Segment {
		t.Fatalf("datatarget %+v: %v", d.Settings, err)
	}
	b, _ := json.Marshal(datatarget.NewCreated(d))
	var ev datatarget.Created
	if err := json.Unmarshal(b, &ev); err != nil || ev.Datatarget("c1").Settings.SegmentKey != "hel" {
		t.Errorf("event %s: %v", b, err)
	}
	for _, tt := range []struct {
		name     string
		settings datatarget.Settings
	}{
		{"no segment_key", datatarget.Settings{Datatype: datatarget.Segment}},
		{"no such segment", datatarget.Settings{Datatype: datatarget.Segment, SegmentKey: "nowhere"}},
		{"segment_key of customers", datatarget.Settings{Datatype: datatarget.Customers, SegmentKey: "hel"}},
	} {
		_, err := datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Datasync, Name: "x", Settings: tt.settings, SegmentExists: exists}, now)
		var de *domain.Error
		if !errors.As(err, &de) || de.Code != domain.Validation || !slices.Equal(fields(err), []string{"segment_key"}) {
			t.Errorf("%s: %v %v, want a validation error naming segment_key", tt.name, err, fields(err))
		}
	}
	_, err = datatarget.New(staff, "d1", datatarget.Spec{Type: datatarget.Messages, Name: "x", Settings: datatarget.Settings{SegmentKey: "hel"}}, now)
	if !slices.Contains(fields(err), "datatype") {
		t.Errorf("segment_key on messages: %v", err)
	}
}
