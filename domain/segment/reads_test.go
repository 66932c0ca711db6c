package segment_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/clientele/clientele/domain/segment"
)

// TestReadsNamesWhatTheRuleReads: the customer fields of field leaves,
// the event types with their where fields, sales, products and
// segments, each once, through all, any and not; a union adds them.
func TestReadsNamesWhatTheRuleReads(t *testing.T) {
	r, err := segment.ParseRule(json.RawMessage(`{"all":[
		{"field":"city","eq":"Helsinki"},
		{"not":{"any":[{"field":"age","gt":30},{"field":"city","ne":"Turku"},{"segment":"vip"}]}},
		{"event":{"type":"BROWSE","where":[{"field":"label","eq":"cart"},{"field":"price","gt":5}],"within_days":7}},
		{"event":{"type":"BROWSE","where":[{"field":"label","ne":"home"}]}},
		{"event":{"type":"OPEN"}},
		{"sales":{"within_days":30}},
		{"segment":"vip"},{"segment":"new"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got := r.Reads()
	want := segment.Reads{Fields: []string{"city", "age"},
		Events:   map[string][]string{"BROWSE": {"label", "price"}, "OPEN": {}},
		Sales:    true,
		Segments: []string{"vip", "new"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("reads (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"BROWSE", "OPEN"}, got.EventTypes()); d != "" {
		t.Errorf("event types (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"label", "price"}, got.EventFields()); d != "" {
		t.Errorf("event fields (-want +got):\n%s", d)
	}

	other, err := segment.ParseRule(json.RawMessage(`{"any":[{"field":"tags","contains":"a"},
		{"event":{"type":"CLICK","where":[{"field":"channel","eq":"web"}]}},{"sales":{"product_id":"P1"}},{"segment":"vip"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	got.Union(other.Reads())
	want = segment.Reads{Fields: []string{"city", "age", "tags"},
		Events:   map[string][]string{"BROWSE": {"label", "price"}, "OPEN": {}, "CLICK": {"channel"}},
		Sales:    true,
		Products: true,
		Segments: []string{"vip", "new"}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("union (-want +got):\n%s", d)
	}
}

// TestDecideOnTheFactsReadSameAsOnAll: a rule decided on only the facts
// it reads (the named fields, the named types' events with their named
// fields, no sales without a sales leaf) gives the answer and the next
// instant it gives on all of them.
func TestDecideOnTheFactsReadSameAsOnAll(t *testing.T) {
	now := time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC)
	all := segment.Facts{
		Customer: map[string]any{"city": "Helsinki", "age": json.Number("41"), "tags": []any{"a"}, "name": "Ann"},
		Events: []segment.Activity{
			{Type: "BROWSE", At: now.Add(-2 * 24 * time.Hour), Fields: map[string]any{"label": "cart", "price": json.Number("9"), "x": "y"}},
			{Type: "BROWSE", At: now.Add(-5 * 24 * time.Hour), Fields: map[string]any{"label": "home"}},
			{Type: "OPEN", At: now.Add(3 * time.Hour), Fields: map[string]any{"label": "cart"}},
		},
		Sales: []segment.Sale{{At: now.Add(-24 * time.Hour), Revenue: 500, Products: []string{"P1"}}},
	}
	for _, text := range []string{
		`{"field":"city","eq":"Helsinki"}`,
		`{"all":[{"field":"age","gte":40},{"not":{"field":"name","exists":false}}]}`,
		`{"event":{"type":"BROWSE","where":[{"field":"label","eq":"cart"}],"within_days":7}}`,
		`{"any":[{"event":{"type":"OPEN","within_days":1}},{"field":"tags","contains":"b"}]}`,
		`{"all":[{"event":{"type":"BROWSE","min_count":2,"within_days":7}},{"not":{"sales":{"within_days":3,"product_id":"P1"}}}]}`,
	} {
		r, err := segment.ParseRule(json.RawMessage(text))
		if err != nil {
			t.Fatal(err)
		}
		reads := r.Reads()
		read := segment.Facts{Customer: map[string]any{}}
		for _, f := range reads.Fields {
			if v, ok := all.Customer[f]; ok {
				read.Customer[f] = v
			}
		}
		for _, e := range all.Events {
			fields, ok := reads.Events[e.Type]
			if !ok {
				continue
			}
			kept := segment.Activity{Type: e.Type, At: e.At, Fields: map[string]any{}}
			for _, f := range fields {
				if v, ok := e.Fields[f]; ok {
					kept.Fields[f] = v
				}
			}
			read.Events = append(read.Events, kept)
		}
		if reads.Sales {
			read.Sales = all.Sales
		}
		wantIn, wantNext := segment.Decide(r, all, now)
		gotIn, gotNext := segment.Decide(r, read, now)
		if gotIn != wantIn || !gotNext.Equal(wantNext) {
			t.Errorf("%s: on the facts read %v %v, on all %v %v", text, gotIn, gotNext, wantIn, wantNext)
		}
	}
}
