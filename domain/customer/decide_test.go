package customer_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
)

// step is one record and what Decide must make of it: "c1 created",
// "c2 upserted", "c1 deleted forgotten", "c1 unchanged", or
// "rejected <field>: <reason>".
type step struct {
	record, want string
}

// TestDecide runs sequences of records through one book, as one chunk
// (later records see earlier ones), and checks each outcome and the final
// registry ("kind:value" -> customer).
func TestDecide(t *testing.T) {
	tests := []struct {
		name   string
		steps  []step
		owners map[string]string
	}{
		{"create, then update by external_id", []step{
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 created"},
			{`{"external_id": "A", "first_name": "Ann"}`, "c1 upserted"},
		}, map[string]string{"external_id:A": "c1", "email:a@x.com": "c1"}},
		{"two records of one new person make one customer", []step{
			{`{"email": "a@x.com"}`, "c1 created"},
			{`{"email": "A@X.com", "first_name": "Ann"}`, "c1 upserted"},
		}, map[string]string{"email:a@x.com": "c1"}},
		{"unknown external_id adopts the email's customer without one", []step{
			{`{"email": "a@x.com"}`, "c1 created"},
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 upserted"},
			{`{"external_id": "A"}`, "c1 upserted"},
		}, map[string]string{"external_id:A": "c1", "email:a@x.com": "c1"}},
		{"unknown external_id adopts the phone's customer when the email is unknown", []step{
			{`{"phone_number": "+358401234567"}`, "c1 created"},
			{`{"external_id": "A", "email": "new@x.com", "phone_number": "+358401234567"}`, "c1 upserted"},
		}, map[string]string{"external_id:A": "c1", "email:new@x.com": "c1", "phone:+358401234567": "c1"}},
		{"unknown external_id adopts the phone's customer when the email's has an external_id", []step{
			{`{"external_id": "B", "email": "a@x.com"}`, "c1 created"},
			{`{"phone_number": "+358401234567"}`, "c2 created"},
			{`{"external_id": "A", "email": "a@x.com", "phone_number": "+358401234567"}`, "c2 upserted"},
		}, map[string]string{"external_id:A": "c2", "external_id:B": "c1", "email:a@x.com": "c2", "phone:+358401234567": "c2"}},
		{"unknown external_id does not adopt a customer with another one", []step{
			{`{"external_id": "B", "email": "a@x.com"}`, "c1 created"},
			{`{"external_id": "A", "email": "a@x.com"}`, "c2 created"},
			{`{"email": "a@x.com"}`, "c2 upserted"},
		}, map[string]string{"external_id:A": "c2", "external_id:B": "c1", "email:a@x.com": "c2"}},
		{"email wins over phone; the phone key moves", []step{
			{`{"email": "a@x.com"}`, "c1 created"},
			{`{"phone_number": "+358401234567"}`, "c2 created"},
			{`{"email": "a@x.com", "phone_number": "+358401234567"}`, "c1 upserted"},
			{`{"phone_number": "+358401234567", "city": "Espoo"}`, "c1 upserted"},
		}, map[string]string{"email:a@x.com": "c1", "phone:+358401234567": "c1"}},
		{"external_id wins over email; the email key moves", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"email": "a@x.com"}`, "c2 created"},
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 upserted"},
		}, map[string]string{"external_id:A": "c1", "email:a@x.com": "c1"}},
		{"a new email frees the old one", []step{
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 created"},
			{`{"external_id": "A", "email": "b@x.com"}`, "c1 upserted"},
			{`{"email": "a@x.com"}`, "c2 created"},
		}, map[string]string{"external_id:A": "c1", "email:b@x.com": "c1", "email:a@x.com": "c2"}},
		{"an identity sent as empty is freed", []step{
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 created"},
			{`{"external_id": "A", "email": ""}`, "c1 upserted"},
			{`{"email": "a@x.com"}`, "c2 created"},
		}, map[string]string{"external_id:A": "c1", "email:a@x.com": "c2"}},
		{"canonical_id groups but never merges", []step{
			{`{"external_id": "A", "canonical_id": "G"}`, "c1 created"},
			{`{"external_id": "B", "canonical_id": "G"}`, "c2 created"},
		}, map[string]string{"external_id:A": "c1", "external_id:B": "c2"}},
		{"deleted is irreversible", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"external_id": "A", "first_name": "Ann", "is_deleted": true}`, "c1 deleted"},
			{`{"external_id": "A", "is_deleted": "true"}`, "c1 unchanged"},
			{`{"external_id": "A", "first_name": "Ann"}`, "rejected is_deleted: " + customer.ReasonDeleted},
			{`{"external_id": "A", "is_deleted": false}`, "rejected is_deleted: " + customer.ReasonDeleted},
			{`{"external_id": "A", "is_forgotten": true}`, "c1 forgotten"},
		}, map[string]string{"external_id:A": "c1"}},
		{"a deleted customer is not adopted", []step{
			{`{"email": "a@x.com"}`, "c1 created"},
			{`{"email": "a@x.com", "is_deleted": true}`, "c1 deleted"},
			{`{"external_id": "A", "email": "a@x.com"}`, "c2 created"},
		}, map[string]string{"external_id:A": "c2", "email:a@x.com": "c2"}},
		{"forgotten is irreversible for every identity", []step{
			{`{"external_id": "A", "email": "a@x.com", "phone_number": "+358401234567"}`, "c1 created"},
			{`{"email": "a@x.com", "is_forgotten": true}`, "c1 forgotten"},
			{`{"external_id": "A"}`, "rejected external_id: " + customer.ReasonForgotten},
			{`{"email": "a@x.com", "first_name": "Ann"}`, "rejected email: " + customer.ReasonForgotten},
			{`{"external_id": "B", "phone_number": "+358401234567"}`, "rejected phone_number: " + customer.ReasonForgotten},
			{`{"external_id": "A", "is_deleted": true}`, "rejected external_id: " + customer.ReasonForgotten},
			{`{"external_id": "A", "is_forgotten": true}`, "c1 unchanged"},
		}, map[string]string{"external_id:A": "c1", "email:a@x.com": "c1", "phone:+358401234567": "c1"}},
		{"deleting and forgetting at once", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"external_id": "A", "is_deleted": true, "is_forgotten": true}`, "c1 deleted forgotten"},
		}, map[string]string{"external_id:A": "c1"}},
		{"nothing to delete or forget", []step{
			{`{"external_id": "A", "is_deleted": true}`, "rejected is_deleted: " + customer.ReasonNoMatch},
			{`{"email": "a@x.com", "is_forgotten": true}`, "rejected is_forgotten: " + customer.ReasonNoMatch},
		}, map[string]string{}},
	}
	p := customer.NewParser(acme)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newBook()
			for i, s := range tt.steps {
				r, err := p.Parse([]byte(s.record))
				if err != nil {
					t.Fatalf("step %d: Parse: %v", i, err)
				}
				if got := describe(b.Decide(r)); got != s.want {
					t.Errorf("step %d %s: %s, want %s", i, s.record, got, s.want)
				}
			}
			got := map[string]string{}
			for _, kc := range b.KeyChanges() {
				if kc.Kind != customer.Token { // issued, not given: TestDecideTokens
					got[string(kc.Key)] = kc.CustomerID
				}
			}
			if diff := cmp.Diff(tt.owners, got); diff != "" {
				t.Errorf("registry (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideDefaultsAndState checks the permissions' defaults (on
// creation only), the versions and the keys of the customers' states.
func TestDecideDefaultsAndState(t *testing.T) {
	p := customer.NewParser(acme)
	b := newBook()
	decide := func(raw string) customer.Outcome {
		t.Helper()
		r, err := p.Parse([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		o, err := b.Decide(r)
		if err != nil {
			t.Fatal(err)
		}
		return o
	}
	created := decide(`{"email": "a@x.com", "can_email": true}`)
	want := map[string]any{"email": "a@x.com", "can_email": true, "can_post": false,
		"can_profile": false, "can_push": false, "can_sms": false, "customer_token": "tok-1"}
	if diff := cmp.Diff(want, created.Changes.Set); diff != "" {
		t.Errorf("created Set (-want +got):\n%s", diff)
	}
	updated := decide(`{"email": "a@x.com", "first_name": "Ann"}`)
	if diff := cmp.Diff(map[string]any{"email": "a@x.com", "first_name": "Ann"}, updated.Changes.Set); diff != "" {
		t.Errorf("updated Set (-want +got):\n%s", diff)
	}
	decide(`{"phone_number": "+358401234567"}`)
	decide(`{"email": "a@x.com", "phone_number": "+358401234567", "is_deleted": true}`)
	decide(`{"email": "b@x.com"}`)
	decide(`{"email": "b@x.com", "phone_number": "+358401234567"}`) // c3 takes c2's phone
	wantStates := []customer.State{
		{ID: "c1", Version: 3, Deleted: true, Keys: customer.Keys{Email: "email:a@x.com", Token: "customer_token:tok-1"}},
		{ID: "c2", Version: 1, Keys: customer.Keys{Token: "customer_token:tok-2"}},
		{ID: "c3", Version: 2, Keys: customer.Keys{Email: "email:b@x.com", Phone: "phone:+358401234567", Token: "customer_token:tok-3"}},
	}
	if diff := cmp.Diff(wantStates, b.Touched()); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// TestDecideAfterLoad continues from stored state, as the next chunk does.
func TestDecideAfterLoad(t *testing.T) {
	b := newBook()
	b.LoadState(customer.State{ID: "old", Version: 4, Keys: customer.Keys{Email: "email:a@x.com", Phone: "phone:+358401234567"}})
	r, _ := customer.NewParser(acme).Parse([]byte(`{"external_id": "A", "email": "b@x.com", "phone_number": "+358401234567"}`))
	if got := describe(b.Decide(r)); got != "old upserted" {
		t.Fatalf("Decide: %s, want old upserted (adopted by phone)", got)
	}
	want := []customer.KeyChange{
		{Kind: customer.ExternalID, Key: "external_id:A", CustomerID: "old"},
		{Kind: customer.Email, Key: "email:a@x.com", Before: "old"}, // freed
		{Kind: customer.Email, Key: "email:b@x.com", CustomerID: "old"},
	}
	if diff := cmp.Diff(want, b.KeyChanges()); diff != "" {
		t.Errorf("key changes (-want +got):\n%s", diff)
	}
	if v := b.Touched()[0].Version; v != 5 {
		t.Errorf("version %d, want 5", v)
	}
}

// newBook returns a book whose keys are "kind:value", whose customers
// are c1, c2, ... and their tokens tok-1, tok-2, ...
func newBook() *customer.Book {
	n, t := 0, 0
	return customer.NewBook(
		func(k customer.Kind, v string) customer.Key { return customer.Key(string(k) + ":" + v) },
		func() string { n++; return fmt.Sprintf("c%d", n) },
		func() string { t++; return fmt.Sprintf("tok-%d", t) },
	)
}

func describe(o customer.Outcome, err error) string {
	var p *customer.Problem
	if errors.As(err, &p) {
		return "rejected " + p.Field + ": " + p.Reason
	}
	if err != nil {
		return "error " + err.Error()
	}
	var what []string
	switch {
	case o.Created:
		what = append(what, "created")
	case o.Changes != nil:
		what = append(what, "upserted")
	}
	if o.Deleted {
		what = append(what, "deleted")
	}
	if o.Forgotten {
		what = append(what, "forgotten")
	}
	if len(what) == 0 {
		what = append(what, "unchanged")
	}
	return o.CustomerID + " " + strings.Join(what, " ")
}
