package systemtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/big"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/shop"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/projections"
)

// hostileEntity is one entity of the corpus testdata/hostile: where it is
// uploaded, the field that finds a record in retrieval, the fields kept
// as sent, and the package whose fuzz seeds are fed in too.
type hostileEntity struct {
	name, key string
	asSent    []string
	pkg       string
	parse     func(company.Company) func([]byte) error
}

// hostileEntities are in upload order: products and shops, which the
// others name, first.
var hostileEntities = []hostileEntity{
	{"products", "external_id", []string{"title", "brand", "description", "category"}, "product",
		func(c company.Company) func([]byte) error {
			p := product.NewParser(c)
			return func(b []byte) error { _, err := p.Parse(b); return err }
		}},
	{"shops", "external_id", []string{"name", "city"}, "shop",
		func(c company.Company) func([]byte) error {
			p := shop.NewParser(c)
			return func(b []byte) error { _, err := p.Parse(b); return err }
		}},
	{"customers", "external_id", []string{"first_name", "last_name", "city"}, "customer",
		func(c company.Company) func([]byte) error {
			p := customer.NewParser(c)
			return func(b []byte) error { _, err := p.Parse(b); return err }
		}},
	{"events", "label", []string{"path", "reason", "sentiment_value"}, "activity",
		func(c company.Company) func([]byte) error {
			p := activity.NewParser(c)
			return func(b []byte) error { _, err := p.Parse(b); return err }
		}},
	{"sales", "sale_external_id", nil, "sale",
		func(c company.Company) func([]byte) error {
			p := sale.NewParser(c)
			return func(b []byte) error { _, err := p.Parse(b); return err }
		}},
}

// hostileRejection is a line of <entity>-rejected.jsonl: a record, and
// the field and words its rejection must have.
type hostileRejection struct {
	Field  string          `json:"field"`
	Reason string          `json:"reason"`
	Record json.RawMessage `json:"record"`
}

