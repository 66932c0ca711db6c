package systemtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// clientManifest is testdata/clients/<plugin>/requests.json: the requests
// a plugin makes, in its order, and what Clientele must make of them.
// Strings may hold {{name}} placeholders: {{token}} (the plugin's access
// token), {{customer_token}} (set by token_of) and names set by capture.
type clientManifest struct {
	Plugin string `json:"plugin"`
	Source string `json:"source"`
	// Company are the settings the shop owner gives the company before
	// the plugin sends anything (docs/clients.md).
	Company  clientCompany     `json:"company"`
	Headers  map[string]string `json:"headers"` // sent with every request
	Requests []clientRequest   `json:"requests"`
	Guests   []clientGuest     `json:"guests"`
}

// clientCompany are company settings, as `clientele company update`
// takes them; nil ones stay as they are.
type clientCompany struct {
	Timezone    *string `json:"timezone"`
	PhoneRegion *string `json:"phone_region"`
}

// clientRequest is one request. Without Status it is an upload: answered
// 200 {"response": "ok", "run_id"}, its run then checked. With Status it
// is a plain call answered with that status.
type clientRequest struct {
	Name   string `json:"name"`
	Ours   bool   `json:"ours"` // not sent by the plugin: added to test what it cannot
	Method string `json:"method"`
	Path   string `json:"path"`
	Body   string `json:"body"` // a file beside the manifest, sent as it is; none if ""
	Status int    `json:"status"`
	// Capture sets placeholders from the answer: name -> dotted path.
	Capture map[string]string `json:"capture"`
	// TokenOf sets {{customer_token}} to the token of the one entity found.
	TokenOf         *clientSelector     `json:"token_of"`
	Warnings        []clientWarning     `json:"warnings"`
	KnownRejections []clientRejection   `json:"known_rejections"`
	Expect          []clientExpectation `json:"expect"`
}

// clientSelector finds entities by retrieval filters.
type clientSelector struct {
	Entity string            `json:"entity"`
	Where  map[string]string `json:"where"`
}

// clientExpectation is what retrieval must show once the request is
// applied: Count entities (default 1) match Where, and the first has
// Fields with these values and none of Absent. Gap, when set, says why
// this is what Clientele does today but not what the plugin means
// (docs/clients.md, Known gaps).
type clientExpectation struct {
	clientSelector
	Count  *int           `json:"count"`
	Fields map[string]any `json:"fields"`
	Absent []string       `json:"absent"`
	Gap    string         `json:"gap"`
}

// clientWarning is an ignored field as the import run reports it.
type clientWarning struct {
	Field      string `json:"field"`
	Count      int    `json:"count"`
	FirstIndex int    `json:"first_index"`
}

// clientRejection is a rejection the run must report; Gap says why
// Clientele refuses what the plugin really sends (docs/clients.md). The
// corpus lists none today: every record the plugins send is imported.
type clientRejection struct {
	Index int    `json:"index"`
	Field string `json:"field"`
	Gap   string `json:"gap,omitempty"`
}

// clientGuest is a guest's email and the sale of the guest's order.
type clientGuest struct {
	Email string `json:"email"`
	Sale  string `json:"sale"`
}

func readClientManifest(t *testing.T, plugin string) clientManifest {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(clientsDir, plugin, "requests.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m clientManifest
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&m); err != nil {
		t.Fatalf("%s/requests.json: %v", plugin, err)
	}
	return m
}

// fill replaces the {{name}} placeholders of s.
func fill(s string, vars map[string]string) string {
	for k, v := range vars {
		s = strings.ReplaceAll(s, "{{"+k+"}}", v)
	}
	return s
}

// replay makes the request r with the plugin's headers and checks its
// outcome; failures are reported under name and the next request is
// still made.
func (e *env) replay(t *testing.T, name, dir string, headers map[string]string, r clientRequest, vars map[string]string) {
	t.Helper()
	if r.TokenOf != nil {
		found := e.retrieveAll(vars["token"], r.TokenOf.Entity, where(r.TokenOf.Where, vars)...).Items
		tok := ""
		if len(found) == 1 {
			tok, _ = found[0]["customer_token"].(string)
		}
		if tok == "" {
			t.Errorf("%s: no customer_token on the one %s matching %v: %v", name, r.TokenOf.Entity, r.TokenOf.Where, found)
			return
		}
		vars["customer_token"] = tok
	}
	opts := []option{}
	if r.Body != "" {
		body, err := os.ReadFile(filepath.Join(dir, r.Body))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, rawBody(fill(string(bytes.TrimRight(body, "\n")), vars)))
	}
	for k, v := range headers {
		opts = append(opts, withHeader(k, fill(v, vars)))
	}
	if r.Status == http.StatusNotFound {
		opts = append(opts, outsideContract("a real client's call of a path the service does not have"))
	}
	res := e.do(r.Method, r.Path, opts...)
	if r.Status != 0 {
		e.checkCall(t, name, r, res, vars)
		return
	}
	if res.status != http.StatusOK {
		t.Errorf("%s: status %d, want 200: %s", name, res.status, res.body)
		return
	}
	var up uploadAnswer
	res.decode(t, &up)
	if up.Response != "ok" || up.RunID == "" {
		t.Errorf("%s: answer %s, want {\"response\": \"ok\", \"run_id\": ...}", name, res.body)
		return
	}
	run, runRes := e.waitRun(vars["token"], up.RunID)
	if run.Import.State != "completed" {
		t.Errorf("%s: run %s", name, runRes.body)
		return
	}
	e.waitProjections()
	checkRun(t, name, r, run, runRes.body)
	for _, x := range r.Expect {
		e.checkExpectation(t, name, x, vars)
	}
}

