package systemtest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
)

// campaignJSON is a campaign as a client reads it.
type campaignJSON struct {
	CampaignKey  string           `json:"campaign_key"`
	Kind         string           `json:"kind"`
	Automated    bool             `json:"automated"`
	Name         string           `json:"name"`
	State        string           `json:"state"`
	UTMCampaign  *string          `json:"utm_campaign"`
	CampaignTags []map[string]any `json:"campaign_tags"`
	Folder       map[string]any   `json:"folder"`
	Permissions  map[string]any   `json:"permissions"`
	ProductIDs   []string         `json:"product_ids"`
	CreatedAt    string           `json:"created_at"`
	ActivatedAt  *string          `json:"activated_at"`
	UpdatedAt    string           `json:"updated_at"`
}

// campaignOf decodes {"campaign": {...}}.
func campaignOf(t *testing.T, res response) campaignJSON {
	t.Helper()
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Campaign campaignJSON `json:"campaign"`
	}
	res.decode(t, &a)
	return a.Campaign
}

// createCampaign creates a campaign with body and returns it.
func (e *env) createCampaign(token string, body any, opts ...option) campaignJSON {
	e.t.Helper()
	return campaignOf(e.t, e.do(http.MethodPost, "/api/campaigns/", append([]option{bearer(token), jsonBody(body)}, opts...)...))
}

// patchCampaign sends a PATCH of the campaign key.
func (e *env) patchCampaign(token, key string, body any) response {
	e.t.Helper()
	return e.do(http.MethodPatch, "/api/campaigns/"+key+"/", bearer(token), jsonBody(body))
}

// campaignStream returns the events of a campaign's stream.
func (e *env) campaignStream(companyID, key string) []string {
	e.t.Helper()
	evs, err := e.store.ReadStream(context.Background(), campaign.Stream(companyID, key), 0)
	if err != nil {
		e.t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
	}
	return types
}

// campaignNow is the commands' clock as campaigns answer it.
const campaignNow = "2025-01-02T03:04:05.123456Z"

// TestCampaignCreate: a campaign under a given key and under generated
// ones (CA-1, CA-2, ... per company), with the defaults of each kind.
func TestCampaignCreate(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)

	res := e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{
		"campaign_key": "spring-2025", "kind": "email", "name": "  Spring sale  ", "utm_campaign": "spring",
		"campaign_tags": []any{map[string]any{"id": 7, "label": "Sales"}, map[string]any{"id": "b2c", "label": "B2C"}},
		"folder":        map[string]any{"id": 3, "name": "Seasonal"},
		"product_ids":   []any{"P-1", 55, "P-1", " P-2 "},
	}))
	golden(t, "campaign", res.body)
	res = e.do(http.MethodGet, "/api/campaigns/spring-2025/", bearer(admin))
	golden(t, "campaign", res.body) // the creation's answer is what GET answers

	// Generated keys count per company, from 1.
	for i, kind := range []string{"automated-email", "sms", "automated-sms", "EXT"} {
		c := e.createCampaign(admin, map[string]any{"kind": kind, "name": kind})
		if want := fmt.Sprintf("CA-%d", i+1); c.CampaignKey != want {
			t.Errorf("generated key %s, want %s", c.CampaignKey, want)
		}
	}
	globex := e.userToken(e.globexAd, globexHost)
	if c := e.createCampaign(globex, map[string]any{"kind": "email", "name": "x"}, host(globexHost)); c.CampaignKey != "CA-1" {
		t.Errorf("globex's first generated key %s, want its own CA-1", c.CampaignKey)
	}
	// "" asks for a key as absence does; a given key in the generated
	// form is skipped by the generator.
	if c := e.createCampaign(admin, map[string]any{"campaign_key": "CA-6", "kind": "email", "name": "x"}); c.CampaignKey != "CA-6" {
		t.Errorf("given CA-6: %s", c.CampaignKey)
	}
	var keys []string
	for range 2 {
		keys = append(keys, e.createCampaign(admin, map[string]any{"campaign_key": "", "kind": "email", "name": "x"}).CampaignKey)
	}
	if !slices.Equal(keys, []string{"CA-5", "CA-7"}) {
		t.Errorf("generated after a given CA-6: %v, want CA-5 CA-7", keys)
	}

	// The defaults of each kind.
	cases := []struct {
		kind, permission string
		automated        bool
	}{
		{"email", "can_email", false},
		{"automated-email", "can_email", true},
		{"sms", "can_sms", false},
		{"automated-sms", "can_sms", true},
		{"EXT", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.kind, func(t *testing.T) {
			c := e.createCampaign(admin, map[string]any{"kind": tc.kind, "name": "n"})
			var perm string
			if p, ok := c.Permissions["marketing_permission"].(string); ok {
				perm = p
			} else if c.Permissions["marketing_permission"] != nil || c.Permissions == nil {
				t.Errorf("permissions %v", c.Permissions)
			}
			if perm != tc.permission || c.Automated != tc.automated || c.State != "draft" || c.CreatedAt != campaignNow ||
				c.UpdatedAt != campaignNow || c.ActivatedAt != nil || c.UTMCampaign != nil || c.Folder != nil ||
				c.CampaignTags == nil || len(c.CampaignTags) != 0 || c.ProductIDs == nil || len(c.ProductIDs) != 0 {
				t.Errorf("defaults of %s: %+v", tc.kind, c)
			}
			// A permission given wins over the kind's.
			c = e.createCampaign(admin, map[string]any{"kind": tc.kind, "name": "n", "permissions": map[string]any{"marketing_permission": "can_push"}})
			if c.Permissions["marketing_permission"] != "can_push" {
				t.Errorf("given permission: %v", c.Permissions)
			}
		})
	}
}

