package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// result is one invariant's verdict.
type result struct {
	name     string
	ok       bool
	detail   string
	problems []string
}

func (r *result) fail(format string, args ...any) {
	r.ok = false
	if len(r.problems) < 8 {
		r.problems = append(r.problems, fmt.Sprintf(format, args...))
	}
}

// answerBound is how long an answer may take, at most, before it counts
// as a hang (the service's own bounds are 5 s to connect and 10 s for a
// pooled connection; the receiver and the machine add their share).
const answerBound = 15 * time.Second

// customerState is the model of one identity.
type customerState struct {
	exists, deleted, forgotten bool
	name                       string
	tags                       map[string]bool
}

// world is the model of what the acknowledged uploads make: it applies
// each uploader's acknowledged uploads (customers, events, sales) in
// order, as the service applies a company's runs in upload order.
type world struct {
	states map[string]*customerState // by identity
	// accepts and received are the records each acknowledged run must
	// accept and has, by run id; uncertain are the runs whose accepted
	// records depend on an upload of unknown fate before them.
	accepts, received map[string]int
	uncertain         map[string]bool
	// unknown are the identities an upload with no answer (or an
	// unexpected one) named: it may or may not have been applied.
	unknown map[string]bool
	// events by label, sales by sale_external_id: what the acknowledged
	// runs accepted; unknownEvents and unknownSales are those whose fate
	// is unknown (their upload got no answer, or they name an identity
	// of unknown fate).
	events        map[string]eventWant
	sales         map[string]saleWant
	unknownEvents map[string]bool
	unknownSales  map[string]bool
	// refused are the events (by label) and sales (by key) of uploads
	// answered 503, which promises that nothing was scheduled: when
	// they were applied after all, the check says so.
	refused map[string]time.Time
	// names are every first name sent for an identity: with the
	// identity, what the forget checks look for (personalTrace).
	names map[string][]string
}

type eventWant struct{ identity string }

type saleWant struct {
	identity string
	rows     int
	total    int
}

// model builds the world of a history.
func model(entries []entry) *world {
	w := &world{states: map[string]*customerState{}, accepts: map[string]int{}, received: map[string]int{}, uncertain: map[string]bool{},
		unknown: map[string]bool{}, events: map[string]eventWant{}, sales: map[string]saleWant{},
		unknownEvents: map[string]bool{}, unknownSales: map[string]bool{}, refused: map[string]time.Time{}, names: map[string][]string{}}
	uncertain := func(run, id string) {
		if w.unknown[id] {
			w.uncertain[run] = true
		}
	}
	state := func(id string) *customerState {
		s := w.states[id]
		if s == nil {
			s = &customerState{tags: map[string]bool{}}
			w.states[id] = s
		}
		return s
	}
	for _, e := range entries {
		if !isUpload(e.Op) {
			continue
		}
		var req struct {
			Customers []map[string]any
			Events    []map[string]any
			Sales     []map[string]any
		}
		_ = json.Unmarshal(e.Request, &req)
		for _, rec := range req.Customers {
			if v, ok := rec["first_name"].(string); ok {
				id := rec["external_id"].(string)
				w.names[id] = append(w.names[id], v)
			}
		}
		acked, lost := e.Status == 200, e.Status != 200 && e.Status != 503
		var ans struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(e.Answer, &ans)
		n := 0
		for _, rec := range req.Customers {
			id := rec["external_id"].(string)
			if lost {
				w.unknown[id] = true
			}
			if !acked {
				continue
			}
			uncertain(ans.RunID, id)
			if apply(state(id), rec) {
				n++
			}
		}
		for _, rec := range req.Events {
			id, label := rec["customer_id"].(string), rec["label"].(string)
			if lost || (acked && w.unknown[id]) {
				w.unknownEvents[label] = true
			}
			if e.Status == 503 {
				w.refused[label] = e.Start
			}
			if !acked {
				continue
			}
			uncertain(ans.RunID, id)
			if s := w.states[id]; s != nil && s.exists && !s.deleted && !s.forgotten {
				w.events[label] = eventWant{identity: id}
				n++
			}
		}
		for _, rec := range req.Sales {
			id, key := rec["sale_customer_id"].(string), rec["sale_external_id"].(string)
			if lost {
				w.unknown[id] = true
			}
			if lost || (acked && w.unknown[id]) {
				w.unknownSales[key] = true
			}
			if e.Status == 503 {
				w.refused[key] = e.Start
			}
			if !acked {
				continue
			}
			uncertain(ans.RunID, id)
			if s := state(id); !s.deleted && !s.forgotten {
				s.exists = true // a sale creates its customer
				want := saleWant{identity: id}
				rows, _ := rec["sale_rows"].([]any)
				for _, r := range rows {
					row := r.(map[string]any)
					want.rows++
					want.total += int(row["quantity"].(float64) * row["unit_price"].(float64))
				}
				w.sales[key] = want
				n++
			}
		}
		if acked {
			w.accepts[ans.RunID], w.received[ans.RunID] = n, len(req.Customers)+len(req.Events)+len(req.Sales)
		}
	}
	return w
}

