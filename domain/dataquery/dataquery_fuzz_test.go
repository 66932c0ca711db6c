package dataquery_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/dataquery"
	"github.com/clientele/clientele/domain/fuzzcheck"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
)

var fieldName = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// FuzzParse checks data-query bodies: a refusal is a 400 or a 422; an
// accepted query names a datatype, matches on field names with a scalar
// the read models' jsonb can hold (or presence), updates something other
// than the identifiers (events: only is_deleted true), and is its own
// normal form: written back as a body, it parses to the same query. The
// import record it makes of a matched document encodes to valid JSON.
func FuzzParse(f *testing.F) {
	for _, s := range []string{
		`{"datatype": "Events", "match": {"type": "BROWSE", "label.exists": false, "sentiment_value": 5, "path": null}, "update": {"is_deleted": true}}`,
		`{"datatype": "customers", "match": {"city": "Espoo", "tags": "vip", "n": 1e400}, "update": {"city": "Turku", "tags.add": ["x"], "ACME__n": 1.50}}`,
		`{"datatype": "products", "match": {"price.exists": true}, "update": {"visible": false}}`,
		`{"datatype": "sales", "match": {"sale_state": "NEW", "sale_state.exists": true}, "update": {"sale_state": "COMPLETE"}}`,
		`{"datatype": "shops", "match": {"name": "\ud800"}, "update": {"name": "\u0000"}}`,
		`{"datatype": "customers", "match": {"city": "Espoo"}, "update": {"email": "a@x.com"}}`, `{"datatype": "orders"}`, `{`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		q, err := dataquery.Parse(body)
		if err != nil {
			var de *domain.Error
			if !errors.As(err, &de) || de.Code != domain.Invalid && (de.Code != domain.Validation || len(de.Details) == 0) {
				t.Fatalf("refused with %v, want invalid_request, or validation_error with details", err)
			}
			return
		}
		checkQuery(t, q)
		again, err := dataquery.Parse(fuzzcheck.JSON(t, "normal form", normalForm(q)))
		if err != nil {
			t.Fatalf("the normal form of %s is refused: %v", body, err)
		}
		if diff := cmp.Diff(distinct(q), distinct(again), sameJSON); diff != "" {
			t.Fatalf("the normal form of %s parses to another query (-first +again):\n%s", body, diff)
		}
	})
}

// checkQuery checks what an accepted query holds.
func checkQuery(t *testing.T, q dataquery.Query) {
	t.Helper()
	ids := map[importing.Entity]string{importing.Customers: "external_id", importing.Events: "id",
		importing.Products: "external_id", importing.Shops: "external_id", importing.Sales: "sale_external_id"}
	id, ok := ids[q.Datatype]
	if !ok || len(q.Match) == 0 || len(q.Update) == 0 {
		t.Fatalf("accepted a query without a datatype, a match or an update: %+v", q)
	}
	for _, c := range q.Match {
		if !fieldName.MatchString(c.Field) || (c.Exists == nil) == (c.Value == nil) {
			t.Fatalf("accepted the condition %+v", c)
		}
		if c.Value == nil {
			continue
		}
		v, err := decode(c.Value)
		if err != nil || v == nil {
			t.Fatalf("accepted the match value %q, not a JSON scalar", c.Value)
		}
		switch v.(type) {
		case map[string]any, []any:
			t.Fatalf("accepted the match value %q, not a JSON scalar", c.Value)
		}
		if _, reason := values.Storable(c.Value); reason != "" {
			t.Fatalf("accepted the match value %q, which jsonb cannot hold: %s", c.Value, reason)
		}
	}
	fuzzcheck.JSON(t, "update", q.Update)
	if _, ok := q.Update[id]; ok {
		t.Fatalf("accepted an update of the identifier %s", id)
	}
	if q.Datatype == importing.Events && (len(q.Update) != 1 || q.Update["is_deleted"] != true) {
		t.Fatalf("accepted the update %v of events", q.Update)
	}
	rec, ok := q.Record(map[string]any{id: "x", "other": "y"})
	if !ok || rec[id] != "x" || len(rec) != len(q.Update)+1 {
		t.Fatalf("the record of a matched document is %v %v", rec, ok)
	}
	fuzzcheck.JSON(t, "record", rec)
}

// normalForm writes a query back as a request body.
func normalForm(q dataquery.Query) map[string]any {
	match := map[string]any{}
	for _, c := range q.Match {
		if c.Exists != nil {
			match[c.Field+".exists"] = *c.Exists
		} else {
			match[c.Field] = c.Value
		}
	}
	return map[string]any{"datatype": string(q.Datatype), "match": match, "update": q.Update}
}

// sameJSON compares JSON texts by what they decode to: the normal form
// may escape a string differently ("<" as "\u003c").
var sameJSON = cmp.Comparer(func(a, b json.RawMessage) bool {
	x, errX := decode(a)
	y, errY := decode(b)
	return len(a) == 0 && len(b) == 0 || errX == nil && errY == nil && cmp.Equal(x, y)
})

// decode decodes JSON text keeping every digit of numbers.
func decode(raw []byte) (any, error) {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// distinct drops repeated conditions: {"f": null, "f.exists": false} is
// one condition said twice, which the normal form says once.
func distinct(q dataquery.Query) dataquery.Query {
	q.Match = slices.CompactFunc(slices.Clone(q.Match), func(a, b dataquery.Condition) bool { return cmp.Equal(a, b) })
	return q
}
