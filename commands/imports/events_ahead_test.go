package imports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"regexp"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/commands/imports"
)

// TestResolveEventsAheadMatchesResolvingInTheTransaction is
// TestResolveAheadMatchesResolvingInTheTransaction for events: chunks of
// events that create and change their customers, find and create
// products by product_id and sku, and delete events of the chunks before
// them, write the same when each is resolved ahead, while the one before
// is still open, as when each is resolved in its transaction.
func TestResolveEventsAheadMatchesResolvingInTheTransaction(t *testing.T) {
	checkResolvedAhead(t, newEventsEnv, 16, func() func(*rand.Rand) string {
		imported := 0
		return func(rng *rand.Rand) string {
			imported++
			return randomEventRecord(rng, imported-1)
		}
	})
}

// checkResolvedAhead imports twelve chunks of one to six records made by
// a newRecord of each seed (seed and 0 to 5), into two envs of newEnv: one
// resolving each chunk in its transaction, the other each ahead
// (pipelinedWith), and requires the same outcomes and the same writes.
func checkResolvedAhead(t *testing.T, newEnv func(*testing.T) *eventsEnv, seed uint64, newRecord func() func(*rand.Rand) string) {
	for s := range uint64(6) {
		t.Run(fmt.Sprint("seed ", s), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(s, seed))
			record := newRecord()
			var chunks [][]string
			records := 0
			for range 12 {
				chunk := make([]string, 1+rng.IntN(6))
				for i := range chunk {
					chunk[i] = record(rng)
					records++
				}
				chunks = append(chunks, chunk)
			}

			inTx := newEnv(t)
			var wantOut []chunkOutcome
			for i, c := range chunks {
				wantOut = append(wantOut, inTx.importInTx(t, i, c))
			}

			ahead := newEnv(t)
			gotOut := ahead.pipelinedWith(t, ahead.imp, rng, chunks)

			if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Errorf("outcomes (-in the transaction +ahead):\n%s", diff)
			}
			accepted := 0
			for _, o := range wantOut {
				accepted += o.Accepted
			}
			if accepted < records/2 {
				t.Errorf("%d of %d records accepted: the test imports too little to compare", accepted, records)
			}
			if diff := cmp.Diff(inTx.eventsCanonical(t), ahead.eventsCanonical(t)); diff != "" {
				t.Errorf("what was written (-in the transaction +ahead):\n%s", diff)
			}
		})
	}
}

// eventsEnv is a customerEnv with the importer of events or of sales.
type eventsEnv struct {
	*customerEnv
	imp imports.Resolver
}

// newEventsEnv returns the env with customers E0 to E4 (emails m0 to m4,
// one each; events find their customers, they do not create them).
func newEventsEnv(t *testing.T) *eventsEnv {
	e := newCustomerEnv(t)
	e.company.Currency = "EUR"
	var customers []string
	for i := range 5 {
		customers = append(customers, fmt.Sprintf(`{"external_id": "E%d", "email": "m%d@example.com"}`, i, i))
	}
	e.chunk(t, customers...)
	return &eventsEnv{customerEnv: e, imp: imports.NewEventImporter(e.store, e.keys, func() time.Time { return now })}
}

// newSalesEnv is newEventsEnv with the sales importer.
func newSalesEnv(t *testing.T) *eventsEnv {
	e := newEventsEnv(t)
	e.imp = imports.NewSaleImporter(e.store, e.keys, func() time.Time { return now })
	return e
}