// isUpload reports whether op is an upload of customers, events or sales.
func isUpload(op string) bool { return op == "upload" || strings.HasPrefix(op, "upload-") }

// forgotten lists the identities the acknowledged uploads forgot.
func (w *world) forgotten() []string {
	var out []string
	for _, id := range slices.Sorted(maps.Keys(w.states)) {
		if w.states[id].forgotten {
			out = append(out, id)
		}
	}
	return out
}

// personalTrace returns the texts that, found in what the service
// answers or writes, show a forgotten person: each forgotten identity as
// a JSON string (external_id, an event's customer_id, a sale's
// sale_customer_id) and each first name sent for it.
func (w *world) personalTrace() map[string]string {
	out := map[string]string{}
	for _, id := range w.forgotten() {
		out[fmt.Sprintf("%q", id)] = id
		for _, n := range w.names[id] {
			out[n] = id
		}
	}
	return out
}

// findTrace returns the forgotten identity whose trace text holds, and
// the trace, or "".
func findTrace(traces map[string]string, text string) (id, trace string) {
	for _, t := range slices.Sorted(maps.Keys(traces)) {
		if strings.Contains(text, t) {
			return traces[t], t
		}
	}
	return "", ""
}

// apply applies one record as docs/customers.md says and reports whether
// it is accepted.
func apply(s *customerState, rec map[string]any) bool {
	del, forget := rec["is_deleted"] != nil, rec["is_forgotten"] != nil
	switch {
	case s.forgotten:
		return forget
	case s.deleted:
		s.forgotten = forget
		return del || forget
	case !s.exists && (del || forget):
		return false // nobody holds the identity
	case del:
		s.deleted = true
		return true
	case forget:
		s.forgotten = true
		return true
	}
	s.exists = true
	if v, ok := rec["first_name"].(string); ok {
		s.name = v
	}
	if v, ok := rec["tags"].([]any); ok {
		s.tags = map[string]bool{}
		for _, t := range v {
			s.tags[t.(string)] = true
		}
	}
	if v, ok := rec["tags.add"].([]any); ok {
		for _, t := range v {
			s.tags[t.(string)] = true
		}
	}
	if v, ok := rec["tags.remove"].([]any); ok {
		for _, t := range v {
			delete(s.tags, t.(string))
		}
	}
	return true
}

// finalState is what the harness read at the end, once the service
// settled.
type finalState struct {
	runs      map[string]importRun
	customers map[string]customerView // by external_id
	forgotten int                     // entries answered as forgotten
	queue     []string                // messages 1..last_message_number, canonical
	lastNum   int
	batches   map[string][]batch // accepted by the receiver, by outlet path
	// attempts are every request the receiver got, and outletLogs every
	// outlet's log entries, by outlet path (every outlet's).
	attempts   map[string][]attempt
	outletLogs map[string][]logEntry
	logs       map[string]string // node logs by file name
	// projections is `clientele projections status` once every lag is 0.
	projections []projection
	events      []eventView
	sales       []saleView
	// documents are the texts, by where they come from, in which no
	// forgotten person may show: the datasync queues, the outlets' logged
	// requests and replies, the changes feed, the export's files.
	documents map[string]string
	// changesForgotten counts the changes the feed answered with data
	// null (a forgotten customer's); exportForgotten the customers the
	// export wrote in the forgotten form, and exportPersonal those of
	// them with more than that form.
	changesForgotten, exportForgotten int
	exportPersonal                    []string
	// changesOpened are the changes of a forgotten customer's stream
	// the feed answered with their data.
	changesOpened []string
	// rebuilt names the read models rebuilt at the end; rebuildDiffs
	// what differs between their tables before and after.
	rebuilt      []string
	rebuildDiffs []string
	// problems are what the harness could not read, by the check it
	// concerns (the check fails).
	problems map[string][]string
}

