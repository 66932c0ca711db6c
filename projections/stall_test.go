package projections_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/retrieval"
)

// TestForgettingIsNeverHeld: with a company parked for the customers
// projector on a value the read model cannot store, a forgetting in a
// held commit is applied at once; the other companies go on. Forgetting
// the customer whose record is the poison makes its commit applicable
// (its key is gone: the record opens to nothing), and the company then
// resumes with every held commit applied in order.
func TestForgettingIsNeverHeld(t *testing.T) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projections.CommitPublisher{})
	keys := crypto.KeyStore{Keyring: kr}
	c := &projectiontest.Customers{T: t, Pool: pool, Store: store, Keys: keys, P: retrieval.NewCustomers(keys)}
	rt := poisonRuntime(t, pool, store, nil, time.Hour, c.P)
	set := func(kv ...any) customer.Changes {
		m := map[string]any{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i].(string)] = kv[i+1]
		}
		return customer.Changes{Set: m}
	}
	c.Upsert("acme", "ann", set("email", "ann@example.com", "first_name", "Ann"))
	c.Upsert("acme", "bob", set("email", "bob@example.com"))
	c.Upsert("globex", "gil", set("email", "gil@example.com"))
	// numeric, under jsonb, holds at most 131072 digits before the point.
	c.Upsert("acme", "pat", set("ACME__x", json.Number("1e131072")))
	projectiontest.WaitFor(t, 10*time.Second, "acme parked", func() bool { return len(projectiontest.Stalls(t, rt)) == 1 })
	if s := projectiontest.Stalls(t, rt)[0]; s.Projection != "customers" || s.CompanyID != "acme" || !strings.Contains(s.Error, "numeric") {
		t.Fatalf("stall %+v, want acme parked by the value", s)
	}

	c.Upsert("acme", "ann", set("first_name", "Anne"))
	c.End("acme", "ann", customer.TypeForgotten)
	c.Upsert("globex", "gil", set("first_name", "Gil"))
	c.Upsert("globex", "gus", set("email", "gus@example.com"))
	c.End("globex", "gus", customer.TypeForgotten)
	projectiontest.WaitCaughtUp(t, pool, c.P)
	if got, _, forgotten := c.Doc("acme", "ann"); !forgotten || !cmp.Equal(got, projectiontest.ForgottenDoc("ann", false)) {
		t.Errorf("ann, forgotten while acme is parked: %v", got)
	}
	if got, _, _ := c.Doc("acme", "bob"); got["email"] != "bob@example.com" {
		t.Errorf("bob, before the poison: %v", got)
	}
	if got, _, _ := c.Doc("globex", "gil"); got["first_name"] != "Gil" || got["email"] != "gil@example.com" {
		t.Errorf("gil, of globex: %v", got)
	}
	if got, _, _ := c.Doc("globex", "gus"); !cmp.Equal(got, projectiontest.ForgottenDoc("gus", false)) {
		t.Errorf("gus, of globex: %v", got)
	}

	c.End("acme", "pat", customer.TypeForgotten)
	c.Upsert("acme", "bob", set("first_name", "Bob"))
	c.Upsert("acme", "bob", set("first_name", "Bobby"))
	projectiontest.WaitCaughtUp(t, pool, c.P)
	if got, _, _ := c.Doc("acme", "bob"); got["first_name"] != nil {
		t.Errorf("bob changed while acme is parked: %v", got)
	}
	n, err := rt.RetryStall(context.Background(), "customers", "acme")
	if err != nil || n != 6 {
		t.Fatalf("RetryStall = %d, %v; want the 6 held commits applied", n, err)
	}
	if s := projectiontest.Stalls(t, rt); len(s) != 0 {
		t.Fatalf("stalls after the retry: %+v", s)
	}
	for id, want := range map[string]map[string]any{
		"ann": projectiontest.ForgottenDoc("ann", false),
		"pat": projectiontest.ForgottenDoc("pat", false),
	} {
		if got, _, _ := c.Doc("acme", id); !cmp.Equal(got, want) {
			t.Errorf("%s after the retry: %v", id, got)
		}
	}
	if got, _, _ := c.Doc("acme", "bob"); got["first_name"] != "Bobby" || got["email"] != "bob@example.com" {
		t.Errorf("bob after the retry: %v, want his changes applied in order", got)
	}
	var version int64
	if err := pool.QueryRow(context.Background(), `SELECT version FROM customers WHERE company_id = 'acme' AND customer_id = 'ann'`).Scan(&version); err != nil || version != 3 {
		t.Errorf("ann's version %d (%v), want 3: every event of hers applied once", version, err)
	}
	// Resumed, acme's changes are applied as they come.
	c.Upsert("acme", "bob", set("first_name", "Robert"))
	projectiontest.WaitCaughtUp(t, pool, c.P)
	if got, _, _ := c.Doc("acme", "bob"); got["first_name"] != "Robert" {
		t.Errorf("bob after acme resumed: %v", got)
	}
}

