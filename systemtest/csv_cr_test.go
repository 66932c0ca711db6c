package systemtest_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestUploadCSVLineEnds uploads customers as CSV with the line ends of
// classic Mac OS (a lone CR, as old Excel versions still write), Windows
// (CRLF), mixed, and without a final line end: every record is imported,
// and a line break inside a quoted cell stays in its cell.
func TestUploadCSVLineEnds(t *testing.T) {
	e, token := eventsEnv(t)
	// The env's helpers fail the test itself, so the cases are not
	// subtests; prefix names each case's customers.
	for _, tc := range []struct{ prefix, body, last string }{
		{"plain", "external_id,email,last_name\r{p}1,{p}1@x.test,Smith\r{p}2,{p}2@x.test,Doe\r", "Smith"},
		{"cr", "external_id;email;last_name\r{p}1;{p}1@x.test;\"Smith\rJones\"\r{p}2;{p}2@x.test;Doe\r", "Smith\nJones"},
		{"crx", "external_id,email,last_name\r{p}1,{p}1@x.test,\"Smith\rJones\"\r{p}2,{p}2@x.test,Doe", "Smith\nJones"},
		{"crlf", "external_id,email,last_name\r\n{p}1,{p}1@x.test,\"Smith\r\nJones\"\r\n{p}2,{p}2@x.test,Doe\r\n", "Smith\nJones"},
		{"mix", "external_id,email,last_name\r\n{p}1,{p}1@x.test,\"Smith\nJones\"\r{p}2,{p}2@x.test,Doe\n", "Smith\nJones"},
	} {
		body := strings.ReplaceAll(tc.body, "{p}", tc.prefix)
		run := e.mustUpload(token, "/api/customers/upload/", withHeader("Content-Type", "text/csv"), rawBody(body))
		a, res := e.waitRun(token, run)
		if a.Import.State != "completed" || a.Import.Received != 2 || a.Import.Accepted != 2 {
			t.Errorf("case %s: run: %s", tc.prefix, res.body)
			continue
		}
		e.waitProjections()
		got := map[string]any{}
		for id, c := range byExternalID(e.retrieveAll(token, "customers").Items) {
			if id == tc.prefix+"1" || id == tc.prefix+"2" {
				got[id] = []any{c["email"], c["last_name"]}
			}
		}
		want := map[string]any{
			tc.prefix + "1": []any{tc.prefix + "1@x.test", tc.last},
			tc.prefix + "2": []any{tc.prefix + "2@x.test", "Doe"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("case %s: customers (-want +got):\n%s", tc.prefix, diff)
		}
	}
}

// TestUploadCSVOneLine: a body of one line without line end is a header
// without records: the run completes with nothing received, as for a
// header that ends in a line break.
func TestUploadCSVOneLine(t *testing.T) {
	e, token := eventsEnv(t)
	run := e.mustUpload(token, "/api/customers/upload/", withHeader("Content-Type", "text/csv"), rawBody("external_id,email"))
	if a, res := e.waitRun(token, run); a.Import.State != "completed" || a.Import.Received != 0 {
		t.Fatalf("run: %s", res.body)
	}
}