// TestHostileCorpusThroughEveryProjector uploads the corpus of extreme
// but legal records (numbers at PostgreSQL's limits, long and astral
// text, combining marks, RTL, company fields of every JSON type,
// datetimes at 0001-01-01 and 9999-12-31) with the refused ones beside
// them, through the real pipeline and every projector the service runs
// (datasync for every datatype included). Every accepted record must be
// retrievable with its values as sent, appear in its datasync feed, and
// no projector may stall or fail; every refused record must be its own
// rejection naming the field. The bytes are uploaded as the files hold
// them: re-encoding would turn a lone surrogate escape into U+FFFD.
// Unknown keys of any name and value are ignored, and the run's warnings
// name them only by names that look like field names.
func TestHostileCorpusThroughEveryProjector(t *testing.T) {
	e, token := storableEnv(t)
	feeds := map[string]string{}
	for _, ent := range hostileEntities {
		feeds[ent.name] = e.createDatasync(token, "hostile "+ent.name, map[string]any{"datatype": ent.name})["id"].(string)
	}
	accepted := map[string][]map[string]any{}
	for _, ent := range hostileEntities {
		good := readLines(t, filepath.Join("..", "testdata", "hostile", ent.name+".jsonl"))
		var bad []hostileRejection
		for _, line := range readLines(t, filepath.Join("..", "testdata", "hostile", ent.name+"-rejected.jsonl")) {
			var r hostileRejection
			if err := json.Unmarshal(line, &r); err != nil {
				t.Fatalf("%s: %v", ent.name, err)
			}
			bad = append(bad, r)
		}
		records := append([][]byte(nil), good...)
		for _, r := range bad {
			records = append(records, r.Record)
		}
		body := append(append([]byte("["), bytes.Join(records, []byte(",\n"))...), ']')
		run := e.mustUpload(token, "/api/"+ent.name+"/upload/", rawBody(string(body)))
		a, _ := e.waitRun(token, run)
		if a.Import.State != "completed" || a.Import.Accepted != len(good) || a.Import.Rejected != len(bad) {
			t.Errorf("%s: run %s, %d accepted, %d rejected, want %d and %d: %+v", ent.name, a.Import.State,
				a.Import.Accepted, a.Import.Rejected, len(good), len(bad), a.Import.Rejections)
		}
		// Unknown keys are ignored, whatever they hold, and listed by a
		// name that looks like a field name, never by one that may be data.
		for _, w := range a.Import.Warnings {
			if w.Field != values.UnnamedField && values.SafeName(w.Field) != w.Field || w.Count < 1 {
				t.Errorf("%s: warning %+v", ent.name, w)
			}
		}
		got := map[int]string{}
		for _, rj := range a.Import.Rejections {
			field := ""
			if rj.Field != nil {
				field = *rj.Field
			}
			got[rj.Index] = field + ": " + rj.Reason
			if rj.Index < len(good) {
				t.Errorf("%s: the legal record %d is refused: %s", ent.name, rj.Index, got[rj.Index])
			}
		}
		for i, r := range bad {
			want := r.Field + ": "
			if g := got[len(good)+i]; !strings.HasPrefix(g, want) || !strings.Contains(g, r.Reason) {
				t.Errorf("%s: refused record %d: rejection %q, want the field %q and a reason saying %q", ent.name, i, g, r.Field, r.Reason)
			}
		}
		for _, line := range good {
			accepted[ent.name] = append(accepted[ent.name], decodeExact(t, line).(map[string]any))
		}
	}
	e.waitForEveryProjector()

	for _, ent := range hostileEntities {
		docs := map[string]map[string]any{}
		for _, d := range e.retrieveExact(token, ent.name) {
			if id, ok := d[ent.key].(string); ok {
				docs[id] = d
			}
		}
		synced := map[string]bool{}
		for _, m := range e.feedExact(token, feeds[ent.name]) {
			if id, ok := m[ent.key].(string); ok {
				synced[id] = true
			}
		}
		for _, rec := range accepted[ent.name] {
			id := rec[ent.key].(string)
			doc := docs[id]
			if doc == nil {
				t.Errorf("%s %s is not retrievable", ent.name, id)
				continue
			}
			if !synced[id] {
				t.Errorf("%s %s is not in its datasync feed", ent.name, id)
			}
			for k, v := range rec {
				stored := k
				switch {
				case strings.HasPrefix(strings.ToUpper(k), e.acme.ShortName+"__"):
					// Stored with the company's short name as configured.
					stored = e.acme.ShortName + k[len(e.acme.ShortName):]
				case !slices.Contains(ent.asSent, k):
					continue
				}
				if stored := doc[stored]; !sameJSON(v, stored) {
					t.Errorf("%s %s: %s retrieved is not as sent: %.200q, want %.200q", ent.name, id, k, fmt.Sprint(stored), fmt.Sprint(v))
				}
			}
		}
	}
	e.feedFuzzSeeds(token)
}

// waitForEveryProjector waits until every projector has applied the whole
// log, and fails on a projector or an import that logged a failure (one
// retrying a commit it cannot apply stays behind, and so times out).
func (e *env) waitForEveryProjector() {
	e.t.Helper()
	e.waitProjections()
	status, err := e.runtime.Status(context.Background())
	if err != nil {
		e.t.Fatal(err)
	}
	for _, s := range status {
		if s.Kind == projections.KindAsync && s.Lag != 0 {
			e.t.Errorf("projector %s lags by %d events", s.Name, s.Lag)
		}
	}
	for _, line := range strings.Split(e.logs.String(), "\n") {
		if strings.Contains(line, `"level":"ERROR"`) {
			e.t.Errorf("logged: %.500s", line)
		}
	}
}

