package systemtest_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/projectors"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// importCustomers imports records (JSON objects) with the server's real
// customer Importer, as the import worker applies a chunk, and waits for
// the projection. Every record must be accepted.
func (e *env) importCustomers(co company.Company, records ...string) {
	e.t.Helper()
	ctx := context.Background()
	chunk := imports.Chunk{Company: co, RunID: "run-1", Metadata: eventstore.Metadata{CompanyID: co.ID, RunID: "run-1",
		Actor: "tokens/tok-1", Source: "api", CorrelationID: "req-1"}, MayDestroy: true} // an admin's: the tests forget
	for _, r := range records {
		chunk.Records = append(chunk.Records, json.RawMessage(r))
	}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		out, err := e.importers[importing.Customers].ImportChunk(ctx, tx, chunk)
		if err == nil && len(out.Rejections) > 0 {
			err = fmt.Errorf("rejected: %+v", out.Rejections)
		}
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
	e.waitProjections()
}

// upsertCustomers and the helpers below append customer events directly,
// exactly as the write side does (sealed with the customer's data key,
// created with its first event), for tests that choose the customers' ids.

// customerRecord is one customer's changes in a commit.
type customerRecord struct {
	id  string
	set map[string]any
}

// withCustomers runs the customers projector, as serve does.
func withCustomers(t *testing.T) *env {
	e := newEnv(t)
	e.runProjections(retrievalproj.NewCustomers(e.keys))
	return e
}

// upsertCustomers appends one commit upserting the records, then waits
// for the projection.
func (e *env) upsertCustomers(co company.Company, records ...customerRecord) {
	e.t.Helper()
	e.appendCustomers(co, records...)
	e.waitProjections()
}

// appendCustomers appends one commit upserting the records.
func (e *env) appendCustomers(co company.Company, records ...customerRecord) {
	e.t.Helper()
	ctx := context.Background()
	ids := make([]string, len(records))
	for i, r := range records {
		ids[i] = r.id
	}
	err := pgx.BeginFunc(ctx, e.pool, func(tx pgx.Tx) error {
		keys, err := e.keys.Load(ctx, tx, co.ID, ids)
		if err != nil {
			return err
		}
		var fresh []string
		for _, id := range ids {
			if keys[id] == nil {
				fresh = append(fresh, id)
			}
		}
		created, err := e.keys.Create(ctx, tx, co.ID, fresh)
		if err != nil {
			return err
		}
		c := customerCommit(co)
		for _, r := range records {
			key := keys[r.id]
			if key == nil {
				key = created[r.id]
			}
			plain, _ := json.Marshal(customer.Changes{Set: r.set})
			sealed, err := crypto.Seal(key, plain, []byte(r.id))
			if err != nil {
				return err
			}
			fields := make([]string, 0, len(r.set))
			for f := range r.set {
				fields = append(fields, f)
			}
			c.Streams = append(c.Streams, customerAppend(co, r.id, customer.TypeUpserted,
				customer.Upserted{CustomerID: r.id, Created: created[r.id] != nil, Fields: fields, Sealed: sealed}))
		}
		_, err = e.store.AppendTx(ctx, tx, c)
		return err
	})
	if err != nil {
		e.t.Fatal(err)
	}
}

func customerCommit(co company.Company) eventstore.Commit {
	return eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: co.ID, RunID: "run-1", Actor: "tokens/tok-1",
		Source: "api", CorrelationID: "req-1"}}
}

func customerAppend(co company.Company, id, typ string, data any) eventstore.StreamAppend {
	b, _ := json.Marshal(data)
	return eventstore.StreamAppend{StreamID: customer.Stream(co.ID, id), ExpectedVersion: eventstore.Any,
		Events: []eventstore.Event{{Type: typ, Data: b}}}
}

// permissions are the five permissions as the write side sets them on a
// created customer: those not given are false.
func permissions(set map[string]any) map[string]any {
	for _, p := range []string{"can_email", "can_post", "can_profile", "can_push", "can_sms"} {
		if _, ok := set[p]; !ok {
			set[p] = false
		}
	}
	return set
}

// retrieved is the answer of GET /api/data/customers/.
type retrieved struct {
	Customers []map[string]any `json:"customers"`
	NextURL   string           `json:"next_url"`
}

func (e *env) retrieve(token string, opts ...option) retrieved {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/data/customers/", append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var r retrieved
	res.decode(e.t, &r)
	return r
}

func customerIDs(list []map[string]any) []string {
	out := []string{}
	for _, c := range list {
		out = append(out, c["id"].(string))
	}
	return out
}

// follow requests an absolute next_url on the test server.
func (e *env) follow(token, next string) retrieved {
	e.t.Helper()
	u, err := url.Parse(next)
	if err != nil || !u.IsAbs() {
		e.t.Fatalf("next_url %q is not absolute", next)
	}
	opts := []option{host(u.Host)}
	for k, vs := range u.Query() {
		opts = append(opts, withQuery(k, vs[0]))
	}
	res := e.do(http.MethodGet, u.Path, append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var r retrieved
	res.decode(e.t, &r)
	return r
}

// findValues returns, for each value, the tables of any schema in which
// some row's text contains it, as text or, for bytea columns, in hex.
func (e *env) findValues(values ...string) map[string][]string {
	e.t.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT quote_ident(table_schema) || '.' || quote_ident(table_name) FROM information_schema.tables
		WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema')`)
	if err != nil {
		e.t.Fatal(err)
	}
	tables, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(tables) < 5 {
		e.t.Fatalf("tables %v: %v", tables, err)
	}
	found := map[string][]string{}
	for _, v := range values {
		for _, table := range tables {
			var n int
			err := e.pool.QueryRow(ctx, `SELECT count(*) FROM `+table+` t WHERE strpos(t::text, $1) > 0 OR strpos(t::text, $2) > 0`,
				v, hex.EncodeToString([]byte(v))).Scan(&n)
			if err != nil {
				e.t.Fatal(err)
			}
			if n > 0 {
				found[v] = append(found[v], table)
			}
		}
	}
	return found
}

// rebuildAll rebuilds the given async projectors and every inline one,
// as an analyst would after a forget, then waits for the runtime to bring
// the rest of the log in.
func (e *env) rebuildAll(async ...projections.Projector) {
	e.t.Helper()
	ctx := context.Background()
	for _, p := range async {
		if err := projections.Rebuild(ctx, e.pool, e.store, postgres.EventLog{}, p, projections.KindAsync, nil); err != nil {
			e.t.Fatal(err)
		}
	}
	for _, p := range projectors.Inline() {
		if err := projections.Rebuild(ctx, e.pool, e.store, postgres.EventLog{}, p, projections.KindInline, nil); err != nil {
			e.t.Fatal(err)
		}
	}
	// An async rebuild stops where the log's head is, which open
	// transactions elsewhere on the server may hold back: the runtime
	// brings the rest into the new tables.
	e.waitProjections()
}
