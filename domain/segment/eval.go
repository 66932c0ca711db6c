package segment

import (
	"encoding/json"
	"strconv"
	"strings"
	"time"
)

// Facts are what a rule is decided on for one customer.
type Facts struct {
	// Customer is the customer as retrieval shows it, decoded with
	// json.Decoder.UseNumber (numbers as json.Number).
	Customer map[string]any
	// Events are the customer's non-deleted events.
	Events []Activity
	// Sales are the customer's counted sales (not deleted, not CANCELLED
	// or CLOSED).
	Sales []Sale
	// Member reports whether the customer is a member of another segment
	// now, and the next instant that may change with no new data (zero:
	// none); nil when the rule names none.
	Member func(key string) (bool, time.Time)
}

// Activity is one of a customer's events (the activity entity) as an event
// leaf reads it.
type Activity struct {
	Type string
	At   time.Time
	// Fields are the event's own fields, decoded as Customer is.
	Fields map[string]any
}

// Sale is one of a customer's counted sales as a sales leaf reads it.
type Sale struct {
	At time.Time
	// Revenue is the sale's total in minor units of the company's
	// currency.
	Revenue int64
	// Products are the product ids of its rows.
	Products []string
}

// day is the length of a window's day: windows are counted in hours, so
// that a member leaves at the same instant in every time zone.
const day = 24 * time.Hour

// Decide returns whether r holds for f at now, and the first instant
// after now at which the answer may change with no new data (a window
// passing); zero when only new data can change it. Deciding again at that
// instant is always right: it may find the same answer (an all whose
// other part still fails, say).
func Decide(r Rule, f Facts, now time.Time) (bool, time.Time) {
	switch {
	case r.All != nil:
		ok, next := true, time.Time{}
		for _, sub := range r.All {
			v, n := Decide(sub, f, now)
			ok = ok && v
			next = earlier(next, n)
		}
		return ok, next
	case r.Any != nil:
		ok, next := false, time.Time{}
		for _, sub := range r.Any {
			v, n := Decide(sub, f, now)
			ok = ok || v
			next = earlier(next, n)
		}
		return ok, next
	case r.Not != nil:
		v, n := Decide(*r.Not, f, now)
		return !v, n
	case r.Segment != "":
		if f.Member == nil {
			return false, time.Time{}
		}
		return f.Member(r.Segment)
	case r.Field != nil:
		return decideField(*r.Field, f.Customer, now)
	case r.Event != nil:
		return decideEvents(*r.Event, f.Events, now)
	case r.Sales != nil:
		return decideSales(*r.Sales, f.Sales, now)
	}
	return false, time.Time{}
}

