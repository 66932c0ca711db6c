package segment_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/segment"
)

// pathOf returns the one detail's field of a 422, failing on any other
// error.
func pathOf(t *testing.T, err error) string {
	t.Helper()
	var e *domain.Error
	if !errors.As(err, &e) || e.Code != domain.Validation || len(e.Details) != 1 {
		t.Fatalf("want one validation detail, got %v", err)
	}
	return e.Details[0].Field
}

func TestParseRuleNamesThePathOfTheBadPart(t *testing.T) {
	deep := strings.Repeat(`{"not":`, segment.MaxDepth+1) + `{"field":"a","exists":true}` + strings.Repeat(`}`, segment.MaxDepth+1)
	leaves := make([]string, segment.MaxLeaves+1)
	for i := range leaves {
		leaves[i] = `{"field":"a","exists":true}`
	}
	many := `{"any":[` + strings.Join(leaves, ",") + `]}`
	in := make([]string, segment.MaxInValues+1)
	for i := range in {
		in[i] = `1`
	}
	for _, tc := range []struct {
		name, rule, path string
	}{
		{"not an object", `[]`, "rule"},
		{"no kind", `{}`, "rule"},
		{"two kinds", `{"all":[{"field":"a","exists":true}],"any":[{"field":"a","exists":true}]}`, "rule"},
		{"empty all", `{"all":[]}`, "rule.all"},
		{"all not a list", `{"all":{}}`, "rule.all"},
		{"key beside all", `{"all":[{"field":"a","exists":true}],"x":1}`, "rule"},
		{"bad leaf inside", `{"all":[{"field":"a","eq":1},{"field":"b","eq":1},{"event":{"type":"BROWSE","within_days":0}}]}`, "rule.all[2].event.within_days"},
		{"within_days too long", `{"event":{"type":"BROWSE","within_days":36601}}`, "rule.event.within_days"},
		{"within_days not whole", `{"event":{"type":"BROWSE","within_days":1.5}}`, "rule.event.within_days"},
		{"event without type", `{"event":{"within_days":3}}`, "rule.event.type"},
		{"event unknown key", `{"event":{"type":"BROWSE","since":3}}`, "rule.event"},
		{"event min_count zero", `{"event":{"type":"BROWSE","min_count":0}}`, "rule.event.min_count"},
		{"event where not a list", `{"event":{"type":"BROWSE","where":{}}}`, "rule.event.where"},
		{"event where not a field leaf", `{"event":{"type":"BROWSE","where":[{"all":[]}]}}`, "rule.event.where[0]"},
		{"event where with a window", `{"event":{"type":"BROWSE","where":[{"field":"date","within_days":3}]}}`, "rule.event.where[0].within_days"},
		{"event where bad value", `{"event":{"type":"BROWSE","where":[{"field":"x","eq":1},{"field":"y","gt":true}]}}`, "rule.event.where[1].gt"},
		{"not of nothing", `{"not":{}}`, "rule.not"},
		{"field name missing", `{"field":"","eq":1}`, "rule.field"},
		{"field without operator", `{"field":"a"}`, "rule"},
		{"field two operators", `{"field":"a","eq":1,"ne":2}`, "rule"},
		{"unknown operator", `{"field":"a","like":"x"}`, "rule"},
		{"exists not a boolean", `{"field":"a","exists":"yes"}`, "rule.exists"},
		{"in empty", `{"field":"a","in":[]}`, "rule.in"},
		{"in too many", `{"field":"a","in":[` + strings.Join(in, ",") + `]}`, "rule.in"},
		{"in element an object", `{"field":"a","in":[1,{}]}`, "rule.in[1]"},
		{"gt a boolean", `{"field":"a","gt":true}`, "rule.gt"},
		{"lte not a date", `{"field":"a","lte":"soon"}`, "rule.lte"},
		{"contains null", `{"field":"a","contains":null}`, "rule.contains"},
		{"eq a list", `{"any":[{"field":"a","eq":[1]}]}`, "rule.any[0].eq"},
		{"value too long", `{"field":"a","eq":"` + strings.Repeat("x", segment.MaxValueBytes+1) + `"}`, "rule.eq"},
		{"within_days zero", `{"field":"a","within_days":0}`, "rule.within_days"},
		{"sales unknown key", `{"sales":{"total":1}}`, "rule.sales"},
		{"sales negative revenue", `{"sales":{"min_revenue":-1}}`, "rule.sales.min_revenue"},
		{"sales empty product", `{"sales":{"product_id":""}}`, "rule.sales.product_id"},
		{"segment not a key", `{"segment":"a b"}`, "rule.segment"},
		{"too deep", deep, "rule" + strings.Repeat(".not", segment.MaxDepth+1)},
		{"too many leaves", many, "rule.any[100]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := segment.ParseRule(json.RawMessage(tc.rule))
			if got := pathOf(t, err); got != tc.path {
				t.Errorf("path %q, want %q (%v)", got, tc.path, err)
			}
		})
	}
}

