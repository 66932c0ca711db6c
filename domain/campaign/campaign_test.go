package campaign_test

import (
	"encoding/json"
	"errors"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/campaign"
)

var (
	now   = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	staff = access.Principal{CompanyID: "c1", UserID: "u1", Roles: []access.Role{access.RoleStaff}}
	bare  = access.Principal{CompanyID: "c1", TokenID: "t1", OwnerID: "integrations/i1"}
)

// parse reads a body, failing the test on a 400.
func parse(t *testing.T, body string) campaign.Input {
	t.Helper()
	in, err := campaign.ParseInput([]byte(body), time.UTC)
	if err != nil {
		t.Fatalf("ParseInput(%s): %v", body, err)
	}
	return in
}

// fields returns the sorted fields of a domain error's details.
func fields(err error) []string {
	var de *domain.Error
	if !errors.As(err, &de) {
		return nil
	}
	var out []string
	for _, d := range de.Details {
		out = append(out, d.Field)
	}
	sort.Strings(out)
	return out
}

// mustNew creates a campaign from body under key.
func mustNew(t *testing.T, key, body string) (campaign.Campaign, []campaign.Event) {
	t.Helper()
	c, evs, err := campaign.New(staff, key, parse(t, body), now)
	if err != nil {
		t.Fatalf("New(%s): %v", body, err)
	}
	return c, evs
}

func TestCampaignKeys(t *testing.T) {
	for key, ok := range map[string]bool{
		"CA-1": true, "spring-2025": true, "42": true, "-": true, strings.Repeat("k", 100): true,
		"": false, "a b": false, "a_b": false, "a/b": false, "ä": false, strings.Repeat("k", 101): false,
	} {
		if campaign.ValidKey(key) != ok {
			t.Errorf("ValidKey(%q) = %v", key, !ok)
		}
	}
	if k := campaign.GeneratedKey(12); k != "CA-12" || !campaign.ValidKey(k) {
		t.Errorf("GeneratedKey(12) = %s", k)
	}
}

func TestCampaignKinds(t *testing.T) {
	cases := []struct {
		kind       campaign.Kind
		automated  bool
		permission string
	}{
		{campaign.Email, false, "can_email"},
		{campaign.AutomatedEmail, true, "can_email"},
		{campaign.SMS, false, "can_sms"},
		{campaign.AutomatedSMS, true, "can_sms"},
		{campaign.External, false, ""},
	}
	for _, tc := range cases {
		if !tc.kind.Valid() || tc.kind.Automated() != tc.automated || tc.kind.DefaultPermission() != tc.permission {
			t.Errorf("%s: valid %v, automated %v, permission %q", tc.kind, tc.kind.Valid(), tc.kind.Automated(), tc.kind.DefaultPermission())
		}
	}
	for _, k := range []campaign.Kind{"", "Email", "ext", "push"} {
		if k.Valid() {
			t.Errorf("%q is valid", k)
		}
	}
}

// TestCampaignCanMove is the whole transition table.
func TestCampaignCanMove(t *testing.T) {
	want := map[[2]campaign.State]bool{
		{campaign.StateDraft, campaign.StateActive}:    true,
		{campaign.StateDraft, campaign.StateArchived}:  true,
		{campaign.StateActive, campaign.StatePaused}:   true,
		{campaign.StateActive, campaign.StateArchived}: true,
		{campaign.StatePaused, campaign.StateActive}:   true,
		{campaign.StatePaused, campaign.StateArchived}: true,
	}
	for _, from := range campaign.States {
		for _, to := range campaign.States {
			if got := campaign.CanMove(from, to); got != want[[2]campaign.State{from, to}] {
				t.Errorf("CanMove(%s, %s) = %v", from, to, got)
			}
		}
	}
}

