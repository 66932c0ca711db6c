package systemtest_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	"github.com/clientele/clientele/commands/imports/testimporter"
)

// TestUploadSpellings uploads through every spelling of both paths, as a
// bare list and wrapped, and checks that each run completes.
func TestUploadSpellings(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	n := 0
	var runs []string
	for _, base := range []string{"/api/customers/upload/", "/api/customer/upload/"} {
		for _, path := range []string{base, strings.TrimSuffix(base, "/"), strings.TrimPrefix(base, "/api"), strings.TrimSuffix(strings.TrimPrefix(base, "/api"), "/")} {
			body := fmt.Sprintf(`[{"id": "c%d"}]`, n)
			if n%2 == 1 {
				body = fmt.Sprintf(`{"customers": [{"id": "c%d"}]}`, n)
			}
			runs = append(runs, e.mustUpload(token, path, rawBody(body)))
			n++
		}
	}
	for _, run := range runs {
		if a, res := e.waitRun(token, run); a.Import.State != "completed" || a.Import.Accepted != 1 || a.Import.Entity != "customers" {
			t.Errorf("run %s: %s", run, res.body)
		}
	}
}

// TestUploadAndReport checks the run's answer, rejections, warnings and
// timestamps included, and the attribution of the events. The fields the
// test Importer ignores (unknown_*) are warnings of the records it
// accepts only.
func TestUploadAndReport(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	run := e.mustUpload(token, "/api/customers/upload/", withHeader("X-Request-Id", "req-42"),
		rawBody(`{"customers": [{"id": "a", "unknown_store_id": 1}, {"id": "b", "bad": true, "unknown_store_id": 1, "unknown_rejected": 1},
			{"name": "no id"}, {"id": "c", "unknown_store_id": 2, "unknown_mage_type": "simple"}]}`))
	a, res := e.waitRun(token, run)
	if a.Import.StartedAt == nil || a.Import.FinishedAt == nil {
		t.Fatalf("timestamps missing: %s", res.body)
	}
	golden(t, "import_run", timestamps.ReplaceAll(res.body, []byte(`"<time>"`)), run, "<run_id>")

	evs, err := e.store.ReadStream(context.Background(), testimporter.Stream(e.acme.ID, "a"), 0)
	if err != nil || len(evs) != 1 {
		t.Fatalf("stream a: %d events, %v", len(evs), err)
	}
	md := evs[0].Metadata
	if md.RunID != run || md.Source != "api" || md.CorrelationID != "req-42" || !strings.HasPrefix(md.Actor, "tokens/") {
		t.Errorf("metadata %+v", md)
	}
}

// timestamps matches the answer's timestamps, which change every run.
var timestamps = regexp.MustCompile(`"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"`)

// TestUploadCSV uploads CSV in Latin-1 with ";" and checks the records
// the Importer got, and that the run and its events are attributed to
// "api", as any HTTP upload.
func TestUploadCSV(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	body := "id;first_name;tags.0;tags.1;mailing_lists.add\r\nx1;J\xfcrgen;a;;news\r\nx2;;;b;\r\n"
	run := e.mustUpload(token, "/api/customer/upload", withHeader("Content-Type", "text/csv; charset=iso-8859-1"), rawBody(body))
	if a, res := e.waitRun(token, run); a.Import.Accepted != 2 || a.Import.Source != "api" {
		t.Fatalf("run: %s", res.body)
	}
	for id, want := range map[string]string{
		"x1": `{"id": "x1", "tags": ["a"], "first_name": "Jürgen", "mailing_lists.add": "news"}`,
		"x2": `{"id": "x2", "tags": ["b"]}`,
	} {
		evs, err := e.store.ReadStream(context.Background(), testimporter.Stream(e.acme.ID, id), 0)
		if err != nil || len(evs) != 1 {
			t.Fatalf("stream %s: %d events, %v", id, len(evs), err)
		}
		if got := string(evs[0].Data); got != want {
			t.Errorf("record %s: %s, want %s", id, got, want)
		}
		if evs[0].Metadata.Source != "api" {
			t.Errorf("record %s: source %q, want api", id, evs[0].Metadata.Source)
		}
	}
}

// TestUploadInvalid checks that whole-request problems are answered at
// once and schedule nothing.
func TestUploadInvalid(t *testing.T) {
	e, _ := newImportEnv(t)
	token := e.userToken(e.admin, acmeHost)
	big := strings.Repeat(`{"id": "x"},`, 3000) // staged in chunks before the error
	for name, tc := range map[string]struct {
		contentType, body, msg string
	}{
		"not json":           {"application/json", `{"customers": [`, "ends in the middle"},
		"syntax error late":  {"application/json", `[` + big + `{"id": }]`, "not valid JSON"},
		"wrong shape":        {"application/json", `{"id": "x"}`, `{"customers": [...]}`},
		"other entity":       {"application/json", `{"products": [{"id": "x"}]}`, `no "customers" list`},
		"non-object record":  {"application/json", `[` + big + `"x"]`, "record 3000 is a string"},
		"empty body":         {"application/json", ``, "empty"},
		"wrong content type": {"text/plain", `[]`, "not text/plain"},
		"unknown charset":    {"text/csv; charset=klingon", "id\nx\n", "unknown charset"},
		"empty csv header":   {"text/csv", "\n", "CSV body is empty"},
		"csv ragged row":     {"text/csv", "id\n" + strings.Repeat("x\n", 2000) + "x,y\n", "has 2 cells"},
	} {
		t.Run(name, func(t *testing.T) {
			res := e.do(http.MethodPost, "/api/customers/upload/", bearer(token), withHeader("Content-Type", tc.contentType), rawBody(tc.body))
			b := res.wantError(t, http.StatusBadRequest, "invalid_request")
			if !strings.Contains(b.Error.Message, tc.msg) {
				t.Errorf("message %q, want it to contain %q", b.Error.Message, tc.msg)
			}
			if runs, chunks, msgs := e.stagedRows(); runs+chunks+msgs != 0 {
				t.Errorf("left %d runs, %d chunks, %d messages", runs, chunks, msgs)
			}
		})
	}
}

// TestUploadLimit checks that uploads have their own limit, above the
// general one, and that a body over it is 413 and schedules nothing.
func TestUploadLimit(t *testing.T) {
	e, _ := newImportEnv(t, func(c *api.Config, _ *app.Application) { c.MaxBodyBytes, c.MaxUploadBytes = 1000, 20_000 })
	token := e.userToken(e.admin, acmeHost)
	body := `[` + strings.Repeat(`{"id": "x"},`, 1000) + `{"id": "y"}]` // 12 KB
	e.mustUpload(token, "/api/customers/upload/", rawBody(body))
	e.do(http.MethodPost, "/api/integrations/", bearer(token), rawBody(`{"name": "`+strings.Repeat("x", 2000)+`"}`)).
		wantError(t, http.StatusRequestEntityTooLarge, "request_too_large")

	big := `[` + strings.Repeat(`{"id": "x"},`, 2000) + `{"id": "y"}]` // 24 KB
	_, _, before := e.stagedRows()
	for name, opt := range map[string]option{"declared": rawBody(big), "chunked": streamBody(strings.NewReader(big))} {
		t.Run(name, func(t *testing.T) {
			e.do(http.MethodPost, "/api/customers/upload/", bearer(token), opt).wantError(t, http.StatusRequestEntityTooLarge, "request_too_large")
			if runs, _, msgs := e.stagedRows(); runs != 1 || msgs != before {
				t.Errorf("%d runs and %d messages after a refused upload, want 1 and %d", runs, msgs, before)
			}
		})
	}
}
