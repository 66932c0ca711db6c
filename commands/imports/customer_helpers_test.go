package imports_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// customerEnv is a database with a customers importer of one company.
type customerEnv struct {
	pool     *pgxpool.Pool
	store    *postgres.Store
	keys     crypto.KeyStore
	importer *imports.CustomerImporter
	company  company.Company
	seq      int // chunks imported
	index    int // upload index of the next record
}

func newCustomerEnv(tb testing.TB) *customerEnv {
	tb.Helper()
	pool := pgtest.NewPool(tb)
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		tb.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	return &customerEnv{
		pool: pool, store: store, keys: keys,
		importer: imports.NewCustomerImporter(store, keys, func() time.Time { return now }),
		company:  company.Company{ID: "co1", Slug: "acme", ShortName: "ACME", Timezone: "Europe/Helsinki"},
	}
}

// chunk imports records as one chunk of run "run-1" in its own
// transaction, and commits it.
func (e *customerEnv) chunk(tb testing.TB, records ...string) (int, []importing.Rejection) {
	tb.Helper()
	ctx := context.Background()
	c := e.chunkOf(records)
	tx, err := e.pool.Begin(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	out, err := e.importer.ImportChunk(ctx, tx, c)
	if err != nil {
		tb.Fatalf("ImportChunk: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		tb.Fatal(err)
	}
	return out.Accepted, out.Rejections
}

// customerEvent is a recorded customer event, opened when the customer's
// key still exists.
type customerEvent struct {
	Stream  string
	Version int64
	Type    string
	ID      string
	Created bool
	Fields  []string
	// Changes are the opened Sealed; nil when the key is gone.
	Changes *customer.Changes
	Meta    eventstore.Metadata
}

// events returns every customer event of the log, in order. It reads the table
// rather than ReadLog, which waits for every transaction open on the
// shared test server, other tests' included.
func (e *customerEnv) events(tb testing.TB) []customerEvent {
	tb.Helper()
	ctx := context.Background()
	rows, err := e.pool.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata
		FROM events ORDER BY transaction_id, global_position`)
	if err != nil {
		tb.Fatal(err)
	}
	recorded, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (eventstore.RecordedEvent, error) {
		var r eventstore.RecordedEvent
		err := row.Scan(&r.StreamID, &r.StreamVersion, &r.Type, &r.Data, &r.Metadata)
		return r, err
	})
	if err != nil {
		tb.Fatal(err)
	}
	var out []customerEvent
	for _, r := range recorded {
		if !strings.HasPrefix(r.Type, "Customer") {
			continue // an event of another aggregate (a company's, an activity's)
		}
		var u customer.Upserted
		if err := json.Unmarshal(r.Data, &u); err != nil {
			tb.Fatal(err)
		}
		ev := customerEvent{Stream: r.StreamID, Version: r.StreamVersion, Type: r.Type, ID: u.CustomerID,
			Created: u.Created, Fields: u.Fields, Meta: r.Metadata}
		if r.Type == customer.TypeUpserted {
			keys, err := e.keys.Load(ctx, e.pool, e.company.ID, []string{u.CustomerID})
			if err != nil {
				tb.Fatal(err)
			}
			if key, ok := keys[u.CustomerID]; ok {
				plain, err := crypto.Open(key, u.Sealed, []byte(u.CustomerID))
				if err != nil {
					tb.Fatalf("open %s/%d: %v", r.StreamID, r.StreamVersion, err)
				}
				var ch customer.Changes
				if err := json.Unmarshal(plain, &ch); err != nil {
					tb.Fatal(err)
				}
				ev.Changes = &ch
			} else if _, err := crypto.Open(make([]byte, crypto.KeySize), u.Sealed, []byte(u.CustomerID)); !errors.Is(err, crypto.ErrDecrypt) {
				tb.Fatalf("sealed data of %s opens without its key", u.CustomerID)
			}
		}
		out = append(out, ev)
	}
	return out
}

// customerState is a row of customer_states, the hashes reduced to
// whether the customer holds a key of each kind (which the registry, the
// key columns, finds it by).
type customerState struct {
	Version                 int64
	Deleted, Forgotten      bool
	HasExternalID, HasEmail bool
	HasPhone, HasToken      bool
}

func (e *customerEnv) state(tb testing.TB, id string) customerState {
	tb.Helper()
	var s customerState
	err := e.pool.QueryRow(context.Background(), `SELECT version, deleted, forgotten,
			external_id_hash IS NOT NULL, email_hash IS NOT NULL, phone_hash IS NOT NULL, token_hash IS NOT NULL
		FROM customer_states s WHERE company_id = $1 AND customer_id = $2`, e.company.ID, id).
		Scan(&s.Version, &s.Deleted, &s.Forgotten, &s.HasExternalID, &s.HasEmail, &s.HasPhone, &s.HasToken)
	if err != nil {
		tb.Fatalf("state of %s: %v", id, err)
	}
	return s
}

// owner returns the customer the registry (the states' key columns)
// finds for an identity, "" for none.
func (e *customerEnv) owner(tb testing.TB, kind customer.Kind, value string) string {
	tb.Helper()
	column := map[customer.Kind]string{customer.ExternalID: "external_id_hash", customer.Email: "email_hash",
		customer.Phone: "phone_hash", customer.Token: "token_hash"}[kind]
	var id string
	err := e.pool.QueryRow(context.Background(), `SELECT coalesce(max(customer_id), '') FROM customer_states
		WHERE company_id = $1 AND `+column+` = $2`,
		e.company.ID, e.keys.Keyring.IdentifierHash(e.company.ID, string(kind), value)).Scan(&id)
	if err != nil {
		tb.Fatal(err)
	}
	return id
}
