package systemtest_test

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/api"
	"github.com/clientele/clientele/app"
	retrievalproj "github.com/clientele/clientele/projections/retrieval"
)

// The TestCustomerRule* tests check every customer rule of the interface
// and of docs/customers.md through the HTTP API only: records are uploaded
// through POST /api/customers/upload/, the import worker applies them, and
// what they did is read back through GET /api/imports/<run_id>/,
// GET /api/data/customers/ and GET /api/customers/<id>/history/.
//
// The cases of one test share one server: every case uses identifiers of
// its own, and the records of all cases are uploaded together, round by
// round (see ruleSuite.run), so that a test costs a few uploads whatever
// its number of cases.

// ruleSuite is a server with the real customers Importer, the import
// worker and the customers projection running.
type ruleSuite struct {
	*env
	admin   string // a token of acme's admin
	adminID string // its id
	// runs are the run ids of the last ruleSuite.run, round by round.
	runs []string
}

func newRuleSuite(t *testing.T) *ruleSuite {
	t.Helper()
	// Tests poll runs and retrieve much: no rate limit to stumble on.
	e := newEnv(t, func(c *api.Config, _ *app.Application) { c.RateLimit = math.Inf(1) })
	e.runImports()
	e.runProjections(retrievalproj.NewCustomers(e.keys))
	token, id := e.tokenWithID(e.admin, acmeHost)
	return &ruleSuite{env: e, admin: token, adminID: id}
}

// tokenWithID creates a token for u with its password and returns the
// token and its id.
func (e *env) tokenWithID(u user, h string) (token, id string) {
	e.t.Helper()
	res := e.do(http.MethodPost, "/api/access-tokens/", host(h), basic(u.Email, password))
	res.wantStatus(e.t, http.StatusOK)
	var a tokenAnswer
	res.decode(e.t, &a)
	return a.AccessToken.Token, a.AccessToken.ID
}

// ruleRec is one record of a case and what the import must make of it.
type ruleRec struct {
	// body is a JSON object; in a CSV upload an object of strings, one
	// row ("" is an empty cell).
	body   string
	reject bool
	field  string // the rejection's field; "" when it names none
	reason string // a part of the rejection's reason; "" for any
}

// okRec is a record that must be accepted.
func okRec(body string) ruleRec { return ruleRec{body: body} }

// badRec is a record that must be rejected, naming field.
func badRec(field, body string) ruleRec { return ruleRec{body: body, reject: true, field: field} }

// badRecFor is a record that must be rejected, naming field, with a
// reason containing reason.
func badRecFor(field, reason, body string) ruleRec {
	return ruleRec{body: body, reject: true, field: field, reason: reason}
}

// ruleCase is one rule: records uploaded round by round, then a check of
// what they made.
type ruleCase struct {
	name string
	// rounds[i] are the case's records of upload i. The records of every
	// case for round i are uploaded together, in case order.
	rounds [][]ruleRec
	// check runs after the last round, with the projection caught up.
	check func(t *testing.T, s *ruleSuite)
}

// oneByOne makes a round of each record.
func oneByOne(recs ...ruleRec) [][]ruleRec {
	out := make([][]ruleRec, len(recs))
	for i, r := range recs {
		out[i] = []ruleRec{r}
	}
	return out
}

// ruleVia is how a test's records are uploaded: to which company (host),
// with which token, as JSON or CSV.
type ruleVia struct {
	host, token string
	csv         bool
}

// acmeJSON uploads as acme's admin, in JSON.
func (s *ruleSuite) acmeJSON() ruleVia { return ruleVia{host: acmeHost, token: s.admin} }

