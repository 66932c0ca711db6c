package segments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/segments"
)

// TestLiveSameAsDecidingOnAllFacts compares the projector's live path,
// which decides the customers a commit touches on only what the active
// rules read (the named fields, the events of the named types with the
// named fields, the sales when a sales leaf reads them), with the same
// projector deciding them on every fact they have (whole documents,
// every event with every field, every sale: the reference). Both apply
// the same log, commit after commit, then fire every timer due within 40
// days: the 20 segments of mixedRules and one more, created after the
// first data (the gate opens), over generated customers with fields of
// every JSON type, absent ones among them; events of named and unnamed
// types with named and unnamed fields, dated inside and outside the
// windows; counted and uncounted sales of several products; then
// customers changed and deleted, events deleted, a segment's rule changed
// and another archived, and more events. Members, history and timers
// must be the same.
func TestLiveSameAsDecidingOnAllFacts(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	const company, n = "co", 300
	now := time.Now().UTC()
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("%08d", i+1)
	}
	var log [][]eventstore.RecordedEvent
	add := func(c eventstore.Committed) { log = append(log, c.Events) }

	add(upsertCustomers(t, ctx, store, keys, company, ids, func(i int) map[string]any {
		set := map[string]any{"external_id": ids[i], "tags": []string{"a", "vip"}[i%2:],
			"can_email": i%3 == 0, "signup": now.AddDate(0, 0, -(i % 200)).Format("2006-01-02")}
		if i%7 != 0 {
			set["city"] = []string{"Helsinki", "Turku", "Espoo"}[i%3]
		}
		if i%11 != 0 {
			set["age"] = i % 80
		}
		if i%4 == 0 {
			set["name"] = "Ann Smith"
		}
		return set
	}))
	var creations []eventstore.StreamAppend
	for _, r := range append(mixedRules[:len(mixedRules):len(mixedRules)],
		[2]string{"s21", `{"all":[{"segment":"s09"},{"event":{"type":"OPEN","within_days":10,"min_count":2}}]}`}) {
		data, _ := json.Marshal(segment.Created{Key: r[0], Name: r[0], Rule: json.RawMessage(r[1]), CreatedBy: "test"})
		creations = append(creations, eventstore.StreamAppend{StreamID: segment.Stream(company, r[0]),
			ExpectedVersion: eventstore.NoStream, Events: []eventstore.Event{{Type: segment.CreatedType, Data: data}}})
	}
	add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"}, Streams: creations}))
	eventID := int64(0)
	events := func(round, count int) {
		var evs []eventstore.Event
		for k := range count {
			i := (round*131 + k*7) % n
			eventID++
			typ := []string{"BROWSE", "OPEN", "CLICK", "SIGNUP"}[(k+k/5+round)%4]
			// Dated from 40 days ago to 2 days ahead, in hours.
			at := now.Add(-time.Duration((i*37+k*11+round*5)%(42*24)-48) * time.Hour)
			data, _ := json.Marshal(activity.Recorded{ID: eventID, CustomerID: ids[i], Type: typ, Date: at.Format("2006-01-02T15:04:05Z"),
				Fields: map[string]any{"label": []string{"home", "cart", "list"}[(k/4)%3], "price": (k * 13) % 100,
					"channel": []string{"web", "app"}[(k/12)%2], "note": fmt.Sprintf("n%d", k)}})
			evs = append(evs, eventstore.Event{Type: activity.TypeRecorded, Data: data})
		}
		add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
			Streams: []eventstore.StreamAppend{{StreamID: activity.Stream(company), ExpectedVersion: eventstore.Any, Events: evs}}}))
	}
	for round := range 3 {
		events(round, 400)
	}
	var sales []eventstore.StreamAppend
	for i := 0; i < n; i += 2 {
		state := "COMPLETE"
		if i%10 == 0 {
			state = "CANCELLED"
		}
		u := sale.Upserted{SaleID: fmt.Sprintf("s%d", i), ExternalID: fmt.Sprintf("S-%d", i), CustomerID: ids[i], Created: true,
			Set: map[string]any{"sale_date": now.AddDate(0, 0, -(i % 100)).Format(time.RFC3339), "sale_state": state,
				"sale_total": (i % 90) * 100},
			Rows: []sale.Row{projectiontest.Row("id:1", map[string]any{"product_id": []string{"P1", "P2", "P3"}[i%3]})}}
		data, _ := json.Marshal(u)
		sales = append(sales, eventstore.StreamAppend{StreamID: sale.Stream(company, u.SaleID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{{Type: sale.TypeUpserted, Data: data}}})
	}
	add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"}, Streams: sales}))
	add(upsertCustomers(t, ctx, store, keys, company, ids[:60], func(i int) map[string]any {
		return map[string]any{"city": []string{"Turku", "Oulu"}[i%2], "age": 20 + i}
	}))
	var ends []eventstore.StreamAppend
	for _, id := range ids[290:] {
		data, _ := json.Marshal(customer.Deleted{CustomerID: id})
		ends = append(ends, eventstore.StreamAppend{StreamID: customer.Stream(company, id), ExpectedVersion: eventstore.Any,
			Events: []eventstore.Event{{Type: customer.TypeDeleted, Data: data}}})
	}
	add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"}, Streams: ends}))
	var deletions []eventstore.Event
	for id := int64(1); id <= 200; id += 3 {
		deletions = append(deletions, projectiontest.DeletedEv(id))
	}
	add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: activity.Stream(company), ExpectedVersion: eventstore.Any, Events: deletions}}}))
	changed, _ := json.Marshal(segment.Changed{Key: "s08", Name: "s08", Rule: json.RawMessage(`{"event":{"type":"BROWSE","within_days":5}}`)})
	archived, _ := json.Marshal(segment.Archived{Key: "s04"})
	add(projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{
			{StreamID: segment.Stream(company, "s08"), ExpectedVersion: eventstore.Any, Events: []eventstore.Event{{Type: segment.ChangedType, Data: changed}}},
			{StreamID: segment.Stream(company, "s04"), ExpectedVersion: eventstore.Any, Events: []eventstore.Event{{Type: segment.ArchivedType, Data: archived}}},
		}}))
	events(3, 300)

	m := segments.NewMembers(keys, postgres.EventLog{})
	wanted := m.EventTypes()
	run := func() membership {
		tx, err := pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		for _, commit := range log {
			var evs []eventstore.RecordedEvent
			for _, e := range commit {
				if slices.Contains(wanted, e.Type) {
					evs = append(evs, e)
				}
			}
			if err := m.Apply(ctx, tx, evs); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := m.FireTimers(ctx, tx, now.AddDate(0, 0, 40)); err != nil {
			t.Fatal(err)
		}
		return readMembership(t, ctx, tx, company, 0)
	}
	got := run()
	segments.DecideOnAllFacts(t)
	want := run()

	causes := map[string]int{}
	for _, h := range want.History {
		parts := strings.Split(h, "/")
		causes[parts[len(parts)-1]]++
	}
	t.Logf("%d members, %d entries and exits by cause %v, %d timers", len(want.Members), len(want.History), causes, len(want.Timers))
	for _, c := range []string{segments.CauseCustomer, segments.CauseEvent, segments.CauseSale, segments.CauseRule,
		segments.CauseTime, segments.CauseDeleted} {
		if causes[c] == 0 {
			t.Errorf("no entry nor exit with cause %s: the data does not test it", c)
		}
	}
	// The segments with where leaves on event fields, and the one naming
	// them, move.
	for _, k := range []string{"s09/", "s10/", "s21/"} {
		if !slices.ContainsFunc(want.History, func(h string) bool { return strings.HasPrefix(h, k) }) {
			t.Errorf("no entry nor exit of %s: the data does not test it", strings.TrimSuffix(k, "/"))
		}
	}
	if d := cmp.Diff(want.Members, got.Members); d != "" {
		t.Errorf("members (-all facts +live):\n%s", d)
	}
	if d := cmp.Diff(want.History, got.History); d != "" {
		t.Errorf("history (-all facts +live):\n%s", d)
	}
	if d := cmp.Diff(want.Timers, got.Timers); d != "" {
		t.Errorf("timers (-all facts +live):\n%s", d)
	}
}

