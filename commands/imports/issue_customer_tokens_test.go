package imports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
)

// tokenForm is the form of a customer token (imports.NewCustomerToken).
var tokenForm = regexp.MustCompile(`^[a-z2-7]{26}$`)

// issuedToken returns the token an event sets, failing unless it has the
// form of an issued one.
func issuedToken(tb testing.TB, ev customerEvent) string {
	tb.Helper()
	if ev.Changes == nil {
		tb.Fatalf("%s/%d does not open", ev.Stream, ev.Version)
	}
	tok, _ := ev.Changes.Set[customer.FieldToken].(string)
	if !tokenForm.MatchString(tok) {
		tb.Fatalf("%s/%d sets customer_token %q, want 26 characters of a-z and 2-7", ev.Stream, ev.Version, tok)
	}
	return tok
}

func TestNewCustomerToken(t *testing.T) {
	seen := map[string]bool{}
	for range 10_000 {
		tok := imports.NewCustomerToken()
		if !tokenForm.MatchString(tok) {
			t.Fatalf("token %q, want 26 characters of a-z and 2-7", tok)
		}
		if seen[tok] {
			t.Fatalf("token %q issued twice", tok)
		}
		seen[tok] = true
	}
}

// TestImportCustomersTokens: each created customer is issued its own
// token, which finds it, which no record changes, and which forgetting
// frees.
func TestImportCustomersTokens(t *testing.T) {
	e := newCustomerEnv(t)
	e.chunk(t, `{"external_id": "A", "customer_token": "chosen"}`, `{"external_id": "B"}`)
	evs := e.events(t)
	a, b := issuedToken(t, evs[0]), issuedToken(t, evs[1])
	if a == b {
		t.Fatalf("two customers share token %s", a)
	}
	if got := e.owner(t, customer.Token, a); got != evs[0].ID {
		t.Errorf("A's token finds %q, want %s", got, evs[0].ID)
	}
	if got := e.owner(t, customer.Token, "chosen"); got != "" {
		t.Errorf("the token a record chose finds %s", got)
	}

	n, rej := e.chunk(t,
		`{"customer_token": "`+b+`", "first_name": "Bo"}`,
		`{"external_id": "A", "customer_token": "`+b+`", "last_name": "Lee"}`,
		`{"customer_token": "no-such-token", "first_name": "Cy"}`,
		`{"customer_token": "`+a+`", "is_forgotten": true}`,
		`{"customer_token": "`+a+`", "first_name": "Ann"}`)
	want := []string{"4 customer_token " + customer.ReasonNoMatch, "6 customer_token " + customer.ReasonNoMatch}
	var got []string
	for _, r := range rej {
		got = append(got, fmt.Sprintf("%d %s %s", r.Index, r.Field, r.Reason))
	}
	if n != 3 || !cmp.Equal(want, got) {
		t.Fatalf("accepted %d, rejections %v; want 3, %v", n, got, want)
	}
	byRecord := e.events(t)[2:]
	wantIDs := []string{evs[1].ID, evs[0].ID, evs[0].ID}
	for i, ev := range byRecord {
		if ev.ID != wantIDs[i] {
			t.Errorf("event %d is %s's, want %s's", i, ev.ID, wantIDs[i])
		}
		if ev.Changes != nil {
			if _, ok := ev.Changes.Set[customer.FieldToken]; ok {
				t.Errorf("a record set the token: %+v", ev.Changes)
			}
		}
	}
	if got := e.owner(t, customer.Token, a); got != "" {
		t.Errorf("the forgotten customer's token finds %s", got)
	}
	if s := e.state(t, evs[0].ID); s.HasToken {
		t.Errorf("the forgotten customer's state holds a token: %+v", s)
	}
	if s := e.state(t, evs[1].ID); !s.HasToken || e.owner(t, customer.Token, b) != evs[1].ID {
		t.Errorf("B's token: state %+v", s)
	}
}

