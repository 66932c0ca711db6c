package segment_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/segment"
)

var staff = access.Principal{CompanyID: "co", Roles: []access.Role{access.RoleStaff}}

func input(t *testing.T, body string) segment.Input {
	t.Helper()
	in, err := segment.ParseInput([]byte(body))
	if err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	return in
}

func codeOf(err error) domain.Code {
	var e *domain.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

func TestParseInputRefusesUnknownFieldsAndWrongTypes(t *testing.T) {
	for _, body := range []string{`{"name": "n", "rules": {}}`, `{"name": 5}`, `[]`, `{"name": "n"} {}`} {
		if _, err := segment.ParseInput([]byte(body)); codeOf(err) != domain.Invalid {
			t.Errorf("%s: %v, want invalid_request", body, err)
		}
	}
	// The read-only fields of an answer may come back.
	input(t, `{"name": "n", "size": 3, "computed_at": null, "created_at": "x", "updated_at": "y"}`)
}

func TestNewAndChangeDecideEvents(t *testing.T) {
	now := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	if _, _, err := segment.New(access.Principal{CompanyID: "co"}, "S", input(t, `{"name": "n", "rule": {"field": "a", "exists": true}}`), now, nil); codeOf(err) != domain.Forbidden {
		t.Errorf("without staff: %v", err)
	}
	b, _, err := segment.New(staff, "bad key", input(t, `{"description": "d"}`), now, nil)
	var e *domain.Error
	if !errors.As(err, &e) || e.Code != domain.Validation || len(e.Details) != 3 {
		t.Fatalf("key, name and rule at once: %+v %v", b, err)
	}
	s, evs, err := segment.New(staff, "S", input(t, `{"name": "n", "rule": { "field" : "a", "exists": true }}`), now, nil)
	if err != nil || len(evs) != 1 || evs[0].EventType() != segment.CreatedType || string(s.Rule) != `{"field":"a","exists":true}` || s.State != segment.StateActive {
		t.Fatalf("created %+v %v %v", s, evs, err)
	}
	later := now.Add(time.Hour)
	for _, tc := range []struct {
		body  string
		types []string
	}{
		{`{"name": "n"}`, nil},
		{`{"segment_key": "S", "rule": {"field":"a","exists":true}}`, nil},
		{`{"name": "m"}`, []string{segment.ChangedType}},
		{`{"state": "archived"}`, []string{segment.ArchivedType}},
		{`{"rule": {"field": "b", "eq": 1}, "state": "archived"}`, []string{segment.ChangedType, segment.ArchivedType}},
	} {
		out, evs, err := s.Change(staff, input(t, tc.body), later, nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.body, err)
		}
		var types []string
		for _, e := range evs {
			types = append(types, e.EventType())
			out0 := s
			for _, e := range evs {
				out0 = out0.Apply(e)
			}
			if out0.Name != out.Name || string(out0.Rule) != string(out.Rule) || out0.State != out.State {
				t.Errorf("%s: the fold of the events %+v is not the decision %+v", tc.body, out0, out)
			}
		}
		if len(types) != len(tc.types) || (len(types) > 0 && types[0] != tc.types[0]) {
			t.Errorf("%s: events %v, want %v", tc.body, types, tc.types)
		}
	}
	for _, body := range []string{`{"segment_key": "T"}`, `{"state": "draft"}`, `{"name": ""}`, `{"rule": {"all": []}}`} {
		if _, _, err := s.Change(staff, input(t, body), later, nil); codeOf(err) != domain.Validation {
			t.Errorf("%s: %v, want a 422", body, err)
		}
	}
	archived, evs, _ := s.Change(staff, input(t, `{"state": "archived"}`), later, nil)
	if back, evs2, _ := archived.Change(staff, input(t, `{"state": "active"}`), later, nil); back.State != segment.StateActive || len(evs2) != 1 || evs2[0].EventType() != segment.ActivatedType || len(evs) != 1 {
		t.Errorf("made active again: %+v %v", back, evs2)
	}
	// Events survive the log: decoded, they fold to the same segment.
	raw, _ := json.Marshal(evs[0])
	if ev, err := segment.Decode(segment.ArchivedType, raw); err != nil || (segment.Segment{}).Apply(ev).State != segment.StateArchived {
		t.Errorf("decode: %v %v", ev, err)
	}
}