// importInTx imports records as the next chunk, resolved in its own
// transaction.
func (e *eventsEnv) importInTx(t *testing.T, i int, records []string) chunkOutcome {
	t.Helper()
	ctx := context.Background()
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	o, err := e.imp.ImportChunk(ctx, tx, e.chunkOf(records))
	if err != nil {
		t.Fatalf("chunk %d: %v", i, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return chunkOutcome{o.Accepted, o.Rejections}
}

// randomEventRecord returns an event of a few customers and products, or
// at times the deletion of an event imported before (ids from 1 to
// imported), or of one that does not exist.
func randomEventRecord(rng *rand.Rand, imported int) string {
	if imported > 0 && rng.IntN(8) == 0 {
		return fmt.Sprintf(`{"id": %d, "is_deleted": true}`, 1+rng.IntN(imported+2))
	}
	r := map[string]any{"type": "BASKET_ADD", "date": fmt.Sprintf("2025-01-%02d", 1+rng.IntN(28))}
	putIdentities(rng, r, "customer_id", "email", 5)
	if rng.IntN(2) == 0 {
		r["product_id"] = fmt.Sprint("P", rng.IntN(4))
	} else {
		r["sku"] = fmt.Sprint("SKU-", rng.IntN(4))
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// randomIDs matches the ids Clientele makes (customers', products'): 32
// hexadecimal digits.
var randomIDs = regexp.MustCompile(`[0-9a-f]{32}`)

// eventsCanonical is everything the importer wrote: the customers
// (canonical), and every event row and the rows of the events'
// write-side tables, with the ids Clientele makes named by their order
// of first appearance.
func (e *eventsEnv) eventsCanonical(t *testing.T) []string {
	t.Helper()
	out := e.canonical(t)
	names := map[string]string{}
	rename := func(s string) string {
		return randomIDs.ReplaceAllStringFunc(s, func(id string) string {
			if _, ok := names[id]; !ok {
				names[id] = fmt.Sprint("ID", len(names))
			}
			return names[id]
		})
	}
	for _, q := range []string{
		`SELECT stream_id || ' v' || stream_version || ' ' || event_type || ' ' || (data - 'sealed')::text
			FROM events WHERE event_type NOT LIKE 'Customer%' ORDER BY transaction_id, global_position`,
		`SELECT 'counter ' || last_id FROM activity_counters`,
		`SELECT 'deleted ' || id FROM activity_deleted ORDER BY id`,
		`SELECT 'product ' || external_id || ' ' || product_id || ' v' || version FROM product_states ORDER BY external_id`,
		`SELECT 'product key ' || kind || ':' || value || ' ' || external_id FROM product_keys ORDER BY kind, value`,
		`SELECT 'sale ' || external_id || ' ' || sale_id || ' ' || customer_id || ' v' || version || ' ' || state || ' ' || currency
			FROM sale_states ORDER BY external_id`,
	} {
		rows, err := e.pool.Query(context.Background(), q)
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			out = append(out, rename(line))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestResolveSalesAheadMatchesResolvingInTheTransaction is
// TestResolveEventsAheadMatchesResolvingInTheTransaction for sales:
// sales of a few external ids, changed by later chunks (rows added, the
// state changed), whose customers and products are found or created.
func TestResolveSalesAheadMatchesResolvingInTheTransaction(t *testing.T) {
	checkResolvedAhead(t, newSalesEnv, 17, func() func(*rand.Rand) string { return randomSaleRecord })
}

// randomSaleRecord returns a row of one of a few sales: a new sale's
// needs its date and customer, which the others may repeat or change.
func randomSaleRecord(rng *rand.Rand) string {
	r := map[string]any{
		"sale_external_id": fmt.Sprint("S", rng.IntN(6)), "sale_date": fmt.Sprintf("2025-03-%02d", 1+rng.IntN(28)),
		"quantity": 1 + rng.IntN(3), "unit_price": 100 * (1 + rng.IntN(9)),
	}
	putIdentities(rng, r, "sale_customer_id", "sale_email", 5)
	if rng.IntN(2) == 0 {
		r["product_id"] = fmt.Sprint("P", rng.IntN(4))
	} else {
		r["product_sku"] = fmt.Sprint("SKU-", rng.IntN(4))
	}
	if rng.IntN(5) == 0 {
		r["sale_state"] = "CANCELLED"
	}
	b, _ := json.Marshal(r)
	return string(b)
}
