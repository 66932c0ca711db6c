package main

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestServeIssuesTokens: serve gives the customers from before tracking
// tokens theirs at start, in the background, once.
func TestServeIssuesTokens(t *testing.T) {
	ctx := context.Background()
	url := pgtest.URL(t)
	getenv := env(map[string]string{"DATABASE_URL": url, "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATA_DIR": t.TempDir()})
	mustRun(t, getenv, "company", "create", "acme", "--name", "ACME")
	mustRun(t, getenv, "import", "--company", "acme", "--entity", "customers",
		writeFile(t, "customers.json", `[{"external_id": "A"}, {"external_id": "B"}, {"external_id": "C"}]`))
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	// What customers from before tokens are: no token in their state
	// (which is the registry).
	if _, err := conn.Exec(ctx, `UPDATE customer_states SET token_hash = NULL`); err != nil {
		t.Fatal(err)
	}

	_, _, stop := startServe(t, getenv)
	defer stop()
	var tokenless, registered, issued int
	for deadline := time.Now().Add(30 * time.Second); ; {
		if err := conn.QueryRow(ctx, `SELECT
				(SELECT count(*) FROM customer_states WHERE token_hash IS NULL),
				(SELECT count(DISTINCT token_hash) FROM customer_states WHERE token_hash IS NOT NULL),
				(SELECT count(*) FROM events WHERE event_type = 'CustomerUpserted' AND metadata->>'source' = 'system')`).
			Scan(&tokenless, &registered, &issued); err != nil {
			t.Fatal(err)
		}
		if tokenless == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	if tokenless != 0 || registered != 3 || issued != 3 {
		t.Errorf("after serve started: %d customers without a token, %d tokens registered, %d issued by the system; want 0, 3, 3",
			tokenless, registered, issued)
	}
}
