package projectiontest

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// StartRuntime runs rt until the test ends and fails the test if Run fails.
func StartRuntime(t testing.TB, rt *projections.Runtime) {
	t.Helper()
	errc := make(chan error, 1)
	go func() { errc <- rt.Run(context.Background()) }()
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if err := <-errc; err != nil {
			t.Errorf("run: %v", err)
		}
	})
	WaitFor(t, 10*time.Second, "runtime running", rt.Running)
}

// WaitCaughtUp waits until the async projector p has applied every
// committed event. It aims at the last event in the table rather than at
// Head: Head stops at the oldest transaction running anywhere on the test
// server, which other test processes may hold open for a while.
func WaitCaughtUp(t testing.TB, pool *pgxpool.Pool, p projections.Projector) {
	t.Helper()
	target := LastPosition(t, pool)
	WaitFor(t, 30*time.Second, p.Name()+" caught up", func() bool {
		var cp eventstore.Position
		err := pool.QueryRow(context.Background(), `SELECT transaction_id::text, global_position FROM projection_checkpoints WHERE name = $1`, p.Name()).Scan(projections.TxID{To: &cp.TxID}, &cp.Global)
		if errors.Is(err, pgx.ErrNoRows) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		return !cp.Less(target)
	})
}

// LastPosition is the position of the last committed event.
func LastPosition(t testing.TB, pool *pgxpool.Pool) eventstore.Position {
	t.Helper()
	var p eventstore.Position
	err := pool.QueryRow(context.Background(), `SELECT transaction_id::text, global_position FROM events
		ORDER BY events.transaction_id DESC, events.global_position DESC LIMIT 1`).Scan(projections.TxID{To: &p.TxID}, &p.Global)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// WaitFor waits until ok, failing the test after timeout.
func WaitFor(t testing.TB, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !ok() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// PgtestPool returns a pool on a new, migrated test database.
func PgtestPool(t *testing.T) *pgxpool.Pool { return pgtest.NewPool(t) }

// InlineStore is a store on pool that runs the inline projectors in every
// append, as production does.
func InlineStore(pool *pgxpool.Pool) *postgres.Store {
	return postgres.New(pool, projectors.InlineHook())
}

// ApplyInline applies events with every inline projector in one
// transaction, as a rebuild page or an append would.
func ApplyInline(t *testing.T, pool *pgxpool.Pool, events ...eventstore.RecordedEvent) {
	t.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
		for _, p := range projectors.Inline() {
			if err := p.Apply(ctx, tx, events); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// Recorded returns a recorded event of company with data encoded.
func Recorded(t *testing.T, companyID, typ string, data any) eventstore.RecordedEvent {
	t.Helper()
	b, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	return eventstore.RecordedEvent{StreamID: typ + "-" + companyID, StreamVersion: 1, Type: typ, Data: b, Metadata: eventstore.Metadata{CompanyID: companyID}}
}

// Customers is a database whose store applies the customers projector in
// every append, and appends customer events as the write side does.
type Customers struct {
	T     testing.TB
	Pool  *pgxpool.Pool
	Store *postgres.Store
	Keys  crypto.KeyStore
	P     *retrieval.Customers
}

// Upsert appends a CustomerUpserted sealed with the customer's key,
// creating the key on the customer's first event.
func (c *Customers) Upsert(company, id string, ch customer.Changes) {
	c.T.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) error {
		keys, err := c.Keys.Load(ctx, tx, company, []string{id})
		if err != nil {
			return err
		}
		created := keys[id] == nil
		if created {
			if keys, err = c.Keys.Create(ctx, tx, company, []string{id}); err != nil {
				return err
			}
		}
		plain, _ := json.Marshal(ch)
		sealed, err := crypto.Seal(keys[id], plain, []byte(id))
		if err != nil {
			return err
		}
		ev := customer.Upserted{CustomerID: id, Created: created, Fields: []string{"x"}, Sealed: sealed}
		_, err = c.Store.AppendTx(ctx, tx, customerCommit(company, id, customer.TypeUpserted, ev))
		return err
	})
	if err != nil {
		c.T.Fatal(err)
	}
}

// End appends CustomerDeleted or CustomerForgotten; forgetting destroys
// the key in the same transaction, as the write side does.
func (c *Customers) End(company, id, typ string) {
	c.T.Helper()
	ctx := context.Background()
	err := pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) error {
		if _, err := c.Store.AppendTx(ctx, tx, customerCommit(company, id, typ, customer.Deleted{CustomerID: id})); err != nil {
			return err
		}
		if typ == customer.TypeForgotten {
			return c.Keys.Destroy(ctx, tx, company, []string{id})
		}
		return nil
	})
	if err != nil {
		c.T.Fatal(err)
	}
}

// Doc returns a customer's row: its doc and flags.
func (c *Customers) Doc(company, id string) (doc map[string]any, deleted, forgotten bool) {
	c.T.Helper()
	var raw []byte
	err := c.Pool.QueryRow(context.Background(), `SELECT doc, is_deleted, is_forgotten FROM customers WHERE company_id = $1 AND customer_id = $2`,
		company, id).Scan(&raw, &deleted, &forgotten)
	if err != nil {
		c.T.Fatalf("customer %s: %v", id, err)
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		c.T.Fatal(err)
	}
	return doc, deleted, forgotten
}

// ForgottenDoc is all a forgotten customer's row holds.
func ForgottenDoc(id string, deleted bool) map[string]any {
	return map[string]any{"id": id, "is_deleted": deleted, "is_forgotten": true}
}

