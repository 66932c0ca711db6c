package systemtest_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestPatchRefusesUnknownFields: every PATCH route the server registers
// answers a body with a key it does not take ({"paused": true}, a key in
// another case, a key that does not look like a field name) with 400
// naming each such key it may quote, and changes nothing, not even the
// known fields sent with it. A route added without a fixture here fails
// the test.
func TestPatchRefusesUnknownFields(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	datatargetID := e.createDatatarget(admin, "orders")
	campaign := e.createCampaign(admin, map[string]any{"kind": "email", "name": "spring"})
	outletID := e.createOutlet(admin, datatargetID, "http://127.0.0.1:9/hook", false)
	segment := e.createSegment(admin, map[string]any{"segment_key": "vip", "name": "VIP", "rule": vipRule})
	// The parameters of each PATCH route (every spelling: with and without
	// /api and the final slash), and a field it takes: its key and a value.
	params := map[string]struct {
		replace    *strings.Replacer
		key, value string
	}{
		"/datatargets/:id":                    {strings.NewReplacer(":id", datatargetID), "name", "renamed"},
		"/campaigns/:key":                     {strings.NewReplacer(":key", campaign.CampaignKey), "name", "renamed"},
		"/segments/:key":                      {strings.NewReplacer(":key", segment.SegmentKey), "name", "renamed"},
		"/datatargets/:id/outlets/:outlet_id": {strings.NewReplacer(":id", datatargetID, ":outlet_id", outletID), "secret", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"},
	}
	covered := map[string]bool{}
	for _, r := range e.api.Routes() {
		if r.Method != http.MethodPatch {
			continue
		}
		route := strings.TrimSuffix(strings.TrimPrefix(r.Path, "/api"), "/")
		param, ok := params[route]
		if !ok {
			t.Errorf("PATCH %s: no fixture in this test", r.Path)
			continue
		}
		covered[route] = true
		path := param.replace.Replace(r.Path)
		known := param.key
		before := e.do(http.MethodGet, path, bearer(admin))
		before.wantStatus(t, http.StatusOK)
		for _, tt := range []struct {
			body      map[string]any
			fields    []string // the details' fields, in order
			unquoted  bool     // a detail that names no field
			forbidden string   // what the answer must not quote
		}{
			{body: map[string]any{"paused": true}, fields: []string{"paused"}},
			{body: map[string]any{known: param.value, "paused": true, "colour": "red"}, fields: []string{"colour", "paused"}},
			{body: map[string]any{strings.ToUpper(known[:1]) + known[1:]: param.value}, fields: []string{strings.ToUpper(known[:1]) + known[1:]}},
			{body: map[string]any{known: param.value, "jane@example.com": 1}, fields: []string{""}, unquoted: true, forbidden: "jane@example.com"},
		} {
			res := e.do(http.MethodPatch, path, bearer(admin), jsonBody(tt.body))
			b := res.wantError(t, http.StatusBadRequest, "invalid_request")
			var got []string
			for _, d := range b.Error.Details {
				got = append(got, d.Field)
				if !strings.Contains(d.Reason, "unknown field") {
					t.Errorf("PATCH %s %v: reason %q", r.Path, tt.body, d.Reason)
				}
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("PATCH %s %v: details name %q, want %q: %s", r.Path, tt.body, got, tt.fields, res.body)
			}
			if tt.forbidden != "" && strings.Contains(string(res.body), tt.forbidden) {
				t.Errorf("PATCH %s: the answer quotes %q: %s", r.Path, tt.forbidden, res.body)
			}
		}
		if after := e.do(http.MethodGet, path, bearer(admin)); string(after.body) != string(before.body) {
			t.Errorf("PATCH %s changed it:\n%s\n%s", r.Path, before.body, after.body)
		}
		// A body with only known fields still changes it.
		e.do(http.MethodPatch, path, bearer(admin), jsonBody(map[string]any{known: param.value})).wantStatus(t, http.StatusOK)
	}
	if len(covered) != len(params) {
		t.Errorf("PATCH routes %v, fixtures %v", covered, params)
	}
}
