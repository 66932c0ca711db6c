package segment_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/clientele/clientele/domain/segment"
)

var now = time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)

const day = 24 * time.Hour

// doc decodes a customer as the evaluator takes it (numbers as
// json.Number).
func doc(t *testing.T, s string) map[string]any {
	t.Helper()
	d := json.NewDecoder(bytes.NewReader([]byte(s)))
	d.UseNumber()
	var m map[string]any
	if err := d.Decode(&m); err != nil {
		t.Fatal(err)
	}
	return m
}

func mustRule(t *testing.T, s string) segment.Rule {
	t.Helper()
	r, err := segment.ParseRule(json.RawMessage(s))
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return r
}

func TestDecideFieldOperators(t *testing.T) {
	customer := `{"first_name":"Maija","city":"Helsinki","age":42,"score":1.5,"can_email":true,"can_sms":false,
		"tags":["vip","coffee"],"mailing_lists":[],"COMPANY__tier":"gold","nothing":null,
		"date_joined":"2026-03-10","last_login":"2026-03-15T11:00:00Z","birthday":"1984-05-02"}`
	for _, tc := range []struct {
		rule string
		want bool
	}{
		{`{"field":"city","eq":"Helsinki"}`, true},
		{`{"field":"city","eq":"helsinki"}`, false},
		{`{"field":"age","eq":42}`, true},
		{`{"field":"age","eq":42.0}`, true},
		{`{"field":"age","eq":"42"}`, false},
		{`{"field":"can_email","eq":true}`, true},
		{`{"field":"can_sms","eq":true}`, false},
		{`{"field":"tags","eq":"vip"}`, true},
		{`{"field":"city","ne":"Turku"}`, true},
		{`{"field":"city","ne":"Helsinki"}`, false},
		{`{"field":"tags","ne":"vip"}`, false},
		{`{"field":"city","in":["Turku","Helsinki"]}`, true},
		{`{"field":"city","in":["Turku","Oulu"]}`, false},
		{`{"field":"tags","in":["coffee","tea"]}`, true},
		{`{"field":"COMPANY__tier","in":["gold"]}`, true},
		{`{"field":"tags","contains":"coffee"}`, true},
		{`{"field":"tags","contains":"Coffee"}`, false},
		{`{"field":"mailing_lists","contains":"news"}`, false},
		{`{"field":"first_name","contains":"AIJ"}`, true},
		{`{"field":"first_name","contains":"x"}`, false},
		{`{"field":"age","contains":4}`, false},
		{`{"field":"city","exists":true}`, true},
		{`{"field":"city","exists":false}`, false},
		{`{"field":"age","gt":41}`, true},
		{`{"field":"age","gt":42}`, false},
		{`{"field":"age","gte":42}`, true},
		{`{"field":"score","lt":2}`, true},
		{`{"field":"score","lt":1.5}`, false},
		{`{"field":"score","lte":1.5}`, true},
		{`{"field":"city","gt":1}`, false},
		{`{"field":"date_joined","gt":"2026-03-01"}`, true},
		{`{"field":"date_joined","lt":"2026-03-10T00:00:01Z"}`, true},
		{`{"field":"date_joined","gte":"2026-03-10T00:00:00Z"}`, true},
		{`{"field":"last_login","lte":"2026-03-15"}`, false},
		{`{"field":"age","gt":"2026-03-01"}`, false},
		{`{"field":"date_joined","within_days":7}`, true},
		{`{"field":"date_joined","within_days":5}`, false},
		{`{"field":"date_joined","not_within_days":5}`, true},
		{`{"field":"last_login","within_days":1}`, true},
		{`{"field":"birthday","not_within_days":30}`, true},
		{`{"field":"city","within_days":30}`, false},
		{`{"field":"city","not_within_days":30}`, true},
		{`{"all":[{"field":"city","eq":"Helsinki"},{"field":"age","gte":18}]}`, true},
		{`{"all":[{"field":"city","eq":"Helsinki"},{"field":"age","lt":18}]}`, false},
		{`{"any":[{"field":"city","eq":"Turku"},{"field":"age","lt":18}]}`, false},
		{`{"any":[{"field":"city","eq":"Turku"},{"field":"tags","contains":"vip"}]}`, true},
		{`{"not":{"field":"can_sms","eq":true}}`, true},
	} {
		got, _ := segment.Decide(mustRule(t, tc.rule), segment.Facts{Customer: doc(t, customer)}, now)
		if got != tc.want {
			t.Errorf("%s: %v, want %v", tc.rule, got, tc.want)
		}
	}
}

