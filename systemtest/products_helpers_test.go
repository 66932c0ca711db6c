package systemtest_test

import (
	"net/http"
	"testing"

	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// catalogEnv is a server with the import worker and the shops and
// products projectors running, and the acme admin's token.
func catalogEnv(t *testing.T) (*env, string) {
	t.Helper()
	e := newEnv(t)
	e.runProjections(retrievalproj.NewShops(), retrievalproj.NewProducts())
	e.runImports()
	return e, e.userToken(e.admin, acmeHost)
}

// rejection is a run's rejection as the tests compare them.
type rejection struct {
	Index int
	Field string
}

// importAll uploads body to path, waits for the run and the projections,
// and returns the rejections.
func (e *env) importAll(token, path, body string, opts ...option) []rejection {
	e.t.Helper()
	run := e.mustUpload(token, path, append([]option{rawBody(body)}, opts...)...)
	a, res := e.waitRun(token, run)
	if a.Import.State != "completed" {
		e.t.Fatalf("run: %s", res.body)
	}
	e.waitProjections()
	out := []rejection{}
	for _, r := range a.Import.Rejections {
		f := ""
		if r.Field != nil {
			f = *r.Field
		}
		out = append(out, rejection{r.Index, f})
	}
	return out
}

// retrieval is a page of GET /api/data/<key>/.
type retrieval struct {
	Items   []map[string]any
	NextURL string
}

// retrieveAll reads one page of /api/data/<key>/ with query options.
func (e *env) retrieveAll(token, key string, opts ...option) retrieval {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/data/"+key+"/", append([]option{bearer(token)}, opts...)...)
	res.wantStatus(e.t, http.StatusOK)
	var page map[string]any
	res.decode(e.t, &page)
	var r retrieval
	items, ok := page[key].([]any)
	if !ok {
		e.t.Fatalf("answer without %s: %s", key, res.body)
	}
	for _, it := range items {
		r.Items = append(r.Items, it.(map[string]any))
	}
	r.NextURL, _ = page["next_url"].(string)
	return r
}

// byExternalID indexes retrieved items by external_id.
func byExternalID(items []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, it := range items {
		out[it["external_id"].(string)] = it
	}
	return out
}