// TestCampaignTransitions tries every move between states: the allowed
// ones answer 200 with the new state, the others 422 naming state, and
// the campaign stays as it was.
func TestCampaignTransitions(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	// reach creates a campaign in state s.
	reach := func(t *testing.T, s string) string {
		t.Helper()
		switch s {
		case "draft", "active", "archived":
			return e.createCampaign(admin, map[string]any{"kind": "email", "name": "n", "state": s}).CampaignKey
		}
		key := e.createCampaign(admin, map[string]any{"kind": "email", "name": "n", "state": "active"}).CampaignKey
		if c := campaignOf(t, e.patchCampaign(admin, key, map[string]any{"state": s})); c.State != s {
			t.Fatalf("reach %s: %+v", s, c)
		}
		return key
	}
	allowed := map[[2]string]bool{
		{"draft", "active"}: true, {"draft", "archived"}: true,
		{"active", "paused"}: true, {"active", "archived"}: true,
		{"paused", "active"}: true, {"paused", "archived"}: true,
	}
	states := []string{"draft", "active", "paused", "archived"}
	for _, from := range states {
		for _, to := range states {
			t.Run(from+"->"+to, func(t *testing.T) {
				key := reach(t, from)
				before := e.campaignStream(e.acme.ID, key)
				res := e.patchCampaign(admin, key, map[string]any{"state": to})
				switch {
				case from == to: // no move: nothing happens
					if c := campaignOf(t, res); c.State != to {
						t.Errorf("state %s", c.State)
					}
					if after := e.campaignStream(e.acme.ID, key); len(after) != len(before) {
						t.Errorf("repeating the state appended %v", after[len(before):])
					}
				case allowed[[2]string{from, to}]:
					if c := campaignOf(t, res); c.State != to {
						t.Errorf("state %s, want %s", c.State, to)
					}
				default:
					b := res.wantError(t, http.StatusUnprocessableEntity, "validation_error")
					if len(b.Error.Details) != 1 || b.Error.Details[0].Field != "state" {
						t.Errorf("details %+v", b.Error.Details)
					}
					if c := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/"+key, bearer(admin))); c.State != from {
						t.Errorf("refused move left state %s", c.State)
					}
				}
			})
		}
	}
	// On creation only moves from draft are possible.
	e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{"kind": "email", "name": "n", "state": "paused"})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
	e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{"kind": "email", "name": "n", "state": "running"})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
}