type importRun struct {
	State                        string
	Received, Accepted, Rejected int
}

type eventView struct {
	ID         int    `json:"id"`
	Label      string `json:"label"`
	CustomerID string `json:"customer_id"`
}

type saleView struct {
	ExternalID     string `json:"sale_external_id"`
	SaleCustomerID string `json:"sale_customer_id"`
	Total          int    `json:"sale_total"`
	Rows           []struct {
		ProductID string `json:"product_id"`
	} `json:"sale_rows"`
}

type customerView struct {
	ExternalID string   `json:"external_id"`
	FirstName  string   `json:"first_name"`
	Tags       []string `json:"tags"`
}

// check runs every invariant over the history and the final reads.
func check(entries []entry, fin finalState) []result {
	w := model(entries)
	return []result{
		checkFaults(entries),
		checkAnswers(entries),
		checkRuns(w, fin),
		checkCustomers(w, fin),
		checkEvents(w, fin),
		checkSales(w, fin),
		checkForgets(entries, w, fin),
		checkForgetsElsewhere(w, fin),
		checkMessages(entries, fin),
		checkDelivery("/batched", fin),
		checkDelivery("/single", fin),
		checkAttempts(entries, fin),
		checkProjections(fin),
		checkRebuild(fin),
		checkLogs(fin),
	}
}

// checkFaults: the run injected each kind of fault at least once.
func checkFaults(entries []entry) result {
	r := result{name: "every kind of fault injected", ok: true}
	n := map[string]int{}
	for _, f := range faultWindows(entries) {
		n[strings.TrimPrefix(f.Op, "fault:")]++
	}
	for _, k := range faultKinds {
		if n[k] == 0 {
			r.fail("no %s (the run ended before it)", k)
		}
	}
	r.detail = fmt.Sprint(n)
	return r
}

// harnessProblems fails r with what the harness could not read for it.
func harnessProblems(r *result, fin finalState, key string) {
	for _, p := range fin.problems[key] {
		r.fail("%s", p)
	}
}

// faultWindows are the faults of the history: kind and interval.
func faultWindows(entries []entry) []entry {
	var out []entry
	for _, e := range entries {
		if strings.HasPrefix(e.Op, "fault:") {
			out = append(out, e)
		}
	}
	return out
}

func checkAnswers(entries []entry) result {
	r := result{name: "every request answered 200, or 503 with Retry-After, within " + answerBound.String(), ok: true}
	counts := map[string]int{}
	for _, e := range entries {
		if e.Client == "nemesis" {
			continue
		}
		took := e.End.Sub(e.Start)
		switch {
		case e.Err != "" && lostToKill(e.Err) && took < answerBound:
			counts["connection lost (node killed)"]++
		case e.Err != "":
			counts["no answer"]++
			r.fail("%s %s to %s: no answer after %v: %s", e.Client, e.Op, e.Node, took.Round(time.Millisecond), e.Err)
		case took > answerBound:
			counts[fmt.Sprint(e.Status)+" late"]++
			r.fail("%s %s to %s: %d after %v", e.Client, e.Op, e.Node, e.Status, took.Round(time.Millisecond))
		case e.Status == 200:
			counts["200"]++
		case e.Status == 503 && e.Retry != "":
			counts["503"]++
		default:
			counts[fmt.Sprint(e.Status)]++
			r.fail("%s %s to %s at %s: %d (Retry-After %q) %s", e.Client, e.Op, e.Node, e.Start.Format("15:04:05.000"), e.Status, e.Retry, trim(e.Answer))
		}
	}
	r.detail = fmt.Sprint(counts)
	return r
}

// lostToKill reports whether err is a connection a killed node dropped
// or refused.
func lostToKill(err string) bool {
	for _, s := range []string{"connection refused", "connection reset", "EOF", "broken pipe"} {
		if strings.Contains(err, s) {
			return true
		}
	}
	return false
}