// feedExact returns the data of every message of a datasync datatarget,
// keeping every digit of numbers.
func (e *env) feedExact(token, id string) []map[string]any {
	e.t.Helper()
	res := e.do(http.MethodGet, "/api/datatargets/"+id+"/retrieve/", bearer(token), withQuery("limit", "10000"))
	res.wantStatus(e.t, http.StatusOK)
	var page struct {
		Messages []struct {
			Data map[string]any `json:"data"`
		} `json:"messages"`
	}
	d := json.NewDecoder(bytes.NewReader(res.body))
	d.UseNumber()
	if err := d.Decode(&page); err != nil {
		e.t.Fatalf("the feed is not JSON: %v", err)
	}
	var out []map[string]any
	for _, m := range page.Messages {
		out = append(out, m.Data)
	}
	return out
}

// feedFuzzSeeds uploads the seed corpora of the entity parsers' fuzz
// targets (<package>/testdata/fuzz/<target>/*) that the parser accepts,
// and requires the runs to complete and every projector to apply them.
func (e *env) feedFuzzSeeds(token string) {
	e.t.Helper()
	fed := 0
	for _, ent := range hostileEntities {
		files, _ := filepath.Glob(filepath.Join("..", "domain", ent.pkg, "testdata", "fuzz", "*", "*"))
		parse := ent.parse(e.acme)
		var records [][]byte
		for _, f := range files {
			if fi, err := os.Stat(f); err != nil || !fi.Mode().IsRegular() {
				continue
			}
			for _, seed := range fuzzSeeds(e.t, f) {
				if bytes.HasPrefix(bytes.TrimSpace(seed), []byte("{")) && parse(seed) == nil {
					records = append(records, seed)
				}
			}
		}
		if len(records) == 0 {
			continue
		}
		body := append(append([]byte("["), bytes.Join(records, []byte(",\n"))...), ']')
		run := e.mustUpload(token, "/api/"+ent.name+"/upload/", rawBody(string(body)))
		if a, res := e.waitRun(token, run); a.Import.State != "completed" {
			e.t.Errorf("%s fuzz seeds: %s", ent.name, res.body)
		}
		fed += len(records)
	}
	if fed == 0 {
		e.t.Log("no fuzz seed the entity parsers accept (domain/<entity>/testdata/fuzz) to feed in")
		return
	}
	e.t.Logf("fed %d accepted fuzz seeds", fed)
	e.waitForEveryProjector()
}

// fuzzSeeds reads the []byte values of a corpus file of go test fuzz v1.
func fuzzSeeds(t *testing.T, path string) [][]byte {
	t.Helper()
	var out [][]byte
	for i, line := range readLines(t, path) {
		s := string(line)
		if i == 0 || !strings.HasPrefix(s, "[]byte(") || !strings.HasSuffix(s, ")") {
			continue
		}
		if v, err := strconv.Unquote(s[len("[]byte(") : len(s)-1]); err == nil {
			out = append(out, []byte(v))
		}
	}
	return out
}

// readLines returns the non-empty lines of a file.
func readLines(t *testing.T, path string) [][]byte {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 4<<20)
	var out [][]byte
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			out = append(out, append([]byte(nil), line...))
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// decodeExact decodes JSON keeping numbers as text.
func decodeExact(t *testing.T, b []byte) any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

// sameJSON reports whether two decoded values are equal, numbers by
// value (1e5 is 100000, -0 is 0) as PostgreSQL keeps them.
func sameJSON(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		bn, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, okA := new(big.Rat).SetString(string(a))
		y, okB := new(big.Rat).SetString(string(bn))
		return okA && okB && x.Cmp(y) == 0
	case []any:
		bl, ok := b.([]any)
		if !ok || len(a) != len(bl) {
			return false
		}
		for i := range a {
			if !sameJSON(a[i], bl[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		bm, ok := b.(map[string]any)
		if !ok || len(a) != len(bm) {
			return false
		}
		for k, v := range a {
			if !sameJSON(v, bm[k]) {
				return false
			}
		}
		return true
	}
	return a == b
}
