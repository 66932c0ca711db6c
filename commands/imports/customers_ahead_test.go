package imports_test

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestResolveAheadMatchesResolvingInTheTransaction: chunks resolved ahead,
// each after the one before while that one's transaction is still open
// (or, at random, once it committed), as the worker pipelines a company's
// chunks, write exactly what resolving each chunk in its own transaction
// writes: the same events, the same state, the same registry, the same
// rejections. The records are drawn from a few identities, so that chunks
// create, update, move identities between, delete and forget the
// customers of the chunks before them.
func TestResolveAheadMatchesResolvingInTheTransaction(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprint("seed ", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 15))
			var chunks [][]string
			for range 12 {
				chunk := make([]string, 1+rng.IntN(6))
				for i := range chunk {
					chunk[i] = randomCustomerRecord(rng)
				}
				chunks = append(chunks, chunk)
			}

			inTx := newCustomerEnv(t)
			var wantOut []chunkOutcome
			for _, c := range chunks {
				accepted, rejections := inTx.chunk(t, c...)
				wantOut = append(wantOut, chunkOutcome{accepted, rejections})
			}

			ahead := newCustomerEnv(t)
			gotOut := ahead.pipelined(t, rng, chunks)

			if diff := cmp.Diff(wantOut, gotOut); diff != "" {
				t.Errorf("outcomes (-in the transaction +ahead):\n%s", diff)
			}
			if diff := cmp.Diff(inTx.canonical(t), ahead.canonical(t)); diff != "" {
				t.Errorf("what was written (-in the transaction +ahead):\n%s", diff)
			}
		})
	}
}

// randomToken matches a customer token in changes.
var randomToken = regexp.MustCompile(`"customer_token":"[a-z2-7]{26}"`)

// chunkOutcome is what a chunk came to.
type chunkOutcome struct {
	Accepted   int
	Rejections []importing.Rejection
}

// randomCustomerRecord returns a customer record of a few identities:
// mostly upserts, some moving an identity to another customer, a few
// deleting or forgetting.
func randomCustomerRecord(rng *rand.Rand) string {
	r := map[string]any{}
	putIdentities(rng, r, "external_id", "email", 6)
	if rng.IntN(3) == 0 {
		r["phone_number"] = fmt.Sprintf("+35840123456%d", rng.IntN(4))
	}
	r["first_name"] = fmt.Sprint("N", rng.IntN(100))
	switch rng.IntN(14) {
	case 0:
		r["is_deleted"] = true
	case 1:
		r["is_forgotten"] = true
	}
	b, _ := json.Marshal(r)
	return string(b)
}

// putIdentities gives r an external id ("E0" to "E<n-1>") under extField,
// an email ("m0@example.com" ...) under emailField, or, half the time,
// both: both may name different customers, so that a record moves an
// identity or is rejected for the conflict.
func putIdentities(rng *rand.Rand, r map[string]any, extField, emailField string, n int) {
	switch rng.IntN(4) {
	case 0:
		r[extField] = fmt.Sprint("E", rng.IntN(n))
	case 1:
		r[emailField] = fmt.Sprintf("m%d@example.com", rng.IntN(n))
	default:
		r[extField] = fmt.Sprint("E", rng.IntN(n))
		r[emailField] = fmt.Sprintf("m%d@example.com", rng.IntN(n))
	}
}

// pipelined imports chunks as the worker does when it resolves ahead:
// chunk i+1 is resolved, through the pool, after chunk i's resolution,
// while chunk i's transaction is open (at random, once it committed),
// then written in its own transaction with that resolution.
func (e *customerEnv) pipelined(t *testing.T, rng *rand.Rand, chunks [][]string) []chunkOutcome {
	return e.pipelinedWith(t, e.importer, rng, chunks)
}

