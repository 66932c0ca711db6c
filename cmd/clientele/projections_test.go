package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestProjectionStallsCommands: a company parked for a projection shows
// in `projections status` and `projections stalls`, and `projections
// retry` applies its held commits and clears it.
func TestProjectionStallsCommands(t *testing.T) {
	url := pgtest.URL(t)
	getenv := env(map[string]string{"DATABASE_URL": url, "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATA_DIR": t.TempDir()})
	mustRun(t, getenv, "company", "create", "acme")
	if out := mustRun(t, getenv, "projections", "stalls"); !strings.Contains(out, "no company is parked") {
		t.Errorf("stalls with none:\n%s", out)
	}

	// acme parked for customers at its first commit, as the runtime
	// parks a company whose commit fails.
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var company string
	_, err = conn.Exec(ctx, `INSERT INTO projection_stalls (projector, company_id, transaction_id, global_position,
			held_transaction_id, held_global_position, error)
		SELECT 'customers', company_id, transaction_id, min(global_position), transaction_id, max(global_position),
			'projections: customers: apply commit: ERROR: value overflows numeric format (SQLSTATE 22003)'
		FROM events WHERE company_id = (SELECT company_id FROM events ORDER BY global_position LIMIT 1)
		GROUP BY company_id, transaction_id ORDER BY transaction_id LIMIT 1`)
	if err != nil {
		t.Fatal(err)
	}
	if err := conn.QueryRow(ctx, `SELECT company_id FROM projection_stalls`).Scan(&company); err != nil {
		t.Fatal(err)
	}

	out := mustRun(t, getenv, "projections", "status", "--sample", "0")
	if !strings.Contains(out, "STALLED COMPANIES") || !strings.Contains(out, "customers, company acme ("+company+"): projections: customers: apply commit: ERROR: value overflows") {
		t.Errorf("status:\n%s", out)
	}
	out = mustRun(t, getenv, "projections", "stalls", "customers")
	for _, want := range []string{"PROJECTION", "customers   acme (" + company + ")", "value overflows numeric format", "clientele projections retry"} {
		if !strings.Contains(out, want) {
			t.Errorf("stalls lacks %q:\n%s", want, out)
		}
	}
	if out := mustRun(t, getenv, "projections", "stalls", "products"); !strings.Contains(out, "no company is parked") {
		t.Errorf("stalls of another projection:\n%s", out)
	}
	var o, e bytes.Buffer
	if err := run(ctx, []string{"projections", "retry", "companies", "--company", "acme"}, &o, &e, getenv); err == nil {
		t.Errorf("retry of an inline projection succeeded:\n%s", o.String())
	}

	out = mustRun(t, getenv, "projections", "retry", "customers", "--company", "acme")
	if !strings.Contains(out, "customers: company acme ("+company+") resumed (1 held commits applied)") {
		t.Errorf("retry:\n%s", out)
	}
	if out := mustRun(t, getenv, "projections", "stalls"); !strings.Contains(out, "no company is parked") {
		t.Errorf("stalls after the retry:\n%s", out)
	}
	if out := mustRun(t, getenv, "projections", "retry", "customers"); !strings.Contains(out, "customers: no company is parked") {
		t.Errorf("retry with none parked:\n%s", out)
	}
}