func checkRuns(w *world, fin finalState) result {
	r := result{name: "every upload answered 200 completed once, with the records the model accepts", ok: true}
	for _, id := range slices.Sorted(maps.Keys(w.accepts)) {
		want, received := w.accepts[id], w.received[id]
		got, ok := fin.runs[id]
		switch {
		case !ok:
			r.fail("run %s: not readable", id)
		case got.State != "completed":
			r.fail("run %s: %s", id, got.State)
		case got.Received != received || got.Accepted+got.Rejected != got.Received:
			r.fail("run %s: received %d, accepted %d, rejected %d; want %d received", id, got.Received, got.Accepted, got.Rejected, received)
		case got.Accepted != want && !w.uncertain[id]:
			r.fail("run %s: received %d, accepted %d, rejected %d; want %d accepted", id, got.Received, got.Accepted, got.Rejected, want)
		}
	}
	r.detail = fmt.Sprintf("%d runs, %d of them after an upload of unknown fate (counts not compared)", len(w.accepts), len(w.uncertain))
	return r
}

// checkEvents: the events retrieved are those the acknowledged runs
// accepted, each once, naming its customer (nobody, once the customer is
// forgotten).
func checkEvents(w *world, fin finalState) result {
	r := result{name: "final events equal the model of the acknowledged uploads", ok: true}
	harnessProblems(&r, fin, "events")
	seen := map[string]int{}
	for _, ev := range fin.events {
		seen[ev.Label]++
		want, ok := w.events[ev.Label]
		switch {
		case w.unknownEvents[ev.Label]:
		case !ok && !w.refused[ev.Label].IsZero():
			r.fail("event %d %s: retrieved, but its upload was answered 503 at %s (nothing scheduled, says a 503)", ev.ID, ev.Label, w.refused[ev.Label].Format("15:04:05.000"))
		case !ok:
			r.fail("event %d %s: retrieved, but no acknowledged upload had it accepted", ev.ID, ev.Label)
		case w.unknown[want.identity]:
		case w.states[want.identity].forgotten && ev.CustomerID != "":
			r.fail("event %d %s: customer_id %q of a forgotten customer", ev.ID, ev.Label, ev.CustomerID)
		case !w.states[want.identity].forgotten && ev.CustomerID != want.identity:
			r.fail("event %d %s: customer_id %q, model %q", ev.ID, ev.Label, ev.CustomerID, want.identity)
		}
	}
	retrievedOnce(&r, "event", seen, w.events, w.unknownEvents, func(e eventWant) string { return e.identity })
	r.detail = fmt.Sprintf("%d events retrieved, %d in the model, %d of unknown fate", len(fin.events), len(w.events), len(w.unknownEvents))
	return r
}

// checkSales: the sales retrieved are those the acknowledged runs
// accepted, each once, with their rows and total, naming their customer
// (nobody, once the customer is forgotten).
func checkSales(w *world, fin finalState) result {
	r := result{name: "final sales equal the model of the acknowledged uploads", ok: true}
	harnessProblems(&r, fin, "sales")
	seen := map[string]int{}
	for _, sv := range fin.sales {
		seen[sv.ExternalID]++
		want, ok := w.sales[sv.ExternalID]
		switch {
		case w.unknownSales[sv.ExternalID]:
		case !ok && !w.refused[sv.ExternalID].IsZero():
			r.fail("sale %s: retrieved, but its upload was answered 503 at %s (nothing scheduled, says a 503)", sv.ExternalID, w.refused[sv.ExternalID].Format("15:04:05.000"))
		case !ok:
			r.fail("sale %s: retrieved, but no acknowledged upload had it accepted", sv.ExternalID)
		case len(sv.Rows) != want.rows || sv.Total != want.total:
			r.fail("sale %s: %d rows, total %d; model %d rows, total %d", sv.ExternalID, len(sv.Rows), sv.Total, want.rows, want.total)
		case w.unknown[want.identity]:
		case w.states[want.identity].forgotten && sv.SaleCustomerID != "":
			r.fail("sale %s: sale_customer_id %q of a forgotten customer", sv.ExternalID, sv.SaleCustomerID)
		case !w.states[want.identity].forgotten && sv.SaleCustomerID != want.identity:
			r.fail("sale %s: sale_customer_id %q, model %q", sv.ExternalID, sv.SaleCustomerID, want.identity)
		}
	}
	retrievedOnce(&r, "sale", seen, w.sales, w.unknownSales, func(s saleWant) string { return s.identity })
	r.detail = fmt.Sprintf("%d sales retrieved, %d in the model, %d of unknown fate", len(fin.sales), len(w.sales), len(w.unknownSales))
	return r
}

