package pgtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/internal/pg"
)

// DurablePool returns a pool on a fresh, migrated database of a durable
// embedded server (fsync on, unlike the test server), for benchmarks whose
// figures must be honest. The server lives in its own directory,
// $TMPDIR/clientele-bench-<uid>; the database is dropped at the end.
func DurablePool(tb testing.TB) *pgxpool.Pool {
	tb.Helper()
	ctx := context.Background()
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("clientele-bench-%d", os.Getuid()))
	name := fmt.Sprintf("bench_%d", time.Now().UnixNano())
	srv, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: dir, Fast: false, Database: name})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := srv.Close(); err != nil {
			tb.Log(err)
		}
	})
	tb.Cleanup(func() {
		conn, err := pgx.Connect(ctx, srv.ServerURL("postgres"))
		if err != nil {
			tb.Log(err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			tb.Log(err)
		}
	})
	pool, err := pg.Open(ctx, srv.URL())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(pool.Close)
	if err := pg.Migrate(ctx, pool); err != nil {
		tb.Fatal(err)
	}
	return pool
}