// TestRebuildParksToo: a rebuild that meets the commit the live projector
// parked parks its company too, instead of failing, and its swap keeps
// the stall; once the commit applies, a rebuild rebuilds the company whole
// and removes the stall.
func TestRebuildParksToo(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, projections.CommitPublisher{})
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, poisoned)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 2))
	bad := projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 2))
	last := projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "b", 1))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "h", 3))
	projectiontest.WaitCaughtUp(t, pool, poisoned)

	if err := projections.Rebuild(ctx, pool, store, postgres.EventLog{}, poisoned, projections.KindAsync, nil); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	s := projectiontest.Stalls(t, rt)
	if len(s) != 1 || s[0].CompanyID != "acme" || s[0].Commit != bad.First || s[0].HeldUntil != last.Last || !strings.Contains(s[0].Error, "boom") {
		t.Fatalf("stalls after the rebuild %+v, want acme parked at %v holding up to %v", s, bad.First, last.Last)
	}
	want, got := wantCounts(t, pool), gotCounts(t, pool, "poisoned")
	if diff := cmp.Diff(countsOf(want, "globex"), countsOf(got, "globex")); diff != "" {
		t.Errorf("globex after the rebuild (-want +got):\n%s", diff)
	}
	if acme := countsOf(got, "acme"); len(acme) != 1 || acme["tick-acme-a"].N != 2 {
		t.Errorf("acme after the rebuild: %v, want only stream a", acme)
	}

	poisoned.broken.Store(false)
	if err := projections.Rebuild(ctx, pool, store, postgres.EventLog{}, poisoned, projections.KindAsync, nil); err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if s := projectiontest.Stalls(t, rt); len(s) != 0 {
		t.Errorf("stalls after a rebuild that applied everything: %+v", s)
	}
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	checkCounts(t, pool, "poisoned")
	checkNoScratch(t, pool)
}

// TestForgettingIsNeverHeldByEventsAndSales: the events and sales
// projectors, parked for a company on a value their read models cannot
// store, still remove a forgotten customer's personal fields at once.
func TestForgettingIsNeverHeldByEventsAndSales(t *testing.T) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projections.CommitPublisher{})
	keys := crypto.KeyStore{Keyring: kr}
	c := &projectiontest.Customers{T: t, Pool: pool, Store: store, Keys: keys}
	events, sales := retrieval.NewEvents(keys), retrieval.NewSales(keys)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, events, sales)
	secret := "zq-secret@example.org"
	date := "2024-05-06T04:08:09Z"
	for _, co := range []string{"co1", "co2"} {
		c.Upsert(co, "c1", customer.Changes{Set: map[string]any{"email": secret}})
		c.Activity(co, projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c1", Type: "BROWSE", Date: date,
			Sealed: c.Seal(co, "c1", map[string]any{"email": secret})}))
		c.SaleUpsert(co, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c1", Created: true,
			Set: map[string]any{"sale_date": date}, Sealed: c.Seal(co, "c1", map[string]any{"sale_email": secret})})
	}
	// The log holds data as jsonb too: the value can only be in sealed
	// personal fields, which the projectors open.
	c.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"email": "c2@example.org"}})
	huge := json.Number("1e131072")
	c.Activity("co1", projectiontest.RecordedEv(activity.Recorded{ID: 2, CustomerID: "c2", Type: "BROWSE", Date: date,
		Sealed: c.Seal("co1", "c2", map[string]any{"first_name": huge})}))
	c.SaleUpsert("co1", sale.Upserted{SaleID: "s2", ExternalID: "S-2", CustomerID: "c2", Created: true,
		Set: map[string]any{"sale_date": date}, Sealed: c.Seal("co1", "c2", map[string]any{"sale_first_name": huge})})
	projectiontest.WaitFor(t, 10*time.Second, "co1 parked for events and sales", func() bool { return len(projectiontest.Stalls(t, rt)) == 2 })

	c.End("co1", "c1", customer.TypeForgotten)
	c.End("co2", "c1", customer.TypeForgotten)
	projectiontest.WaitCaughtUp(t, pool, events)
	projectiontest.WaitCaughtUp(t, pool, sales)
	for _, table := range []string{"activity_events", "sales"} {
		if n := c.Holding(table, secret); n != 0 {
			t.Errorf("%d rows of %s hold a forgotten customer's data", n, table)
		}
	}
	if got := c.Docs(`SELECT doc FROM activity_events WHERE company_id = 'co1' ORDER BY event_id`); len(got) != 1 || got[0]["id"] != 1.0 {
		t.Errorf("co1's events while it is parked: %v, want event 1 alone", got)
	}
}

// statements records the SQL statements of a pool (pgx.QueryTracer).
type statements struct {
	mu  sync.Mutex
	sql []string
}