// earlier returns the earlier of two instants, zero standing for never.
func earlier(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

// decideField decides a field leaf on a document (the customer's, or an
// event's). An absent field, or null, matches only exists false, ne and
// not_within_days.
func decideField(l FieldLeaf, doc map[string]any, now time.Time) (bool, time.Time) {
	v, present := doc[l.Field]
	if v == nil {
		present = false
	}
	if !present {
		switch l.Op {
		case Exists:
			return !l.Value.(bool), time.Time{}
		case Ne, NotWithinDays:
			return true, time.Time{}
		}
		return false, time.Time{}
	}
	switch l.Op {
	case Exists:
		return l.Value.(bool), time.Time{}
	case Eq:
		return matchesAny(v, func(x any) bool { return equal(x, l.Value) }), time.Time{}
	case Ne:
		return !matchesAny(v, func(x any) bool { return equal(x, l.Value) }), time.Time{}
	case In:
		values := l.Value.([]any)
		return matchesAny(v, func(x any) bool {
			for _, w := range values {
				if equal(x, w) {
					return true
				}
			}
			return false
		}), time.Time{}
	case Contains:
		if s, ok := v.(string); ok {
			w, ok := l.Value.(string)
			return ok && strings.Contains(strings.ToLower(s), strings.ToLower(w)), time.Time{}
		}
		list, ok := v.([]any)
		if !ok {
			return false, time.Time{}
		}
		for _, x := range list {
			if equal(x, l.Value) {
				return true, time.Time{}
			}
		}
		return false, time.Time{}
	case Gt, Gte, Lt, Lte:
		c, ok := compare(v, l.Value)
		if !ok {
			return false, time.Time{}
		}
		switch l.Op {
		case Gt:
			return c > 0, time.Time{}
		case Gte:
			return c >= 0, time.Time{}
		case Lt:
			return c < 0, time.Time{}
		}
		return c <= 0, time.Time{}
	case WithinDays, NotWithinDays:
		s, ok := v.(string)
		at, ok2 := instant(s)
		if !ok || !ok2 {
			// Not a date: never within a window.
			return l.Op == NotWithinDays, time.Time{}
		}
		in, next := window(at, time.Duration(l.Days)*day, now)
		return in == (l.Op == WithinDays), next
	}
	return false, time.Time{}
}

// window reports whether at is within the span before now (after now-d,
// not after now), and the next instant that changes: at itself while it
// is ahead, at+d while it is within, never after.
func window(at time.Time, d time.Duration, now time.Time) (bool, time.Time) {
	switch {
	case at.After(now):
		return false, at
	case at.Add(d).After(now):
		return true, at.Add(d)
	}
	return false, time.Time{}
}

// matchesAny applies match to v, or to each element of v when it is a
// list (tags, mailing_lists): a list field equals a value it holds.
func matchesAny(v any, match func(any) bool) bool {
	if list, ok := v.([]any); ok {
		for _, x := range list {
			if match(x) {
				return true
			}
		}
		return false
	}
	return match(v)
}

// equal compares two decoded JSON scalars with their JSON type: "5" is
// not 5; numbers compare by value (1 equals 1.0).
func equal(a, b any) bool {
	switch a := a.(type) {
	case json.Number:
		b, ok := b.(json.Number)
		if !ok {
			return false
		}
		x, err1 := strconv.ParseFloat(a.String(), 64)
		y, err2 := strconv.ParseFloat(b.String(), 64)
		return err1 == nil && err2 == nil && x == y
	case string, bool, nil:
		return a == b
	}
	return false
}

// compare orders a field's value against a leaf's: numbers by value,
// dates and datetimes as instants; ok is false when they do not compare.
func compare(v, w any) (int, bool) {
	switch w := w.(type) {
	case json.Number:
		n, ok := v.(json.Number)
		if !ok {
			return 0, false
		}
		x, err1 := strconv.ParseFloat(n.String(), 64)
		y, err2 := strconv.ParseFloat(w.String(), 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		switch {
		case x < y:
			return -1, true
		case x > y:
			return 1, true
		}
		return 0, true
	case string:
		s, ok := v.(string)
		if !ok {
			return 0, false
		}
		x, ok1 := instant(s)
		y, ok2 := instant(w)
		if !ok1 || !ok2 {
			return 0, false
		}
		return x.Compare(y), true
	}
	return 0, false
}

// instant reads a date (2026-03-01, midnight UTC) or a datetime (RFC
// 3339, or without a zone taken as UTC).
func instant(s string) (time.Time, bool) {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// decideEvents decides an event leaf: at least MinCount of the events of
// its type matching where, within the window.
func decideEvents(l EventLeaf, events []Activity, now time.Time) (bool, time.Time) {
	var at []time.Time
	for _, e := range events {
		if e.Type != l.Type || !matchesWhere(l.Where, e.Fields, now) {
			continue
		}
		at = append(at, e.At)
	}
	return counted(at, nil, l.WithinDays, l.MinCount, 0, now)
}

// matchesWhere decides the where-leaves of an event leaf on the event's
// fields (ParseRule refuses day windows there, so time does not move
// them).
func matchesWhere(where []FieldLeaf, fields map[string]any, now time.Time) bool {
	for _, w := range where {
		if ok, _ := decideField(w, fields, now); !ok {
			return false
		}
	}
	return true
}

// decideSales decides a sales leaf.
func decideSales(l SalesLeaf, sales []Sale, now time.Time) (bool, time.Time) {
	var at []time.Time
	var revenue []int64
	for _, s := range sales {
		if l.ProductID != "" && !holds(s.Products, l.ProductID) {
			continue
		}
		at = append(at, s.At)
		revenue = append(revenue, s.Revenue)
	}
	return counted(at, revenue, l.WithinDays, l.MinCount, l.MinRevenue, now)
}

func holds(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// counted decides "at least minCount of these, and at least minRevenue
// in sum when revenue is given, within the last days (0: ever)" at now,
// and finds the next instant the answer changes by the window alone: it
// walks the instants where an item enters (its date, while ahead) or
// leaves (its date plus the window) until the answer differs.
func counted(at []time.Time, revenue []int64, days, minCount int, minRevenue int64, now time.Time) (bool, time.Time) {
	holdsAt := func(t time.Time) bool {
		n, sum := 0, int64(0)
		for i, a := range at {
			if a.After(t) {
				continue
			}
			if days > 0 && !a.Add(time.Duration(days)*day).After(t) {
				continue
			}
			n++
			if revenue != nil {
				sum += revenue[i]
			}
		}
		return n >= minCount && sum >= minRevenue
	}
	now0 := holdsAt(now)
	var changes []time.Time
	for _, a := range at {
		if a.After(now) {
			changes = append(changes, a)
		}
		if days > 0 {
			if end := a.Add(time.Duration(days) * day); end.After(now) {
				changes = append(changes, end)
			}
		}
	}
	var next time.Time
	for _, c := range changes {
		if (next.IsZero() || c.Before(next)) && holdsAt(c) != now0 {
			next = c
		}
	}
	return now0, next
}
