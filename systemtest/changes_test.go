package systemtest_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/customer"
)

// The contract check reads an NDJSON answer as the array of its lines,
// which is how docs/openapi.yaml describes it.
func init() {
	openapi3filter.RegisterBodyDecoder("application/x-ndjson",
		func(body io.Reader, _ http.Header, _ *openapi3.SchemaRef, _ openapi3filter.EncodingFn) (any, error) {
			lines := []any{}
			sc := bufio.NewScanner(body)
			sc.Buffer(nil, 16<<20)
			for sc.Scan() {
				var v any
				if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
					return nil, err
				}
				lines = append(lines, v)
			}
			return lines, sc.Err()
		})
}

// change is one change as the feed answers it.
type change struct {
	Position    string          `json:"position"`
	CommittedAt time.Time       `json:"committed_at"`
	Stream      string          `json:"stream"`
	Type        string          `json:"type"`
	Actor       string          `json:"actor"`
	Source      string          `json:"source"`
	RunID       string          `json:"run_id"`
	Data        json.RawMessage `json:"data"`
}

type changesPage struct {
	Changes []change `json:"changes"`
	NextURL string   `json:"next_url"`
}

// changes reads every page of GET /api/changes/ with the query, following
// next_url.
func (e *env) changes(token string, query url.Values) []change {
	e.t.Helper()
	var all []change
	path := "/api/changes/"
	for {
		var opts []option
		for k, vs := range query {
			for _, v := range vs {
				opts = append(opts, func(r *request) { r.query.Add(k, v) })
			}
		}
		res := e.do(http.MethodGet, path, append(opts, bearer(token))...)
		res.wantStatus(e.t, http.StatusOK)
		var page changesPage
		res.decode(e.t, &page)
		all = append(all, page.Changes...)
		if page.NextURL == "" {
			return all
		}
		u, err := url.Parse(page.NextURL)
		if err != nil {
			e.t.Fatal(err)
		}
		path, query = u.Path, u.Query()
	}
}

