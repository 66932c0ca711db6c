package pgtest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jackc/pgx/v5/pgxpool"
)

// FilesHolding returns the data files of the tables (each with its TOAST
// table, every segment and fork) in which needle stands, after a
// checkpoint has written every page out: what a scan of the server's
// data directory would find, dead row versions included. The server must
// be on this machine (the test servers are) and the pool's role a
// superuser.
func FilesHolding(tb testing.TB, pool *pgxpool.Pool, needle []byte, tables ...string) []string {
	tb.Helper()
	ctx := context.Background()
	if _, err := pool.Exec(ctx, `CHECKPOINT`); err != nil {
		tb.Fatal(err)
	}
	rows, err := pool.Query(ctx, `WITH r AS (SELECT t::regclass AS oid FROM unnest($1::text[]) AS t)
		SELECT current_setting('data_directory') || '/' || pg_relation_filepath(c.oid)
		FROM pg_class c WHERE c.oid IN (SELECT oid FROM r)
			OR c.oid IN (SELECT reltoastrelid FROM pg_class WHERE oid IN (SELECT oid FROM r) AND reltoastrelid <> 0)`, tables)
	if err != nil {
		tb.Fatal(err)
	}
	var paths []string
	for rows.Next() {
		var p string
		if err := rows.Scan(&p); err != nil {
			tb.Fatal(err)
		}
		paths = append(paths, p)
	}
	if err := rows.Err(); err != nil {
		tb.Fatal(err)
	}
	if len(paths) < len(tables) {
		tb.Fatalf("files of %d relations found for %d tables", len(paths), len(tables))
	}
	var found []string
	for _, p := range paths {
		// The first segment, the next ones (.1, .2, ...) and the forks
		// (_fsm, _vm, _init); not p + "*", which would take 29165 for 2916.
		more, err := filepath.Glob(p + ".*")
		forks, err2 := filepath.Glob(p + "_*")
		if err != nil || err2 != nil {
			tb.Fatal(err, err2)
		}
		for _, f := range append(append([]string{p}, more...), forks...) {
			b, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			if bytes.Contains(b, needle) {
				found = append(found, f)
			}
		}
	}
	return found
}
