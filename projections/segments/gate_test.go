package segments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/projections/segments"
	"github.com/clientele/clientele/readmodels"
)

// membersEnv runs the membership projector as serve does (async, beside
// the retrieval projectors), on a store the test appends to as the write
// side does.
type membersEnv struct {
	*projectiontest.Customers
	members *segments.Members
	async   []projections.Projector
}

func newMembersEnv(t *testing.T) *membersEnv {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := projectiontest.PgtestPool(t)
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	e := &membersEnv{Customers: &projectiontest.Customers{T: t, Pool: pool, Store: store, Keys: keys},
		members: segments.NewMembers(keys, postgres.EventLog{})}
	e.async = []projections.Projector{retrieval.NewCustomers(keys), retrieval.NewEvents(keys), retrieval.NewSales(keys), e.members}
	rt, err := projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store,
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond},
		Inline:           projectors.Inline(), Async: e.async})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(rt.InlineHook())
	store.AddHook(projections.CommitPublisher{})
	projectiontest.StartRuntime(t, rt)
	return e
}

// caughtUp waits until every async projector has applied the log.
func (e *membersEnv) caughtUp() {
	e.T.Helper()
	for _, p := range e.async {
		projectiontest.WaitCaughtUp(e.T, e.Pool, p)
	}
}

// createSegment appends a segment's creation, as the command does, and
// returns the instant it was recorded at.
func (e *membersEnv) createSegment(company, key, rule string) time.Time {
	e.T.Helper()
	data, err := json.Marshal(segment.Created{Key: key, Name: key, Rule: json.RawMessage(rule), CreatedBy: "test"})
	if err != nil {
		e.T.Fatal(err)
	}
	c := projectiontest.MustAppend(e.T, e.Store, eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: segment.Stream(company, key), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{{Type: segment.CreatedType, Data: data}}}},
	})
	var at time.Time
	if err := e.Pool.QueryRow(context.Background(), `SELECT recorded_at FROM events WHERE global_position = $1`, c.Last.Global).Scan(&at); err != nil {
		e.T.Fatal(err)
	}
	return at.UTC()
}

// importData gives the company three customers (c1 and c3 in Helsinki,
// c2 in Turku), a BROWSE event of c1 dated eventAt, and a sale of
// product P-1 to c3 of 500 dated a day ago.
func (e *membersEnv) importData(company string, eventAt time.Time) {
	e.T.Helper()
	for _, c := range []struct{ id, city string }{{"c1", "Helsinki"}, {"c2", "Turku"}, {"c3", "Helsinki"}} {
		e.Upsert(company, c.id, customer.Changes{Set: map[string]any{"external_id": c.id, "city": c.city}})
	}
	e.Activity(company, projectiontest.RecordedEv(activity.Recorded{ID: 1, CustomerID: "c1", Type: "BROWSE",
		Date: eventAt.Format("2006-01-02T15:04:05Z"), Fields: map[string]any{"label": "home"}}))
	e.SaleUpsert(company, sale.Upserted{SaleID: "s1", ExternalID: "S-1", CustomerID: "c3", Created: true,
		Set:  map[string]any{"sale_date": time.Now().UTC().Add(-24 * time.Hour).Format(time.RFC3339), "sale_state": "COMPLETE", "sale_total": 500},
		Rows: []sale.Row{projectiontest.Row("id:1", map[string]any{"product_id": "P-1"})}})
}

// factRows counts the company's rows of each table the projector keeps
// facts in.
func (e *membersEnv) factRows(company string) map[string]int {
	e.T.Helper()
	out := map[string]int{}
	for _, table := range []string{"segment_customers", "segment_activity", "segment_sales", "segment_clock"} {
		var n int
		if err := e.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+table+` WHERE company_id = $1`, company).Scan(&n); err != nil {
			e.T.Fatal(err)
		}
		out[table] = n
	}
	return out
}