// retrievedOnce fails r for each record of kind retrieved more than once
// (seen counts them by key), and for each the model accepted, not of
// unknown fate, never retrieved; identity names the model's record's
// customer.
func retrievedOnce[W any](r *result, kind string, seen map[string]int, model map[string]W, unknown map[string]bool, identity func(W) string) {
	for _, key := range slices.Sorted(maps.Keys(seen)) {
		if seen[key] > 1 {
			r.fail("%s %s: retrieved %d times", kind, key, seen[key])
		}
	}
	for _, key := range slices.Sorted(maps.Keys(model)) {
		if seen[key] == 0 && !unknown[key] {
			r.fail("%s %s of %s: accepted by the model, not retrieved", kind, key, identity(model[key]))
		}
	}
}

// checkForgetsElsewhere: no forgotten person shows in the datasync
// queues, the outlets' logged requests and replies, the changes feed or
// the export, and the export writes each forgotten customer in the
// forgotten form.
func checkForgetsElsewhere(w *world, fin finalState) result {
	r := result{name: "acknowledged forgets hold in the datasync feeds, outlet logs, changes feed and export", ok: true}
	harnessProblems(&r, fin, "forgets")
	traces := w.personalTrace()
	for _, where := range slices.Sorted(maps.Keys(fin.documents)) {
		if id, t := findTrace(traces, fin.documents[where]); id != "" {
			r.fail("%s: shows %s of the forgotten %s", where, t, id)
		}
	}
	for _, p := range fin.exportPersonal {
		r.fail("export: a forgotten customer with more than the forgotten form: %s", p)
	}
	// Every identity forgotten is exported forgotten (retrieval leaves
	// out the deleted ones, the export does not); one of unknown fate may
	// be too.
	known := 0
	for _, id := range w.forgotten() {
		if !w.unknown[id] {
			known++
		}
	}
	if fin.exportForgotten < known || fin.exportForgotten > len(w.forgotten())+len(w.unknown) {
		r.fail("export: %d customers in the forgotten form; %d forgotten, %d more of unknown fate", fin.exportForgotten, known, len(w.unknown))
	}
	for _, ch := range fin.changesOpened {
		r.fail("changes feed: a change of a forgotten customer with its data: %s", ch)
	}
	if len(traces) > 0 && fin.changesForgotten == 0 {
		r.fail("changes feed: no change with data null, %d customers forgotten", len(w.forgotten()))
	}
	r.detail = fmt.Sprintf("%d forgotten identities, %d texts searched, %d changes null, %d customers exported forgotten", len(w.forgotten()), len(fin.documents), fin.changesForgotten, fin.exportForgotten)
	return r
}

// checkRebuild: each read model rebuilt from the log equals the live one.
func checkRebuild(fin finalState) result {
	r := result{name: "every read model rebuilt from the log equals the live one", ok: true}
	harnessProblems(&r, fin, "rebuild")
	for _, d := range fin.rebuildDiffs {
		r.fail("%s", d)
	}
	if len(fin.rebuilt) == 0 {
		r.fail("no read model rebuilt")
	}
	r.detail = fmt.Sprintf("%d rebuilt: %s", len(fin.rebuilt), strings.Join(fin.rebuilt, " "))
	return r
}

func checkCustomers(w *world, fin finalState) result {
	states, unknown := w.states, w.unknown
	r := result{name: "final customers equal the model of the acknowledged uploads", ok: true}
	checked := 0
	for _, id := range slices.Sorted(maps.Keys(states)) {
		if unknown[id] {
			continue
		}
		checked++
		s, got := states[id], fin.customers[id]
		present := s.exists && !s.deleted && !s.forgotten
		_, listed := fin.customers[id]
		switch {
		case present != listed:
			r.fail("%s: retrievable %v, model %+v", id, listed, *s)
		case present && got.FirstName != s.name:
			r.fail("%s: first_name %q, model %q", id, got.FirstName, s.name)
		case present && !slices.Equal(slices.Sorted(slices.Values(got.Tags)), slices.Sorted(maps.Keys(s.tags))):
			r.fail("%s: tags %v, model %v", id, got.Tags, slices.Sorted(maps.Keys(s.tags)))
		}
	}
	r.detail = fmt.Sprintf("%d identities checked, %d of unknown fate skipped", checked, len(unknown))
	return r
}

