package systemtest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// salesExact reads the sales as retrieval answers them, numbers exact
// (json.Number): float64 would hide a wrong digit in a large amount.
func (e *env) salesExact(token string) map[string]map[string]any {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/data/sales/", bearer(token))
	res.wantStatus(e.t, http.StatusOK)
	var page struct {
		Sales []map[string]any `json:"sales"`
	}
	d := json.NewDecoder(bytes.NewReader(res.body))
	d.UseNumber()
	if err := d.Decode(&page); err != nil {
		e.t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, s := range page.Sales {
		out[s["sale_external_id"].(string)] = s
	}
	return out
}

// TestMoneyNeverWraps imports sales whose figures leave int64: each record
// that would make one wrap around is rejected, naming the field, and the
// sale keeps the exact figures of the records accepted (the issue: two
// rows of 5000000000000000000 read back as sale_total
// -8446744073709551616).
func TestMoneyNeverWraps(t *testing.T) {
	e, token := eventsEnv(t)
	const big = "5000000000000000000"
	got := e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "sale_date": "2025-03-01", "sale_email": "a@x.test", "product_id": "P1", "quantity": 1, "unit_price": `+big+`},
		{"sale_external_id": "S1", "product_id": "P2", "quantity": 1, "unit_price": `+big+`},
		{"sale_external_id": "S2", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_rows": [
			{"product_id": "P1", "quantity": 1, "unit_price": `+big+`}, {"product_id": "P2", "quantity": 1, "unit_price": `+big+`}]},
		{"sale_external_id": "S3", "sale_date": "2025-03-01", "sale_email": "a@x.test", "product_id": "P1", "quantity": 2, "unit_price": `+big+`},
		{"sale_external_id": "S4", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_currency": "USD", "sale_exchange_rate": "0.5",
		 "product_id": "P1", "quantity": 1, "unit_price_in_currency": `+big+`},
		{"sale_external_id": "S5", "sale_date": "2025-03-01", "sale_email": "a@x.test", "product_id": "P1", "quantity": 1, "unit_price": 1,
		 "discount": -9223372036854775808},
		{"sale_external_id": "S6", "sale_date": "2025-03-01", "sale_email": "a@x.test", "product_id": "P1", "quantity": 1, "unit_price": 9223372036854775808},
		{"sale_external_id": "S7", "sale_date": "2025-03-01", "sale_email": "a@x.test", "product_id": "P1", "quantity": -1, "unit_price": 9223372036854775807},
		{"sale_external_id": "S7", "sale_discount": 2},
		{"sale_external_id": "S8", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_rows": [
			{"product_id": "P1", "quantity": 1, "unit_price": 9223372036854775807}, {"product_id": "P2", "quantity": -1, "unit_price": 7},
			{"product_id": "P3", "quantity": 1, "unit_price": 7}]}
	]`)
	want := []rejection{{1, "sale_total"}, {2, "sale_total"}, {3, "total"}, {4, "unit_price_in_currency"}, {5, "discount"}, {6, "unit_price"}, {8, "sale_total"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rejections (-want +got):\n%s", diff)
	}

	// Rows of a later upload count with the stored ones.
	got = e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "product_id": "P3", "quantity": 1, "unit_price": `+big+`},
		{"sale_external_id": "S8", "product_id": "P4", "quantity": 1, "unit_price": 1},
		{"sale_external_id": "S8", "product_id": "P2", "quantity": -1, "unit_price": 8}
	]`)
	// S8's P4 alone would take it over, but P2 is its row "P2 #0" again,
	// -8 in place of -7: what must fit is the sale the records leave.
	if diff := cmp.Diff([]rejection{{0, "sale_total"}}, got); diff != "" {
		t.Errorf("second upload: rejections (-want +got):\n%s", diff)
	}

	sales := e.salesExact(token)
	for id, total := range map[string]json.Number{
		"S1": big,
		"S7": "-9223372036854775807",
		"S8": "9223372036854775807",
	} {
		if s := sales[id]; s == nil || s["sale_total"] != total {
			t.Errorf("sale %s: %v, want sale_total %s", id, s, total)
		}
		var revenue int64
		if err := e.pool.QueryRow(context.Background(), `SELECT revenue FROM sales WHERE company_id = $1 AND doc->>'sale_external_id' = $2`,
			e.acme.ID, id).Scan(&revenue); err != nil || strconv.FormatInt(revenue, 10) != string(total) {
			t.Errorf("sale %s: revenue %d (%v), want %s", id, revenue, err, total)
		}
	}
	for _, id := range []string{"S2", "S3", "S4", "S5", "S6"} {
		if sales[id] != nil {
			t.Errorf("sale %s exists: %v", id, sales[id])
		}
	}
}

// TestSaleTotalsBackfill runs the part of migration 00020 that fills the
// write side's row totals and discounts of sales imported before it, from
// the log, and compares it with what the importer keeps itself.
func TestSaleTotalsBackfill(t *testing.T) {
	e, token := eventsEnv(t)
	e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_discount": 50, "product_id": "P1", "quantity": 1, "unit_price": 100},
		{"sale_external_id": "S1", "product_id": "P2", "quantity": 2, "unit_price": 100},
		{"sale_external_id": "S2", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_discount": 10, "external_id": "r1", "product_id": "P1", "quantity": 1, "unit_price": 300},
		{"sale_external_id": "S3", "sale_date": "2025-03-01", "sale_email": "a@x.test", "sale_total": 5, "product_id": "P1", "quantity": 1}
	]`)
	e.importAll(token, "/api/sales/upload/", `[
		{"sale_external_id": "S1", "product_id": "P1", "quantity": 1, "unit_price": 150},
		{"sale_external_id": "S2", "sale_discount": "", "external_id": "r1", "product_id": "P1", "quantity": 1, "unit_price": 300, "is_deleted": true},
		{"sale_external_id": "S2", "external_id": "r2", "product_id": "P1", "quantity": 1, "unit_price": 400},
		{"sale_external_id": "S3", "sale_discount": 7, "product_id": "P2", "quantity": 1, "unit_price": -0, "discount": 3}
	]`)
	ctx := context.Background()
	states := func() string {
		var s string
		if err := e.pool.QueryRow(ctx, `SELECT jsonb_object_agg(external_id, jsonb_build_array(row_totals, discount) ORDER BY external_id)::text
			FROM sale_states WHERE company_id = $1`, e.acme.ID).Scan(&s); err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := states()
	if want != `{"S1": [{"product:id:P1#0": 150, "product:id:P2#0": 200}, 50], "S2": [{"id:r2": 400}, 0], "S3": [{"product:id:P2#0": -3}, 7]}` {
		t.Errorf("states kept by the importer: %s", want)
	}

	migration, err := os.ReadFile("../internal/pg/migrations/00020_destroy_authority_and_sale_totals.sql")
	if err != nil {
		t.Fatal(err)
	}
	sql := string(migration)
	from, to := strings.Index(sql, "-- Filled from the log"), strings.Index(sql, "-- +goose Down")
	if from < 0 || to < from {
		t.Fatal("backfill not found in the migration")
	}
	if _, err := e.pool.Exec(ctx, `UPDATE sale_states SET row_totals = '{}', discount = 0`); err != nil {
		t.Fatal(err)
	}
	if _, err := e.pool.Exec(ctx, sql[from:to]); err != nil {
		t.Fatal(err)
	}
	if got := states(); got != want {
		t.Errorf("backfilled %s, want %s", got, want)
	}
}
