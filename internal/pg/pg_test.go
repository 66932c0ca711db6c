package pg_test

import (
	"context"
	"os"
	"testing"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func TestMigratedDatabase(t *testing.T) {
	pool := pgtest.NewPool(t)
	var n int
	err := pool.QueryRow(context.Background(), `SELECT count(*) FROM events`).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("fresh database has %d events", n)
	}
	var fsync string
	if err := pool.QueryRow(context.Background(), `SHOW fsync`).Scan(&fsync); err != nil {
		t.Fatal(err)
	}
	if os.Getenv("CLIENTELE_TEST_DATABASE_URL") == "" && fsync != "off" {
		t.Fatalf("test server runs with fsync=%s, want off", fsync)
	}
}
