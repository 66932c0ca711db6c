package imports_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
)

// TestImportCustomersUpsert: a created customer gets every permission;
// an update changes only the keys it supplies; "" unsets, null is absent;
// lists take a single string and add/remove; company fields are kept.
func TestImportCustomersUpsert(t *testing.T) {
	e := newCustomerEnv(t)
	if n, rej := e.chunk(t, `{"external_id": "A-1", "email": "Ann@Example.com", "first_name": "Ann",
		"last_name": "Lee", "tags": "vip", "can_sms": "true", "ACME__size": 42, "city": null}`); n != 1 || rej != nil {
		t.Fatalf("chunk 1: accepted %d, rejections %v", n, rej)
	}
	if n, rej := e.chunk(t, `{"external_id": "A-1", "first_name": "", "last_name": null, "city": "Espoo",
		"tags.add": ["x", "y"], "mailing_lists.remove": "old", "can_email": true}`); n != 1 || rej != nil {
		t.Fatalf("chunk 2: accepted %d, rejections %v", n, rej)
	}
	got := e.events(t)
	if len(got) != 2 {
		t.Fatalf("%d events, want 2", len(got))
	}
	id := got[0].ID
	meta := eventstore.Metadata{CompanyID: "co1", RunID: "run-1", Actor: "users/u1", Source: "csv"}
	want := []customerEvent{
		{Stream: customer.Stream("co1", id), Version: 1, Type: customer.TypeUpserted, ID: id, Created: true,
			Fields: []string{"ACME__size", "can_email", "can_post", "can_profile", "can_push", "can_sms", "customer_token", "email", "external_id", "first_name", "last_name", "tags"},
			Changes: &customer.Changes{Set: map[string]any{
				"external_id": "A-1", "email": "ann@example.com", "first_name": "Ann", "last_name": "Lee",
				"tags": []any{"vip"}, "can_sms": true, "can_email": false, "can_post": false, "can_profile": false,
				"can_push": false, "ACME__size": float64(42), "customer_token": issuedToken(t, got[0])}},
			Meta: meta},
		{Stream: customer.Stream("co1", id), Version: 2, Type: customer.TypeUpserted, ID: id,
			Fields: []string{"can_email", "city", "external_id", "first_name", "mailing_lists", "tags"},
			Changes: &customer.Changes{
				Set:    map[string]any{"external_id": "A-1", "city": "Espoo", "can_email": true},
				Unset:  []string{"first_name"},
				Add:    map[string][]string{"tags": {"x", "y"}},
				Remove: map[string][]string{"mailing_lists": {"old"}}},
			Meta: meta},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(customerState{Version: 2, HasExternalID: true, HasEmail: true, HasToken: true}, e.state(t, id)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestImportCustomersRejections: every bad record is rejected with its
// upload index, field and a reason that does not quote the value, and
// never blocks the good records of the chunk.
func TestImportCustomersRejections(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "first"}`) // moves the upload index to 1
	bad := []struct{ record, field, value string }{
		{`{"external_id": "has space"}`, "external_id", "has space"},
		{`{"email": "ann.lee(at)example.com"}`, "email", "ann.lee(at)example.com"},
		{`{"phone_number": "0401234567"}`, "phone_number", "0401234567"},
		{`{"email": "b@example.com", "country": "Finland"}`, "country", "Finland"},
		{`{"email": "b@example.com", "language": "Finnish"}`, "language", "Finnish"},
		{`{"email": "b@example.com", "birth_date": "31.12.1990"}`, "birth_date", "31.12.1990"},
		{`{"email": "b@example.com", "last_login": "2024-13-01 10:00:00"}`, "last_login", "2024-13-01"},
		{`{"email": "b@example.com", "can_email": "sometimes"}`, "can_email", "sometimes"},
		{`{"email": "b@example.com", "OTHER__size": "XL", "zip_code": ["XL-secret"]}`, "zip_code", "XL-secret"},
		{`{"email": "b@example.com", "shoe_size": "44", "date_joined": "someday"}`, "date_joined", "someday"},
		{`{"first_name": "Nobody"}`, "", "Nobody"},
		{`["secret-value"]`, "", "secret-value"},
	}
	records := []string{`{"external_id": "good-1"}`}
	for _, b := range bad {
		records = append(records, b.record)
	}
	records = append(records, `{"external_id": "good-2", "email": "b@example.com"}`)
	accepted, rejections := e.chunk(t, records...)
	if accepted != 2 {
		t.Errorf("accepted %d, want 2", accepted)
	}
	if len(rejections) != len(bad) {
		t.Fatalf("%d rejections, want %d: %v", len(rejections), len(bad), rejections)
	}
	for i, b := range bad {
		r := rejections[i]
		if r.Index != i+2 || r.Field != b.field {
			t.Errorf("rejection %d = %+v, want index %d field %q", i, r, i+2, b.field)
		}
		if strings.Contains(r.Reason, b.value) {
			t.Errorf("rejection %d quotes the value: %q", i, r.Reason)
		}
	}
	if n := len(e.events(t)); n != 3 {
		t.Errorf("%d events, want 3 (the good records)", n)
	}
}

// TestImportCustomersOnePersonOneChunk: records of one new person in one
// chunk make one customer, its stream's events in record order; the next
// chunk appends at the exact version.
func TestImportCustomersOnePersonOneChunk(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t,
		`{"email": "ann@example.com", "first_name": "Ann"}`,
		`{"external_id": "A", "email": "ann@example.com"}`,
		`{"external_id": "A", "phone_number": "+358401234567"}`,
		`{"phone_number": "+358 40 1234567", "city": "Espoo"}`,
	)
	e.chunk(t, `{"external_id": "A", "last_name": "Lee"}`)
	evs := e.events(t)
	var got []string
	for _, ev := range evs {
		got = append(got, fmt.Sprintf("%s/%d %v", ev.Stream, ev.Version, ev.Created))
	}
	s := customer.Stream("co1", evs[0].ID)
	want := []string{s + "/1 true", s + "/2 false", s + "/3 false", s + "/4 false", s + "/5 false"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(customerState{Version: 5, HasExternalID: true, HasEmail: true, HasPhone: true, HasToken: true}, e.state(t, evs[0].ID)); diff != "" {
		t.Errorf("state (-want +got):\n%s", diff)
	}
}

// TestImportCustomersNothingToAppend: a chunk of rejected records, or of
// records accepted without effect, appends nothing and fails nothing.
func TestImportCustomersNothingToAppend(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "A"}`, `{"external_id": "A", "is_deleted": true}`)
	accepted, rejections := e.chunk(t, `{"external_id": "A", "is_deleted": true}`, `{"bad": 1}`)
	if accepted != 1 || len(rejections) != 1 {
		t.Errorf("accepted %d, rejections %v", accepted, rejections)
	}
	accepted, rejections = e.chunk(t)
	if accepted != 0 || rejections != nil {
		t.Errorf("empty chunk: accepted %d, rejections %v", accepted, rejections)
	}
	if n := len(e.events(t)); n != 2 {
		t.Errorf("%d events, want 2", n)
	}
}

func TestImportCustomersMetadataOfAnotherCompany(t *testing.T) {
	e := newCustomerEnv(t)
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	_, err = e.importer.ImportChunk(ctx, tx, imports.Chunk{Company: e.company,
		Metadata: eventstore.Metadata{CompanyID: "other"}, Records: nil})
	if err == nil {
		t.Fatal("a chunk stamped with another company was imported")
	}
}

// TestImportCustomersLargeChunk: a chunk big enough to be parsed and
// sealed on several goroutines keeps every record in its place.
func TestImportCustomersLargeChunk(t *testing.T) {
	e := newCustomerEnv(t)
	var records []string
	var wantRejected []int
	for i := range 300 {
		if i%7 == 3 {
			records = append(records, fmt.Sprintf(`{"external_id": "L-%d", "email": "not-an-address-%d"}`, i, i))
			wantRejected = append(wantRejected, i)
			continue
		}
		records = append(records, fmt.Sprintf(`{"external_id": "L-%d", "first_name": "N%d"}`, i, i))
	}
	accepted, rejections := e.chunk(t, records...)
	var got []int
	for _, r := range rejections {
		got = append(got, r.Index)
	}
	if accepted != 300-len(wantRejected) || !cmp.Equal(wantRejected, got) {
		t.Fatalf("accepted %d, rejected %v; want %d, %v", accepted, got, 300-len(wantRejected), wantRejected)
	}
	for _, ev := range e.events(t) {
		var n int
		fmt.Sscanf(ev.Changes.Set["external_id"].(string), "L-%d", &n)
		if ev.Changes.Set["first_name"] != fmt.Sprintf("N%d", n) {
			t.Fatalf("customer L-%d got the changes of another record: %v", n, ev.Changes.Set)
		}
	}
}