// stripTokens makes the company's customers what customers from before
// tokens are: no token in their state (which is the registry).
func (e *customerEnv) stripTokens(tb testing.TB, co company.Company) {
	tb.Helper()
	ctx := context.Background()
	if _, err := e.pool.Exec(ctx, `UPDATE customer_states SET token_hash = NULL WHERE company_id = $1`, co.ID); err != nil {
		tb.Fatal(err)
	}
}

func (e *customerEnv) issueTokens(tb testing.TB, batch int) imports.IssuedCustomerTokens {
	tb.Helper()
	h := imports.NewIssueCustomerTokensHandler(e.pool, e.store, e.keys, func() time.Time { return now })
	got, err := h.Handle(context.Background(), imports.IssueCustomerTokens{Batch: batch})
	if err != nil {
		tb.Fatal(err)
	}
	return got
}

// TestIssueCustomerTokens: the backfill gives every customer from before
// tokens one, in batches and for every company, with an event that sets
// the token alone, by the system; deleted and forgotten customers get
// none; a second run does nothing.
func TestIssueCustomerTokens(t *testing.T) {
	e := newCustomerEnv(t)
	acme := e.company
	e.chunk(t, `{"external_id": "A"}`, `{"external_id": "B"}`, `{"external_id": "C"}`,
		`{"external_id": "D"}`, `{"external_id": "E"}`)
	e.chunk(t, `{"external_id": "D", "is_deleted": true}`, `{"external_id": "E", "is_forgotten": true}`)
	globex := company.Company{ID: "co2", Slug: "globex", ShortName: "GLOBEX", Timezone: "UTC"}
	e.company = globex
	e.chunk(t, `{"external_id": "A"}`)
	e.stripTokens(t, acme)
	e.stripTokens(t, globex)
	before := len(e.events(t))

	if got := e.issueTokens(t, 2); got != (imports.IssuedCustomerTokens{Issued: 4}) {
		t.Fatalf("Handle = %+v, want 4 issued and none remaining", got)
	}
	// The events, opened with the keys of their company.
	var issued []customerEvent
	for _, co := range []company.Company{acme, globex} {
		e.company = co
		for _, ev := range e.events(t)[before:] {
			if ev.Meta.CompanyID == co.ID {
				issued = append(issued, ev)
			}
		}
	}
	if len(issued) != 4 {
		t.Fatalf("%d events, want one per customer", len(issued))
	}
	seen := map[string]string{}
	for _, ev := range issued {
		tok := issuedToken(t, ev)
		if diff := cmp.Diff(&customer.Changes{Set: map[string]any{"customer_token": tok}}, ev.Changes); diff != "" {
			t.Errorf("changes (-want +got):\n%s", diff)
		}
		if ev.Type != customer.TypeUpserted || ev.Created || !cmp.Equal(ev.Fields, []string{"customer_token"}) || ev.Version != 2 {
			t.Errorf("event %+v, want the second, an upsert of customer_token", ev)
		}
		if ev.Meta.Actor != "system" || ev.Meta.Source != "system" || ev.Meta.CompanyID == "" {
			t.Errorf("metadata %+v, want actor and source system", ev.Meta)
		}
		if prev, ok := seen[ev.ID]; ok {
			t.Errorf("customer %s issued %s and %s", ev.ID, prev, tok)
		}
		seen[ev.ID] = tok
		e.company = acme
		if ev.Meta.CompanyID == globex.ID {
			e.company = globex
		}
		if got := e.owner(t, customer.Token, tok); got != ev.ID {
			t.Errorf("token of %s finds %q", ev.ID, got)
		}
		if s := e.state(t, ev.ID); s.Version != 2 || !s.HasToken {
			t.Errorf("state of %s: %+v", ev.ID, s)
		}
	}
	if got := e.issueTokens(t, 2); got != (imports.IssuedCustomerTokens{}) {
		t.Errorf("second Handle = %+v, want nothing to do", got)
	}
	if n := len(e.events(t)); n != before+4 {
		t.Errorf("the second run appended %d events", n-before-4)
	}

	// A customer given its token by the backfill is found by it.
	e.company = acme
	var tokA string
	for id, tok := range seen {
		if e.owner(t, customer.ExternalID, "A") == id {
			tokA = tok
		}
	}
	if n, rej := e.chunk(t, `{"customer_token": "`+tokA+`", "first_name": "Ann"}`); n != 1 || rej != nil {
		t.Errorf("a record naming the issued token: accepted %d, rejections %v", n, rej)
	}
}