// run uploads the cases' records round by round, waits for each run to
// complete, checks each record was accepted or rejected (with the field
// and reason) as its case says, waits for the projection, then runs each
// case's check as a subtest. JSON rounds alternate between a bare list and
// {"customers": [...]}; CSV rounds between "," and ";" as the delimiter.
func (s *ruleSuite) run(t *testing.T, via ruleVia, cases []ruleCase) {
	t.Helper()
	problems := map[string][]string{}
	s.runs = nil
	for round := 0; ; round++ {
		type owned struct {
			name string
			rec  ruleRec
		}
		var recs []owned
		for _, c := range cases {
			if round < len(c.rounds) {
				for _, r := range c.rounds[round] {
					recs = append(recs, owned{c.name, r})
				}
			}
		}
		if len(recs) == 0 {
			break
		}
		bodies := make([]string, len(recs))
		for i, r := range recs {
			bodies[i] = r.rec.body
		}
		run, rejections := s.upload(t, via, round, bodies)
		s.runs = append(s.runs, run)
		for i, r := range recs {
			rj, rejected := rejections[i]
			switch {
			case r.rec.reject && !rejected:
				problems[r.name] = append(problems[r.name], fmt.Sprintf("upload %d: %s accepted, want it rejected naming %q", round+1, r.rec.body, r.rec.field))
			case !r.rec.reject && rejected:
				problems[r.name] = append(problems[r.name], fmt.Sprintf("upload %d: %s rejected (%s), want it accepted", round+1, r.rec.body, rj))
			case rejected && (rj.field != r.rec.field || !strings.Contains(rj.reason, r.rec.reason)):
				problems[r.name] = append(problems[r.name], fmt.Sprintf("upload %d: %s rejected (%s), want field %q and a reason with %q", round+1, r.rec.body, rj, r.rec.field, r.rec.reason))
			}
		}
	}
	s.waitProjections()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			for _, p := range problems[c.name] {
				t.Error(p)
			}
			if c.check != nil {
				c.check(t, s)
			}
		})
	}
}

// ruleRejection is a rejection as GET /api/imports/<run_id>/ reports it.
type ruleRejection struct{ field, reason string }

func (r ruleRejection) String() string { return fmt.Sprintf("field %q: %s", r.field, r.reason) }

// upload uploads the records (JSON objects) as via says and waits for the
// run to complete; it returns the run id and the rejections by index. The
// run must have received every record, and accounted for each.
func (s *ruleSuite) upload(t *testing.T, via ruleVia, round int, bodies []string) (string, map[int]ruleRejection) {
	t.Helper()
	var opts []option
	switch {
	case via.csv:
		comma := ','
		if round%2 == 1 {
			comma = ';'
		}
		opts = append(opts, withHeader("Content-Type", "text/csv"), rawBody(csvRows(t, comma, bodies)))
	case round%2 == 0:
		opts = append(opts, rawBody("["+strings.Join(bodies, ",\n")+"]"))
	default:
		opts = append(opts, rawBody(`{"customers": [`+strings.Join(bodies, ",\n")+"]}"))
	}
	run := s.mustUpload(via.token, "/api/customers/upload/", append(opts, host(via.host))...)
	a, res := s.waitRun(via.token, run, host(via.host), withQuery("limit", "10000"))
	if a.Import.State != "completed" || a.Import.Received != len(bodies) || a.Import.Accepted+a.Import.Rejected != len(bodies) ||
		len(a.Import.Rejections) != a.Import.Rejected || a.Import.NextURL != "" {
		t.Fatalf("upload %d of %d records: %s", round+1, len(bodies), res.body)
	}
	rejections := map[int]ruleRejection{}
	for _, r := range a.Import.Rejections {
		rj := ruleRejection{reason: r.Reason}
		if r.Field != nil {
			rj.field = *r.Field
		}
		rejections[r.Index] = rj
	}
	return run, rejections
}

// csvRows makes a CSV body of records given as JSON objects of strings:
// the header is every key of any record, sorted; a record without a key
// has an empty cell there.
func csvRows(t *testing.T, comma rune, bodies []string) string {
	t.Helper()
	rows := make([]map[string]string, len(bodies))
	columns := map[string]bool{}
	for i, b := range bodies {
		if err := json.Unmarshal([]byte(b), &rows[i]); err != nil {
			t.Fatalf("CSV record %s: %v", b, err)
		}
		for k := range rows[i] {
			columns[k] = true
		}
	}
	header := slices.Sorted(maps.Keys(columns))
	var buf bytes.Buffer
	w := csv.NewWriter(&buf)
	w.Comma = comma
	_ = w.Write(header)
	for _, r := range rows {
		line := make([]string, len(header))
		for i, k := range header {
			line[i] = r[k]
		}
		_ = w.Write(line)
	}
	w.Flush()
	return buf.String()
}

// find returns acme's customers matching the filters ("field=value").
func (s *ruleSuite) find(t *testing.T, filters ...string) []map[string]any {
	t.Helper()
	return s.findAt(t, acmeHost, s.admin, filters...)
}