// Seal seals personal fields with the customer's data key, as the write
// side does; the customer must have a key (an upsert made it).
func (c *Customers) Seal(company, customerID string, personal map[string]any) []byte {
	c.T.Helper()
	ctx := context.Background()
	keys, err := c.Keys.Load(ctx, c.Pool, company, []string{customerID})
	if err != nil || keys[customerID] == nil {
		c.T.Fatalf("key of %s: %v", customerID, err)
	}
	plain, err := json.Marshal(personal)
	if err != nil {
		c.T.Fatal(err)
	}
	sealed, err := crypto.Seal(keys[customerID], plain, []byte(customerID))
	if err != nil {
		c.T.Fatal(err)
	}
	return sealed
}

// Activity appends events to the company's activity stream in one
// commit, as the events import does.
func (c *Customers) Activity(company string, evs ...eventstore.Event) {
	c.T.Helper()
	c.appendTo(company, activity.Stream(company), evs...)
}

// SaleUpsert appends a SaleUpserted to the sale's stream.
func (c *Customers) SaleUpsert(company string, u sale.Upserted) {
	c.T.Helper()
	c.appendTo(company, sale.Stream(company, u.SaleID), event(sale.TypeUpserted, u))
}

func (c *Customers) appendTo(company, stream string, evs ...eventstore.Event) {
	c.T.Helper()
	_, err := c.Store.Append(context.Background(), eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}},
	})
	if err != nil {
		c.T.Fatal(err)
	}
}

// event encodes data as an event of type typ.
func event(typ string, data any) eventstore.Event {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err)
	}
	return eventstore.Event{Type: typ, Data: b}
}

// RecordedEv is an EventRecorded.
func RecordedEv(rec activity.Recorded) eventstore.Event { return event(activity.TypeRecorded, rec) }

// DeletedEv is an EventDeleted.
func DeletedEv(id int64) eventstore.Event {
	return event(activity.TypeDeleted, activity.Deleted{ID: id})
}

// Docs reads the company's docs of table in order, with $1 the company.
func (c *Customers) Docs(query string, args ...any) []map[string]any {
	c.T.Helper()
	rows, err := c.Pool.Query(context.Background(), query, args...)
	if err != nil {
		c.T.Fatal(err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		c.T.Fatal(err)
	}
	out := make([]map[string]any, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			c.T.Fatal(err)
		}
	}
	return out
}

// Holding counts the rows of table that contain any of the values.
func (c *Customers) Holding(table string, values ...string) int {
	c.T.Helper()
	var n int
	err := c.Pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` t
		WHERE EXISTS (SELECT FROM unnest($1::text[]) v WHERE strpos(t::text, v) > 0)`, values).Scan(&n)
	if err != nil {
		c.T.Fatal(err)
	}
	return n
}

// RebuildInline rebuilds p, which the env runs inline, from the log.
func (c *Customers) RebuildInline(p projections.Projector) {
	c.T.Helper()
	// Inline: the rebuild then applies every committed event, however
	// long other tests keep the log's head back.
	if err := projections.Rebuild(context.Background(), c.Pool, c.Store, postgres.EventLog{}, p, projections.KindInline, nil); err != nil {
		c.T.Fatal(err)
	}
}

// ApplyLog applies the whole log with p once more, in one transaction.
func (c *Customers) ApplyLog(p projections.Projector) {
	c.T.Helper()
	ctx := context.Background()
	rows, err := c.Pool.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events ORDER BY events.transaction_id, events.global_position`)
	if err != nil {
		c.T.Fatal(err)
	}
	events, err := postgres.ScanEvents(rows)
	if err != nil {
		c.T.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, c.Pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, events) }); err != nil {
		c.T.Fatal(err)
	}
}

// TableText is every row of table as text, in order, to compare states.
func (c *Customers) TableText(table, order string) []string {
	c.T.Helper()
	rows, err := c.Pool.Query(context.Background(), `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY `+order)
	if err != nil {
		c.T.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		c.T.Fatal(err)
	}
	return out
}

// ProcessCPU is the CPU time the test process has used so far.
func ProcessCPU(b *testing.B) time.Duration {
	b.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func customerCommit(company, id, typ string, data any) eventstore.Commit {
	b, _ := json.Marshal(data)
	return eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: customer.Stream(company, id),
			ExpectedVersion: eventstore.Any, Events: []eventstore.Event{{Type: typ, Data: b}}}},
	}
}

// MustAppend appends c to store, failing the test on an error.
func MustAppend(t testing.TB, store *postgres.Store, c eventstore.Commit) eventstore.Committed {
	t.Helper()
	out, err := store.Append(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Boom is a commit of one "Boom" event, which a broken breakable cannot
// apply.
func Boom(company, stream string) eventstore.Commit {
	c := Ticks(company, stream, 1)
	c.Streams[0].Events[0].Type = "Boom"
	return c
}

// Stalls returns the runtime's stalls.
func Stalls(t testing.TB, rt *projections.Runtime) []projections.Stall {
	t.Helper()
	s, err := rt.Stalls(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// ErrBoom is the failure of a broken test projector.
var ErrBoom = errors.New("boom")

// Row returns a sale row of key with fields, of the product p-key.
func Row(key string, fields map[string]any) sale.Row {
	return sale.Row{Key: key, ProductID: "p-" + key, Fields: fields}
}

// Ticks is a commit of n events to one stream.
func Ticks(company, stream string, n int) eventstore.Commit {
	evs := make([]eventstore.Event, n)
	for i := range evs {
		evs[i] = eventstore.Event{Type: "Ticked", Data: json.RawMessage(`{}`)}
	}
	return eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams:  []eventstore.StreamAppend{{StreamID: "tick-" + company + "-" + stream, ExpectedVersion: eventstore.Any, Events: evs}},
	}
}
