package projections_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

// activityEnv is a database whose store applies the customers, events
// and sales projectors in every append, with the customers' keys.
type activityEnv struct {
	*customers
	events *projections.Events
	sales  *projections.Sales
}

func newActivityEnv(t *testing.T) *activityEnv {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	c := &customers{t: t, pool: pgtest.NewPool(t), keys: crypto.KeyStore{Keyring: kr}}
	c.p = projections.NewCustomers(c.keys)
	e := &activityEnv{customers: c, events: projections.NewEvents(c.keys), sales: projections.NewSales(c.keys)}
	c.store = postgres.New(c.pool, eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, cm eventstore.Committed) error {
		for _, p := range []projections.Projector{c.p, e.events, e.sales} {
			if err := p.Apply(ctx, tx, cm.Events); err != nil {
				return err
			}
		}
		return nil
	}))
	return e
}

// seal seals personal fields with the customer's data key, as the write
// side does; the customer must have a key (an upsert made it).
func (c *customers) seal(company, customerID string, personal map[string]any) []byte {
	c.t.Helper()
	ctx := context.Background()
	keys, err := c.keys.Load(ctx, c.pool, company, []string{customerID})
	if err != nil || keys[customerID] == nil {
		c.t.Fatalf("key of %s: %v", customerID, err)
	}
	plain, err := json.Marshal(personal)
	if err != nil {
		c.t.Fatal(err)
	}
	sealed, err := crypto.Seal(keys[customerID], plain, []byte(customerID))
	if err != nil {
		c.t.Fatal(err)
	}
	return sealed
}

// activity appends events to the company's activity stream in one
// commit, as the events import does.
func (c *customers) activity(company string, evs ...eventstore.Event) {
	c.t.Helper()
	c.appendTo(company, activity.Stream(company), evs...)
}

// saleUpsert appends a SaleUpserted to the sale's stream.
func (c *customers) saleUpsert(company string, u sale.Upserted) {
	c.t.Helper()
	c.appendTo(company, sale.Stream(company, u.SaleID), event(sale.TypeUpserted, u))
}

func (c *customers) appendTo(company, stream string, evs ...eventstore.Event) {
	c.t.Helper()
	_, err := c.store.Append(context.Background(), eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: company, Source: "test"},
		Streams:  []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.Any, Events: evs}},
	})
	if err != nil {
		c.t.Fatal(err)
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

// recordedEv is an EventRecorded.
func recordedEv(rec activity.Recorded) eventstore.Event { return event(activity.TypeRecorded, rec) }

// deletedEv is an EventDeleted.
func deletedEv(id int64) eventstore.Event {
	return event(activity.TypeDeleted, activity.Deleted{ID: id})
}

// docs reads the company's docs of table in order, with $1 the company.
func (c *customers) docs(query string, args ...any) []map[string]any {
	c.t.Helper()
	rows, err := c.pool.Query(context.Background(), query, args...)
	if err != nil {
		c.t.Fatal(err)
	}
	raw, err := pgx.CollectRows(rows, pgx.RowTo[[]byte])
	if err != nil {
		c.t.Fatal(err)
	}
	out := make([]map[string]any, len(raw))
	for i, b := range raw {
		if err := json.Unmarshal(b, &out[i]); err != nil {
			c.t.Fatal(err)
		}
	}
	return out
}

// holding counts the rows of table that contain any of the values.
func (c *customers) holding(table string, values ...string) int {
	c.t.Helper()
	var n int
	err := c.pool.QueryRow(context.Background(), `SELECT count(*) FROM `+pgx.Identifier{table}.Sanitize()+` t
		WHERE EXISTS (SELECT FROM unnest($1::text[]) v WHERE strpos(t::text, v) > 0)`, values).Scan(&n)
	if err != nil {
		c.t.Fatal(err)
	}
	return n
}

// rebuildInline rebuilds p, which the env runs inline, from the log.
func (c *customers) rebuildInline(p projections.Projector) {
	c.t.Helper()
	// Inline: the rebuild then applies every committed event, however
	// long other tests keep the log's head back.
	if err := projections.Rebuild(context.Background(), c.pool, c.store, projections.PostgresLog{}, p, projections.KindInline, nil); err != nil {
		c.t.Fatal(err)
	}
}

// applyLog applies the whole log with p once more, in one transaction.
func (c *customers) applyLog(p projections.Projector) {
	c.t.Helper()
	ctx := context.Background()
	rows, err := c.pool.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events ORDER BY events.transaction_id, events.global_position`)
	if err != nil {
		c.t.Fatal(err)
	}
	events, err := postgres.ScanEvents(rows)
	if err != nil {
		c.t.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, c.pool, func(tx pgx.Tx) error { return p.Apply(ctx, tx, events) }); err != nil {
		c.t.Fatal(err)
	}
}

// tableText is every row of table as text, in order, to compare states.
func (c *customers) tableText(table, order string) []string {
	c.t.Helper()
	rows, err := c.pool.Query(context.Background(), `SELECT t::text FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY `+order)
	if err != nil {
		c.t.Fatal(err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		c.t.Fatal(err)
	}
	return out
}