func TestCampaignNew(t *testing.T) {
	c, evs := mustNew(t, "K", `{"kind": "automated-sms", "name": " N ", "product_ids": [1, "1", "2", " "], "campaign_tags": [{"id": 5, "label": " L "}]}`)
	want := campaign.Campaign{
		CompanyID: "c1", Key: "K", Kind: campaign.AutomatedSMS, State: campaign.StateDraft,
		Attributes: campaign.Attributes{Name: "N", Tags: []campaign.Tag{{ID: "5", Label: "L"}}, Permission: "can_sms", ProductIDs: []string{"1", "2"}},
		CreatedAt:  now, UpdatedAt: now, CreatedBy: "users/u1",
	}
	if diff := cmp.Diff(want, c); diff != "" {
		t.Errorf("campaign (-want +got):\n%s", diff)
	}
	if !c.Automated() || len(evs) != 1 || evs[0].EventType() != campaign.CreatedType || evs[0].CampaignKey() != "K" {
		t.Errorf("events %+v", evs)
	}

	// Created active: two events, activated now or at the time given.
	c, evs = mustNew(t, "K", `{"kind": "email", "name": "n", "state": "active"}`)
	if c.State != campaign.StateActive || !c.ActivatedAt.Equal(now) || len(evs) != 2 || evs[1].EventType() != campaign.ActivatedType {
		t.Errorf("created active: %+v %+v", c, evs)
	}
	c, _ = mustNew(t, "K", `{"kind": "email", "name": "n", "state": "active", "activated_at": "2024-02-03"}`)
	if !c.ActivatedAt.Equal(time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("activated_at given: %v", c.ActivatedAt)
	}
	// A clock a little ahead is not the future.
	if _, _, err := campaign.New(staff, "K", parse(t, `{"kind": "email", "name": "n", "state": "active", "activated_at": "2025-01-02T03:08:00Z"}`), now); err != nil {
		t.Errorf("activated_at four minutes ahead: %v", err)
	}

	// The zero instant is "never activated": an active campaign activated
	// then would read as never active (null, no statistics window).
	for _, at := range []string{"0001-01-01", "0001-01-01T00:00:00Z", "0001-01-01T02:00:00+02:00"} {
		_, _, err := campaign.New(staff, "K", parse(t, `{"kind": "email", "name": "n", "state": "active", "activated_at": "`+at+`"}`), now)
		if !slices.Equal(fields(err), []string{"activated_at"}) {
			t.Errorf("activated_at %s: %v", at, err)
		}
	}
	if c, _ := mustNew(t, "K", `{"kind": "email", "name": "n", "state": "active", "activated_at": "0001-01-01T00:00:00.000001Z"}`); c.ActivatedAt.IsZero() {
		t.Errorf("activated a microsecond after the zero time: %v", c.ActivatedAt)
	}

	if _, _, err := campaign.New(bare, "K", parse(t, `{"kind": "email", "name": "n"}`), now); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("a token without roles: %v", err)
	}
	_, _, err := campaign.New(staff, "bad key", parse(t, `{"kind": "fax", "name": "", "state": "paused", "automated": true, "activated_at": "x"}`), now)
	if domain.ErrorCode(err) != domain.Validation || !slices.Equal(fields(err), []string{"activated_at", "campaign_key", "kind", "name", "state"}) {
		t.Errorf("every problem at once: %v %v", err, fields(err))
	}
}

func TestCampaignChange(t *testing.T) {
	c, _ := mustNew(t, "K", `{"kind": "email", "name": "n", "folder": {"id": 1, "name": "F"}}`)
	later := now.Add(time.Hour)

	got, evs, err := c.Change(staff, parse(t, `{"name": "n", "folder": {"id": 1, "name": "F"}, "state": "draft", "campaign_key": "K", "kind": "email", "automated": false}`), later)
	if err != nil || len(evs) != 0 || !cmp.Equal(got, c) {
		t.Errorf("a change of nothing: %+v %+v %v", got, evs, err)
	}
	got, evs, err = c.Change(staff, parse(t, `{"name": "m", "folder": "", "state": "active"}`), later)
	if err != nil || len(evs) != 2 || evs[0].EventType() != campaign.UpdatedType || evs[1].EventType() != campaign.ActivatedType {
		t.Fatalf("change and move: %+v %v", evs, err)
	}
	if got.Name != "m" || got.Folder != nil || got.State != campaign.StateActive || !got.ActivatedAt.Equal(later) || !got.UpdatedAt.Equal(later) {
		t.Errorf("changed: %+v", got)
	}
	if c.Name != "n" || c.Folder == nil {
		t.Errorf("the original changed too: %+v", c)
	}
	// Resuming keeps the first activation.
	paused, _, _ := got.Change(staff, parse(t, `{"state": "paused"}`), later.Add(time.Hour))
	resumed, evs, _ := paused.Change(staff, parse(t, `{"state": "active"}`), later.Add(2*time.Hour))
	if !resumed.ActivatedAt.Equal(later) || len(evs) != 1 || evs[0].EventType() != campaign.ResumedType {
		t.Errorf("resumed: %+v %+v", resumed, evs)
	}
	archived, evs, _ := resumed.Change(staff, parse(t, `{"state": "archived"}`), later)
	if a, ok := evs[0].(campaign.Archived); !ok || a.From != campaign.StateActive || archived.State != campaign.StateArchived {
		t.Errorf("archived: %+v", evs)
	}
	for _, body := range []string{`{"state": "draft"}`, `{"state": "active"}`, `{"state": "paused"}`} {
		if _, _, err := archived.Change(staff, parse(t, body), later); !slices.Equal(fields(err), []string{"state"}) {
			t.Errorf("archived, %s: %v", body, err)
		}
	}
	// A draft's activated_at is none, not the zero time it is kept as.
	if _, _, err := c.Change(staff, parse(t, `{"activated_at": "0001-01-01T00:00:00Z"}`), later); !slices.Equal(fields(err), []string{"activated_at"}) {
		t.Errorf("a draft sent the zero time as its activated_at: %v", err)
	}
	if _, _, err := c.Change(bare, parse(t, `{"name": "x"}`), later); domain.ErrorCode(err) != domain.Forbidden {
		t.Errorf("a token without roles: %v", err)
	}
}