func TestParseRuleReadsEveryKind(t *testing.T) {
	r, err := segment.ParseRule(json.RawMessage(`{"all":[
		{"field":"can_email","eq":true},
		{"any":[{"field":"tags","contains":"vip"},{"not":{"segment":"SE-1"}}]},
		{"event":{"type":"BROWSE","where":[{"field":"product_id","in":["A","B"]}],"within_days":30,"min_count":2}},
		{"sales":{"within_days":90,"min_count":1,"min_revenue":1050,"product_id":"P1"}},
		{"field":"last_login","not_within_days":7}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.All) != 5 || r.All[0].Field.Op != segment.Eq || r.All[2].Event.MinCount != 2 ||
		r.All[2].Event.WithinDays != 30 || r.All[3].Sales.MinRevenue != 1050 || r.All[4].Field.Days != 7 {
		t.Errorf("rule read as %+v", r)
	}
	if got := r.Segments(); len(got) != 1 || got[0] != "SE-1" {
		t.Errorf("segments %v", got)
	}
	if refs := r.Refs(); len(refs) != 1 || refs[0].Path != "rule.all[1].any[1].not.segment" {
		t.Errorf("refs %+v", refs)
	}
	ev, _ := segment.ParseRule(json.RawMessage(`{"event":{"type":"BROWSE"}}`))
	if ev.Event.MinCount != 1 || ev.Event.WithinDays != 0 {
		t.Errorf("event defaults %+v", ev.Event)
	}
}

// rules is a company's segments for CheckRefs.
type rules map[string]string

func (rs rules) lookup(t *testing.T) func(string) (segment.Rule, bool, error) {
	return func(key string) (segment.Rule, bool, error) {
		raw, ok := rs[key]
		if !ok {
			return segment.Rule{}, false, nil
		}
		r, err := segment.ParseRule(json.RawMessage(raw))
		if err != nil {
			t.Fatalf("rule of %s: %v", key, err)
		}
		return r, true, nil
	}
}

func TestCheckRefsRefusesCyclesAndUnknownSegments(t *testing.T) {
	company := rules{
		"A": `{"field":"x","exists":true}`,
		"B": `{"segment":"A"}`,
		"C": `{"any":[{"segment":"B"},{"segment":"A"}]}`,
		"D": `{"not":{"segment":"C"}}`,
	}
	for _, tc := range []struct {
		name, key, rule, path string // path "" when the rule is fine
	}{
		{"a chain", "E", `{"segment":"D"}`, ""},
		{"a diamond", "E", `{"all":[{"segment":"B"},{"segment":"C"}]}`, ""},
		{"itself", "A", `{"all":[{"field":"x","exists":true},{"segment":"A"}]}`, "rule.all[1].segment"},
		{"through one", "A", `{"segment":"B"}`, "rule.segment"},
		{"through three", "A", `{"any":[{"field":"x","eq":1},{"not":{"segment":"D"}}]}`, "rule.any[1].not.segment"},
		{"unknown", "E", `{"all":[{"segment":"A"},{"segment":"Z"}]}`, "rule.all[1].segment"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := segment.ParseRule(json.RawMessage(tc.rule))
			if err != nil {
				t.Fatal(err)
			}
			err = segment.CheckRefs(tc.key, r, company.lookup(t))
			if tc.path == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if got := pathOf(t, err); got != tc.path {
				t.Errorf("path %q, want %q (%v)", got, tc.path, err)
			}
		})
	}
}
