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

// model applies the acknowledged uploads of each uploader in order and
// returns the expected state of every identity it can know, the number of
// records each acknowledged run must accept (by run id), and the
// identities whose fate is unknown (an upload with no answer may or may
// not have been scheduled).
func model(entries []entry) (states map[string]*customerState, accepts map[string]int, received map[string]int, unknown map[string]bool) {
	states, accepts, received, unknown = map[string]*customerState{}, map[string]int{}, map[string]int{}, map[string]bool{}
	for _, e := range entries {
		if e.Op != "upload" {
			continue
		}
		var req struct{ Customers []map[string]any }
		_ = json.Unmarshal(e.Request, &req)
		if e.Status != 200 {
			if e.Status != 503 { // no answer or an unexpected one: it may have been scheduled
				for _, rec := range req.Customers {
					unknown[rec["external_id"].(string)] = true
				}
			}
			continue
		}
		var ans struct {
			RunID string `json:"run_id"`
		}
		_ = json.Unmarshal(e.Answer, &ans)
		n := 0
		for _, rec := range req.Customers {
			id := rec["external_id"].(string)
			s := states[id]
			if s == nil {
				s = &customerState{tags: map[string]bool{}}
				states[id] = s
			}
			if apply(s, rec) {
				n++
			}
		}
		accepts[ans.RunID], received[ans.RunID] = n, len(req.Customers)
	}
	return states, accepts, received, unknown
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
	logs      map[string]string  // node logs by file name
	// projections is `clientele projections status` once every lag is 0.
	projections []projection
}

type importRun struct {
	State                        string
	Received, Accepted, Rejected int
}

type customerView struct {
	ExternalID string   `json:"external_id"`
	FirstName  string   `json:"first_name"`
	Tags       []string `json:"tags"`
}

// check runs every invariant over the history and the final reads.
func check(entries []entry, fin finalState) []result {
	states, accepts, received, unknown := model(entries)
	return []result{
		checkAnswers(entries),
		checkRuns(accepts, received, fin),
		checkCustomers(states, unknown, fin),
		checkForgets(entries, unknown, fin),
		checkMessages(entries, fin),
		checkDelivery("/batched", fin),
		checkDelivery("/single", fin),
		checkProjections(fin),
		checkLogs(fin),
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

func checkRuns(accepts, received map[string]int, fin finalState) result {
	r := result{name: "every upload answered 200 completed once, with the records the model accepts", ok: true}
	for id, want := range accepts {
		got, ok := fin.runs[id]
		switch {
		case !ok:
			r.fail("run %s: not readable", id)
		case got.State != "completed":
			r.fail("run %s: %s", id, got.State)
		case got.Received != received[id] || got.Accepted != want || got.Accepted+got.Rejected != got.Received:
			r.fail("run %s: received %d, accepted %d, rejected %d; want %d received, %d accepted", id, got.Received, got.Accepted, got.Rejected, received[id], want)
		}
	}
	r.detail = fmt.Sprintf("%d runs", len(accepts))
	return r
}

func checkCustomers(states map[string]*customerState, unknown map[string]bool, fin finalState) result {
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

func checkForgets(entries []entry, unknown map[string]bool, fin finalState) result {
	r := result{name: "acknowledged forgets hold: the person is in no retrieval", ok: true}
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
// answers around a fault: from the first to the last 503 answered
// between the fault's start and 30 s after it was healed (the kill and
// the restart of a node, NATS back, the standby promoted), or the next
// fault's start if that comes first.
func windows(entries []entry) map[string]time.Duration {
	out := map[string]time.Duration{}
	faults := faultWindows(entries)
	for i, f := range faults {
		kind := strings.TrimPrefix(f.Op, "fault:")
		until := f.End.Add(30 * time.Second)
		if i+1 < len(faults) && faults[i+1].Start.Before(until) {
			until = faults[i+1].Start
		}
		var first, last time.Time
		for _, a := range entries {
			if a.Client == "nemesis" || a.Status != 503 || a.End.Before(f.Start) || a.End.After(until) {
				continue
			}
			if first.IsZero() || a.Start.Before(first) {
				first = a.Start
			}
			if a.End.After(last) {
				last = a.End
			}
		}
		out[kind] = max(out[kind], last.Sub(first))
	}
	return out
}

func trim(b []byte) string {
	if len(b) > 300 {
		return string(b[:300]) + "..."
	}
	return string(b)
}