// TestCampaignActivatedAt: activation sets activated_at to now unless the
// request gives one (imported history); it stays through pauses, and is
// set by activation only.
func TestCampaignActivatedAt(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	if _, err := e.cmds.UpdateCompanySettings.Handle(context.Background(), commands.UpdateCompanySettings{
		Principal: access.System(e.acme.ID), CompanyID: e.acme.ID, Change: company.SettingsChange{Timezone: pointerTo("Europe/Helsinki")},
	}); err != nil {
		t.Fatal(err)
	}

	now := e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"})
	c := campaignOf(t, e.patchCampaign(admin, now.CampaignKey, map[string]any{"state": "active"}))
	if c.ActivatedAt == nil || *c.ActivatedAt != campaignNow {
		t.Errorf("activated now: %v", c.ActivatedAt)
	}

	cases := []struct{ given, want string }{
		{"2024-03-01T10:00:00+02:00", "2024-03-01T08:00:00Z"},
		{"2024-03-01 10:00:00", "2024-03-01T08:00:00Z"}, // naive: the company's zone
		{"2024-03-01", "2024-02-29T22:00:00Z"},
		{"2024-03-01T10:00:00.25Z", "2024-03-01T10:00:00.25Z"},
	}
	for _, tc := range cases {
		key := e.createCampaign(admin, map[string]any{"kind": "automated-email", "name": "n"}).CampaignKey
		c := campaignOf(t, e.patchCampaign(admin, key, map[string]any{"state": "active", "activated_at": tc.given}))
		if c.ActivatedAt == nil || *c.ActivatedAt != tc.want {
			t.Errorf("activated_at %s: %v, want %s", tc.given, c.ActivatedAt, tc.want)
		}
	}
	// On creation, with the move to active.
	c = e.createCampaign(admin, map[string]any{"kind": "email", "name": "n", "state": "active", "activated_at": "2023-05-06T07:08:09Z"})
	if c.State != "active" || c.ActivatedAt == nil || *c.ActivatedAt != "2023-05-06T07:08:09Z" {
		t.Errorf("created active: %+v", c)
	}
	hist := c.CampaignKey

	// Pausing and resuming keep the first activation.
	campaignOf(t, e.patchCampaign(admin, hist, map[string]any{"state": "paused"}))
	c = campaignOf(t, e.patchCampaign(admin, hist, map[string]any{"state": "active"}))
	if c.ActivatedAt == nil || *c.ActivatedAt != "2023-05-06T07:08:09Z" {
		t.Errorf("after pause and resume: %v", c.ActivatedAt)
	}
	// Sent back unchanged it is fine; another value is refused, as is one
	// without the move from draft, one in the future and one that is no
	// datetime.
	campaignOf(t, e.patchCampaign(admin, hist, map[string]any{"activated_at": "2023-05-06T07:08:09Z", "name": "renamed"}))
	refused := []struct {
		key  string
		body map[string]any
	}{
		{hist, map[string]any{"activated_at": "2023-05-07T07:08:09Z"}},
		{hist, map[string]any{"state": "paused", "activated_at": "2023-05-07T07:08:09Z"}},
		{e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}).CampaignKey, map[string]any{"activated_at": "2024-01-01"}},
		{e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}).CampaignKey, map[string]any{"state": "active", "activated_at": "2025-01-02T04:00:00Z"}},
		{e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}).CampaignKey, map[string]any{"state": "active", "activated_at": "yesterday"}},
		// The zero time is "never activated": the campaign would be active
		// and answer activated_at null.
		{e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}).CampaignKey, map[string]any{"state": "active", "activated_at": "0001-01-01T00:00:00Z"}},
	}
	for _, tc := range refused {
		b := e.patchCampaign(admin, tc.key, tc.body).wantError(t, http.StatusUnprocessableEntity, "validation_error")
		if len(b.Error.Details) != 1 || b.Error.Details[0].Field != "activated_at" {
			t.Errorf("%v: details %+v", tc.body, b.Error.Details)
		}
	}
	e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{"kind": "email", "name": "n", "activated_at": "2024-01-01"})).
		wantError(t, http.StatusUnprocessableEntity, "validation_error")
}

