package readmodels_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

func TestCustomerHistory(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool)
	kr, _ := crypto.NewKeyring(crypto.NewMasterKey())
	keys := crypto.KeyStore{Keyring: kr}
	meta := eventstore.Metadata{CompanyID: "co1", RunID: "run1", Actor: "tokens/t1", Source: "api", CorrelationID: "req1"}
	appendTx := func(typ string, data any, forget bool) {
		t.Helper()
		b, _ := json.Marshal(data)
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			_, err := store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: []eventstore.StreamAppend{{
				StreamID: customer.Stream("co1", "c1"), ExpectedVersion: eventstore.Any,
				Events: []eventstore.Event{{Type: typ, Data: b}}}}})
			if err == nil && forget {
				err = keys.Destroy(ctx, tx, "co1", []string{"c1"})
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	dataKey, err := keys.Create(ctx, pool, "co1", []string{"c1"})
	if err != nil {
		t.Fatal(err)
	}
	changes := customer.Changes{Set: map[string]any{"email": "ann@example.com", "COMPANY__n": json.Number("7")}, Add: map[string][]string{"tags": {"vip"}}}
	plain, _ := json.Marshal(changes)
	sealed, _ := crypto.Seal(dataKey["c1"], plain, []byte("c1"))
	appendTx(customer.TypeUpserted, customer.Upserted{CustomerID: "c1", Created: true, Fields: []string{"email", "tags.add"}, Sealed: sealed}, false)
	appendTx(customer.TypeDeleted, customer.Deleted{CustomerID: "c1"}, false)

	h := readmodels.NewCustomerHistory(store, pool, keys)
	got, err := h.Customer(ctx, "co1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 2 || got.Forgotten || !got.Deleted {
		t.Fatalf("history %+v", got)
	}
	e := got.Events[0]
	if e.Version != 1 || e.Type != customer.TypeUpserted || e.Metadata != meta || e.Redacted || e.RecordedAt.IsZero() {
		t.Errorf("first event %+v", e)
	}
	if diff := cmp.Diff(&changes, e.Changes); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"is_deleted"}, got.Events[1].Fields); diff != "" || got.Events[1].Changes != nil {
		t.Errorf("deleted event %+v", got.Events[1])
	}

	// Forgotten: the names of the fields stay, the values are gone.
	appendTx(customer.TypeForgotten, customer.Forgotten{CustomerID: "c1"}, true)
	got, err = h.Customer(ctx, "co1", "c1")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Events) != 3 || !got.Forgotten {
		t.Fatalf("history after forgetting %+v", got)
	}
	if e := got.Events[0]; e.Changes != nil || !e.Redacted || !cmp.Equal(e.Fields, []string{"email", "tags.add"}) {
		t.Errorf("first event after forgetting %+v", e)
	}

	// Another company's customer, or none, is not found.
	for _, tc := range [][2]string{{"co2", "c1"}, {"co1", "nope"}} {
		if _, err := h.Customer(ctx, tc[0], tc[1]); domain.ErrorCode(err) != domain.NotFound {
			t.Errorf("%v: err %v, want NotFound", tc, err)
		}
	}
}
