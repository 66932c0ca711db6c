package retrieval_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/retrieval"
)

func newCustomers(t testing.TB) *projectiontest.Customers {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	c := &projectiontest.Customers{T: t, Pool: pgtest.NewPool(t), Keys: crypto.KeyStore{Keyring: kr}}
	c.P = retrieval.NewCustomers(c.Keys)
	c.Store = postgres.New(c.Pool, eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, cm eventstore.Committed) error {
		return c.P.Apply(ctx, tx, cm.Events)
	}))
	return c
}

func TestCustomersProjector(t *testing.T) {
	c := newCustomers(t)
	c.Upsert("co1", "c1", customer.Changes{Set: map[string]any{
		"email": "ann@example.com", "first_name": "Ann", "can_email": true, "can_sms": false,
		"tags": []string{"vip", "b2b", "vip"}, "mailing_lists": []string{"weekly", "offers"},
		"date_joined": "2024-05-06T07:08:09+03:00", "COMPANY__score": json.Number("12345678901234567"),
	}})
	c.Upsert("co1", "c1", customer.Changes{
		Set:    map[string]any{"first_name": "Anne", "last_name": "Anderson", "email": nil},
		Unset:  []string{"can_sms", "id", "is_deleted"},
		Add:    map[string][]string{"tags": {"a", "vip"}, "mailing_lists.add": {"daily", "weekly"}},
		Remove: map[string][]string{"tags": {"b2b"}, "mailing_lists": {"offers"}, "city": {"x"}},
	})
	want := map[string]any{
		"id": "c1", "is_deleted": false, "is_forgotten": false,
		"first_name": "Anne", "last_name": "Anderson", "can_email": true,
		"tags": []any{"a", "vip"}, "mailing_lists": []any{"daily", "weekly"},
		"date_joined": "2024-05-06T04:08:09Z", "COMPANY__score": 12345678901234567.0,
	}
	got, deleted, forgotten := c.Doc("co1", "c1")
	if diff := cmp.Diff(want, got); diff != "" || deleted || forgotten {
		t.Errorf("doc (-want +got):\n%s\ndeleted %v forgotten %v", diff, deleted, forgotten)
	}
	var score string
	if err := c.Pool.QueryRow(context.Background(), `SELECT doc->>'COMPANY__score' FROM customers`).Scan(&score); err != nil || score != "12345678901234567" {
		t.Errorf("custom number stored as %q (%v), want it exact", score, err)
	}

	// The lists are there, empty, on a customer that never had them.
	c.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"external_id": "E-2"}})
	got, _, _ = c.Doc("co1", "c2")
	if diff := cmp.Diff(map[string]any{"id": "c2", "is_deleted": false, "is_forgotten": false,
		"external_id": "E-2", "tags": []any{}, "mailing_lists": []any{}}, got); diff != "" {
		t.Errorf("new customer (-want +got):\n%s", diff)
	}

	// Deleted: kept, flagged.
	c.End("co1", "c2", customer.TypeDeleted)
	got, deleted, _ = c.Doc("co1", "c2")
	if !deleted || got["is_deleted"] != true || got["external_id"] != "E-2" {
		t.Errorf("deleted customer: %v, is_deleted column %v", got, deleted)
	}
}

func TestCustomersForgotten(t *testing.T) {
	c := newCustomers(t)
	c.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"email": "ann@example.com"}})
	c.Upsert("co1", "c2", customer.Changes{Set: map[string]any{"email": "bob@example.com"}})
	c.End("co1", "c2", customer.TypeDeleted)
	c.End("co1", "c1", customer.TypeForgotten)
	c.End("co1", "c2", customer.TypeForgotten)
	for id, deleted := range map[string]bool{"c1": false, "c2": true} {
		got, del, forgotten := c.Doc("co1", id)
		if diff := cmp.Diff(projectiontest.ForgottenDoc(id, deleted), got); diff != "" || !forgotten || del != deleted {
			t.Errorf("%s (-want +got):\n%s\nforgotten %v deleted %v", id, diff, forgotten, del)
		}
	}

	// An upsert after the forgetting, and one whose key is gone (as in a
	// rebuild), record nothing.
	c.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"first_name": "Ann"}})
	if got, _, _ := c.Doc("co1", "c1"); !cmp.Equal(got, projectiontest.ForgottenDoc("c1", false)) {
		t.Errorf("upsert after forgetting: %v", got)
	}
	c.Upsert("co1", "c3", customer.Changes{Set: map[string]any{"email": "cy@example.com"}})
	if err := c.Keys.Destroy(context.Background(), c.Pool, "co1", []string{"c3"}); err != nil {
		t.Fatal(err)
	}
	// Inline, as it runs here: the rebuild then applies every committed
	// event, however long other tests keep the log's head back.
	if err := projections.Rebuild(context.Background(), c.Pool, c.Store, postgres.EventLog{}, c.P, projections.KindInline, nil); err != nil {
		t.Fatal(err)
	}
	for id, deleted := range map[string]bool{"c1": false, "c2": true, "c3": false} {
		if got, _, _ := c.Doc("co1", id); !cmp.Equal(got, projectiontest.ForgottenDoc(id, deleted)) {
			t.Errorf("%s after rebuild: %v", id, got)
		}
	}
}

// TestCustomersApplyTwice: a commit applied again (redelivered, or a
// rebuild page overlapping the live tables) changes nothing, and one call
// may carry several companies' customers.
func TestCustomersApplyTwice(t *testing.T) {
	c := newCustomers(t)
	c.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"first_name": "Ann"}})
	c.Upsert("co2", "c1", customer.Changes{Set: map[string]any{"first_name": "Other"}})
	c.Upsert("co1", "c1", customer.Changes{Set: map[string]any{"first_name": "Anne"}})
	// Straight from the table: ReadLog stops at the oldest transaction on
	// the server, which other tests may hold open.
	rows, err := c.Pool.Query(context.Background(), `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events ORDER BY events.transaction_id, events.global_position`)
	if err != nil {
		t.Fatal(err)
	}
	events, err := postgres.ScanEvents(rows)
	if err != nil || len(events) != 3 {
		t.Fatalf("%d events: %v", len(events), err)
	}
	for _, batch := range [][]eventstore.RecordedEvent{events[:1], events} {
		err := pgx.BeginFunc(context.Background(), c.Pool, func(tx pgx.Tx) error { return c.P.Apply(context.Background(), tx, batch) })
		if err != nil {
			t.Fatal(err)
		}
	}
	for company, name := range map[string]string{"co1": "Anne", "co2": "Other"} {
		if got, _, _ := c.Doc(company, "c1"); got["first_name"] != name {
			t.Errorf("%s: first_name %v, want %s", company, got["first_name"], name)
		}
	}
}