// TestCampaignPatch changes each attribute, removes what "" removes, and
// takes an answer sent back whole as a PATCH that changes nothing.
func TestCampaignPatch(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	e.createCampaign(admin, map[string]any{"campaign_key": "K-1", "kind": "sms", "name": "n"})

	c := campaignOf(t, e.patchCampaign(admin, "K-1", map[string]any{
		"name": "Winter", "utm_campaign": 2025, "campaign_tags": []any{map[string]any{"id": "a", "label": "A"}},
		"folder": map[string]any{"id": "12", "name": "F"}, "permissions": map[string]any{"marketing_permission": "can_push"},
		"product_ids": []any{1, "2"},
	}))
	want := campaignJSON{CampaignKey: "K-1", Kind: "sms", Name: "Winter", State: "draft", UTMCampaign: pointerTo("2025"),
		CampaignTags: []map[string]any{{"id": "a", "label": "A"}}, Folder: map[string]any{"id": 12.0, "name": "F"},
		Permissions: map[string]any{"marketing_permission": "can_push"}, ProductIDs: []string{"1", "2"},
		CreatedAt: campaignNow, UpdatedAt: campaignNow}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("patched (-want +got):\n%s", diff)
	}
	// Absent and null fields stay; the rest of the campaign too.
	c = campaignOf(t, e.patchCampaign(admin, "K-1", map[string]any{"name": "Winter 2", "folder": nil, "product_ids": nil}))
	want.Name = "Winter 2"
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("patched name only (-want +got):\n%s", diff)
	}
	// "" removes; the permission goes back to the kind's.
	c = campaignOf(t, e.patchCampaign(admin, "K-1", map[string]any{
		"utm_campaign": "", "campaign_tags": "", "folder": "", "permissions": map[string]any{"marketing_permission": ""}, "product_ids": []any{},
	}))
	want.UTMCampaign, want.CampaignTags, want.Folder, want.ProductIDs = nil, []map[string]any{}, nil, []string{}
	want.Permissions = map[string]any{"marketing_permission": "can_sms"}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("removed (-want +got):\n%s", diff)
	}

	// An answer sent back unchanged changes nothing and appends nothing.
	before := e.campaignStream(e.acme.ID, "K-1")
	res := e.do(http.MethodGet, "/api/campaigns/K-1/", bearer(admin))
	var answer struct {
		Campaign map[string]any `json:"campaign"`
	}
	res.decode(t, &answer)
	answer.Campaign["stats"] = nil // as the statistics endpoint will answer it
	if got := campaignOf(t, e.patchCampaign(admin, "K-1", answer.Campaign)); !cmp.Equal(got, c) {
		t.Errorf("sent back: %+v", got)
	}
	if after := e.campaignStream(e.acme.ID, "K-1"); len(after) != len(before) {
		t.Errorf("sending an answer back appended %v", after[len(before):])
	}

	// What never changes.
	for field, v := range map[string]any{"campaign_key": "K-2", "kind": "email", "automated": true, "created_at": "2020-01-01T00:00:00Z"} {
		b := e.patchCampaign(admin, "K-1", map[string]any{field: v}).wantError(t, http.StatusUnprocessableEntity, "validation_error")
		if len(b.Error.Details) != 1 || b.Error.Details[0].Field != field {
			t.Errorf("%s: details %+v", field, b.Error.Details)
		}
	}
	if got := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/K-1/", bearer(admin))); !cmp.Equal(got, c) {
		t.Errorf("after refusals: %+v", got)
	}
}

// TestCampaignListAndGet lists campaigns oldest first, in pages, with
// filters, under every spelling of the path; another company's key is
// 404 there.
func TestCampaignListAndGet(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	// One clock: created_at ties, the key breaks them.
	for _, k := range []string{"b", "a", "c", "d", "e"} {
		e.createCampaign(admin, map[string]any{"campaign_key": k, "kind": "email", "name": k})
	}
	e.createCampaign(admin, map[string]any{"campaign_key": "s", "kind": "sms", "name": "s", "state": "active"})
	list := func(opts ...option) ([]string, string) {
		t.Helper()
		res := e.do(http.MethodGet, "/api/campaigns/", append([]option{bearer(admin)}, opts...)...)
		res.wantStatus(t, http.StatusOK)
		var a struct {
			Campaigns []campaignJSON `json:"campaigns"`
			NextURL   string         `json:"next_url"`
		}
		res.decode(t, &a)
		var keys []string
		for _, c := range a.Campaigns {
			keys = append(keys, c.CampaignKey)
		}
		return keys, a.NextURL
	}
	if keys, next := list(); !slices.Equal(keys, []string{"a", "b", "c", "d", "e", "s"}) || next != "" {
		t.Errorf("list %v, next %q", keys, next)
	}
	var paged []string
	keys, next := list(withQuery("limit", "4"))
	paged = append(paged, keys...)
	for next != "" {
		u, err := url.Parse(next)
		if err != nil || u.Host != acmeHost {
			t.Fatalf("next_url %s: %v", next, err)
		}
		res := e.do(http.MethodGet, u.RequestURI(), bearer(admin))
		res.wantStatus(t, http.StatusOK)
		var a struct {
			Campaigns []campaignJSON `json:"campaigns"`
			NextURL   string         `json:"next_url"`
		}
		res.decode(t, &a)
		for _, c := range a.Campaigns {
			paged = append(paged, c.CampaignKey)
		}
		next = a.NextURL
	}
	if !slices.Equal(paged, []string{"a", "b", "c", "d", "e", "s"}) {
		t.Errorf("paged %v", paged)
	}
	if keys, _ := list(withQuery("state", "active")); !slices.Equal(keys, []string{"s"}) {
		t.Errorf("active: %v", keys)
	}
	if keys, _ := list(withQuery("kind", "email"), withQuery("limit", "2")); !slices.Equal(keys, []string{"a", "b"}) {
		t.Errorf("email: %v", keys)
	}
	for _, q := range [][2]string{{"limit", "0"}, {"limit", "x"}, {"state", "running"}, {"kind", "fax"}, {"cursor", "!!"}, {"name", "a"}} {
		e.do(http.MethodGet, "/api/campaigns/", bearer(admin), withQuery(q[0], q[1])).wantError(t, http.StatusBadRequest, "invalid_request")
	}

	for _, path := range []string{"/api/campaigns/a/", "/api/campaigns/a", "/campaigns/a/", "/campaigns/a"} {
		if c := campaignOf(t, e.do(http.MethodGet, path, bearer(admin))); c.CampaignKey != "a" {
			t.Errorf("%s: %+v", path, c)
		}
	}
	for _, path := range []string{"/api/campaigns/", "/api/campaigns", "/campaigns/", "/campaigns"} {
		e.do(http.MethodGet, path, bearer(admin)).wantStatus(t, http.StatusOK)
	}
	e.do(http.MethodGet, "/api/campaigns/nope/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodGet, "/api/campaigns/A/", bearer(admin)).wantError(t, http.StatusNotFound, "not_found") // keys keep their case
	e.do(http.MethodPatch, "/api/campaigns/nope/", bearer(admin), jsonBody(map[string]any{"name": "x"})).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPatch, "/api/campaigns/no%20pe/", bearer(admin), jsonBody(map[string]any{"name": "x"})).wantError(t, http.StatusNotFound, "not_found")

	// Another company's campaigns are not there.
	globex := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/campaigns/a/", bearer(globex), host(globexHost)).wantError(t, http.StatusNotFound, "not_found")
	e.do(http.MethodPatch, "/api/campaigns/a/", bearer(globex), host(globexHost), jsonBody(map[string]any{"name": "x"})).wantError(t, http.StatusNotFound, "not_found")
	res := e.do(http.MethodGet, "/api/campaigns/", bearer(globex), host(globexHost))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != `{"campaigns":[]}` {
		t.Errorf("globex's list: %s", res.body)
	}
	// globex may use the key a for a campaign of its own.
	e.createCampaign(globex, map[string]any{"campaign_key": "a", "kind": "EXT", "name": "theirs"}, host(globexHost))
	if c := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/a/", bearer(admin))); c.Name != "a" {
		t.Errorf("acme's a after globex's: %+v", c)
	}
}

