package retrieval_test

import (
	"context"
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/jackc/pgx/v5"
)

// activityEnv is a database whose store applies the customers, events
// and sales projectors in every append, with the customers' keys.
type activityEnv struct {
	*projectiontest.Customers
	Events *retrieval.Events
	Sales  *retrieval.Sales
}

// newActivityEnv returns an activityEnv on a new database.
func newActivityEnv(t *testing.T) *activityEnv {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	c := &projectiontest.Customers{T: t, Pool: pgtest.NewPool(t), Keys: crypto.KeyStore{Keyring: kr}}
	c.P = retrieval.NewCustomers(c.Keys)
	e := &activityEnv{Customers: c, Events: retrieval.NewEvents(c.Keys), Sales: retrieval.NewSales(c.Keys)}
	c.Store = postgres.New(c.Pool, eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, cm eventstore.Committed) error {
		for _, p := range []projections.Projector{c.P, e.Events, e.Sales} {
			if err := p.Apply(ctx, tx, cm.Events); err != nil {
				return err
			}
		}
		return nil
	}))
	return e
}