func TestChanges(t *testing.T) {
	e := withCustomers(t)
	admin := e.userToken(e.admin, acmeHost)
	e.importCustomers(e.acme, `{"external_id": "C-1", "first_name": "Ann", "email": "ann@example.com"}`,
		`{"external_id": "F-1", "first_name": "Frida", "last_name": "Forgetmenot"}`)
	e.importCustomers(e.acme, `{"external_id": "C-1", "last_name": "Anderson"}`)
	e.importCustomers(e.globex, `{"external_id": "G-1", "last_name": "Globexer"}`)
	var ann, frida string
	for _, c := range e.retrieve(admin).Customers {
		if c["first_name"] == "Ann" {
			ann = c["id"].(string)
		} else {
			frida = c["id"].(string)
		}
	}
	e.importCustomers(e.acme, `{"external_id": "F-1", "is_forgotten": true}`)

	all := e.changes(admin, nil)
	for i, c := range all {
		if strings.Contains(c.Stream, e.globex.ID) || strings.Contains(string(c.Data), "Globexer") {
			t.Errorf("another company's change: %+v", c)
		}
		if i > 0 && !e.positionAfter(c.Position, all[i-1].Position) {
			t.Errorf("change %d at %s, not after %s", i, c.Position, all[i-1].Position)
		}
	}
	annStream, fridaStream := customer.Stream(e.acme.ID, ann), customer.Stream(e.acme.ID, frida)
	var annEvents, fridaEvents []change
	users := 0
	for _, c := range all {
		switch c.Stream {
		case annStream:
			annEvents = append(annEvents, c)
		case fridaStream:
			fridaEvents = append(fridaEvents, c)
		}
		if c.Type == "UserCreated" {
			users++
			if !strings.Contains(string(c.Data), `"password_hash":"[redacted]"`) || strings.Contains(string(c.Data), "argon2") {
				t.Errorf("a user's credentials are shown: %s", c.Data)
			}
		}
	}
	if users != 3 {
		t.Errorf("%d UserCreated changes, want acme's 3", users)
	}
	// Ann's data opened, with who sent it.
	if len(annEvents) != 2 {
		t.Fatalf("Ann's changes: %+v", annEvents)
	}
	var opened struct {
		CustomerID string   `json:"customer_id"`
		Fields     []string `json:"fields"`
		Opened     struct {
			Set map[string]any `json:"set"`
		} `json:"opened"`
		Sealed any `json:"sealed"`
	}
	if err := json.Unmarshal(annEvents[0].Data, &opened); err != nil {
		t.Fatal(err)
	}
	if opened.CustomerID != ann || opened.Opened.Set["first_name"] != "Ann" || opened.Sealed != nil {
		t.Errorf("Ann's first change: %s", annEvents[0].Data)
	}
	if c := annEvents[1]; c.Type != customer.TypeUpserted || c.Actor != "tokens/tok-1" || c.Source != "api" || c.RunID != "run-1" ||
		!strings.Contains(string(c.Data), "Anderson") {
		t.Errorf("Ann's second change: %+v", c)
	}
	// Frida's: null, every one, the forgetting included.
	if len(fridaEvents) != 2 {
		t.Fatalf("Frida's changes: %+v", fridaEvents)
	}
	for _, c := range fridaEvents {
		if string(c.Data) != "null" {
			t.Errorf("a forgotten customer's change has data: %+v", c)
		}
	}

	// Pages of two are the same changes; filters keep what they say.
	if diff := cmp.Diff(all, e.changes(admin, url.Values{"limit": {"2"}})); diff != "" {
		t.Errorf("pages of two (-whole +paged):\n%s", diff)
	}
	if got := e.changes(admin, url.Values{"stream": {annStream}}); !cmp.Equal(got, annEvents) {
		t.Errorf("stream filter: %+v", got)
	}
	upserts := e.changes(admin, url.Values{"type": {customer.TypeUpserted, customer.TypeForgotten}})
	if len(upserts) != 4 {
		t.Errorf("type filter: %d changes, want 4", len(upserts))
	}
	since := annEvents[1].CommittedAt.Format(time.RFC3339Nano)
	if got := e.changes(admin, url.Values{"since": {since}, "stream": {annStream}}); !cmp.Equal(got, annEvents[1:]) {
		t.Errorf("since: %+v", got)
	}
	if got := e.changes(admin, url.Values{"until": {annEvents[0].CommittedAt.Format(time.RFC3339Nano)}, "stream": {annStream}}); !cmp.Equal(got, annEvents[:1]) {
		t.Errorf("until: %+v", got)
	}
	if got := e.changes(admin, url.Values{"from": {annEvents[0].Position}, "stream": {annStream}}); !cmp.Equal(got, annEvents[1:]) {
		t.Errorf("from: %+v", got)
	}

	// NDJSON: the same changes, one a line.
	res := e.do(http.MethodGet, "/api/changes/", bearer(admin), withHeader("Accept", "application/x-ndjson"))
	res.wantStatus(t, http.StatusOK)
	if ct := res.header.Get("Content-Type"); ct != "application/x-ndjson" {
		t.Errorf("Content-Type %q", ct)
	}
	var lines []change
	for _, l := range bytes.Split(bytes.TrimSuffix(res.body, []byte("\n")), []byte("\n")) {
		var c change
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatalf("line %q: %v", l, err)
		}
		lines = append(lines, c)
	}
	if diff := cmp.Diff(all, lines); diff != "" {
		t.Errorf("NDJSON (-JSON +NDJSON):\n%s", diff)
	}

	// Admins only; unreadable parameters are 400.
	staff := e.userToken(e.staff, acmeHost)
	e.do(http.MethodGet, "/api/changes/", bearer(staff)).wantError(t, http.StatusForbidden, "forbidden")
	e.do(http.MethodGet, "/api/changes/", bearer(staff), withHeader("Accept", "application/x-ndjson")).wantError(t, http.StatusForbidden, "forbidden")
	for _, q := range []url.Values{{"from": {"12"}}, {"since": {"soon"}}, {"limit": {"0"}}, {"strem": {annStream}}} {
		e.do(http.MethodGet, "/api/changes/?"+q.Encode(), bearer(admin)).wantError(t, http.StatusBadRequest, "invalid_request")
	}
}

