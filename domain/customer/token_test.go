package customer_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/clientele/clientele/domain/customer"
)

// TestDecideTokens runs the rules of tracking tokens through one book:
// newBook issues tok-1, tok-2, ... to c1, c2, ... in creation order.
func TestDecideTokens(t *testing.T) {
	noMatch := "rejected customer_token: " + customer.ReasonNoMatch
	tests := []struct {
		name  string
		steps []step
		// tokens is the registry's tokens at the end: token -> holder,
		// "" for a token freed.
		tokens map[string]string
	}{
		{"every created customer gets its own token", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"email": "b@x.com"}`, "c2 created"},
		}, map[string]string{"tok-1": "c1", "tok-2": "c2"}},
		{"a token alone finds its customer", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"customer_token": " tok-1 ", "first_name": "Ann"}`, "c1 upserted"},
		}, map[string]string{"tok-1": "c1"}},
		{"a token nobody holds creates nobody, whatever the record asks", []step{
			{`{"customer_token": "tok-9", "first_name": "Ann"}`, noMatch},
			{`{"customer_token": "tok-9", "is_deleted": true}`, noMatch},
			{`{"customer_token": "tok-9", "is_forgotten": true}`, noMatch},
		}, map[string]string{}},
		{"a token beside another identity is ignored", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"email": "b@x.com", "customer_token": "tok-1"}`, "c2 created"},
			{`{"external_id": "A", "customer_token": "tok-2"}`, "c1 upserted"},
		}, map[string]string{"tok-1": "c1", "tok-2": "c2"}},
		{"a token finds the customer, who may lose an identity sent as empty", []step{
			{`{"external_id": "A", "email": "a@x.com"}`, "c1 created"},
			{`{"customer_token": "tok-1", "email": ""}`, "c1 upserted"},
			{`{"email": "a@x.com"}`, "c2 created"},
		}, map[string]string{"tok-1": "c1", "tok-2": "c2"}},
		{"forgetting frees the token: it then matches nobody", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"customer_token": "tok-1", "is_forgotten": true}`, "c1 forgotten"},
			{`{"customer_token": "tok-1", "first_name": "Ann"}`, noMatch},
			{`{"customer_token": "tok-1", "is_forgotten": true}`, noMatch},
			{`{"external_id": "A"}`, "rejected external_id: " + customer.ReasonForgotten},
		}, map[string]string{}}, // issued and freed within the book: no row to write
		{"a deleted customer keeps its token", []step{
			{`{"external_id": "A"}`, "c1 created"},
			{`{"external_id": "A", "is_deleted": true}`, "c1 deleted"},
			{`{"customer_token": "tok-1", "first_name": "Ann"}`, "rejected is_deleted: " + customer.ReasonDeleted},
			{`{"customer_token": "tok-1", "is_deleted": true}`, "c1 unchanged"},
		}, map[string]string{"tok-1": "c1"}},
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
				if kc.Kind == customer.Token {
					got[string(kc.Key)[len("customer_token:"):]] = kc.CustomerID
				}
			}
			if diff := cmp.Diff(tt.tokens, got); diff != "" {
				t.Errorf("tokens (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRecordsNeverSetTokens: the token is issued with the customer, in
// the created event's changes, and no record changes it.
func TestRecordsNeverSetTokens(t *testing.T) {
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
	created := decide(`{"external_id": "A", "customer_token": "mine"}`)
	if got := created.Changes.Set[customer.FieldToken]; got != "tok-1" {
		t.Errorf("created with token %v, want the issued tok-1", got)
	}
	for _, raw := range []string{
		`{"external_id": "A", "customer_token": "mine"}`,
		`{"external_id": "A", "customer_token": "", "first_name": "Ann"}`,
		`{"customer_token": "tok-1", "last_name": "Anderson"}`,
	} {
		o := decide(raw)
		if o.Changes == nil {
			continue
		}
		if _, ok := o.Changes.Set[customer.FieldToken]; ok || slices.Contains(o.Changes.Unset, customer.FieldToken) {
			t.Errorf("%s changes the token: %+v", raw, o.Changes)
		}
	}
	if s := b.Touched()[0]; s.Keys.Token != "customer_token:tok-1" {
		t.Errorf("token key %q, want the issued one", s.Keys.Token)
	}
}

// TestIssueToken: a customer from before tokens gets one, once; deleted
// and forgotten customers get none.
func TestIssueToken(t *testing.T) {
	b := newBook()
	b.LoadState(customer.State{ID: "old", Version: 4, Keys: customer.Keys{Email: "email:a@x.com"}})
	b.LoadState(customer.State{ID: "has", Version: 2, Keys: customer.Keys{Token: "customer_token:given"}})
	b.LoadState(customer.State{ID: "del", Version: 2, Deleted: true})
	b.LoadState(customer.State{ID: "fgt", Version: 2, Forgotten: true})
	o, ok := b.IssueToken("old")
	want := customer.Outcome{CustomerID: "old", Changes: &customer.Changes{Set: map[string]any{"customer_token": "tok-1"}}}
	if diff := cmp.Diff(want, o); !ok || diff != "" {
		t.Errorf("IssueToken(old) = %v (-want +got):\n%s", ok, diff)
	}
	for _, id := range []string{"old", "has", "del", "fgt", "unknown"} {
		if _, ok := b.IssueToken(id); ok {
			t.Errorf("IssueToken(%s) issued a token", id)
		}
	}
	wantStates := []customer.State{{ID: "old", Version: 5, Keys: customer.Keys{Email: "email:a@x.com", Token: "customer_token:tok-1"}}}
	if diff := cmp.Diff(wantStates, b.Touched()); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
	wantKeys := []customer.KeyChange{{Kind: customer.Token, Key: "customer_token:tok-1", CustomerID: "old"}}
	if diff := cmp.Diff(wantKeys, b.KeyChanges()); diff != "" {
		t.Errorf("key changes (-want +got):\n%s", diff)
	}
	r, _ := customer.NewParser(acme).Parse([]byte(`{"customer_token": "tok-1", "first_name": "Ann"}`))
	if got := describe(b.Decide(r)); got != "old upserted" {
		t.Errorf("the issued token finds %s, want old upserted", got)
	}
}

// TestForgetFreesAStoredToken: the registry row of a stored customer's
// token is freed by forgetting, and the state holds no token any more.
func TestForgetFreesAStoredToken(t *testing.T) {
	b := newBook()
	b.LoadState(customer.State{ID: "c", Version: 3, Keys: customer.Keys{Email: "email:a@x.com", Token: "customer_token:t"}})
	r, _ := customer.NewParser(acme).Parse([]byte(`{"email": "a@x.com", "is_forgotten": true}`))
	if got := describe(b.Decide(r)); got != "c forgotten" {
		t.Fatalf("Decide: %s", got)
	}
	want := []customer.KeyChange{{Kind: customer.Token, Key: "customer_token:t", Before: "c"}}
	if diff := cmp.Diff(want, b.KeyChanges()); diff != "" {
		t.Errorf("key changes (-want +got):\n%s", diff)
	}
	wantStates := []customer.State{{ID: "c", Version: 4, Forgotten: true, Keys: customer.Keys{Email: "email:a@x.com"}}}
	if diff := cmp.Diff(wantStates, b.Touched()); diff != "" {
		t.Errorf("states (-want +got):\n%s", diff)
	}
}

// TestTokenOfAForgottenHolder: a registry row that still gives a token to
// a forgotten customer (written before forgetting freed tokens) finds
// nobody.
func TestTokenOfAForgottenHolder(t *testing.T) {
	b := newBook()
	b.LoadState(customer.State{ID: "f", Version: 3, Forgotten: true, Keys: customer.Keys{Token: "customer_token:old"}})
	r, _ := customer.NewParser(acme).Parse([]byte(`{"customer_token": "old", "first_name": "Ann"}`))
	if got := describe(b.Decide(r)); got != "rejected customer_token: "+customer.ReasonNoMatch {
		t.Errorf("Decide: %s", got)
	}
}

// TestParseToken: customer_token is read as trimmed text into
// Record.Token, never into the changes, and is an identifier of its own.
func TestParseToken(t *testing.T) {
	p := customer.NewParser(acme)
	got, err := p.Parse([]byte(`{"customer_token": "  abc  ", "first_name": "Ann"}`))
	if err != nil {
		t.Fatal(err)
	}
	want := customer.Record{Token: "abc", Changes: customer.Changes{Set: map[string]any{"first_name": "Ann"}}}
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if !got.ByToken() {
		t.Error("a record naming only a token is not found by it")
	}
	if r, _ := p.Parse([]byte(`{"email": "a@x.com", "customer_token": "abc"}`)); r.ByToken() {
		t.Error("a token beside an email finds the customer")
	}
	for raw, want := range map[string]customer.Problem{
		`{"customer_token": "  ", "first_name": "Ann"}`: {Reason: customer.ReasonNoID},
		`{"customer_token": ["abc"]}`:                   {Field: "customer_token", Reason: "must be a string"},
	} {
		_, err := p.Parse([]byte(raw))
		var pr *customer.Problem
		if !errors.As(err, &pr) || *pr != want {
			t.Errorf("Parse(%s) = %v, want %+v", raw, err, want)
		}
	}
}