// upsertCustomers appends one commit upserting the customers ids, with
// the fields set(i) of the i-th, sealed as the write side seals them
// (their keys created on their first upsert).
func upsertCustomers(tb testing.TB, ctx context.Context, store *postgres.Store, keys crypto.KeyStore, company string, ids []string, set func(i int) map[string]any) eventstore.Committed {
	tb.Helper()
	var out eventstore.Committed
	err := pgx.BeginFunc(ctx, store.Pool(), func(tx pgx.Tx) error {
		dk, err := keys.Load(ctx, tx, company, ids)
		if err != nil {
			return err
		}
		var missing []string
		for _, id := range ids {
			if dk[id] == nil {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			created, err := keys.Create(ctx, tx, company, missing)
			if err != nil {
				return err
			}
			for id, k := range created {
				dk[id] = k
			}
		}
		var streams []eventstore.StreamAppend
		for i, id := range ids {
			fields := set(i)
			plain, _ := json.Marshal(customer.Changes{Set: fields})
			sealed, err := crypto.Seal(dk[id], plain, []byte(id))
			if err != nil {
				return err
			}
			var names []string
			for f := range fields {
				names = append(names, f)
			}
			data, _ := json.Marshal(customer.Upserted{CustomerID: id, Created: len(missing) > 0, Fields: names, Sealed: sealed})
			streams = append(streams, eventstore.StreamAppend{StreamID: customer.Stream(company, id), ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: customer.TypeUpserted, Data: data}}})
		}
		out, err = store.AppendTx(ctx, tx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: company, Source: "test"}, Streams: streams})
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out
}