// A customer without the field, or with it null, matches only exists
// false, ne and not_within_days (decisions, "Segments").
func TestDecideAbsentFieldMatchesOnlyExistsFalseNeAndNotWithinDays(t *testing.T) {
	matching := map[string]bool{`{"field":"F","exists":false}`: true, `{"field":"F","ne":"x"}`: true,
		`{"field":"F","ne":null}`: true, `{"field":"F","not_within_days":3}`: true}
	all := []string{`{"field":"F","eq":"x"}`, `{"field":"F","eq":null}`, `{"field":"F","in":["x",null]}`,
		`{"field":"F","contains":"x"}`, `{"field":"F","exists":true}`, `{"field":"F","gt":1}`, `{"field":"F","gte":1}`,
		`{"field":"F","lt":1}`, `{"field":"F","lte":"2026-01-01"}`, `{"field":"F","within_days":3}`}
	for r := range matching {
		all = append(all, r)
	}
	for _, customer := range []string{`{"id":"1"}`, `{"id":"1","F":null}`} {
		for _, r := range all {
			got, next := segment.Decide(mustRule(t, r), segment.Facts{Customer: doc(t, customer)}, now)
			if got != matching[r] || !next.IsZero() {
				t.Errorf("%s on %s: %v (next %v), want %v", r, customer, got, next, matching[r])
			}
		}
	}
}

func TestDecideFieldWindowsGiveTheNextChange(t *testing.T) {
	for _, tc := range []struct {
		name, rule, date string
		want             bool
		next             time.Time
	}{
		{"inside leaves when the window passes", `{"field":"d","within_days":3}`, "2026-03-14T12:00:00Z", true, now.Add(2 * day)},
		{"outside stays outside", `{"field":"d","within_days":3}`, "2026-03-01T00:00:00Z", false, time.Time{}},
		{"a date ahead enters when it comes", `{"field":"d","within_days":3}`, "2026-03-16T00:00:00Z", false, time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)},
		{"the window's end is outside", `{"field":"d","within_days":1}`, "2026-03-14T12:00:00Z", false, time.Time{}},
		{"not_within_days enters when the window passes", `{"field":"d","not_within_days":3}`, "2026-03-14T12:00:00Z", false, now.Add(2 * day)},
		{"a date only is midnight UTC", `{"field":"d","within_days":1}`, "2026-03-15", true, time.Date(2026, 3, 16, 0, 0, 0, 0, time.UTC)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, next := segment.Decide(mustRule(t, tc.rule), segment.Facts{Customer: map[string]any{"d": tc.date}}, now)
			if got != tc.want || !next.Equal(tc.next) {
				t.Errorf("%v next %v, want %v next %v", got, next, tc.want, tc.next)
			}
		})
	}
}

func TestDecideEvents(t *testing.T) {
	events := []segment.Activity{
		{Type: "BROWSE", At: now.Add(-10 * day), Fields: map[string]any{"product_id": "A"}},
		{Type: "BROWSE", At: now.Add(-2 * day), Fields: map[string]any{"product_id": "B"}},
		{Type: "BROWSE", At: now.Add(-1 * day), Fields: map[string]any{"product_id": "A"}},
		{Type: "MAIL_OPEN", At: now.Add(-1 * time.Hour)},
	}
	for _, tc := range []struct {
		rule string
		want bool
		next time.Time
	}{
		{`{"event":{"type":"BROWSE"}}`, true, time.Time{}},
		{`{"event":{"type":"BUY"}}`, false, time.Time{}},
		{`{"event":{"type":"BROWSE","min_count":3}}`, true, time.Time{}},
		{`{"event":{"type":"BROWSE","min_count":4}}`, false, time.Time{}},
		{`{"event":{"type":"BROWSE","within_days":3}}`, true, now.Add(2 * day)},
		{`{"event":{"type":"BROWSE","within_days":3,"min_count":2}}`, true, now.Add(1 * day)},
		{`{"event":{"type":"BROWSE","within_days":3,"min_count":3}}`, false, time.Time{}},
		{`{"event":{"type":"BROWSE","within_days":30,"min_count":3}}`, true, now.Add(20 * day)},
		{`{"event":{"type":"BROWSE","where":[{"field":"product_id","eq":"A"}],"min_count":2}}`, true, time.Time{}},
		{`{"event":{"type":"BROWSE","where":[{"field":"product_id","eq":"A"}],"within_days":5}}`, true, now.Add(4 * day)},
		{`{"event":{"type":"BROWSE","where":[{"field":"product_id","eq":"C"}]}}`, false, time.Time{}},
		{`{"event":{"type":"MAIL_OPEN","where":[{"field":"campaign","exists":false}]}}`, true, time.Time{}},
		{`{"not":{"event":{"type":"BROWSE","within_days":3}}}`, false, now.Add(2 * day)},
	} {
		got, next := segment.Decide(mustRule(t, tc.rule), segment.Facts{Events: events}, now)
		if got != tc.want || !next.Equal(tc.next) {
			t.Errorf("%s: %v next %v, want %v next %v", tc.rule, got, next, tc.want, tc.next)
		}
	}
	// An event dated ahead enters when its date comes.
	ahead := []segment.Activity{{Type: "BOOKED", At: now.Add(time.Hour)}}
	got, next := segment.Decide(mustRule(t, `{"event":{"type":"BOOKED","within_days":1}}`), segment.Facts{Events: ahead}, now)
	if got || !next.Equal(now.Add(time.Hour)) {
		t.Errorf("event ahead: %v next %v", got, next)
	}
}

