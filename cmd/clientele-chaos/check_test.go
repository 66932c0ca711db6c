package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// A history of two uploads and a post, answered 200, with the final reads
// that agree with it: every invariant passes; each departure from it (a
// record lost, a forgotten person retrieved, a message missing, an
// undelivered message, a 500, a commit applied twice, an internal error
// logged) fails the
// invariant that covers it (and may fail others that see it too).
func TestCheckerFindsEachViolation(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	upload := func(run string, at int, records string) entry {
		return entry{Client: "uploader-0", Op: "upload", Status: 200, Start: t0.Add(time.Duration(at) * time.Second), End: t0.Add(time.Duration(at)*time.Second + time.Millisecond),
			Request: json.RawMessage(`{"customers":` + records + `}`), Answer: json.RawMessage(`{"run_id":"` + run + `"}`)}
	}
	history := []entry{
		upload("r1", 0, `[{"external_id":"k0-1","first_name":"Ann","tags":["vip"]},{"external_id":"k0-2","first_name":"Bo"}]`),
		upload("r2", 1, `[{"external_id":"k0-1","tags.add":["b2b"]},{"external_id":"k0-2","is_forgotten":true},{"external_id":"k0-3","is_deleted":true}]`),
		{Client: "poster-0", Op: "post", Status: 200, Start: t0, End: t0, Request: json.RawMessage(`{"messages":[{"a":1},{"a":2}]}`),
			Answer: json.RawMessage(`{"first_message_number":1,"messages_count":2}`)},
		{Client: "reader", Op: "retrieve", Status: 503, Retry: "5", Start: t0, End: t0},
	}
	good := func() finalState {
		return finalState{
			runs:      map[string]importRun{"r1": {"completed", 2, 2, 0}, "r2": {"completed", 3, 2, 1}},
			customers: map[string]customerView{"k0-1": {ExternalID: "k0-1", FirstName: "Ann", Tags: []string{"b2b", "vip"}}},
			queue:     []string{`{"a":1}`, `{"a":2}`},
			lastNum:   2,
			batches:   map[string][]batch{"/batched": {{First: 1, Messages: []string{`{"a":1}`, `{"a":2}`}}}, "/single": {{First: 1, Messages: []string{`{"a":1}`}}, {First: 2, Messages: []string{`{"a":2}`}}}},
			logs:      map[string]string{"node-0.log": `{"level":"WARN","msg":"request failed","status":503}`},
			projections: []projection{{name: "customer_index", kind: "inline", applied: 7},
				{name: "customers", kind: "async", applied: 7}, {name: "events", kind: "async", applied: 7}},
		}
	}
	failing := func(results []result) []string {
		var out []string
		for _, r := range results {
			if !r.ok {
				out = append(out, r.name)
			}
		}
		return out
	}
	if f := failing(check(history, good())); len(f) != 0 {
		t.Fatalf("a consistent run fails %v", f)
	}
	for _, tc := range []struct {
		what   string
		change func(h []entry, f *finalState) []entry
		fails  string
	}{
		{"a record applied twice or lost", func(h []entry, f *finalState) []entry {
			f.runs["r2"] = importRun{"completed", 3, 3, 0}
			return h
		}, "completed once"},
		{"a tag lost", func(h []entry, f *finalState) []entry {
			f.customers["k0-1"] = customerView{ExternalID: "k0-1", FirstName: "Ann", Tags: []string{"vip"}}
			return h
		}, "final customers"},
		{"a forgotten person retrieved", func(h []entry, f *finalState) []entry {
			f.customers["k0-2"] = customerView{ExternalID: "k0-2", FirstName: "Bo"}
			return h
		}, "forgets hold"},
		{"a message missing", func(h []entry, f *finalState) []entry {
			f.queue, f.lastNum = f.queue[:1], 1
			return h
		}, "without gaps"},
		{"a message not delivered", func(h []entry, f *finalState) []entry {
			f.batches["/single"] = f.batches["/single"][:1]
			return h
		}, "/single"},
		{"an answer of 500", func(h []entry, f *finalState) []entry {
			return append(h, entry{Client: "reader", Op: "query", Status: 500, Start: t0, End: t0})
		}, "503 with Retry-After"},
		{"a 503 without Retry-After", func(h []entry, f *finalState) []entry {
			return append(h, entry{Client: "reader", Op: "query", Status: 503, Start: t0, End: t0})
		}, "503 with Retry-After"},
		{"a hang", func(h []entry, f *finalState) []entry {
			return append(h, entry{Client: "reader", Op: "query", Err: "context deadline exceeded", Start: t0, End: t0.Add(requestTimeout)})
		}, "503 with Retry-After"},
		{"a commit applied twice by a projector", func(h []entry, f *finalState) []entry {
			f.projections[2].applied = 9
			return h
		}, "each event of the log once"},
		{"a panic logged", func(h []entry, f *finalState) []entry {
			f.logs["node-1.log"] = "panic: runtime error"
			return h
		}, "internal error"},
	} {
		f := good()
		h := tc.change(append([]entry(nil), history...), &f)
		got := failing(check(h, f))
		if !slices.ContainsFunc(got, func(name string) bool { return strings.Contains(name, tc.fails) }) {
			t.Errorf("%s: failed %v, want the invariant about %q among them", tc.what, got, tc.fails)
		}
	}
}

// The 503 window of a fault spans its 503 answers, up to the next fault.
func TestWindowsPerFaultKind(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	h := []entry{
		{Client: "nemesis", Op: "fault:pg-failover", Start: at(10), End: at(13)},
		{Client: "c", Status: 503, Start: at(10.5), End: at(10.6)},
		{Client: "c", Status: 503, Start: at(12.5), End: at(12.9)},
		{Client: "c", Status: 200, Start: at(13.5), End: at(13.6)},
		{Client: "nemesis", Op: "fault:node-kill", Start: at(20), End: at(22)},
		{Client: "c", Status: 200, Start: at(21), End: at(21.1)},
	}
	w := windows(h)
	if w["pg-failover"] != 2400*time.Millisecond || w["node-kill"] != 0 {
		t.Errorf("windows %v, want pg-failover 2.4s and node-kill 0s", w)
	}
}