// TestCampaignValidation: a body of the wrong shape is 400 naming each
// field; values that break a rule are 422 naming each field; a key taken
// is 409.
func TestCampaignValidation(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	cases := []struct {
		name   string
		body   string
		status int
		fields []string
	}{
		{"no body", ``, 400, nil},
		{"not JSON", `{`, 400, nil},
		{"not an object", `[]`, 400, nil},
		{"unknown fields", `{"kind": "email", "name": "n", "stat": "active", "Name": 1}`, 400, []string{"Name", "stat"}},
		{"unknown nested", `{"kind": "email", "name": "n", "folder": {"id": 1, "x": 2}, "campaign_tags": [{"id": "a", "y": 1}], "permissions": {"z": 1}}`, 400,
			[]string{"campaign_tags[0].y", "folder.x", "permissions.z"}},
		{"wrong types", `{"kind": 1, "name": [], "state": true, "product_ids": {}, "campaign_tags": "x", "folder": 1, "permissions": "x", "automated": "maybe", "activated_at": 5}`, 400,
			[]string{"activated_at", "automated", "campaign_tags", "folder", "kind", "name", "permissions", "product_ids", "state"}},
		{"product_ids of objects", `{"kind": "email", "name": "n", "product_ids": [{"id": 1}]}`, 400, []string{"product_ids"}},
		{"folder id", `{"kind": "email", "name": "n", "folder": {"id": 1.5}}`, 400, []string{"folder.id"}},
		{"required", `{}`, 422, []string{"kind", "name"}},
		{"bad kind", `{"kind": "fax", "name": "n"}`, 422, []string{"kind"}},
		{"kind in another case", `{"kind": "Email", "name": "n"}`, 422, []string{"kind"}},
		{"bad key", `{"campaign_key": "spring sale", "kind": "email", "name": "n"}`, 422, []string{"campaign_key"}},
		{"key too long", `{"campaign_key": "` + strings.Repeat("k", 101) + `", "kind": "email", "name": "n"}`, 422, []string{"campaign_key"}},
		{"blank name", `{"kind": "email", "name": "  "}`, 422, []string{"name"}},
		{"bad permission", `{"kind": "email", "name": "n", "permissions": {"marketing_permission": "can_fax"}}`, 422, []string{"permissions.marketing_permission"}},
		{"tags", `{"kind": "email", "name": "n", "campaign_tags": [{"label": "no id"}, {"id": "a"}, {"id": "a"}]}`, 422, []string{"campaign_tags[0].id", "campaign_tags[2].id"}},
		{"folder without id", `{"kind": "email", "name": "n", "folder": {"name": "F"}}`, 422, []string{"folder.id"}},
		{"automated against kind", `{"kind": "email", "name": "n", "automated": true}`, 422, []string{"automated"}},
		{"created_at", `{"kind": "email", "name": "n", "created_at": "2024-01-01"}`, 422, []string{"created_at"}},
		{"everything at once", `{"campaign_key": "a/b", "kind": "x", "name": "", "state": "gone", "activated_at": "never"}`, 422,
			[]string{"activated_at", "campaign_key", "kind", "name", "state"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			code := map[int]string{400: "invalid_request", 422: "validation_error"}[tc.status]
			b := e.do(http.MethodPost, "/api/campaigns/", bearer(admin), rawBody(tc.body)).wantError(t, tc.status, code)
			var fields []string
			for _, d := range b.Error.Details {
				fields = append(fields, d.Field)
			}
			sort.Strings(fields)
			if tc.fields != nil && !slices.Equal(fields, tc.fields) {
				t.Errorf("fields %v, want %v (%+v)", fields, tc.fields, b.Error.Details)
			}
		})
	}
	// Nothing was created, and no key was generated.
	if c := e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}); c.CampaignKey != "CA-1" {
		t.Errorf("first generated key after refusals: %s", c.CampaignKey)
	}

	// A key taken: 409, as every duplicate is; the campaign is unchanged.
	e.createCampaign(admin, map[string]any{"campaign_key": "dup", "kind": "email", "name": "first"})
	b := e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{"campaign_key": "dup", "kind": "sms", "name": "second"})).
		wantError(t, http.StatusConflict, "conflict")
	if len(b.Error.Details) != 1 || b.Error.Details[0].Field != "campaign_key" {
		t.Errorf("duplicate: %+v", b.Error)
	}
	if c := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/dup/", bearer(admin))); c.Name != "first" {
		t.Errorf("after a duplicate: %+v", c)
	}
	// Numbers are keys too, kept as their text.
	if c := e.createCampaign(admin, map[string]any{"campaign_key": 42, "kind": "email", "name": "n"}); c.CampaignKey != "42" {
		t.Errorf("numeric key: %s", c.CampaignKey)
	}
}

