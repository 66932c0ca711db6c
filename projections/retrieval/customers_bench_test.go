package retrieval_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// BenchmarkCustomersApply applies to the customers projector one commit
// of an import of 1,000 customers, as a delivery does, in a transaction
// rolled back afterwards: "new" creates the customers, "update" changes
// customers the table already holds. Besides the wall time, which
// includes PostgreSQL's, it reports the CPU time of the test process
// alone (go-cpu-ns/op): the projector's share of a serve process.
func BenchmarkCustomersApply(b *testing.B) {
	const size = 1000
	c := newCustomers(b)
	ctx := context.Background()
	ids := make([]string, size)
	for i := range ids {
		ids[i] = fmt.Sprintf("c%04d", i)
	}
	var keys map[string][]byte
	err := pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) (err error) {
		keys, err = c.Keys.Create(ctx, tx, "acme", ids)
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	created := benchCustomerEvents(b, ids, keys, 1)
	apply := func(b *testing.B, events []eventstore.RecordedEvent, commit bool) {
		tx, err := c.Pool.Begin(ctx)
		if err != nil {
			b.Fatal(err)
		}
		defer tx.Rollback(ctx) //nolint:errcheck
		if err := c.P.Apply(ctx, tx, events); err != nil {
			b.Fatal(err)
		}
		if commit {
			if err := tx.Commit(ctx); err != nil {
				b.Fatal(err)
			}
		}
	}
	run := func(b *testing.B, events []eventstore.RecordedEvent) {
		cpu := projectiontest.ProcessCPU(b)
		for b.Loop() {
			apply(b, events, false)
		}
		b.ReportMetric(float64((projectiontest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N), "go-cpu-ns/op")
	}
	b.Run("new", func(b *testing.B) { run(b, created) })
	b.Run("update", func(b *testing.B) {
		apply(b, created, true)
		run(b, benchCustomerEvents(b, ids, keys, 2))
	})
}

// benchCustomerEvents returns an upsert of each customer at version, as
// the importer writes them: on creation every field of a typical record
// (every permission among them), later a few changes.
func benchCustomerEvents(b *testing.B, ids []string, keys map[string][]byte, version int64) []eventstore.RecordedEvent {
	b.Helper()
	at := time.Date(2024, 6, 12, 10, 0, 0, 0, time.UTC)
	events := make([]eventstore.RecordedEvent, len(ids))
	for i, id := range ids {
		ch := customer.Changes{Set: map[string]any{
			"external_id": fmt.Sprintf("B-%d", i), "email": fmt.Sprintf("person.%d@example.com", i),
			"phone_number": fmt.Sprintf("+35840%07d", i), "first_name": fmt.Sprintf("First%d", i),
			"last_name": fmt.Sprintf("Last%d", i), "city": "Helsinki", "country": "FI", "language": "fi",
			"tags": []string{fmt.Sprintf("b%d", i%10), "vip"}, "date_joined": "2024-05-01T10:00:00Z",
			"can_email": true, "can_post": false, "can_profile": false, "can_push": false, "can_sms": false,
			"ACME__tier": "gold", "ACME__score": json.Number("12345.50"),
		}}
		if version > 1 {
			ch = customer.Changes{
				Set:   map[string]any{"city": "Espoo", "last_login": "2024-06-01T12:30:00+03:00", "ACME__tier": "platinum"},
				Unset: []string{"phone_number"},
				Add:   map[string][]string{"tags": {"returning"}},
			}
		}
		plain, err := json.Marshal(ch)
		if err != nil {
			b.Fatal(err)
		}
		sealed, err := crypto.Seal(keys[id], plain, []byte(id))
		if err != nil {
			b.Fatal(err)
		}
		data, err := json.Marshal(customer.Upserted{CustomerID: id, Created: version == 1, Fields: ch.FieldNames(), Sealed: sealed})
		if err != nil {
			b.Fatal(err)
		}
		events[i] = eventstore.RecordedEvent{
			StreamID: customer.Stream("acme", id), StreamVersion: version, Type: customer.TypeUpserted, Data: data,
			Metadata:   eventstore.Metadata{CompanyID: "acme", Source: "csv"},
			RecordedAt: at, Position: eventstore.Position{TxID: uint64(1000 + version), Global: version*int64(len(ids)) + int64(i)},
		}
	}
	return events
}

// BenchmarkCustomerAsOf times the two halves of a customer as of its
// last event (GET /api/data/customers/<id>/?as_of=, docs/retrieval.md),
// for a customer of 1,000 events (one commit each, setting three fields,
// a tag among them, as TestCustomerAsOfLatency writes them): "read", the
// stream's 1,000 events read from the store (ReadStream, one query);
// "fold", the same events folded into the document (Fold: the key read,
// 1,000 opens and applies). Besides the wall time it reports the CPU
// time of the test process (go-cpu-ns/op).
func BenchmarkCustomerAsOf(b *testing.B) {
	c := newCustomers(b)
	ctx := context.Background()
	for i := range 1000 {
		set := map[string]any{"last_name": fmt.Sprintf("Name %d", i), "city": "Helsinki", "tags": []string{"t" + fmt.Sprint(i%7)}}
		if i == 0 {
			set["email"] = "ann@example.com"
		}
		c.Upsert("acme", "c1", customer.Changes{Set: set})
	}
	stream := customer.Stream("acme", "c1")
	events, err := c.Store.ReadStream(ctx, stream, 0)
	if err != nil || len(events) != 1000 {
		b.Fatalf("%d events, %v", len(events), err)
	}
	run := func(b *testing.B, f func() error) {
		cpu := projectiontest.ProcessCPU(b)
		for b.Loop() {
			if err := f(); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((projectiontest.ProcessCPU(b)-cpu).Nanoseconds())/float64(b.N), "go-cpu-ns/op")
	}
	b.Run("read", func(b *testing.B) {
		run(b, func() error { _, err := c.Store.ReadStream(ctx, stream, 0); return err })
	})
	b.Run("fold", func(b *testing.B) {
		run(b, func() error { _, err := c.P.Fold(ctx, c.Pool, events); return err })
	})
}
