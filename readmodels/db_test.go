package readmodels_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/readmodels"
)

// TestDatabaseErrorsAreTyped checks the read models' one boundary with
// the database (db.go) against a real server: text that PostgreSQL
// cannot compare (U+0000, invalid UTF-8) is the caller's domain.Invalid
// and a database that cannot be reached is domain.Unavailable, whichever
// read model asks and however it reads (Query, QueryRow, the event
// store), while what is absent stays NotFound. The callers (api) map
// these codes without knowing PostgreSQL.
func TestDatabaseErrorsAreTyped(t *testing.T) {
	ctx := context.Background()
	up, down := pgtest.NewPool(t), pgtest.UnreachablePool(t)
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	keys := crypto.KeyStore{Keyring: kr}
	for _, q := range []struct {
		name  string
		query func(pool *pgxpool.Pool, id string) error
	}{
		{"company", func(pool *pgxpool.Pool, id string) error {
			_, err := readmodels.NewCompanies(pool, "localhost").ByID(ctx, id)
			return err
		}},
		{"datatarget", func(pool *pgxpool.Pool, id string) error {
			_, err := readmodels.NewDatatargets(pool, keys).Datatarget(ctx, "co1", id)
			return err
		}},
		{"import run (QueryRow)", func(pool *pgxpool.Pool, id string) error {
			_, err := readmodels.NewImports(pool).Run(ctx, "co1", id)
			return err
		}},
		{"integration", func(pool *pgxpool.Pool, id string) error {
			_, err := readmodels.NewAccess(pool).Integration(ctx, "co1", id)
			return err
		}},
		{"customer history (event store)", func(pool *pgxpool.Pool, id string) error {
			_, err := readmodels.NewCustomerHistory(postgres.New(pool), pool, keys).Customer(ctx, "co1", id)
			return err
		}},
	} {
		t.Run(q.name, func(t *testing.T) {
			for _, tc := range []struct {
				name string
				pool *pgxpool.Pool
				id   string
				want domain.Code
			}{
				{"absent", up, "nobody", domain.NotFound},
				{"U+0000", up, "a\x00b", domain.Invalid},
				{"invalid UTF-8", up, "a\xffb", domain.Invalid},
				{"unreachable", down, "nobody", domain.Unavailable},
			} {
				err := q.query(tc.pool, tc.id)
				if got := domain.ErrorCode(err); got != tc.want {
					t.Errorf("%s: %v (%s), want %s", tc.name, err, got, tc.want)
				}
				// The cause stays in the chain, for the log.
				var pgErr *pgconn.PgError
				if tc.want == domain.Invalid && !errors.As(err, &pgErr) {
					t.Errorf("%s: %v does not wrap PostgreSQL's error", tc.name, err)
				}
			}
		})
	}
}
