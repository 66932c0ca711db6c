package pg_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestStandbyTakesOver: every commit the primary acknowledged is on its
// synchronous standby, which, promoted once the primary is lost, takes
// writes through the same multi-host connection string, with no change on
// the client's side.
func TestStandbyTakesOver(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two private PostgreSQL servers")
	}
	ctx := context.Background()
	primary := pgtest.NewServer(t)
	standby := primary.Standby()
	url := pgtest.MultiHostURL(primary, standby)

	write := func(from, to int) {
		t.Helper()
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS acknowledged (n int PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
		for n := from; n < to; n++ { // one commit each, every one acknowledged
			if _, err := conn.Exec(ctx, `INSERT INTO acknowledged VALUES ($1)`, n); err != nil {
				t.Fatal(err)
			}
		}
	}
	write(0, 200)
	primary.Crash()
	standby.Promote()
	write(200, 250)

	conn, err := pgx.Connect(ctx, standby.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n, distinct int
	if err := conn.QueryRow(ctx, `SELECT count(*), count(DISTINCT n) FROM acknowledged WHERE n < 250`).Scan(&n, &distinct); err != nil {
		t.Fatal(err)
	}
	if n != 250 || distinct != 250 {
		t.Fatalf("the promoted standby holds %d rows (%d distinct), want the 250 acknowledged", n, distinct)
	}
}
