package main

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"
)

// A history of uploads of customers, events and sales and a post,
// answered 200, and a fault of each kind, with the final reads that agree
// with it: every invariant passes; each departure from it (a record lost,
// a forgotten person retrieved or found in a feed, a log, the changes or
// the export, an event or a sale lost, doubled or wrong, a message
// missing, an undelivered message, a 500, a commit applied twice, a read
// model that its rebuild changes, a fault kind never injected, an
// internal error logged) fails the invariant that covers it (and may
// fail others that see it too).
func TestCheckerFindsEachViolation(t *testing.T) {
	t0 := time.Date(2026, 11, 29, 9, 0, 0, 0, time.UTC)
	upload := func(op, run string, at int, body string) entry {
		return entry{Client: "uploader-0", Op: op, Status: 200, Start: t0.Add(time.Duration(at) * time.Second), End: t0.Add(time.Duration(at)*time.Second + time.Millisecond),
			Request: json.RawMessage(body), Answer: json.RawMessage(`{"run_id":"` + run + `"}`)}
	}
	history := []entry{
		upload("upload", "r1", 0, `{"customers":[{"external_id":"k0-1","first_name":"Ann","tags":["vip"]},{"external_id":"k0-2","first_name":"Name-k0-2-7"}]}`),
		upload("upload-events", "r1e", 1, `{"events":[{"type":"BROWSE","customer_id":"k0-2","label":"ev-0"}]}`),
		upload("upload", "r2", 2, `{"customers":[{"external_id":"k0-1","tags.add":["b2b"]},{"external_id":"k0-2","is_forgotten":true},{"external_id":"k0-3","is_deleted":true}]}`),
		upload("upload-events", "r3", 3, `{"events":[{"type":"BROWSE","customer_id":"k0-1","label":"ev-1"},{"type":"BROWSE","customer_id":"k0-3","label":"ev-2"}]}`),
		upload("upload-sales", "r4", 4, `{"sales":[{"sale_external_id":"S1","sale_customer_id":"k0-1","sale_rows":[{"product_id":"p-1","quantity":1,"unit_price":500},{"product_id":"p-2","quantity":2,"unit_price":100}]},`+
			`{"sale_external_id":"S2","sale_customer_id":"k0-4","sale_rows":[{"product_id":"p-1","quantity":1,"unit_price":300}]}]}`),
		{Client: "poster-0", Op: "post", Status: 200, Start: t0, End: t0, Request: json.RawMessage(`{"messages":[{"a":1},{"a":2}]}`),
			Answer: json.RawMessage(`{"first_message_number":1,"messages_count":2}`)},
		{Client: "reader", Op: "retrieve", Status: 503, Retry: "5", Start: t0, End: t0},
	}
	for _, k := range faultKinds {
		history = append(history, entry{Client: "nemesis", Op: "fault:" + k, Start: t0, End: t0})
	}
	// node-1, killed at 102.5 s, leaves its attempt of 102 s unlogged.
	history = append(history, entry{Client: "nemesis", Op: "fault:node-kill", Node: "node-1", Start: t0.Add(102500 * time.Millisecond), End: t0.Add(104 * time.Second)})
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	good := func() finalState {
		return finalState{
			runs: map[string]importRun{"r1": {"completed", 2, 2, 0}, "r1e": {"completed", 1, 1, 0}, "r2": {"completed", 3, 2, 1},
				"r3": {"completed", 2, 1, 1}, "r4": {"completed", 2, 2, 0}},
			customers: map[string]customerView{"k0-1": {ExternalID: "k0-1", FirstName: "Ann", Tags: []string{"b2b", "vip"}}, "k0-4": {ExternalID: "k0-4"}},
			forgotten: 1,
			events:    []eventView{{ID: 1, Label: "ev-0"}, {ID: 2, Label: "ev-1", CustomerID: "k0-1"}},
			sales: []saleView{{ExternalID: "S1", SaleCustomerID: "k0-1", Total: 700, Rows: make([]struct {
				ProductID string `json:"product_id"`
			}, 2)}, {ExternalID: "S2", SaleCustomerID: "k0-4", Total: 300, Rows: make([]struct {
				ProductID string `json:"product_id"`
			}, 1)}},
			queue:   []string{`{"a":1}`, `{"a":2}`},
			lastNum: 2,
			batches: map[string][]batch{"/batched": {{First: 1, Messages: []string{`{"a":1}`, `{"a":2}`}}}, "/single": {{First: 1, Messages: []string{`{"a":1}`}}, {First: 2, Messages: []string{`{"a":2}`}}}},
			// /batched: a batch refused, then delivered; /single: message 1
			// delivered by node-1, killed before it recorded it, and sent
			// again by node-2; message 2 refused a connection, then
			// delivered.
			attempts: map[string][]attempt{
				"/batched": {{At: at(100_002), Node: "node-0", First: 1, Size: 2, Messages: []string{`{"a":1}`, `{"a":2}`}, Status: 500},
					{At: at(101_002), Node: "node-0", First: 1, Size: 2, Messages: []string{`{"a":1}`, `{"a":2}`}, Status: 200}},
				"/single": {{At: at(102_002), Node: "node-1", First: 1, Size: 1, Messages: []string{`{"a":1}`}, Status: 200},
					{At: at(135_002), Node: "node-2", First: 1, Size: 1, Messages: []string{`{"a":1}`}, Status: 200},
					{At: at(137_002), Node: "node-2", First: 2, Size: 1, Messages: []string{`{"a":2}`}, Status: 200}},
			},
			outletLogs: map[string][]logEntry{
				"/batched": {{N: 1, Date: at(100_000), First: 1, Size: 2, Status: "FAIL", HTTPStatus: 500, RequestTime: 5 * time.Millisecond},
					{N: 2, Date: at(101_000), First: 1, Size: 2, Status: "OK", HTTPStatus: 200, RequestTime: 5 * time.Millisecond}},
				"/single": {{N: 1, Date: at(135_000), First: 1, Size: 1, Status: "OK", HTTPStatus: 200, RequestTime: 5 * time.Millisecond},
					{N: 2, Date: at(136_000), First: 2, Size: 1, Status: "FAIL"},
					{N: 3, Date: at(137_000), First: 2, Size: 1, Status: "OK", HTTPStatus: 200, RequestTime: 5 * time.Millisecond}},
			},
			logs: map[string]string{"node-0.log": `{"level":"WARN","msg":"request failed","status":503}`},
			projections: []projection{{name: "customer_index", kind: "inline", applied: 7},
				{name: "customers", kind: "async", applied: 7}, {name: "events", kind: "async", applied: 7}},
			documents: map[string]string{
				"datasync queue of customers":        `{"update_id":"9","data":{"id":"c2","is_deleted":false,"is_forgotten":true}}`,
				"outlet /sync-customers log entry 1": "POST /sync-customers HTTP/1.1\r\n\r\n[{\"data\":{\"external_id\":\"k0-1\"}}]",
				"changes feed":                       `{"stream":"customer-acme-c2","type":"CustomerForgotten","data":null}`,
				"export customers.ndjson":            `{"customer_id":"c2","is_forgotten":true,"doc":{"id":"c2","is_deleted":false,"is_forgotten":true}}`,
			},
			changesForgotten: 3,
			exportForgotten:  1,
			rebuilt:          []string{"customers", "events"},
			problems:         map[string][]string{},
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
		{"an event applied twice", func(h []entry, f *finalState) []entry {
			f.events = append(f.events, eventView{ID: 3, Label: "ev-1", CustomerID: "k0-1"})
			return h
		}, "final events"},
		{"an event of nobody applied", func(h []entry, f *finalState) []entry {
			f.events = append(f.events, eventView{ID: 3, Label: "ev-2", CustomerID: "k0-3"})
			return h
		}, "final events"},
		{"an event lost", func(h []entry, f *finalState) []entry {
			f.events = f.events[:1]
			return h
		}, "final events"},
		{"an event still naming its forgotten customer", func(h []entry, f *finalState) []entry {
			f.events[0].CustomerID = "k0-2"
			return h
		}, "forgets hold: the person is in no retrieval"},
		{"a sale with a row lost", func(h []entry, f *finalState) []entry {
			f.sales[0].Rows, f.sales[0].Total = f.sales[0].Rows[:1], 500
			return h
		}, "final sales"},
		{"a sale lost", func(h []entry, f *finalState) []entry {
			f.sales = f.sales[:1]
			return h
		}, "final sales"},
		{"a sale applied twice", func(h []entry, f *finalState) []entry {
			f.sales = append(f.sales, f.sales[1])
			return h
		}, "final sales"},
		{"the customer a sale created missing", func(h []entry, f *finalState) []entry {
			delete(f.customers, "k0-4")
			return h
		}, "final customers"},
		{"a sale of an upload answered 503 applied", func(h []entry, f *finalState) []entry {
			refused := upload("upload-sales", "", 5, `{"sales":[{"sale_external_id":"S3","sale_customer_id":"k0-1","sale_rows":[{"product_id":"p-1","quantity":1,"unit_price":500}]}]}`)
			refused.Status, refused.Retry, refused.Answer = 503, "5", json.RawMessage(`{"error":{"code":"unavailable"}}`)
			f.sales = append(f.sales, saleView{ExternalID: "S3", SaleCustomerID: "k0-1", Total: 500, Rows: f.sales[1].Rows})
			return append(h, refused)
		}, "final sales"},
		{"a forgotten person in a datasync queue", func(h []entry, f *finalState) []entry {
			f.documents["datasync queue of customers"] += `{"data":{"external_id":"k0-2"}}`
			return h
		}, "datasync feeds"},
		{"a forgotten person's name in an outlet's logged request", func(h []entry, f *finalState) []entry {
			f.documents["outlet /sync-customers log entry 2"] = `POST /sync-customers HTTP/1.1 [{"first_name":"Name-k0-2-7"}]`
			return h
		}, "datasync feeds"},
		{"a forgotten person's change opened in the changes feed", func(h []entry, f *finalState) []entry {
			f.documents["changes feed"] += "\n" + `{"data":{"opened":{"set":{"external_id":"k0-2"}}}}`
			return h
		}, "changes feed"},
		{"a change of a forgotten customer's stream with its data", func(h []entry, f *finalState) []entry {
			f.changesOpened = []string{`7:12 CustomerUpserted of customer-acme-c2: {"customer_id":"c2"}`}
			return h
		}, "changes feed"},
		{"no change of a forgotten person null", func(h []entry, f *finalState) []entry {
			f.changesForgotten = 0
			return h
		}, "changes feed"},
		{"a forgotten person's event in the export", func(h []entry, f *finalState) []entry {
			f.documents["export events.ndjson"] = `{"event_id":1,"customer_id":"k0-2"}`
			return h
		}, "export"},
		{"a forgotten customer exported with a personal column", func(h []entry, f *finalState) []entry {
			f.exportPersonal = []string{`"c2": first_name is "x"`}
			return h
		}, "export"},
		{"a forgotten customer not exported as forgotten", func(h []entry, f *finalState) []entry {
			f.exportForgotten = 0
			return h
		}, "export"},
		{"a read model its rebuild changes", func(h []entry, f *finalState) []entry {
			f.rebuildDiffs = []string{`customers: table customers: live only: {"customer_id":"c1"}`}
			return h
		}, "rebuilt from the log"},
		{"no read model rebuilt", func(h []entry, f *finalState) []entry {
			f.rebuilt = nil
			return h
		}, "rebuilt from the log"},
		{"a fault kind never injected", func(h []entry, f *finalState) []entry {
			return slices.DeleteFunc(h, func(e entry) bool { return e.Op == "fault:partition-nats" })
		}, "every kind of fault"},
		{"an attempt missing from the log with no fault near it", func(h []entry, f *finalState) []entry {
			// node-1's kill at 102.5 s is near, but node-0 sent it.
			f.outletLogs["/batched"] = f.outletLogs["/batched"][1:]
			return h
		}, "every attempt the receiver got is in its outlet's log"},
		{"a logged OK attempt the receiver never got", func(h []entry, f *finalState) []entry {
			f.attempts["/batched"] = f.attempts["/batched"][:1]
			return h
		}, "every attempt the receiver got is in its outlet's log"},
		{"an unlogged attempt whose batch is never sent again", func(h []entry, f *finalState) []entry {
			// node-2, cut off from PostgreSQL, sends message 1 again after
			// it was delivered and logged: nothing logs it later.
			f.attempts["/single"] = append(f.attempts["/single"], attempt{At: at(140_000), Node: "node-2", First: 1, Size: 1, Messages: []string{`{"a":1}`}, Status: 200})
			return append(h, entry{Client: "nemesis", Op: "fault:partition-pg", Node: "node-2", Start: at(141_000), End: at(143_000)})
		}, "every attempt the receiver got is in its outlet's log"},
		{"an unlogged retry sent again with another size", func(h []entry, f *finalState) []entry {
			// After the logged failure of messages 1-2, a retry cut by
			// node-0's kill; the batch then logged is message 1 alone.
			f.attempts["/batched"] = []attempt{f.attempts["/batched"][0],
				{At: at(101_002), Node: "node-0", First: 1, Size: 2, Messages: []string{`{"a":1}`, `{"a":2}`}, Status: 200},
				{At: at(140_002), Node: "node-1", First: 1, Size: 1, Messages: []string{`{"a":1}`}, Status: 200},
				{At: at(141_002), Node: "node-1", First: 2, Size: 1, Messages: []string{`{"a":2}`}, Status: 200}}
			f.outletLogs["/batched"] = []logEntry{f.outletLogs["/batched"][0],
				{N: 2, Date: at(140_000), First: 1, Size: 1, Status: "OK", HTTPStatus: 200, RequestTime: 5 * time.Millisecond},
				{N: 3, Date: at(141_000), First: 2, Size: 1, Status: "OK", HTTPStatus: 200, RequestTime: 5 * time.Millisecond}}
			return append(h, entry{Client: "nemesis", Op: "fault:node-kill", Node: "node-0", Start: at(101_500), End: at(103_000)})
		}, "every attempt the receiver got is in its outlet's log"},
		{"a logged status the receiver did not answer", func(h []entry, f *finalState) []entry {
			f.attempts["/batched"][0].Status = 200
			return h
		}, "every attempt the receiver got is in its outlet's log"},
		{"a request without webhook-id", func(h []entry, f *finalState) []entry {
			f.attempts["/single"][2].First, f.attempts["/single"][2].Size = 0, 0
			return h
		}, "every attempt the receiver got is in its outlet's log"},
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

// The 503 window of a fault spans the 503 answers blamed on it.
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
	// A 503 is blamed on the fault its request overlapped the longest:
	// one made during a partition and answered just after the next fault
	// began is the partition's; one made just before the failover and
	// answered during it is the failover's.
	h = append(h,
		entry{Client: "nemesis", Op: "fault:partition-pg", Start: at(30), End: at(33)},
		entry{Client: "c", Status: 503, Start: at(31), End: at(34.5)},
		entry{Client: "nemesis", Op: "fault:partition-nats", Start: at(34), End: at(36)},
		entry{Client: "c", Status: 503, Start: at(39.5), End: at(41)},
		entry{Client: "nemesis", Op: "fault:pg-failover", Start: at(40), End: at(44)},
		entry{Client: "c", Status: 503, Start: at(41), End: at(42)},
		entry{Client: "c", Status: 503, Start: at(45), End: at(45.5)}, // after the healing
	)
	if w := windows(h); w["partition-pg"] != 3500*time.Millisecond || w["partition-nats"] != 0 || w["pg-failover"] != 6*time.Second {
		t.Errorf("windows %v, want partition-pg 3.5s, partition-nats 0s and pg-failover 6s", w)
	}
}