// pipelinedWith is pipelined with the Resolver imp.
func (e *customerEnv) pipelinedWith(t *testing.T, imp imports.Resolver, rng *rand.Rand, chunks [][]string) []chunkOutcome {
	t.Helper()
	ctx := context.Background()
	var out []chunkOutcome
	next := e.chunkOf(chunks[0])
	res, err := imp.Resolve(ctx, e.pool, next, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range chunks {
		cur := next
		cur.Resolution = res
		tx, err := e.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A failing test must not leave the transaction open: the
		// database could not be dropped.
		t.Cleanup(func() { tx.Rollback(ctx) }) //nolint:errcheck
		o, err := imp.ImportChunk(ctx, tx, cur)
		if err != nil {
			t.Fatalf("chunk %d: %v", i, err)
		}
		out = append(out, chunkOutcome{o.Accepted, o.Rejections})
		committed := false
		if rng.IntN(4) == 0 {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
			committed = true
		}
		if i+1 < len(chunks) {
			next = e.chunkOf(chunks[i+1])
			if res, err = imp.Resolve(ctx, e.pool, next, res); err != nil {
				t.Fatalf("resolve chunk %d: %v", i+1, err)
			}
		}
		if !committed {
			if err := tx.Commit(ctx); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// chunkOf returns the next chunk of records of run "run-1".
func (e *customerEnv) chunkOf(records []string) imports.Chunk {
	c := imports.Chunk{
		Company: e.company, RunID: "run-1", Seq: e.seq, FirstIndex: e.index,
		Metadata: eventstore.Metadata{CompanyID: e.company.ID, RunID: "run-1", Actor: "users/u1", Source: "csv"},
		// An admin's upload: these tests delete and forget.
		MayDestroy: true,
	}
	for _, r := range records {
		c.Records = append(c.Records, json.RawMessage(r))
	}
	e.seq++
	e.index += len(records)
	return c
}

// canonical is everything the importer wrote of the company, with each
// customer named by the order of its first event rather than by its
// random id: its events (type, version, fields, changes opened), its
// state, and the identities the registry finds it by.
func (e *customerEnv) canonical(t *testing.T) []string {
	t.Helper()
	names := map[string]string{}
	name := func(id string) string {
		if _, ok := names[id]; !ok {
			names[id] = fmt.Sprint("C", len(names))
		}
		return names[id]
	}
	var out []string
	for _, ev := range e.events(t) {
		changes := "sealed, key gone"
		if ev.Changes != nil {
			b, _ := json.Marshal(ev.Changes)
			// Tokens are random: that a new customer gets one is what counts.
			changes = randomToken.ReplaceAllString(string(b), `"customer_token":"(random)"`)
		}
		out = append(out, fmt.Sprintf("event %s v%d %s created=%v fields=%v %s", name(ev.ID), ev.Version, ev.Type, ev.Created, ev.Fields, changes))
	}
	ids := slices.Collect(maps.Keys(names))
	slices.SortFunc(ids, func(a, b string) int { return strings.Compare(names[a], names[b]) })
	for _, id := range ids {
		out = append(out, fmt.Sprintf("state %s %+v", names[id], e.state(t, id)))
	}
	identities := len(out)
	for i := range 6 {
		for kind, value := range map[customer.Kind]string{
			customer.ExternalID: fmt.Sprint("E", i), customer.Email: fmt.Sprintf("m%d@example.com", i),
			customer.Phone: fmt.Sprintf("+35840123456%d", i),
		} {
			if owner := e.owner(t, kind, value); owner != "" {
				out = append(out, fmt.Sprintf("identity %s %s -> %s", kind, value, name(owner)))
			}
		}
	}
	slices.Sort(out[identities:])
	return out
}

// TestImportWorkerResolvesCustomersAhead: an upload staged in chunks of a
// few records, applied by the import worker, has most of its chunks
// resolved ahead (clientele_import_chunks_resolved_total{where="ahead"})
// and writes what the same upload applied as one chunk writes.
func TestImportWorkerResolvesCustomersAhead(t *testing.T) {
	rng := rand.New(rand.NewPCG(27, 11))
	var records []string
	for range 240 {
		r := map[string]any{}
		_ = json.Unmarshal([]byte(randomCustomerRecord(rng)), &r)
		delete(r, "is_deleted") // the upload's principal may not destroy
		delete(r, "is_forgotten")
		b, _ := json.Marshal(r)
		records = append(records, string(b))
	}
	body := "[" + strings.Join(records, ",") + "]"
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}

	apply := func(chunkRecords int) (*customerEnv, float64) {
		env := newImportEnv(t, pgtest.NewPool(t))
		imp := imports.NewCustomerImporter(env.store, keys, time.Now)
		reg := prometheus.NewRegistry()
		env.startWorker(func(c *imports.ImportWorkerConfig) {
			c.Importers = map[importing.Entity]imports.Importer{importing.Customers: imp}
			c.Registerer = reg
		})
		run := env.wait(env.stage(strings.NewReader(body), chunkRecords))
		if run.State != importing.Completed || run.Accepted+run.Rejected != int64(len(records)) {
			t.Fatalf("chunks of %d: run %+v", chunkRecords, run)
		}
		ahead := 0.0
		families, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range families {
			if f.GetName() != "clientele_import_chunks_resolved_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "where" && l.GetValue() == "ahead" {
						ahead += m.GetCounter().GetValue()
					}
				}
			}
		}
		return &customerEnv{pool: env.pool, keys: keys, company: env.co}, ahead
	}
	whole, aheadWhole := apply(len(records))
	chunked, aheadChunked := apply(6)
	if aheadWhole != 0 || aheadChunked < 20 {
		t.Errorf("chunks resolved ahead: %v of one chunk, %v of 40; want 0 and most", aheadWhole, aheadChunked)
	}
	// One chunk is one commit, with each customer's events together; in
	// chunks, the customers' events interleave in the log. Each stream's
	// events are what counts.
	want, got := whole.canonical(t), chunked.canonical(t)
	slices.Sort(want)
	slices.Sort(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("what was written (-one chunk +chunks resolved ahead):\n%s", diff)
	}
}
