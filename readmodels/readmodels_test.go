package readmodels_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/alexedwards/argon2id"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/internal/secret"
	"github.com/clientele/clientele/projections/projectors"
)

func TestMain(m *testing.M) {
	secret.PasswordParams = &argon2id.Params{Memory: 1024, Iterations: 1, Parallelism: 1, SaltLength: 16, KeyLength: 32}
	os.Exit(pgtest.Main(m))
}

// testKeyring seals the outlets' credentials of the package's tests.
var testKeyring = func() *crypto.Keyring {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		panic(err)
	}
	return kr
}()

// setup returns a fresh database with an event store that runs the inline
// projectors in its append transaction, and the commands on it.
func setup(t *testing.T) (*pgxpool.Pool, commands.Commands) {
	t.Helper()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projectors.InlineHook())
	return pool, commands.New(store, time.Now, commands.WithSealer(testKeyring))
}

func mustCompany(t *testing.T, cmds commands.Commands, slug string, domains ...string) company.Company {
	t.Helper()
	c, err := cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.System(""), Slug: slug, Settings: company.Settings{Name: slug, Domains: domains},
	})
	if err != nil {
		t.Fatalf("CreateCompany(%s): %v", slug, err)
	}
	return c
}
