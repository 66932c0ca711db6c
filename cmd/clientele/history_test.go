package main

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestHistoryAndRetrieval imports a customer with the real pipeline, reads
// it back through serve's retrieval and the history command, forgets it,
// and reads the history again.
func TestHistoryAndRetrieval(t *testing.T) {
	url := pgtest.URL(t)
	getenv := env(map[string]string{"DATABASE_URL": url, "CLIENTELE_LOG_LEVEL": "warn", "CLIENTELE_DATA_DIR": t.TempDir()})
	mustRun(t, getenv, "company", "create", "acme")
	mustRun(t, getenv, "user", "create", "--company", "acme", "--email", "ops@acme.test", "--password", "correct horse battery", "--role", "admin")
	mustRun(t, getenv, "import", "--company", "acme", "--entity", "customers",
		writeFile(t, "ann.json", `[{"external_id": "C-1", "email": "ann@example.com", "first_name": "Ann"}]`))

	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var id string
	if err := conn.QueryRow(ctx, `SELECT substr(stream_id, length('customer-' || company_id || '-') + 1) FROM streams
		WHERE stream_id LIKE 'customer-%'`).Scan(&id); err != nil {
		t.Fatal(err)
	}

	// Retrieval, once serve's projection has the customer.
	base, _, stop := startServe(t, getenv, "--base-domain", "localhost")
	defer stop()
	_, body := request(t, "POST", base+"/api/access-tokens/", "acme.localhost", nil, func(r *http.Request) {
		r.SetBasicAuth("ops@acme.test", "correct horse battery")
	})
	token, _ := body["access_token"].(map[string]any)["token"].(string)
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		code, body := request(t, "GET", base+"/api/data/customers/", "acme.localhost", nil, func(r *http.Request) {
			r.Header.Set("Authorization", "Bearer "+token)
		})
		list, _ := body["customers"].([]any)
		if code == http.StatusOK && len(list) == 1 {
			if c := list[0].(map[string]any); c["id"] != id || c["email"] != "ann@example.com" || c["can_email"] != false {
				t.Errorf("retrieved %v", c)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("customer not retrievable: %d %v", code, body)
		}
	}
	stop()

	out := mustRun(t, getenv, "history", "customer", id)
	for _, want := range []string{"customer " + id + " of company acme\n", "#1 CustomerUpserted at ", "source cli",
		`set email = "ann@example.com"`, `set first_name = "Ann"`} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}

	mustRun(t, getenv, "import", "--company", "acme", "--entity", "customers",
		writeFile(t, "forget.json", `[{"external_id": "C-1", "is_forgotten": true}]`))
	out = mustRun(t, getenv, "history", "customer", id, "--company", "acme")
	if !strings.Contains(out, "forgotten") || !strings.Contains(out, "CustomerForgotten") || !strings.Contains(out, "(values forgotten)") ||
		strings.Contains(out, "ann@example.com") || strings.Contains(out, "Ann") {
		t.Errorf("history after forgetting:\n%s", out)
	}

	mustRun(t, getenv, "company", "create", "globex")
	for _, args := range [][]string{{"history", "customer", id}, {"history", "customer", id, "--company", "globex"}} {
		var o, e bytes.Buffer
		if err := run(ctx, args, &o, &e, getenv); err == nil {
			t.Errorf("%v succeeded:\n%s", args, o.String())
		}
	}
}