// TestCampaignAuthorization: managing campaigns needs staff; any token of
// the company reads them.
func TestCampaignAuthorization(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	staff := e.userToken(e.staff, acmeHost)
	c := e.createCampaign(staff, map[string]any{"kind": "email", "name": "n"})
	campaignOf(t, e.patchCampaign(staff, c.CampaignKey, map[string]any{"state": "active"}))

	integ := e.createIntegration(admin, "esp")
	bare := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ}).AccessToken.Token
	e.do(http.MethodPost, "/api/campaigns/", bearer(bare), jsonBody(map[string]any{"kind": "email", "name": "n"})).wantError(t, http.StatusForbidden, "forbidden")
	e.patchCampaign(bare, c.CampaignKey, map[string]any{"state": "paused"}).wantError(t, http.StatusForbidden, "forbidden")
	campaignOf(t, e.do(http.MethodGet, "/api/campaigns/"+c.CampaignKey+"/", bearer(bare)))
	e.do(http.MethodGet, "/api/campaigns/", bearer(bare)).wantStatus(t, http.StatusOK)
	e.do(http.MethodGet, "/api/campaigns/", withQuery("access-token", bare)).wantStatus(t, http.StatusOK)
	// With the creator's roles it may.
	full := e.createToken(admin, map[string]any{"owner_id": "integrations/" + integ, "transfer_privileges": true}).AccessToken.Token
	e.createCampaign(full, map[string]any{"kind": "email", "name": "n"})
	// Scopes apply as everywhere: a token scoped to one campaign reads it alone.
	scoped := e.createToken(admin, map[string]any{"scopes": []map[string]string{{"method": "GET", "path": "/api/campaigns/" + c.CampaignKey + "/"}}}).AccessToken.Token
	campaignOf(t, e.do(http.MethodGet, "/campaigns/"+c.CampaignKey, bearer(scoped)))
	e.do(http.MethodGet, "/api/campaigns/", bearer(scoped)).wantError(t, http.StatusForbidden, "forbidden")
	e.patchCampaign(scoped, c.CampaignKey, map[string]any{"name": "x"}).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodGet, "/api/campaigns/", withHeader("Authorization", "Bearer nope")).wantError(t, http.StatusUnauthorized, "unauthorized")
}

