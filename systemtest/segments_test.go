package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/domain/segment"
)

// segmentJSON is a segment as a client reads it.
type segmentJSON struct {
	SegmentKey  string         `json:"segment_key"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Rule        map[string]any `json:"rule"`
	State       string         `json:"state"`
	CreatedAt   string         `json:"created_at"`
	UpdatedAt   string         `json:"updated_at"`
	Size        int            `json:"size"`
	ComputedAt  string         `json:"computed_at"`
}

// segmentOf decodes {"segment": {...}}.
func segmentOf(t *testing.T, res response) segmentJSON {
	t.Helper()
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Segment segmentJSON `json:"segment"`
	}
	res.decode(t, &a)
	return a.Segment
}

// createSegment creates a segment with body and returns it.
func (e *env) createSegment(token string, body any, opts ...option) segmentJSON {
	e.t.Helper()
	return segmentOf(e.t, e.do(http.MethodPost, "/api/segments/", append([]option{bearer(token), jsonBody(body)}, opts...)...))
}

// patchSegment sends a PATCH of the segment key.
func (e *env) patchSegment(token, key string, body any) response {
	e.t.Helper()
	return e.do(http.MethodPatch, "/api/segments/"+key+"/", bearer(token), jsonBody(body))
}

// segmentStream returns the types of the events of a segment's stream.
func (e *env) segmentStream(companyID, key string) []string {
	e.t.Helper()
	evs, err := e.store.ReadStream(context.Background(), segment.Stream(companyID, key), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return types
}

var vipRule = map[string]any{"all": []any{
	map[string]any{"field": "can_email", "eq": true},
	map[string]any{"field": "tags", "contains": "vip"},
}}

// TestSegmentLifecycle: a segment created under a given key and under
// generated ones (SE-<n> per company), read, listed, changed, archived
// and made active again, each change an event of its stream.
func TestSegmentLifecycle(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)

	s := e.createSegment(admin, map[string]any{"segment_key": "vip", "name": "VIP", "description": "Our best", "rule": vipRule})
	if s.SegmentKey != "vip" || s.Name != "VIP" || s.Description != "Our best" || s.State != "active" || s.Rule["all"] == nil {
		t.Errorf("created %+v", s)
	}
	if got := segmentOf(t, e.do(http.MethodGet, "/api/segments/vip/", bearer(admin))); fmt.Sprint(got) != fmt.Sprint(s) {
		t.Errorf("GET %+v, want the creation's answer %+v", got, s)
	}
	for i := range 2 {
		g := e.createSegment(admin, map[string]any{"name": "g", "rule": map[string]any{"field": "city", "eq": "Turku"}})
		if want := fmt.Sprintf("SE-%d", i+1); g.SegmentKey != want {
			t.Errorf("generated key %s, want %s", g.SegmentKey, want)
		}
	}
	globex := e.userToken(e.globexAd, globexHost)
	if g := e.createSegment(globex, map[string]any{"name": "g", "rule": vipRule}, host(globexHost)); g.SegmentKey != "SE-1" {
		t.Errorf("globex's first generated key %s, want its own SE-1", g.SegmentKey)
	}
	e.do(http.MethodPost, "/api/segments/", bearer(admin), jsonBody(map[string]any{"segment_key": "vip", "name": "x", "rule": vipRule})).
		wantError(t, http.StatusConflict, "conflict")

	var list struct {
		Segments []segmentJSON `json:"segments"`
	}
	res := e.do(http.MethodGet, "/api/segments/", bearer(admin))
	res.wantStatus(t, http.StatusOK)
	res.decode(t, &list)
	var keys []string
	for _, l := range list.Segments {
		keys = append(keys, l.SegmentKey)
	}
	// Oldest first, the key breaking ties (the tests' clock stands still).
	if !slices.Equal(keys, []string{"SE-1", "SE-2", "vip"}) {
		t.Errorf("listed %v", keys)
	}

	changed := segmentOf(t, e.patchSegment(admin, "vip", map[string]any{"name": "VIPs", "rule": map[string]any{"field": "tags", "contains": "vip"}}))
	if changed.Name != "VIPs" || changed.Description != "Our best" || changed.Rule["field"] != "tags" {
		t.Errorf("changed %+v", changed)
	}
	segmentOf(t, e.patchSegment(admin, "vip", map[string]any{"name": "VIPs"})) // nothing changes: no event
	if got := segmentOf(t, e.patchSegment(admin, "vip", map[string]any{"state": "archived"})); got.State != "archived" {
		t.Errorf("archived: %+v", got)
	}
	if got := segmentOf(t, e.patchSegment(admin, "vip", map[string]any{"state": "active"})); got.State != "active" {
		t.Errorf("active again: %+v", got)
	}
	want := []string{segment.CreatedType, segment.ChangedType, segment.ArchivedType, segment.ActivatedType}
	if got := e.segmentStream(e.acme.ID, "vip"); !slices.Equal(got, want) {
		t.Errorf("stream %v, want %v", got, want)
	}
	e.patchSegment(admin, "vip", map[string]any{"segment_key": "other"}).wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.patchSegment(admin, "nope", map[string]any{"name": "x"}).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/segments/nope/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
}

// TestSegmentRuleErrorsNameThePath: a bad rule is 422 whose one detail
// names the path of the bad part; a bad body is 400.
func TestSegmentRuleErrorsNameThePath(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	for _, tc := range []struct {
		rule any
		path string
	}{
		{map[string]any{"all": []any{
			map[string]any{"field": "city", "eq": "Turku"},
			map[string]any{"field": "age", "gt": 18},
			map[string]any{"event": map[string]any{"type": "BROWSE", "within_days": 0}},
		}}, "rule.all[2].event.within_days"},
		{map[string]any{"any": []any{map[string]any{"field": "x", "like": 1}}}, "rule.any[0]"},
		{map[string]any{"sales": map[string]any{"min_revenue": -5}}, "rule.sales.min_revenue"},
		{"everyone", "rule"},
	} {
		b := e.do(http.MethodPost, "/api/segments/", bearer(admin), jsonBody(map[string]any{"name": "n", "rule": tc.rule})).
			wantError(t, http.StatusUnprocessableEntity, "validation_error")
		if len(b.Error.Details) != 1 || b.Error.Details[0].Field != tc.path {
			t.Errorf("rule %v: details %+v, want the path %s", tc.rule, b.Error.Details, tc.path)
		}
	}
	b := e.do(http.MethodPost, "/api/segments/", bearer(admin), jsonBody(map[string]any{"name": "n"})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
	if len(b.Error.Details) != 1 || b.Error.Details[0].Field != "rule" {
		t.Errorf("no rule: %+v", b.Error.Details)
	}
	e.do(http.MethodPost, "/api/segments/", bearer(admin), jsonBody(map[string]any{"name": "n", "rule": vipRule, "rules": 1})).
		wantError(t, http.StatusBadRequest, "invalid_request")
	e.do(http.MethodPost, "/api/segments/", bearer(admin), jsonBody(map[string]any{"name": 5, "rule": vipRule})).
		wantError(t, http.StatusBadRequest, "invalid_request")
}

// TestSegmentCyclesRefused: a rule naming an unknown segment, itself, or
// a segment that leads back to it is 422 naming the leaf.
func TestSegmentCyclesRefused(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	e.createSegment(admin, map[string]any{"segment_key": "A", "name": "a", "rule": vipRule})
	e.createSegment(admin, map[string]any{"segment_key": "B", "name": "b", "rule": map[string]any{"not": map[string]any{"segment": "A"}}})
	e.createSegment(admin, map[string]any{"segment_key": "C", "name": "c", "rule": map[string]any{"any": []any{map[string]any{"segment": "B"}}}})

	for _, tc := range []struct {
		method, path string
		body         map[string]any
		field        string
	}{
		{http.MethodPatch, "/api/segments/A/", map[string]any{"rule": map[string]any{"segment": "C"}}, "rule.segment"},
		{http.MethodPatch, "/api/segments/A/", map[string]any{"rule": map[string]any{"all": []any{vipRule, map[string]any{"segment": "A"}}}}, "rule.all[1].segment"},
		{http.MethodPost, "/api/segments/", map[string]any{"name": "d", "rule": map[string]any{"segment": "Z"}}, "rule.segment"},
	} {
		b := e.do(tc.method, tc.path, bearer(admin), jsonBody(tc.body)).wantError(t, http.StatusUnprocessableEntity, "validation_error")
		if len(b.Error.Details) != 1 || b.Error.Details[0].Field != tc.field {
			t.Errorf("%s %s %v: details %+v, want %s", tc.method, tc.path, tc.body, b.Error.Details, tc.field)
		}
	}
	if got := e.segmentStream(e.acme.ID, "A"); len(got) != 1 {
		t.Errorf("a refused change was appended: %v", got)
	}
	// Segments of segments are fine without a cycle.
	e.createSegment(admin, map[string]any{"segment_key": "D", "name": "d", "rule": map[string]any{"all": []any{map[string]any{"segment": "C"}, map[string]any{"segment": "A"}}}})
}

// TestSegmentAuthorization: managing segments needs staff; any token of
// the company reads them; scopes apply as to any path.
func TestSegmentAuthorization(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	s := e.createSegment(staff, map[string]any{"name": "n", "rule": vipRule})
	segmentOf(t, e.patchSegment(staff, s.SegmentKey, map[string]any{"name": "m"}))

	integ := e.createIntegration(admin, "esp")
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ}).AccessToken.Token
	e.do(http.MethodPost, "/api/segments/", bearer(bare), jsonBody(map[string]any{"name": "n", "rule": vipRule})).wantError(t, http.StatusForbidden, "forbidden")
	e.patchSegment(bare, s.SegmentKey, map[string]any{"name": "x"}).wantError(t, http.StatusForbidden, "forbidden")
	segmentOf(t, e.do(http.MethodGet, "/api/segments/"+s.SegmentKey+"/", bearer(bare)))
	e.do(http.MethodGet, "/api/segments/", bearer(bare)).wantStatus(t, http.StatusOK)

	scoped := e.createToken(admin, map[string]any{"scopes": []map[string]string{{"method": "GET", "path": "/api/segments/" + s.SegmentKey + "/"}}}).AccessToken.Token
	segmentOf(t, e.do(http.MethodGet, "/api/segments/"+s.SegmentKey+"/", bearer(scoped)))
	e.do(http.MethodGet, "/api/segments/", bearer(scoped)).wantError(t, http.StatusForbidden, "forbidden")
	e.patchSegment(scoped, s.SegmentKey, map[string]any{"name": "x"}).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodGet, "/api/segments/", withHeader("Authorization", "Bearer nope")).wantError(t, http.StatusUnauthorized, "unauthorized")
	// Another company's segment is not found.
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/segments/"+s.SegmentKey+"/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")
}

// TestSegmentMembersOff: a server that does not compute segment
// membership (serve --segment-members=false) answers the routes of
// members, history and previews 409 saying how to turn it on, never an
// empty list that reads as an answer; segments themselves are managed
// as ever.
func TestSegmentMembersOff(t *testing.T) {
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.SegmentMembersOff = true })
	admin := e.userToken(e.admin, acmeHost)
	e.createSegment(admin, map[string]any{"segment_key": "vip", "name": "VIP", "rule": vipRule})
	id := "01a2265f0ab774a7be54bcbaef628ecb" // the answer comes before any look-up
	for _, r := range []struct {
		method, path string
		body         any
	}{
		{http.MethodGet, "/api/segments/vip/customers/", nil},
		{http.MethodGet, "/api/segments/vip/history/", nil},
		{http.MethodGet, "/api/customers/" + id + "/segments/", nil},
		{http.MethodGet, "/api/data/customers/?segment=vip", nil},
		{http.MethodPost, "/api/segments/preview/", map[string]any{"rule": vipRule}},
	} {
		opts := []option{bearer(admin)}
		if r.body != nil {
			opts = append(opts, jsonBody(r.body))
		}
		res := e.do(r.method, r.path, opts...)
		res.wantError(t, http.StatusConflict, "conflict")
		if !strings.Contains(string(res.body), "--segment-members") {
			t.Errorf("%s %s: %s, want it to say how to turn membership on", r.method, r.path, res.body)
		}
	}
	if s := segmentOf(t, e.do(http.MethodGet, "/api/segments/vip/", bearer(admin))); s.Name != "VIP" {
		t.Errorf("the segment: %+v", s)
	}
}