// findAt returns the customers that token reads at host h, matching the
// filters ("field=value").
func (s *ruleSuite) findAt(t *testing.T, h, token string, filters ...string) []map[string]any {
	t.Helper()
	opts := []option{bearer(token), host(h), withQuery("limit", "10000")}
	for _, f := range filters {
		k, v, _ := strings.Cut(f, "=")
		opts = append(opts, withQuery(k, v))
	}
	res := s.do(http.MethodGet, "/api/data/customers/", opts...)
	if res.status != http.StatusOK {
		t.Fatalf("retrieve %v: %d %s", filters, res.status, res.body)
	}
	var r retrieved
	if err := json.Unmarshal(res.body, &r); err != nil {
		t.Fatalf("retrieve %v: %v", filters, err)
	}
	if r.NextURL != "" {
		t.Fatalf("retrieve %v: more than one page", filters)
	}
	return r.Customers
}

// one returns the only customer of acme matching the filters.
func (s *ruleSuite) one(t *testing.T, filters ...string) map[string]any {
	t.Helper()
	got := s.find(t, filters...)
	if len(got) != 1 {
		t.Fatalf("%v: %d customers, want 1: %v", filters, len(got), got)
	}
	return got[0]
}

// ruleHas fails unless c has every field of want (a JSON object) with its
// value.
func ruleHas(t *testing.T, c map[string]any, want string) {
	t.Helper()
	var w map[string]any
	if err := json.Unmarshal([]byte(want), &w); err != nil {
		t.Fatalf("want %s: %v", want, err)
	}
	for _, k := range slices.Sorted(maps.Keys(w)) {
		if got, ok := c[k]; !ok || !cmp.Equal(w[k], got) {
			t.Errorf("%s = %#v, want %#v (customer %v)", k, got, w[k], c)
		}
	}
}

// ruleLacks fails if c has any of the fields.
func ruleLacks(t *testing.T, c map[string]any, fields ...string) {
	t.Helper()
	for _, f := range fields {
		if v, ok := c[f]; ok {
			t.Errorf("%s = %#v, want it absent", f, v)
		}
	}
}

// expect is a check: the one customer matching filter has the fields of
// want (a JSON object).
func expect(filter, want string) func(*testing.T, *ruleSuite) {
	return func(t *testing.T, s *ruleSuite) {
		t.Helper()
		ruleHas(t, s.one(t, filter), want)
	}
}

// noneFound is a check: no customer matches any of the filters.
func noneFound(filters ...string) func(*testing.T, *ruleSuite) {
	return func(t *testing.T, s *ruleSuite) {
		t.Helper()
		for _, f := range filters {
			if got := s.find(t, f); len(got) != 0 {
				t.Errorf("%s: %v, want none", f, got)
			}
		}
	}
}

// ruleHistory is the answer of GET /api/customers/<id>/history/.
type ruleHistory struct {
	CustomerID  string `json:"customer_id"`
	IsForgotten bool   `json:"is_forgotten"`
	IsDeleted   bool   `json:"is_deleted"`
	Events      []struct {
		Version  int      `json:"version"`
		Type     string   `json:"type"`
		RunID    string   `json:"run_id"`
		Actor    string   `json:"actor"`
		Source   string   `json:"source"`
		Fields   []string `json:"fields"`
		Redacted bool     `json:"redacted"`
		Changes  *struct {
			Set    map[string]any      `json:"set"`
			Unset  []string            `json:"unset"`
			Add    map[string][]string `json:"add"`
			Remove map[string][]string `json:"remove"`
		} `json:"changes"`
	} `json:"events"`
}

// history returns acme's customer id's history, and the answer's body.
func (s *ruleSuite) history(t *testing.T, id string) (ruleHistory, string) {
	t.Helper()
	res := s.do(http.MethodGet, "/api/customers/"+id+"/history/", bearer(s.admin))
	if res.status != http.StatusOK {
		t.Fatalf("history of %s: %d %s", id, res.status, res.body)
	}
	var h ruleHistory
	if err := json.Unmarshal(res.body, &h); err != nil {
		t.Fatalf("history of %s: %v", id, err)
	}
	return h, string(res.body)
}

// idOf returns the id of a retrieved customer.
func idOf(t *testing.T, c map[string]any) string {
	t.Helper()
	id, _ := c["id"].(string)
	if id == "" {
		t.Fatalf("customer without id: %v", c)
	}
	return id
}
