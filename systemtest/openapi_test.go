package systemtest_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/docs"
)

// openAPIOperations returns "METHOD /path" for every operation of
// docs/openapi.yaml.
func openAPIOperations(t *testing.T) map[string]bool {
	t.Helper()
	var doc struct {
		OpenAPI string                               `yaml:"openapi"`
		Paths   map[string]map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(docs.OpenAPI, &doc); err != nil {
		t.Fatalf("docs/openapi.yaml: %v", err)
	}
	if doc.OpenAPI != "3.0.3" {
		t.Errorf("openapi %q, want 3.0.3", doc.OpenAPI)
	}
	ops := map[string]bool{}
	for path, item := range doc.Paths {
		for method := range item {
			ops[strings.ToUpper(method)+" "+path] = true
		}
	}
	return ops
}

var ginParam = regexp.MustCompile(`:([A-Za-z_]+)`)

// TestOpenAPIMatchesRoutes keeps docs/openapi.yaml and the server in step:
// every route is documented (under its canonical spelling), every
// documented operation is served, and every /api path under all four
// spellings.
func TestOpenAPIMatchesRoutes(t *testing.T) {
	e := newEnv(t)
	documented := openAPIOperations(t)
	served := map[string]bool{}
	canonical := map[string]bool{}
	for _, r := range e.api.Routes() {
		p := ginParam.ReplaceAllString(r.Path, "{$1}")
		served[r.Method+" "+p] = true
		found := false
		for _, c := range []string{p, p + "/", "/api" + p, "/api" + p + "/"} {
			if documented[r.Method+" "+c] {
				canonical[r.Method+" "+c] = true
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s %s is served but not in docs/openapi.yaml", r.Method, r.Path)
		}
	}
	var want, got []string
	for op := range documented {
		want = append(want, op)
		method, path, _ := strings.Cut(op, " ")
		if !served[op] {
			t.Errorf("%s is documented but not served", op)
		}
		if !strings.HasPrefix(path, "/api/") || strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".json") {
			continue
		}
		base := strings.TrimSuffix(path, "/")
		for _, s := range []string{base, strings.TrimPrefix(base, "/api"), strings.TrimPrefix(base, "/api") + "/"} {
			if !served[method+" "+s] {
				t.Errorf("%s is not served as %s", op, s)
			}
		}
	}
	for op := range canonical {
		got = append(got, op)
	}
	sort.Strings(want)
	sort.Strings(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("documented operations vs served (-documented +served):\n%s", diff)
	}
}

func TestOpenAPIServed(t *testing.T) {
	e := newEnv(t)
	res := e.do(http.MethodGet, "/api/openapi.yaml", host("anything.example"))
	res.wantStatus(t, http.StatusOK)
	if string(res.body) != string(docs.OpenAPI) {
		t.Error("/api/openapi.yaml is not docs/openapi.yaml")
	}
	res = e.do(http.MethodGet, "/api/openapi.json")
	res.wantStatus(t, http.StatusOK)
	var doc map[string]any
	res.decode(t, &doc)
	if doc["openapi"] != "3.0.3" {
		t.Errorf("/api/openapi.json: openapi %v", doc["openapi"])
	}
	if _, ok := doc["paths"].(map[string]any)["/api/access-tokens/"]; !ok {
		t.Error("/api/openapi.json lacks /api/access-tokens/")
	}
}

// TestContractCheckRefusesDrift: the check of e.do refuses an answer the
// document does not describe (an undocumented status, a value outside an
// enum, a missing required field), a served request whose parameters the
// document refuses, and a path the document does not have.
func TestContractCheckRefusesDrift(t *testing.T) {
	c, err := contract()
	if err != nil {
		t.Fatal(err)
	}
	jsonHeader := http.Header{"Content-Type": []string{"application/json"}}
	run := `{"import": {"run_id": "r", "entity": "customers", "state": "completed", "source": "%s", "received": 1, "accepted": 1, "rejected": 0,
		"created_at": "2025-01-02T03:04:05Z", "started_at": null, "finished_at": null, "warnings": [], "rejections": []}}`
	for _, tc := range []struct {
		name, method, target string
		res                  response
		want                 string // in the error; "" for none
	}{
		{"a documented answer", http.MethodGet, "/imports/r",
			response{status: 200, header: jsonHeader, body: []byte(fmt.Sprintf(run, "query"))}, ""},
		{"a source outside the enum", http.MethodGet, "/api/imports/r/",
			response{status: 200, header: jsonHeader, body: []byte(fmt.Sprintf(run, "ftp"))}, "ftp"},
		{"an undocumented status", http.MethodGet, "/api/imports/r/",
			response{status: http.StatusTeapot, header: jsonHeader, body: []byte(`{}`)}, "status is not supported"},
		{"a required field missing", http.MethodGet, "/api/datatargets/d/retrieve/",
			response{status: 200, header: jsonHeader, body: []byte(`{"last_message_number": 1}`)}, "messages"},
		{"a served request the document refuses", http.MethodGet, "/api/datatargets/d/retrieve/?limit=0",
			response{status: 200, header: jsonHeader, body: []byte(`{"messages": []}`)}, "limit"},
		{"a path the document does not have", http.MethodGet, "/api/gadgets/",
			response{status: 404, header: jsonHeader, body: []byte(`{"error": {"code": "not_found", "message": "x"}}`)}, "not in docs/openapi.yaml"},
	} {
		req, err := http.NewRequest(tc.method, "http://acme.localhost"+tc.target, nil)
		if err != nil {
			t.Fatal(err)
		}
		err = c.check(req, tc.res)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %q", tc.name, err, tc.want)
		}
	}
}

// TestRetrieveLimitAboveTenThousandIsServed: a retrieve limit above
// 10,000 is served as 10,000, as the document says; e.do checks the
// request against it.
func TestRetrieveLimitAboveTenThousandIsServed(t *testing.T) {
	e := newEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	id := e.createDatatarget(admin, "orders")
	e.do(http.MethodPost, "/api/datatargets/"+id+"/post/", bearer(admin), rawBody(`{"messages": [{"n": 1}, {"n": 2}]}`)).wantStatus(t, http.StatusOK)
	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(admin), withQuery("limit", "20000"))
	res.wantStatus(t, http.StatusOK)
	var a struct {
		Messages []json.RawMessage `json:"messages"`
	}
	res.decode(t, &a)
	if len(a.Messages) != 2 {
		t.Errorf("%d messages, want 2: %s", len(a.Messages), res.body)
	}
}