// TestSegmentFactsOnlyForACompanyWithASegment: the projector keeps no
// facts (customers, events, sales, clock) for a company without a
// segment, while it keeps them for another company importing the same
// data beside it, which has one; live (where the runtime does not even
// read the commits the projector refuses) and after a rebuild.
func TestSegmentFactsOnlyForACompanyWithASegment(t *testing.T) {
	e := newMembersEnv(t)
	e.createSegment("with", "hel", `{"field":"city","eq":"Helsinki"}`)
	eventAt := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	e.importData("with", eventAt)
	e.importData("without", eventAt)
	e.caughtUp()
	if got, want := e.factRows("without"), map[string]int{"segment_customers": 0, "segment_activity": 0, "segment_sales": 0, "segment_clock": 0}; !cmp.Equal(got, want) {
		t.Errorf("the company without a segment: %v, want none", got)
	}
	if got, want := e.factRows("with"), map[string]int{"segment_customers": 3, "segment_activity": 1, "segment_sales": 1, "segment_clock": 1}; !cmp.Equal(got, want) {
		t.Errorf("the company with a segment: %v, want %v", got, want)
	}
	// A rebuild hands Apply every commit (the runtime does not read those
	// WantsCommit refuses): the same.
	if err := projections.Rebuild(context.Background(), e.Pool, e.Store, postgres.EventLog{}, e.members, projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.caughtUp()
	if got := e.factRows("without"); got["segment_customers"]+got["segment_activity"]+got["segment_sales"]+got["segment_clock"] != 0 {
		t.Errorf("the company without a segment, rebuilt: %v, want none", got)
	}
	if got := e.factRows("with"); got["segment_customers"] != 3 {
		t.Errorf("the company with a segment, rebuilt: %v", got)
	}
}

// TestSegmentPreviewSameOnBothSources: a preview of a company without a
// segment, decided on the retrieval read models, answers what the
// preview of a company with one, decided on the membership facts,
// answers on the same data: the same size and the same sample, for a
// rule on fields, events and sales.
func TestSegmentPreviewSameOnBothSources(t *testing.T) {
	e := newMembersEnv(t)
	e.createSegment("with", "none", `{"field":"city","eq":"Oulu"}`)
	eventAt := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	e.importData("with", eventAt)
	e.importData("without", eventAt)
	e.caughtUp()
	q := readmodels.NewSegments(e.Pool)
	for _, text := range []string{
		`{"field":"city","eq":"Helsinki"}`,
		`{"event":{"type":"BROWSE","within_days":7,"where":[{"field":"label","eq":"home"}]}}`,
		`{"sales":{"within_days":30,"min_revenue":400,"product_id":"P-1"}}`,
		`{"any":[{"event":{"type":"BROWSE"}},{"sales":{"min_count":1}}]}`,
	} {
		rule, err := segment.ParseRule(json.RawMessage(text))
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()
		facts, err := q.Preview(context.Background(), "with", rule, now)
		if err != nil {
			t.Fatal(err)
		}
		kept, err := q.Preview(context.Background(), "without", rule, now)
		if err != nil {
			t.Fatal(err)
		}
		if facts.Size == 0 {
			t.Errorf("%s: no customer on the facts: the rule tests nothing", text)
		}
		if diff := cmp.Diff(fmt.Sprintf("%d %s", facts.Size, facts.Sample), fmt.Sprintf("%d %s", kept.Size, kept.Sample)); diff != "" {
			t.Errorf("%s: the facts (-) and the retrieval read models (+) answer differently:\n%s", text, diff)
		}
	}
}

// history is a company's segment history, entries and exits in order.
func (e *membersEnv) history(company string) []string {
	e.T.Helper()
	rows, err := e.Pool.Query(context.Background(), `SELECT segment_key, customer_id, member, at, cause FROM segment_history
		WHERE company_id = $1 ORDER BY seq`, company)
	if err != nil {
		e.T.Fatal(err)
	}
	var out []string
	for rows.Next() {
		var key, id, cause string
		var member bool
		var at time.Time
		if err := rows.Scan(&key, &id, &member, &at, &cause); err != nil {
			e.T.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s %s %v %s %s", key, id, member, at.UTC().Format(time.RFC3339Nano), cause))
	}
	return out
}

// TestSegmentCreatedAfterItsFacts: the first segment of a company created
// after its customers, events (one dated before the creation, inside the
// window) and sales has its members at the creation's instant with the
// cause "rule", the exit at the window's end with the cause "time", and
// a rebuild of the projection gives the same members and history.
func TestSegmentCreatedAfterItsFacts(t *testing.T) {
	e := newMembersEnv(t)
	co := "acme"
	eventAt := time.Now().UTC().Add(-72 * time.Hour).Truncate(time.Second)
	e.importData(co, eventAt)
	e.caughtUp()
	if got := e.factRows(co); got["segment_customers"] != 0 {
		t.Fatalf("facts before the first segment: %v", got)
	}
	created := e.createSegment(co, "hot", `{"all":[{"field":"city","eq":"Helsinki"},{"event":{"type":"BROWSE","within_days":7}}]}`)
	bought := e.createSegment(co, "buyers", `{"sales":{"within_days":30,"min_revenue":400,"product_id":"P-1"}}`)
	e.caughtUp()
	// The window of c1's event ends 7 days after it, 4 days from now: the
	// timers fire as if then.
	closes := eventAt.Add(7 * 24 * time.Hour)
	fire := func() {
		if _, err := e.members.FireTimers(context.Background(), e.Pool, closes.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	fire()
	stamp := func(at time.Time) string { return at.UTC().Format(time.RFC3339Nano) }
	want := []string{
		"hot c1 true " + stamp(created) + " rule",
		"buyers c3 true " + stamp(bought) + " rule",
		"hot c1 false " + stamp(closes) + " time",
	}
	history := e.history(co)
	if diff := cmp.Diff(want, history); diff != "" {
		t.Errorf("history (-want +got):\n%s", diff)
	}
	members := e.TableText("segment_members", "company_id, segment_key, customer_id")
	if len(members) != 1 {
		t.Errorf("members %v, want c3 in buyers", members)
	}

	// clientele projections rebuild segment_members: the same members,
	// and once the timers fire at the same instant, the same history.
	if err := projections.Rebuild(context.Background(), e.Pool, e.Store, postgres.EventLog{}, e.members, projections.KindAsync, nil); err != nil {
		t.Fatal(err)
	}
	e.caughtUp()
	fire()
	if diff := cmp.Diff(history, e.history(co)); diff != "" {
		t.Errorf("history after a rebuild (-before +after):\n%s", diff)
	}
	if diff := cmp.Diff(members, e.TableText("segment_members", "company_id, segment_key, customer_id")); diff != "" {
		t.Errorf("members after a rebuild (-before +after):\n%s", diff)
	}
}

// TestSegmentMembersWantsCommit: the runtime reads a commit for the
// projector only when the commit's company has a segment, or when the
// commit creates one, told by the header's types or, when a header does
// not list them, by the log.
func TestSegmentMembersWantsCommit(t *testing.T) {
	e := newMembersEnv(t)
	e.createSegment("with", "hel", `{"field":"city","eq":"Helsinki"}`)
	e.importData("without", time.Now().UTC())
	e.createSegment("later", "hel", `{"field":"city","eq":"Helsinki"}`)
	e.caughtUp()
	ctx := context.Background()
	txOf := func(company, typ string) uint64 {
		var xid uint64
		if err := e.Pool.QueryRow(ctx, `SELECT transaction_id::text::bigint FROM events WHERE company_id = $1 AND event_type = $2 LIMIT 1`,
			company, typ).Scan(&xid); err != nil {
			t.Fatal(err)
		}
		return xid
	}
	for _, c := range []struct {
		name string
		h    bus.CommitHeader
		want bool
	}{
		{"a company with a segment", bus.CommitHeader{CompanyID: "with", Types: []string{customer.TypeUpserted}}, true},
		{"a company without one", bus.CommitHeader{CompanyID: "without", Types: []string{customer.TypeUpserted}}, false},
		{"a commit creating the first", bus.CommitHeader{CompanyID: "without", Types: []string{segment.CreatedType}}, true},
		{"a company without one, types not listed", bus.CommitHeader{CompanyID: "without", TxID: txOf("without", customer.TypeUpserted)}, false},
		{"a commit creating the first, types not listed", bus.CommitHeader{CompanyID: "none", TxID: txOf("later", segment.CreatedType)}, true},
	} {
		tx, err := e.Pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got, err := e.members.WantsCommit(ctx, tx, c.h)
		_ = tx.Rollback(ctx)
		if err != nil || got != c.want {
			t.Errorf("%s: %v (%v), want %v", c.name, got, err, c.want)
		}
	}
}