// patchCampaignRetrying sends a PATCH, again while it answers 409 (a
// client told to retry does), and returns the last answer.
func (e *env) patchCampaignRetrying(token, key string, body any) response {
	for range 50 {
		res := e.do(http.MethodPatch, "/api/campaigns/"+key+"/", bearer(token), jsonBody(body))
		if res.status != http.StatusConflict {
			return res
		}
	}
	return e.do(http.MethodPatch, "/api/campaigns/"+key+"/", bearer(token), jsonBody(body))
}

// TestCampaignConcurrentPatches: PATCHes of one campaign at once never
// lose a change (each changes one field; all are there after) and never
// break a move rule (the stream, replayed, makes only allowed moves).
// Concurrent creations without a key get distinct keys.
func TestCampaignConcurrentPatches(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	key := e.createCampaign(admin, map[string]any{"kind": "email", "name": "n"}).CampaignKey

	bodies := []map[string]any{
		{"name": "renamed"}, {"utm_campaign": "u"}, {"campaign_tags": []any{map[string]any{"id": "t", "label": "T"}}},
		{"folder": map[string]any{"id": 1, "name": "F"}}, {"permissions": map[string]any{"marketing_permission": "can_push"}},
		{"product_ids": []any{"P"}}, {"state": "active"}, {"state": "active"},
	}
	var wg sync.WaitGroup
	for _, b := range bodies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if res := e.patchCampaignRetrying(admin, key, b); res.status != http.StatusOK {
				t.Errorf("%v: %d %s", b, res.status, res.body)
			}
		}()
	}
	wg.Wait()
	c := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/"+key+"/", bearer(admin)))
	if c.Name != "renamed" || c.UTMCampaign == nil || len(c.CampaignTags) != 1 || c.Folder == nil ||
		c.Permissions["marketing_permission"] != "can_push" || !slices.Equal(c.ProductIDs, []string{"P"}) || c.State != "active" {
		t.Errorf("a change was lost: %+v", c)
	}
	if n := strings.Count(strings.Join(e.campaignStream(e.acme.ID, key), " "), campaign.ActivatedType); n != 1 {
		t.Errorf("%d activations, want 1", n)
	}

	// Moves at once: pause, resume and archive race; whatever order they
	// land in, each was allowed from the state it really left.
	for round := range 5 {
		key := e.createCampaign(admin, map[string]any{"kind": "sms", "name": "n", "state": "active"}).CampaignKey
		var wg sync.WaitGroup
		for _, s := range []string{"paused", "active", "paused", "archived", "active"} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				res := e.patchCampaignRetrying(admin, key, map[string]any{"state": s})
				if res.status != http.StatusOK && res.status != http.StatusUnprocessableEntity {
					t.Errorf("round %d, %s: %d %s", round, s, res.status, res.body)
				}
			}()
		}
		wg.Wait()
		checkCampaignMoves(t, e, key)
	}

	// Keys generated at once are distinct and consecutive.
	keys := make(chan string, 8)
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res := e.do(http.MethodPost, "/api/campaigns/", bearer(admin), jsonBody(map[string]any{"kind": "EXT", "name": "n"}))
			var a struct {
				Campaign campaignJSON `json:"campaign"`
			}
			if err := json.Unmarshal(res.body, &a); err != nil || res.status != http.StatusOK {
				t.Errorf("generated at once: %d %s", res.status, res.body)
			}
			keys <- a.Campaign.CampaignKey
		}()
	}
	wg.Wait()
	close(keys)
	var got []string
	for k := range keys {
		got = append(got, k)
	}
	sort.Strings(got)
	// CA-1 went to the first campaign of this test, CA-2 to CA-6 to the rounds.
	if want := []string{"CA-10", "CA-11", "CA-12", "CA-13", "CA-14", "CA-7", "CA-8", "CA-9"}; !slices.Equal(got, want) {
		t.Errorf("generated at once: %v, want %v", got, want)
	}
}

// checkCampaignMoves replays a campaign's stream and fails unless each move was
// allowed from the state before it.
func checkCampaignMoves(t *testing.T, e *env, key string) {
	t.Helper()
	evs, err := e.store.ReadStream(context.Background(), campaign.Stream(e.acme.ID, key), 0)
	if err != nil {
		t.Fatal(err)
	}
	c := campaign.Campaign{CompanyID: e.acme.ID}
	for _, re := range evs {
		ev, err := campaign.Decode(re.Type, re.Data)
		if err != nil {
			t.Fatal(err)
		}
		next := c.Apply(ev)
		if re.Type != campaign.CreatedType && re.Type != campaign.UpdatedType && !campaign.CanMove(c.State, next.State) {
			t.Errorf("%s/%d: %s moved %s -> %s", key, re.StreamVersion, re.Type, c.State, next.State)
		}
		c = next
	}
	if got := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/"+key+"/", bearer(e.userToken(e.admin, acmeHost)))); got.State != string(c.State) {
		t.Errorf("%s: read model state %s, stream %s", key, got.State, c.State)
	}
}