// TestCampaignParseInput: shapes are 400 naming every field; nothing else is.
func TestCampaignParseInput(t *testing.T) {
	in := parse(t, `{"campaign_key": 7, "kind": "email", "name": 12, "utm_campaign": null, "folder": {"id": "3"},
		"permissions": {"marketing_permission": null}, "stats": {"x": 1}, "updated_at": "whenever", "product_ids": "P"}`)
	if k, ok := in.GivenKey(); !ok || k != "7" || *in.Name != "12" || in.UTMCampaign != nil || in.Folder == nil || in.Folder.ID != 3 ||
		in.Permission != nil || !slices.Equal(*in.ProductIDs, []string{"P"}) {
		t.Errorf("loose values: %+v", in)
	}
	if _, ok := parse(t, `{"campaign_key": " "}`).GivenKey(); ok {
		t.Error(`a blank key is given`)
	}
	if in := parse(t, `{"permissions": ""}`); in.Permission == nil || *in.Permission != "" {
		t.Errorf(`permissions "": %+v`, in.Permission)
	}
	cases := map[string][]string{
		`[]`:              nil,
		`"x"`:             nil,
		`{"a": "\u0000"}`: {"a"},
		`{"kind": "email", "x": 1, "name": "n", "\u00e4 b": 2, "campaign_tags": [1]}`: {"", "campaign_tags[0]", "x"},
		`{"folder": {"id": -1}, "permissions": {"marketing_permission": 1}}`:          {"folder.id", "permissions.marketing_permission"},
	}
	for body, want := range cases {
		_, err := campaign.ParseInput([]byte(body), time.UTC)
		if domain.ErrorCode(err) != domain.Invalid || !slices.Equal(fields(err), want) {
			t.Errorf("%s: %v %v, want 400 on %v", body, err, fields(err), want)
		}
	}
	// A value no store can hold is said to be one, even where the field
	// holding it cannot be named; only what is no object is called so.
	for body, want := range map[string]string{
		`{"\u0000": 1}`:          "no store can hold",
		`{"\u00e4 b": "\u0000"}`: "no store can hold",
		`{"n": "\ud800"}`:        "no store can hold",
		`[{"a": "\u0000"}]`:      "must be a JSON object",
		`{`:                      "must be a JSON object",
	} {
		_, err := campaign.ParseInput([]byte(body), time.UTC)
		if domain.ErrorCode(err) != domain.Invalid || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want 400 saying %q", body, err, want)
		}
	}
}

// TestCampaignEventsReplay: a campaign's events, encoded as the log keeps them
// and decoded again, fold into the campaign the decisions returned.
func TestCampaignEventsReplay(t *testing.T) {
	c, events := mustNew(t, "K", `{"kind": "sms", "name": "n", "state": "active", "activated_at": "2024-01-01T00:00:00.5Z"}`)
	for i, body := range []string{
		`{"product_ids": ["A", "B"], "campaign_tags": [{"id": "t", "label": "T"}], "folder": {"id": 4, "name": "F"}}`,
		`{"state": "paused", "name": "m"}`,
		`{"state": "archived", "permissions": {"marketing_permission": "can_push"}}`,
	} {
		var evs []campaign.Event
		var err error
		c, evs, err = c.Change(staff, parse(t, body), now.Add(time.Duration(i+1)*time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		events = append(events, evs...)
	}
	replayed := campaign.Campaign{CompanyID: "c1"}
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		if err := json.Unmarshal(data, &m); err != nil || m["campaign_key"] != "K" {
			t.Errorf("%s carries no campaign_key: %s", e.EventType(), data)
		}
		d, err := campaign.Decode(e.EventType(), data)
		if err != nil || d == nil {
			t.Fatalf("Decode(%s): %v", e.EventType(), err)
		}
		replayed = replayed.Apply(d)
	}
	if diff := cmp.Diff(c, replayed); diff != "" {
		t.Errorf("replayed (-decided +replayed):\n%s", diff)
	}
	if e, err := campaign.Decode("CustomerUpserted", []byte(`{}`)); e != nil || err != nil {
		t.Errorf("another type: %v %v", e, err)
	}
	if _, err := campaign.Decode(campaign.CreatedType, []byte(`{"kind": 1}`)); err == nil {
		t.Error("bad data decoded")
	}
}