func checkForgets(entries []entry, w *world, fin finalState) result {
	r := result{name: "acknowledged forgets hold: the person is in no retrieval", ok: true}
	harnessProblems(&r, fin, "retrieval")
	n := 0
	for _, e := range entries {
		if e.Op != "upload" || e.Status != 200 {
			continue
		}
		var req struct{ Customers []map[string]any }
		_ = json.Unmarshal(e.Request, &req)
		for _, rec := range req.Customers {
			if rec["is_forgotten"] == nil {
				continue
			}
			id := rec["external_id"].(string)
			n++
			if c, ok := fin.customers[id]; ok {
				r.fail("%s was forgotten (acknowledged at %s) and is retrieved: %+v", id, e.Start.Format("15:04:05.000"), c)
			}
		}
	}
	// Their events and sales stay, without the person (checkEvents and
	// checkSales check the customer named; here, any other trace).
	traces := w.personalTrace()
	for _, ev := range fin.events {
		if id, t := findTrace(traces, fmt.Sprintf("%q %q", ev.CustomerID, ev.Label)); id != "" {
			r.fail("event %d shows %s of the forgotten %s", ev.ID, t, id)
		}
	}
	for _, sv := range fin.sales {
		if id, t := findTrace(traces, fmt.Sprintf("%q", sv.SaleCustomerID)); id != "" {
			r.fail("sale %s shows %s of the forgotten %s", sv.ExternalID, t, id)
		}
	}
	r.detail = fmt.Sprintf("%d forgets acknowledged, %d customers answered as forgotten", n, fin.forgotten)
	return r
}

func checkMessages(entries []entry, fin finalState) result {
	r := result{name: "datatarget messages numbered without gaps or repeats, each acknowledged post at its numbers", ok: true}
	if len(fin.queue) != fin.lastNum {
		r.fail("retrieval gave %d messages, last_message_number is %d", len(fin.queue), fin.lastNum)
	}
	seen := map[string]int{}
	for i, m := range fin.queue {
		if j, dup := seen[m]; dup {
			r.fail("message %d repeats message %d: %s", i+1, j, m)
		}
		seen[m] = i + 1
	}
	acked := 0
	for _, e := range entries {
		if e.Op != "post" || e.Status != 200 {
			continue
		}
		acked++
		var req struct{ Messages []json.RawMessage }
		var ans struct {
			First int `json:"first_message_number"`
			Count int `json:"messages_count"`
		}
		_ = json.Unmarshal(e.Request, &req)
		_ = json.Unmarshal(e.Answer, &ans)
		if ans.Count != len(req.Messages) {
			r.fail("a post of %d messages answered %d", len(req.Messages), ans.Count)
		}
		for i, m := range req.Messages {
			n := ans.First + i
			if n < 1 || n > len(fin.queue) || fin.queue[n-1] != canonical(m) {
				r.fail("acknowledged message %s numbered %d is not there", canonical(m), n)
			}
		}
	}
	r.detail = fmt.Sprintf("%d posts acknowledged, %d messages", acked, fin.lastNum)
	return r
}

func checkDelivery(path string, fin finalState) result {
	r := result{name: "every message delivered at least once, in order, to the outlet " + path, ok: true}
	next, resends := 1, 0
	for i, b := range fin.batches[path] {
		if b.First < 1 || b.First > next {
			r.fail("request %d starts at message %d, after a gap (next was %d)", i, b.First, next)
			break
		}
		if b.First < next {
			resends++
		}
		for j, m := range b.Messages {
			if n := b.First + j; n > len(fin.queue) || m != fin.queue[n-1] {
				r.fail("request %d: message %d is %s, not the queue's", i, n, m)
			}
		}
		next = max(next, b.First+len(b.Messages))
	}
	if next-1 != fin.lastNum {
		r.fail("delivered up to message %d of %d", next-1, fin.lastNum)
	}
	r.detail = fmt.Sprintf("%d requests accepted, %d sent again", len(fin.batches[path]), resends)
	return r
}

