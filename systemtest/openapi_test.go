package systemtest_test

import (
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
