package main

import (
	"cmp"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// The bounds of checkAttempts.
const (
	// attemptTimeout is the service's RequestTimeout: an attempt began at
	// most this long before its request reached the receiver.
	attemptTimeout = 30 * time.Second
	// recordingWindow is how long after its request reached the receiver
	// an attempt may still be cut from the log: the receiver answers
	// within slowAnswer, the worker then records the attempt within its
	// recordTimeout (10 s, delivery/worker.go) or gives up; half a second
	// more for a loaded machine.
	recordingWindow = slowAnswer + 10*time.Second + 500*time.Millisecond
	// matchSlack is how long after the end of its logged request time a
	// request may still reach the receiver: the entry's date is taken
	// before the body is rendered and signed (which a loaded machine may
	// delay), and request_time_ms is rounded down. It can be generous:
	// a request never matches an entry dated after it arrived, and the
	// entries, taken in order, each take the earliest request they can
	// (matchAttempts).
	matchSlack = 2 * time.Second
)

// checkAttempts: each outlet's log and the receiver agree, attempt for
// attempt. Every entry with an http_status is a request the receiver got
// (the same batch, within the entry's date and request time, answered
// that status); every request the receiver got is an entry, unless the
// design lets it go unlogged: the node that sent it could not record it
// (killed, or cut off from PostgreSQL, or PostgreSQL failing over, while
// the attempt was in flight or being recorded), and its batch was sent
// again and logged (the same batch when it was a retry of a logged
// failure, a batch from the same first message when it was a first
// attempt). An entry with no http_status (no reply came: a connection
// refused, a timeout) needs no request.
func checkAttempts(entries []entry, fin finalState) result {
	r := result{name: "every attempt the receiver got is in its outlet's log, and every logged reply came from the receiver", ok: true}
	harnessProblems(&r, fin, "attempts")
	faults := faultWindows(entries)
	var details []string
	for _, path := range slices.Sorted(maps.Keys(fin.attempts)) {
		reqs, logs := fin.attempts[path], fin.outletLogs[path]
		logged, seen := matchAttempts(reqs, logs)
		excused, unreplied, unknown := map[string]int{}, 0, 0
		for i, e := range logs {
			switch {
			case seen[i]:
			case e.HTTPStatus == 0:
				unreplied++
			default:
				r.fail("%s: log entry %d (messages %d-%d, %s %d, at %s): the receiver got no such request", path, e.N, e.First, e.First+e.Size-1, e.Status, e.HTTPStatus, e.Date.Format("15:04:05.000"))
			}
		}
		for i, a := range reqs {
			if a.Node == "" {
				unknown++
			}
			if a.First == 0 {
				r.fail("%s: request at %s from %s (answered %s): no webhook-id names its batch", path, a.At.Format("15:04:05.000"), nodeName(a.Node), answered(a.Status))
				continue
			}
			what := fmt.Sprintf("%s: request at %s from %s (messages %d-%d, answered %s)", path, a.At.Format("15:04:05.000"), nodeName(a.Node), a.First, a.First+a.Size-1, answered(a.Status))
			if len(a.Messages) > 0 && len(a.Messages) != a.Size {
				r.fail("%s: its body has %d messages", what, len(a.Messages))
			}
			if logged[i] {
				continue
			}
			cut := cuttingFaults(faults, a)
			again := sentAgain(logs, a)
			switch {
			case len(cut) == 0:
				r.fail("%s: not in the log, and no fault near it could keep its node from recording it", what)
			case again == nil:
				r.fail("%s: not in the log, and its batch was not sent again and logged (a fault near it: %s %s at %s)", what, cut[0].Op, cut[0].Node, cut[0].Start.Format("15:04:05.000"))
			default:
				excused[strings.TrimPrefix(cut[0].Op, "fault:")]++
			}
		}
		detail := fmt.Sprintf("%s %d requests, %d entries", path, len(reqs), len(logs))
		if len(excused) > 0 {
			detail += fmt.Sprintf(", unlogged after a fault %v", excused)
		}
		if unknown > 0 {
			detail += fmt.Sprintf(", %d from a node not told", unknown)
		}
		if unreplied > 0 {
			detail += fmt.Sprintf(", %d with no reply and no request", unreplied)
		}
		details = append(details, detail)
	}
	if len(fin.attempts) == 0 {
		r.fail("the receiver got no request")
	}
	r.detail = strings.Join(details, "; ")
	return r
}

// matchAttempts pairs the receiver's requests with log entries of the
// same outlet: the same batch, the request's arrival within the entry's
// date and the end of its request time (with matchSlack), and the status
// the receiver answered the entry's http_status (any, or none, when the
// entry has none). The entries with an http_status, which must have a
// request, are paired first, then those without, which may have one (a
// reply lost): otherwise one of those, failed without a reply, could
// take the request of the retry that follows it within matchSlack. In
// each pass the entries are taken by the end of their span, each with
// the earliest request it can have: the most pairs there can be.
func matchAttempts(reqs []attempt, logs []logEntry) (logged, seen []bool) {
	logged, seen = make([]bool, len(reqs)), make([]bool, len(logs))
	order := make([]int, len(logs))
	for i := range order {
		order[i] = i
	}
	end := func(e logEntry) time.Time { return e.Date.Add(e.RequestTime + matchSlack) }
	slices.SortStableFunc(order, func(i, j int) int { return end(logs[i]).Compare(end(logs[j])) })
	for _, replied := range []bool{true, false} {
		for _, i := range order {
			e := logs[i]
			if (e.HTTPStatus != 0) != replied {
				continue
			}
			best := -1
			for j, a := range reqs {
				if logged[j] || a.First != e.First || a.Size != e.Size || a.At.Before(e.Date) || a.At.After(end(e)) ||
					(replied && a.Status != e.HTTPStatus) {
					continue
				}
				if best < 0 || a.At.Before(reqs[best].At) {
					best = j
				}
			}
			if best >= 0 {
				logged[best], seen[i] = true, true
			}
		}
	}
	return logged, seen
}

// cuttingFaults are the faults that may have kept the node that sent a
// from recording it: a kill of that node, a partition of it from
// PostgreSQL or a fault on its link to PostgreSQL, or the failover,
// overlapping the time from the attempt's earliest start to the end of
// its recording; any node's when the sender is not known. The nearest
// to the request's arrival comes first (the one named).
func cuttingFaults(faults []entry, a attempt) []entry {
	out := mayCut(faults, a)
	distance := func(f entry) time.Duration {
		switch {
		case a.At.Before(f.Start):
			return f.Start.Sub(a.At)
		case a.At.After(f.End):
			return a.At.Sub(f.End)
		}
		return 0
	}
	slices.SortStableFunc(out, func(f, g entry) int { return cmp.Compare(distance(f), distance(g)) })
	return out
}

// mayCut is cuttingFaults in the history's order.
func mayCut(faults []entry, a attempt) []entry {
	var out []entry
	for _, f := range faults {
		if f.End.Before(a.At.Add(-attemptTimeout)) || f.Start.After(a.At.Add(recordingWindow)) {
			continue
		}
		node, link, _ := strings.Cut(f.Node, "/")
		mine := a.Node == "" || node == a.Node
		switch strings.TrimPrefix(f.Op, "fault:") {
		case "pg-failover":
		case "node-kill", "partition-pg", "partition-all":
			if !mine {
				continue
			}
		case "latency", "reset", "timeout":
			if !mine || !strings.HasPrefix(link, "pg-") {
				continue
			}
		default:
			continue
		}
		out = append(out, f)
	}
	return out
}

// sentAgain is the entry of a later attempt that sends a's batch again,
// or nil: the same batch when a retried a batch whose last attempt
// before it was logged a failure (a failed batch is retried as it was),
// else one from the same first message (a first attempt leaves no
// record of its size).
func sentAgain(logs []logEntry, a attempt) *logEntry {
	var before *logEntry
	for i, e := range logs {
		if e.First == a.First && e.Date.Before(a.At) && (before == nil || e.Date.After(before.Date)) {
			before = &logs[i]
		}
	}
	retry := before != nil && before.Status != "OK" && before.Size == a.Size
	for i, e := range logs {
		if e.First == a.First && e.Date.After(a.At) && (!retry || e.Size == a.Size) {
			return &logs[i]
		}
	}
	return nil
}

func nodeName(n string) string {
	if n == "" {
		return "a node not told"
	}
	return n
}

func answered(status int) string {
	if status == 0 {
		return "nothing (the connection closed first)"
	}
	return fmt.Sprint(status)
}