// TestIssueCustomerTokensConcurrently: nodes running the backfill at once
// share the customers (SKIP LOCKED): each gets one token.
func TestIssueCustomerTokensConcurrently(t *testing.T) {
	e := newCustomerEnv(t)
	var records []string
	for i := range 40 {
		records = append(records, fmt.Sprintf(`{"external_id": "C-%d"}`, i))
	}
	e.chunk(t, records...)
	e.stripTokens(t, e.company)
	before := len(e.events(t))
	h := imports.NewIssueCustomerTokensHandler(e.pool, e.store, e.keys, func() time.Time { return now })
	var wg sync.WaitGroup
	results, errs := make([]imports.IssuedCustomerTokens, 3), make([]error, 3)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = h.Handle(context.Background(), imports.IssueCustomerTokens{Batch: 3}) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	total := 0
	for _, r := range results {
		total += r.Issued
	}
	if total != 40 {
		t.Errorf("issued %d tokens in all (%+v), want 40", total, results)
	}
	perCustomer := map[string]int{}
	for _, ev := range e.events(t)[before:] {
		perCustomer[ev.ID]++
	}
	if len(perCustomer) != 40 {
		t.Errorf("%d customers given a token, want 40", len(perCustomer))
	}
	for id, n := range perCustomer {
		if n != 1 {
			t.Errorf("customer %s given %d tokens", id, n)
		}
	}
}

// TestChunkKeepsATokenIssuedMeanwhile: a chunk that takes an identity from
// a customer writes that customer's state back without an event of its
// own; the backfill may have given it a token (and a version) since the
// chunk read it, and the chunk's write must lose neither.
func TestChunkKeepsATokenIssuedMeanwhile(t *testing.T) {
	e := newCustomerEnv(t)
	ctx := context.Background()
	e.chunk(t, `{"email": "ann@example.com"}`, `{"phone_number": "+358401234567"}`)
	b := e.events(t)[1].ID
	e.stripTokens(t, e.company)

	// The backfill's transaction, holding b's state, as a batch does.
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := tx.Exec(ctx, `SELECT FROM customer_states WHERE company_id = $1 AND customer_id = $2 FOR UPDATE`, e.company.ID, b); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var chunkErr error
	go func() {
		defer close(done)
		// a takes b's phone: b's state is written back, with no event.
		chunkErr = pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
			_, err := e.importer.ImportChunk(ctx, tx, imports.Chunk{Company: e.company, RunID: "run-2",
				Metadata: eventstore.Metadata{CompanyID: e.company.ID, RunID: "run-2", Actor: "users/u1", Source: "api"},
				Records:  []json.RawMessage{json.RawMessage(`{"email": "ann@example.com", "phone_number": "+358401234567"}`)}})
			return err
		})
	}()
	waitForLockWait(t, e, done)
	if _, err := tx.Exec(ctx, `UPDATE customer_states SET version = version + 1, token_hash = '\x00112233445566778899aabbccddeeff'
		WHERE company_id = $1 AND customer_id = $2`, e.company.ID, b); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	<-done
	if chunkErr != nil {
		t.Fatal(chunkErr)
	}
	if diff := cmp.Diff(customerState{Version: 2, HasToken: true}, e.state(t, b)); diff != "" {
		t.Errorf("state of the customer that lost its phone (-want +got):\n%s", diff)
	}
}

// waitForLockWait waits until a session of the test's database waits for
// a lock, or done is closed.
func waitForLockWait(t *testing.T, e *customerEnv, done <-chan struct{}) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		var n int
		if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
			WHERE datname = current_database() AND wait_event_type = 'Lock'`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		select {
		case <-done:
			t.Fatal("the chunk did not wait for the backfill's lock")
		default:
		}
		if n > 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no session waits for a lock")
}