// checkCall checks a plain call's status (and error body), and captures
// placeholders from its answer.
func (e *env) checkCall(t *testing.T, name string, r clientRequest, res response, vars map[string]string) {
	t.Helper()
	if res.status != r.Status {
		t.Errorf("%s: status %d, want %d: %s", name, res.status, r.Status, res.body)
		return
	}
	var answer map[string]any
	if err := json.Unmarshal(res.body, &answer); err != nil {
		t.Errorf("%s: answer is not JSON: %v\n%s", name, err, res.body)
		return
	}
	if r.Status != http.StatusOK {
		var b errorBody
		if json.Unmarshal(res.body, &b) != nil || b.Error.Code == "" || b.Error.Message == "" {
			t.Errorf("%s: error answer %s is not {\"error\": {\"code\", \"message\"}}", name, res.body)
		}
	}
	for k, path := range r.Capture {
		var v any = answer
		for _, seg := range strings.Split(path, ".") {
			m, _ := v.(map[string]any)
			v = m[seg]
		}
		s, ok := v.(string)
		if !ok || s == "" {
			t.Errorf("%s: no string at %s in %s", name, path, res.body)
		}
		vars[k] = s
	}
}

// checkRun compares the run's rejections with the known gaps and its
// warnings with the ignored fields expected.
func checkRun(t *testing.T, name string, r clientRequest, run importAnswer, raw []byte) {
	t.Helper()
	got := []clientRejection{}
	reasons := []string{}
	for _, x := range run.Import.Rejections {
		f := ""
		if x.Field != nil {
			f = *x.Field
		}
		got = append(got, clientRejection{Index: x.Index, Field: f})
		reasons = append(reasons, fmt.Sprintf("record %d, field %q: %s", x.Index, f, x.Reason))
	}
	want := []clientRejection{}
	for _, k := range r.KnownRejections {
		want = append(want, clientRejection{Index: k.Index, Field: k.Field})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s: rejections (-known gaps +got):\n%s\nreasons:\n  %s", name, diff, strings.Join(reasons, "\n  "))
	} else if len(got) > 0 {
		t.Logf("%s: known gaps, rejected as expected:\n  %s", name, strings.Join(reasons, "\n  "))
	}
	var w struct {
		Import struct {
			Warnings *[]clientWarning `json:"warnings"`
		} `json:"import"`
	}
	if err := json.Unmarshal(raw, &w); err != nil {
		t.Errorf("%s: run answer: %v", name, err)
		return
	}
	wantW := slices.Clone(r.Warnings)
	if wantW == nil {
		wantW = []clientWarning{}
	}
	if w.Import.Warnings == nil {
		if len(wantW) > 0 {
			t.Errorf("%s: the run answer has no warnings; want %+v", name, wantW)
		}
		return
	}
	gotW := slices.Clone(*w.Import.Warnings)
	byField := func(a, b clientWarning) int { return strings.Compare(a.Field, b.Field) }
	slices.SortFunc(gotW, byField)
	slices.SortFunc(wantW, byField)
	if diff := cmp.Diff(wantW, gotW); diff != "" {
		t.Errorf("%s: warnings (-want +got):\n%s", name, diff)
	}
}

// where is a selector's filters as query options.
func where(filters map[string]string, vars map[string]string) []option {
	opts := []option{}
	for k, v := range filters {
		opts = append(opts, withQuery(k, fill(v, vars)))
	}
	return opts
}

// checkExpectation retrieves the entities x selects and compares the
// first one's fields.
func (e *env) checkExpectation(t *testing.T, name string, x clientExpectation, vars map[string]string) {
	t.Helper()
	found := e.retrieveAll(vars["token"], x.Entity, where(x.Where, vars)...).Items
	count := 1
	if x.Count != nil {
		count = *x.Count
	}
	if len(found) != count {
		t.Errorf("%s: %d %s match %v, want %d: %v", name, len(found), x.Entity, x.Where, count, found)
		return
	}
	if count == 0 {
		return
	}
	got := found[0]
	for k, v := range x.Fields {
		want := filled(t, v, vars)
		if diff := cmp.Diff(want, got[k]); diff != "" {
			t.Errorf("%s: %s %v: field %s (-want +got):\n%s", name, x.Entity, x.Where, k, diff)
		}
	}
	for _, k := range x.Absent {
		if v, ok := got[k]; ok {
			t.Errorf("%s: %s %v: field %s is %v, want it absent", name, x.Entity, x.Where, k, v)
		}
	}
	if x.Gap != "" {
		t.Logf("%s: known gap, %s %v as expected: %s", name, x.Entity, x.Where, x.Gap)
	}
}

// filled is an expected value with its placeholders filled, in the types
// a retrieval answer decodes to.
func filled(t *testing.T, v any, vars map[string]string) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		return fill(s, vars)
	}
	var out any
	if err := json.Unmarshal([]byte(fill(string(b), vars)), &out); err != nil {
		t.Fatal(err)
	}
	return out
}