// positionAfter reports whether the position a comes after b.
func (e *env) positionAfter(a, b string) bool {
	parse := func(s string) []int64 {
		var tx, g int64
		if _, err := fmt.Sscanf(s, "%d:%d", &tx, &g); err != nil {
			e.t.Fatalf("position %q: %v", s, err)
		}
		return []int64{tx, g}
	}
	return slices.Compare(parse(a), parse(b)) > 0
}

// TestChangesAcrossPages reads a log of several of the feed's batches
// (readmodels' changesBatch, 1,000 events, whose customers' keys are
// loaded together) and of the store's FETCHes: whole, in pages of the
// API that stop within a batch (the next resumes from the position), and
// as NDJSON; every change once, in order, its personal data opened with
// its own customer's key, a customer met again batches later (its key
// kept from the first) included.
func TestChangesAcrossPages(t *testing.T) {
	e := newSerialEnv(t)
	admin := e.userToken(e.admin, acmeHost)
	const first, again = 5000, 10
	const n = first + again
	for c := 0; c < first; c += 1000 {
		recs := make([]customerRecord, 0, 1000)
		for i := c; i < c+1000; i++ {
			recs = append(recs, customerRecord{id: fmt.Sprintf("%032x", i+1), set: permissions(map[string]any{
				"email": fmt.Sprintf("c%d@example.com", i)})})
		}
		e.appendCustomers(e.acme, recs...)
	}
	recs := make([]customerRecord, 0, again)
	for i := range again {
		recs = append(recs, customerRecord{id: fmt.Sprintf("%032x", i+1), set: permissions(map[string]any{
			"email": fmt.Sprintf("c%d@example.com", first+i)})})
	}
	e.appendCustomers(e.acme, recs...)
	upserts := func(all []change) []change {
		var out []change
		for _, c := range all {
			if c.Type == customer.TypeUpserted {
				out = append(out, c)
			}
		}
		return out
	}
	// The log's head moves past a commit once no transaction that began
	// before it is open (a projector's, say): wait until it has them all.
	var whole []change
	for deadline := time.Now().Add(30 * time.Second); ; {
		if whole = upserts(e.changes(admin, url.Values{"limit": {"10000"}})); len(whole) >= n || time.Now().After(deadline) {
			break
		}
	}
	if len(whole) != n {
		t.Fatalf("%d upserts, want %d", len(whole), n)
	}
	for i, c := range whole {
		if i > 0 && !e.positionAfter(c.Position, whole[i-1].Position) {
			t.Fatalf("change %d at %s, not after %s", i, c.Position, whole[i-1].Position)
		}
		if want := fmt.Sprintf(`"c%d@example.com"`, i); !bytes.Contains(c.Data, []byte(want)) {
			t.Fatalf("change %d: %s lacks %s", i, c.Data, want)
		}
	}
	// reflect.DeepEqual first: cmp.Diff aligns 5,000 changes for a diff
	// even when they are equal, seconds under -race.
	if paged := upserts(e.changes(admin, url.Values{"limit": {"1500"}})); !reflect.DeepEqual(whole, paged) {
		t.Errorf("pages of 1,500 (-whole +paged):\n%s", cmp.Diff(whole, paged))
	}
	res := e.do(http.MethodGet, "/api/changes/", bearer(admin), withHeader("Accept", "application/x-ndjson"))
	res.wantStatus(t, http.StatusOK)
	var lines []change
	for _, l := range bytes.Split(bytes.TrimSpace(res.body), []byte("\n")) {
		var c change
		if err := json.Unmarshal(l, &c); err != nil {
			t.Fatal(err)
		}
		lines = append(lines, c)
	}
	if streamed := upserts(lines); !reflect.DeepEqual(whole, streamed) {
		t.Errorf("NDJSON (-whole +streamed):\n%s", cmp.Diff(whole, streamed))
	}
}