func (s *statements) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.sql = append(s.sql, d.SQL)
	return ctx
}

func (s *statements) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

// take returns the statements recorded since the last call.
func (s *statements) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := s.sql
	s.sql = nil
	return out
}

// traced returns a pool on pool's database whose statements st records.
func traced(t *testing.T, pool *pgxpool.Pool, st *statements) *pgxpool.Pool {
	t.Helper()
	cfg := pool.Config()
	cfg.ConnConfig.Tracer = st
	p, err := pgxpool.NewWithConfig(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// walks counts the statements among sql that walk the log for one
// company (ReadCompanyLog): the events table has no company column in
// any other read.
func walks(sql []string) int {
	n := 0
	for _, q := range sql {
		if strings.Contains(q, "FROM events") && strings.Contains(q, "company_id") {
			n++
		}
	}
	return n
}

// TestRetryReadsTheStalledCommitAlone: a retry of a parked company whose
// commit still fails reads that commit by its transaction id and walks
// no log (ReadCompanyLog walks every company's events since the stall,
// and the retry comes back every few minutes for as long as the company
// is parked); once the commit applies, one walk finds the commits held
// behind it, and they are applied in order.
func TestRetryReadsTheStalledCommitAlone(t *testing.T) {
	st := &statements{}
	pool := traced(t, pgtest.NewPool(t), st)
	createCounterTable(t, pool, "poisoned")
	store := postgres.New(pool, projections.CommitPublisher{})
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, poisoned)
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "a", 1))
	bad := projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.WaitFor(t, 10*time.Second, "acme parked", func() bool { return len(projectiontest.Stalls(t, rt)) == 1 })
	for range 5 {
		projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "g", 2))
	}
	projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "b", 2))
	projectiontest.MustAppend(t, store, projectiontest.Ticks("globex", "h", 1))
	last := projectiontest.MustAppend(t, store, projectiontest.Ticks("acme", "c", 1))
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	if s := projectiontest.Stalls(t, rt); len(s) != 1 || s[0].Commit != bad.First || s[0].HeldUntil != last.Last {
		t.Fatalf("stalls %+v, want acme parked at %v holding up to %v", s, bad.First, last.Last)
	}

	st.take()
	for range 3 {
		if n, err := rt.RetryStall(context.Background(), "poisoned", "acme"); !errors.Is(err, projectiontest.ErrBoom) || n != 0 {
			t.Fatalf("RetryStall = %d, %v; want 0 and the failure", n, err)
		}
	}
	if n := walks(st.take()); n != 0 {
		t.Errorf("retries of a commit that still fails walked the log %d times, want none", n)
	}

	poisoned.broken.Store(false)
	if n, err := rt.RetryStall(context.Background(), "poisoned", "acme"); err != nil || n != 3 {
		t.Fatalf("RetryStall = %d, %v; want the 3 held commits applied", n, err)
	}
	if n := walks(st.take()); n != 1 {
		t.Errorf("the retry that applied walked the log %d times, want once", n)
	}
	if s := projectiontest.Stalls(t, rt); len(s) != 0 {
		t.Fatalf("stalls after the retry: %+v", s)
	}
	projectiontest.WaitCaughtUp(t, pool, poisoned)
	checkCounts(t, pool, "poisoned")
}

// TestStalledCompaniesReadsNoError: the readiness probe's count of parked
// companies is counted by the database; the stalls' errors (a panic's
// stack each) are not read.
func TestStalledCompaniesReadsNoError(t *testing.T) {
	st := &statements{}
	pool := traced(t, pgtest.NewPool(t), st)
	createCounterTable(t, pool, "poisoned")
	createCounterTable(t, pool, "healthy")
	store := postgres.New(pool, projections.CommitPublisher{})
	poisoned := &breakable{counter: counter{"poisoned", "poisoned"}}
	poisoned.broken.Store(true)
	poisoned.panics.Store(true)
	rt := poisonRuntime(t, pool, store, nil, time.Hour, poisoned, counter{"healthy", "healthy"})
	projectiontest.MustAppend(t, store, projectiontest.Boom("acme", "boom"))
	projectiontest.MustAppend(t, store, projectiontest.Boom("globex", "boom"))
	projectiontest.WaitFor(t, 10*time.Second, "acme and globex parked", func() bool { return len(projectiontest.Stalls(t, rt)) == 2 })

	st.take()
	counts, err := rt.StalledCompanies(context.Background())
	if err != nil || !cmp.Equal(counts, map[string]int{"poisoned": 2}) {
		t.Fatalf("StalledCompanies = %v, %v; want poisoned: 2", counts, err)
	}
	for _, q := range st.take() {
		if strings.Contains(q, "projection_stalls") && strings.Contains(q, "error") {
			t.Errorf("StalledCompanies reads the stalls' errors: %s", q)
		}
	}
}