func TestDecideSales(t *testing.T) {
	sales := []segment.Sale{
		{At: now.Add(-40 * day), Revenue: 5000, Products: []string{"P1"}},
		{At: now.Add(-5 * day), Revenue: 1500, Products: []string{"P2", "P3"}},
		{At: now.Add(-1 * day), Revenue: 1000, Products: []string{"P1"}},
	}
	for _, tc := range []struct {
		rule string
		want bool
		next time.Time
	}{
		{`{"sales":{}}`, true, time.Time{}},
		{`{"sales":{"min_count":3}}`, true, time.Time{}},
		{`{"sales":{"min_count":4}}`, false, time.Time{}},
		{`{"sales":{"min_revenue":7500}}`, true, time.Time{}},
		{`{"sales":{"min_revenue":7501}}`, false, time.Time{}},
		{`{"sales":{"within_days":30,"min_revenue":2500}}`, true, now.Add(25 * day)},
		{`{"sales":{"within_days":30,"min_revenue":2501}}`, false, time.Time{}},
		{`{"sales":{"within_days":30,"min_count":2}}`, true, now.Add(25 * day)},
		{`{"sales":{"product_id":"P1","min_count":2}}`, true, time.Time{}},
		{`{"sales":{"product_id":"P3","within_days":10}}`, true, now.Add(5 * day)},
		{`{"sales":{"product_id":"P9"}}`, false, time.Time{}},
	} {
		got, next := segment.Decide(mustRule(t, tc.rule), segment.Facts{Sales: sales}, now)
		if got != tc.want || !next.Equal(tc.next) {
			t.Errorf("%s: %v next %v, want %v next %v", tc.rule, got, next, tc.want, tc.next)
		}
	}
}

func TestDecideCombinesNextChanges(t *testing.T) {
	f := segment.Facts{
		Customer: map[string]any{"d": "2026-03-14T12:00:00Z"},
		Events:   []segment.Activity{{Type: "BROWSE", At: now.Add(-12 * time.Hour)}},
		Member: func(key string) (bool, time.Time) {
			return key == "IN", now.Add(time.Hour)
		},
	}
	for _, tc := range []struct {
		rule string
		want bool
		next time.Time
	}{
		// The earliest instant any part may change, even when the other
		// part alone decides (deciding again then is always right).
		{`{"all":[{"field":"d","within_days":3},{"event":{"type":"BROWSE","within_days":1}}]}`, true, now.Add(12 * time.Hour)},
		{`{"any":[{"field":"d","within_days":3},{"event":{"type":"BUY"}}]}`, true, now.Add(2 * day)},
		{`{"segment":"IN"}`, true, now.Add(time.Hour)},
		{`{"all":[{"segment":"OUT"},{"field":"d","within_days":3}]}`, false, now.Add(time.Hour)},
	} {
		got, next := segment.Decide(mustRule(t, tc.rule), f, now)
		if got != tc.want || !next.Equal(tc.next) {
			t.Errorf("%s: %v next %v, want %v next %v", tc.rule, got, next, tc.want, tc.next)
		}
	}
	if got, _ := segment.Decide(mustRule(t, `{"segment":"IN"}`), segment.Facts{}, now); got {
		t.Error("a segment leaf without Member holds")
	}
}

// Deciding again at the next-change instant gives the other answer when
// only time moves a lone window.
func TestDecideAtTheNextChangeFlips(t *testing.T) {
	r := mustRule(t, `{"event":{"type":"BROWSE","within_days":30}}`)
	f := segment.Facts{Events: []segment.Activity{{Type: "BROWSE", At: now.Add(-29 * day)}}}
	in, next := segment.Decide(r, f, now)
	if !in || !next.Equal(now.Add(day)) {
		t.Fatalf("%v next %v", in, next)
	}
	if still, _ := segment.Decide(r, f, next.Add(-time.Nanosecond)); !still {
		t.Error("left before the window passed")
	}
	if out, after := segment.Decide(r, f, next); out || !after.IsZero() {
		t.Errorf("at the window's end: %v next %v", out, after)
	}
}
