package systemtest_test

import (
	"context"
	"strings"
	"testing"

	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// TestImportNumberTheStoreRefusesStopsOnlyItsRecord (issue 11): a shop
// whose company field is a number jsonb cannot hold (1e-16384) is
// rejected, by the parser or by the worker once the store refused it, and
// the records around it and the company's next upload are applied. Before,
// its chunk failed on every retry and every later upload of the company
// was answered 200 and never applied.
func TestImportNumberTheStoreRefusesStopsOnlyItsRecord(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	e.runProjections(retrievalproj.NewShops())
	token := e.userToken(e.admin, acmeHost)

	run := e.mustUpload(token, "/api/shops/upload/", rawBody(`[{"external_id": "s-1", "name": "One"},
		{"external_id": "s-2", "name": "Two", "ACME__score": 1e-16384},
		{"external_id": "s-3", "name": "Three"}]`))
	a, res := e.waitRun(token, run)
	if a.Import.State != "completed" || a.Import.Accepted != 2 || a.Import.Rejected != 1 || a.Import.Rejections[0].Index != 1 {
		t.Fatalf("run: %s", res.body)
	}
	if strings.Contains(string(res.body), "16384") {
		t.Errorf("the rejection quotes the value: %s", res.body)
	}
	next := e.mustUpload(token, "/api/shops/upload/", rawBody(`[{"external_id": "s-4", "name": "Four"}]`))
	if a, res := e.waitRun(token, next); a.Import.State != "completed" || a.Import.Accepted != 1 {
		t.Fatalf("the next upload: %s", res.body)
	}
	e.waitProjections()
	for _, id := range []string{"s-1", "s-3", "s-4"} {
		if got := e.retrieveAll(token, "shops", withQuery("external_id", id)); len(got.Items) != 1 {
			t.Errorf("shop %s: %v", id, got.Items)
		}
	}
}

// TestImportRecordTheStoreRefusesThenForget: a record that every parser
// accepts but the database refuses (here a constraint added for the test,
// standing for whatever validation misses) is rejected with the
// database's reason, without the value or the row PostgreSQL quotes in its
// detail; the rest of its upload is applied; and a forget the company
// uploads after it is applied: the person disappears from retrieval.
func TestImportRecordTheStoreRefusesThenForget(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	e.runProjections(retrievalproj.NewCustomers(e.keys), retrievalproj.NewShops())
	token := e.userToken(e.admin, acmeHost)

	created := e.mustUpload(token, "/api/customers/upload/", rawBody(`[{"external_id": "p-1", "email": "pat@example.com", "first_name": "Pat"}]`))
	if a, res := e.waitRun(token, created); a.Import.Accepted != 1 {
		t.Fatalf("customer: %s", res.body)
	}
	e.waitProjections()
	if got := e.retrieve(token, withQuery("external_id", "p-1")); len(got.Customers) != 1 {
		t.Fatalf("the customer is not retrievable: %v", got.Customers)
	}

	if _, err := e.pool.Exec(context.Background(), `ALTER TABLE events ADD CONSTRAINT test_store_refuses
		CHECK (strpos(data::text, 'store-refuses-this') = 0) NOT VALID`); err != nil {
		t.Fatal(err)
	}
	poisoned := e.mustUpload(token, "/api/shops/upload/", rawBody(`[{"external_id": "s-1", "name": "One"},
		{"external_id": "s-2", "name": "store-refuses-this"}, {"external_id": "s-3", "name": "Three"}]`))
	forget := e.mustUpload(token, "/api/customers/upload/", rawBody(`[{"external_id": "p-1", "is_forgotten": true}]`))

	if a, res := e.waitRun(token, forget); a.Import.State != "completed" || a.Import.Accepted != 1 {
		t.Fatalf("forget: %s", res.body)
	}
	a, res := e.waitRun(token, poisoned)
	if a.Import.State != "completed" || a.Import.Accepted != 2 || a.Import.Rejected != 1 {
		t.Fatalf("poisoned run: %s", res.body)
	}
	rj := a.Import.Rejections[0]
	if want := "the database refused the record: new row for relation … violates check constraint …"; rj.Index != 1 || rj.Reason != want || rj.Field != nil {
		t.Errorf("rejection %d %q, want record 1 %q", rj.Index, rj.Reason, want)
	}
	if body := string(res.body); strings.Contains(body, "store-refuses-this") || strings.Contains(body, "Failing row") {
		t.Errorf("the run quotes the refused record: %s", body)
	}

	e.waitProjections()
	for _, q := range [][2]string{{"external_id", "p-1"}, {"email", "pat@example.com"}, {"first_name", "Pat"}} {
		if got := e.retrieve(token, withQuery(q[0], q[1])); len(got.Customers) != 0 {
			t.Errorf("%s=%s finds the forgotten customer: %v", q[0], q[1], got.Customers)
		}
	}
	for _, id := range []string{"s-1", "s-3"} {
		if got := e.retrieveAll(token, "shops", withQuery("external_id", id)); len(got.Items) != 1 {
			t.Errorf("shop %s: %v", id, got.Items)
		}
	}
}
