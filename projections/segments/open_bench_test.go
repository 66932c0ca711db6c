package segments_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/segments"
)

// TestFirstSegmentRate measures the creation of a company's first
// segment over 20,000 customers with 5 events each, imported in commits
// of 1,000 as an import appends them: the projector reads the company's
// history from the log and folds it into its facts (the opening of the
// gate), then decides every customer (the backfill), in the one
// transaction that applies the creation. The time is logged (go test -v).
func TestFirstSegmentRate(t *testing.T) {
	if testing.Short() {
		t.Skip("a measurement")
	}
	ctx := context.Background()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	pool := projectiontest.PgtestPool(t)
	store := postgres.New(pool)
	const n, chunk, perCustomer = 20000, 1000, 5
	co := "co"
	day := time.Now().UTC().Add(-48 * time.Hour).Format("2006-01-02T15:04:05Z")
	for start := 0; start < n; start += chunk {
		ids := make([]string, chunk)
		for i := range ids {
			ids[i] = fmt.Sprintf("c%08d", start+i)
		}
		err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error {
			dk, err := keys.Create(ctx, tx, co, ids)
			if err != nil {
				return err
			}
			var streams []eventstore.StreamAppend
			for i, id := range ids {
				city := "Turku"
				if i%2 == 0 {
					city = "Helsinki"
				}
				plain, _ := json.Marshal(customer.Changes{Set: map[string]any{"external_id": id, "city": city}})
				sealed, err := crypto.Seal(dk[id], plain, []byte(id))
				if err != nil {
					return err
				}
				data, _ := json.Marshal(customer.Upserted{CustomerID: id, Created: true, Fields: []string{"city"}, Sealed: sealed})
				streams = append(streams, eventstore.StreamAppend{StreamID: customer.Stream(co, id), ExpectedVersion: eventstore.NoStream,
					Events: []eventstore.Event{{Type: customer.TypeUpserted, Data: data}}})
			}
			_, err = store.AppendTx(ctx, tx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co, Source: "test"}, Streams: streams})
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		var evs []eventstore.Event
		for i, id := range ids {
			for j := range perCustomer {
				data, _ := json.Marshal(activity.Recorded{ID: int64((start+i)*perCustomer + j + 1), CustomerID: id, Type: "BROWSE", Date: day,
					Fields: map[string]any{"label": "home"}})
				evs = append(evs, eventstore.Event{Type: activity.TypeRecorded, Data: data})
			}
		}
		projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co, Source: "test"},
			Streams: []eventstore.StreamAppend{{StreamID: activity.Stream(co), ExpectedVersion: eventstore.Any, Events: evs}}})
	}
	data, _ := json.Marshal(segment.Created{Key: "hot", Name: "hot", CreatedBy: "test",
		Rule: json.RawMessage(`{"all":[{"field":"city","eq":"Helsinki"},{"event":{"type":"BROWSE","within_days":7,"min_count":2}}]}`)})
	c := projectiontest.MustAppend(t, store, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co, Source: "test"},
		Streams: []eventstore.StreamAppend{{StreamID: segment.Stream(co, "hot"), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{{Type: segment.CreatedType, Data: data}}}}})
	rows, err := pool.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events WHERE global_position = $1`, c.Last.Global)
	if err != nil {
		t.Fatal(err)
	}
	creation, err := postgres.ScanEvents(rows)
	if err != nil {
		t.Fatal(err)
	}
	m := segments.NewMembers(keys, postgres.EventLog{})
	start := time.Now()
	if err := pgx.BeginFunc(ctx, pool, func(tx pgx.Tx) error { return m.Apply(ctx, tx, creation) }); err != nil {
		t.Fatal(err)
	}
	took := time.Since(start)
	t.Logf("the first segment over %d customers (%d events), its facts read from the log: %s, %.0f customers/s",
		n, n*perCustomer, took, float64(n)/took.Seconds())
	var members, facts int
	if err := pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM segment_members), (SELECT count(*) FROM segment_activity)`).Scan(&members, &facts); err != nil {
		t.Fatal(err)
	}
	if members != n/2 || facts != n*perCustomer {
		t.Errorf("%d members, %d events in the facts; want %d and %d", members, facts, n/2, n*perCustomer)
	}
}
