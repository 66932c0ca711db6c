package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"testing"
)

// TestGetImport checks paging of rejections, and that a run is its
// company's only.
func TestGetImport(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	run := e.mustUpload(token, "/api/customers/upload/", rawBody(`[{"bad":1},{"bad":1},{"id":"ok"},{"bad":1},{"bad":1},{"bad":1}]`))
	e.waitRun(token, run)

	var indexes []int
	next := "/api/imports/" + run + "/?limit=2"
	pages := 0
	for next != "" {
		u, err := url.Parse(next)
		if err != nil {
			t.Fatal(err)
		}
		if pages > 0 && (u.Scheme != "http" || u.Host != acmeHost) {
			t.Errorf("next_url %q is not absolute on the company's host", next)
		}
		res := e.do(http.MethodGet, u.Path+"?"+u.RawQuery, bearer(token))
		res.wantStatus(t, http.StatusOK)
		var a importAnswer
		res.decode(t, &a)
		for _, r := range a.Import.Rejections {
			indexes = append(indexes, r.Index)
		}
		next = a.Import.NextURL
		pages++
	}
	if fmt.Sprint(indexes) != "[0 1 3 4 5]" || pages != 3 {
		t.Errorf("rejections %v in %d pages, want [0 1 3 4 5] in 3", indexes, pages)
	}

	for name, q := range map[string]string{"limit zero": "?limit=0", "limit too big": "?limit=10001", "limit word": "?limit=all", "bad cursor": "?cursor=!!!"} {
		t.Run(name, func(t *testing.T) {
			e.do(http.MethodGet, "/api/imports/"+run+"/"+q, bearer(token)).wantError(t, http.StatusBadRequest, "invalid_request")
		})
	}
	e.do(http.MethodGet, "/api/imports/nosuchrun/", bearer(token)).wantError(t, http.StatusNotFound, "not_found")
	other := e.userToken(e.globexAd, globexHost)
	e.do(http.MethodGet, "/api/imports/"+run+"/", host(globexHost), bearer(other)).wantError(t, http.StatusNotFound, "not_found")
}

// TestUploadRoutesNeedAnImporter checks that an entity without an
// Importer has no upload route: its uploads are refused as a whole-request
// problem (unknown entity, 400), and nothing is staged.
func TestUploadRoutesNeedAnImporter(t *testing.T) {
	e := newEnv(t, withImporters())
	token := e.userToken(e.admin, acmeHost)
	e.do(http.MethodPost, "/api/customers/upload/", bearer(token), rawBody(`[]`)).wantError(t, http.StatusBadRequest, "invalid_request")
	var runs int
	if err := e.pool.QueryRow(context.Background(), `SELECT count(*) FROM import_runs`).Scan(&runs); err != nil {
		t.Fatal(err)
	}
	if runs != 0 {
		t.Errorf("%d import runs staged, want none", runs)
	}
}

// TestUploadCustomers runs the pipeline with the real customers Importer
// (the server's default), CSV included.
func TestUploadCustomers(t *testing.T) {
	e := newEnv(t)
	e.runImports()
	token := e.userToken(e.admin, acmeHost)
	run := e.mustUpload(token, "/api/customers/upload/",
		rawBody(`{"customers": [{"external_id": "C-1", "email": "ann@example.com"}, {"first_name": "No identifier"}]}`))
	if a, res := e.waitRun(token, run); a.Import.State != "completed" || a.Import.Accepted != 1 || a.Import.Rejected != 1 {
		t.Errorf("JSON run: %s", res.body)
	}
	run = e.mustUpload(token, "/api/customer/upload/", withHeader("Content-Type", "text/csv"),
		rawBody("external_id,email,tags.0\nC-2,bob@example.com,vip\nC-3,,\n"))
	if a, res := e.waitRun(token, run); a.Import.State != "completed" || a.Import.Accepted != 2 {
		t.Errorf("CSV run: %s", res.body)
	}
}