// TestCampaignEventsAndRebuild: every change is an event of the
// campaign's stream attributed to its actor, and rebuilding the read
// model from the log gives the same table.
func TestCampaignEventsAndRebuild(t *testing.T) {
	e := newEnv(t)
	token, tokenID := e.tokenWithID(e.admin, acmeHost)
	e.createCampaign(token, map[string]any{"campaign_key": "R", "kind": "automated-sms", "name": "n", "product_ids": []any{"P-1"}})
	campaignOf(t, e.patchCampaign(token, "R", map[string]any{"name": "m", "state": "active", "activated_at": "2024-06-01T00:00:00Z"}))
	campaignOf(t, e.patchCampaign(token, "R", map[string]any{"state": "paused"}))
	campaignOf(t, e.patchCampaign(token, "R", map[string]any{"state": "archived", "folder": map[string]any{"id": 2, "name": "Old"}}))
	e.createCampaign(token, map[string]any{"kind": "email", "name": "gen", "state": "archived"})
	globex := e.userToken(e.globexAd, globexHost)
	e.createCampaign(globex, map[string]any{"kind": "email", "name": "g", "state": "active", "campaign_tags": []any{map[string]any{"id": 1, "label": "x"}}}, host(globexHost))

	evs, err := e.store.ReadStream(context.Background(), campaign.Stream(e.acme.ID, "R"), 0)
	if err != nil {
		t.Fatal(err)
	}
	var types []string
	for _, ev := range evs {
		types = append(types, ev.Type)
		if m := ev.Metadata; m.Actor != "tokens/"+tokenID || m.Source != "api" || m.CompanyID != e.acme.ID || m.CorrelationID == "" {
			t.Errorf("%s: metadata %+v", ev.Type, m)
		}
		var data map[string]any
		if err := json.Unmarshal(ev.Data, &data); err != nil || data["campaign_key"] != "R" {
			t.Errorf("%s carries no campaign_key: %s", ev.Type, ev.Data)
		}
	}
	want := []string{campaign.CreatedType, campaign.UpdatedType, campaign.ActivatedType, campaign.PausedType, campaign.UpdatedType, campaign.ArchivedType}
	if !slices.Equal(types, want) {
		t.Errorf("stream %v, want %v", types, want)
	}
	gen, err := e.store.ReadStream(context.Background(), campaign.KeysStream(e.acme.ID), 0)
	if err != nil || len(gen) != 1 || gen[0].Type != campaign.KeyGeneratedType || gen[0].Metadata.Actor != "tokens/"+tokenID {
		t.Errorf("keys stream: %+v %v", gen, err)
	}

	before := campaignTable(t, e)
	if len(before) != 3 {
		t.Fatalf("table: %v", before)
	}
	if err := projections.Rebuild(context.Background(), e.pool, e.store, postgres.EventLog{}, campaignstats.Campaigns{}, projections.KindInline, nil); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(before, campaignTable(t, e)); diff != "" {
		t.Errorf("after a rebuild (-before +after):\n%s", diff)
	}
	// The rebuilt table serves and takes changes.
	c := campaignOf(t, e.do(http.MethodGet, "/api/campaigns/R/", bearer(token)))
	if c.State != "archived" || c.Name != "m" || c.ActivatedAt == nil || *c.ActivatedAt != "2024-06-01T00:00:00Z" || c.Folder == nil {
		t.Errorf("after a rebuild: %+v", c)
	}
	if c := e.createCampaign(token, map[string]any{"kind": "email", "name": "after"}); c.CampaignKey != "CA-2" {
		t.Errorf("generated after a rebuild: %s", c.CampaignKey)
	}
}

// campaignTable reads the campaigns table whole, in a form that compares.
func campaignTable(t *testing.T, e *env) []string {
	t.Helper()
	rows, err := e.pool.Query(context.Background(), `SELECT concat_ws('|', company_id, campaign_key, kind, state, name, utm_campaign,
		campaign_tags::text, folder::text, marketing_permission, product_ids::text, created_by, created_at, activated_at, updated_at, version)
		FROM campaigns ORDER BY company_id, campaign_key`)
	if err != nil {
		t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func pointerTo[T any](v T) *T { return &v }
