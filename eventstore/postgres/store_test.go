package postgres_test

import (
	"os"
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/eventstore/storetest"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestContract(t *testing.T) {
	storetest.Run(t, func(t *testing.T) eventstore.Store { return postgres.New(pgtest.NewPool(t)) })
}