// checkProjections: each async projector adds a commit's events to its
// events_applied in the transaction that applies the commit, so at the
// head of the log it equals the number of events in the log (an inline
// projection's count) exactly when no commit was skipped or applied
// twice, which the read models alone cannot show (they are upserts).
func checkProjections(fin finalState) result {
	r := result{name: "every async projector applied each event of the log once", ok: true}
	var events int64 = -1
	for _, p := range fin.projections {
		if p.kind == "inline" {
			events = p.applied
		}
	}
	if events < 0 {
		r.fail("no inline projection to count the log's events: %+v", fin.projections)
		return r
	}
	async := 0
	for _, p := range fin.projections {
		if p.kind != "async" {
			continue
		}
		async++
		if p.applied != events {
			r.fail("%s applied %d events of a log of %d", p.name, p.applied, events)
		}
	}
	r.detail = fmt.Sprintf("%d async projectors, %d events", async, events)
	return r
}

func checkLogs(fin finalState) result {
	r := result{name: "no internal error (500) or panic in the nodes' logs", ok: true}
	for _, name := range slices.Sorted(maps.Keys(fin.logs)) {
		for _, line := range strings.Split(fin.logs[name], "\n") {
			if strings.Contains(line, `"status":500`) || strings.Contains(line, "panic") {
				r.fail("%s: %s", name, line)
			}
		}
	}
	return r
}

// windows measures, for each fault kind, the longest span of 503
// answers around a fault: from the start of the first to the end of the
// last 503 it is blamed for. A 503 is blamed on the fault whose span
// (from its start to its healing: the kill and the restart of a node,
// NATS back, the standby promoted, the link healed) overlaps the
// request the longest; one made after every fault healed, on the last
// fault that began before its answer, when it was healed less than 30 s
// before the request.
func windows(entries []entry) map[string]time.Duration {
	out := map[string]time.Duration{}
	for kind, w := range windowsOf(entries) {
		out[kind] = w.last.Sub(w.first)
	}
	return out
}

// window is the longest 503 window of a fault kind: its first 503's
// start, its last one's end, and the fault.
type window struct {
	first, last time.Time
	fault       entry
	nodes       []string // the nodes that answered its 503s
}

func (w window) String() string {
	if w.first.IsZero() {
		return "0s"
	}
	return fmt.Sprintf("%v (503s %s to %s, %s; fault %s %s to %s)", w.last.Sub(w.first).Round(time.Millisecond),
		w.first.Format("15:04:05.000"), w.last.Format("15:04:05.000"), strings.Join(w.nodes, " "),
		w.fault.Node, w.fault.Start.Format("15:04:05.000"), w.fault.End.Format("15:04:05.000"))
}

// blame returns the index of the fault a 503 answer a is blamed on
// (windows), or -1.
func blame(faults []entry, a entry) int {
	best, overlap := -1, time.Duration(0)
	for i, f := range faults {
		if o := earlier(a.End, f.End).Sub(later(a.Start, f.Start)); o > overlap {
			best, overlap = i, o
		}
	}
	if best >= 0 {
		return best
	}
	for i := len(faults) - 1; i >= 0; i-- {
		if f := faults[i]; !f.Start.After(a.End) {
			if a.Start.Sub(f.End) < 30*time.Second {
				return i
			}
			break
		}
	}
	return -1
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// windowsOf is windows with each longest window's bounds and fault.
func windowsOf(entries []entry) map[string]window {
	faults := faultWindows(entries)
	slices.SortFunc(faults, func(a, b entry) int { return a.Start.Compare(b.Start) })
	per := make([]window, len(faults))
	nodes := make([]map[string]bool, len(faults))
	for i, f := range faults {
		per[i], nodes[i] = window{fault: f}, map[string]bool{}
	}
	for _, a := range entries {
		if a.Client == "nemesis" || a.Status != 503 {
			continue
		}
		i := blame(faults, a)
		if i < 0 {
			continue
		}
		w := &per[i]
		if w.first.IsZero() || a.Start.Before(w.first) {
			w.first = a.Start
		}
		if a.End.After(w.last) {
			w.last = a.End
		}
		nodes[i][a.Node] = true
	}
	out := map[string]window{}
	for i, w := range per {
		kind := strings.TrimPrefix(w.fault.Op, "fault:")
		w.nodes = slices.Sorted(maps.Keys(nodes[i]))
		if old, ok := out[kind]; !ok || w.last.Sub(w.first) > old.last.Sub(old.first) {
			out[kind] = w
		}
	}
	return out
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
