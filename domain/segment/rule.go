// Package segment holds the rules of segments (docs/segments.md): a named
// rule over customers whose members Clientele keeps current from the log,
// as data arrives and as time passes (../shared/spec/decisions.md,
// "Segments"). This file reads and checks a rule; eval.go decides it for
// one customer at an instant, and when that answer will next change with
// no new data.
package segment

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/clientele/clientele/domain"
)

// Limits of one rule, so that no rule costs more than its own request to
// read, store or decide.
const (
	// MaxDepth bounds the nesting of all, any and not.
	MaxDepth = 16
	// MaxLeaves bounds the leaves of a rule, event where-leaves included.
	MaxLeaves = 100
	// MaxInValues bounds the values of one in leaf.
	MaxInValues = 1000
	// MaxDays bounds a window: about 100 years.
	MaxDays = 36600
	// MaxValueBytes bounds one value of a leaf (a string, a number's text).
	MaxValueBytes = 1024
)

// Op is the comparison of a field leaf.
type Op string

// The operators of field leaves.
const (
	Eq            Op = "eq"
	Ne            Op = "ne"
	In            Op = "in"
	Contains      Op = "contains"
	Exists        Op = "exists"
	Gt            Op = "gt"
	Gte           Op = "gte"
	Lt            Op = "lt"
	Lte           Op = "lte"
	WithinDays    Op = "within_days"
	NotWithinDays Op = "not_within_days"
)

var ops = []Op{Eq, Ne, In, Contains, Exists, Gt, Gte, Lt, Lte, WithinDays, NotWithinDays}

// Rule is a node of a segment's rule: exactly one of its fields is set.
type Rule struct {
	All     []Rule
	Any     []Rule
	Not     *Rule
	Field   *FieldLeaf
	Event   *EventLeaf
	Sales   *SalesLeaf
	Segment string // the key of another segment
}

// FieldLeaf compares a field of the customer (or, in an event leaf's
// where, of the event).
type FieldLeaf struct {
	Field string
	Op    Op
	// Value is what the field is compared with, as decoded JSON (string,
	// json.Number, bool, nil), a list of those for In, the flag for
	// Exists, and nil for the day windows.
	Value any
	// Days is the window of WithinDays and NotWithinDays.
	Days int
}

// EventLeaf holds when the customer has at least MinCount non-deleted
// events of Type matching Where, dated within the last WithinDays days
// (0: ever).
type EventLeaf struct {
	Type       string
	Where      []FieldLeaf
	WithinDays int
	MinCount   int
}

// SalesLeaf holds when the customer has at least MinCount counted sales
// dated within the last WithinDays days (0: ever), at least MinRevenue of
// revenue in sum (minor units of the company's currency; 0: any), with a
// row of ProductID when it is set.
type SalesLeaf struct {
	WithinDays int
	MinCount   int
	MinRevenue int64
	ProductID  string
}

// ParseRule reads a rule as the API takes it. A bad rule is a
// domain.Validation error whose one detail names the path of the bad part
// ("rule.all[2].field.gt", say).
func ParseRule(raw json.RawMessage) (Rule, error) {
	p := parser{}
	r, err := p.rule(raw, "rule", 0)
	if err != nil {
		return Rule{}, err
	}
	return r, nil
}

type parser struct {
	leaves int
}

// invalid is the error of the part at path.
func invalid(path, reason string) error {
	e := domain.Errorf(domain.Validation, "invalid rule: %s %s", path, reason)
	e.Details = []domain.FieldError{{Field: path, Reason: reason}}
	return e
}

// object reads raw as a JSON object; the order of its keys has no
// meaning in a rule.
func object(raw json.RawMessage, path string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil || m == nil {
		return nil, invalid(path, "must be an object")
	}
	return m, nil
}

func (p *parser) rule(raw json.RawMessage, path string, depth int) (Rule, error) {
	if depth > MaxDepth {
		return Rule{}, invalid(path, fmt.Sprintf("nests all, any and not more than %d deep", MaxDepth))
	}
	m, err := object(raw, path)
	if err != nil {
		return Rule{}, err
	}
	kinds := []string{"all", "any", "not", "field", "event", "sales", "segment"}
	var kind string
	for _, k := range kinds {
		if _, ok := m[k]; ok {
			if kind != "" {
				return Rule{}, invalid(path, fmt.Sprintf("must have one of %s, not both %s and %s", strings.Join(kinds, ", "), kind, k))
			}
			kind = k
		}
	}
	if kind == "" {
		return Rule{}, invalid(path, "must have one of "+strings.Join(kinds, ", "))
	}
	switch kind {
	case "all", "any":
		if len(m) != 1 {
			return Rule{}, unknownKey(m, path, kind)
		}
		var list []json.RawMessage
		if err := json.Unmarshal(m[kind], &list); err != nil || len(list) == 0 {
			return Rule{}, invalid(path+"."+kind, "must be a list of at least one rule")
		}
		out := make([]Rule, len(list))
		for i, sub := range list {
			if out[i], err = p.rule(sub, fmt.Sprintf("%s.%s[%d]", path, kind, i), depth+1); err != nil {
				return Rule{}, err
			}
		}
		if kind == "all" {
			return Rule{All: out}, nil
		}
		return Rule{Any: out}, nil
	case "not":
		if len(m) != 1 {
			return Rule{}, unknownKey(m, path, kind)
		}
		sub, err := p.rule(m["not"], path+".not", depth+1)
		if err != nil {
			return Rule{}, err
		}
		return Rule{Not: &sub}, nil
	case "segment":
		if len(m) != 1 {
			return Rule{}, unknownKey(m, path, kind)
		}
		var key string
		if err := json.Unmarshal(m["segment"], &key); err != nil || !ValidKey(key) {
			return Rule{}, invalid(path+".segment", "must be a segment key (letters, digits and dashes)")
		}
		if err := p.leaf(path); err != nil {
			return Rule{}, err
		}
		return Rule{Segment: key}, nil
	case "field":
		f, err := p.field(m, path)
		if err != nil {
			return Rule{}, err
		}
		return Rule{Field: &f}, nil
	case "event":
		if len(m) != 1 {
			return Rule{}, unknownKey(m, path, kind)
		}
		ev, err := p.event(m["event"], path+".event")
		if err != nil {
			return Rule{}, err
		}
		return Rule{Event: &ev}, nil
	default: // sales
		if len(m) != 1 {
			return Rule{}, unknownKey(m, path, kind)
		}
		s, err := p.sales(m["sales"], path+".sales")
		if err != nil {
			return Rule{}, err
		}
		return Rule{Sales: &s}, nil
	}
}

// unknownKey names a key of m beside the rule's kind.
func unknownKey(m map[string]json.RawMessage, path, kind string) error {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k != kind {
			return invalid(path, fmt.Sprintf("has %q beside %q", truncate(k), kind))
		}
	}
	return invalid(path, "is not a rule")
}

// leaf counts one leaf against MaxLeaves.
func (p *parser) leaf(path string) error {
	p.leaves++
	if p.leaves > MaxLeaves {
		return invalid(path, fmt.Sprintf("is one leaf too many: a rule has at most %d", MaxLeaves))
	}
	return nil
}

// field reads a field leaf, {"field": F, OP: value}.
func (p *parser) field(m map[string]json.RawMessage, path string) (FieldLeaf, error) {
	if err := p.leaf(path); err != nil {
		return FieldLeaf{}, err
	}
	var f FieldLeaf
	if err := json.Unmarshal(m["field"], &f.Field); err != nil || f.Field == "" || len(f.Field) > 200 {
		return f, invalid(path+".field", "must be a field name")
	}
	if len(m) != 2 {
		return f, invalid(path, "must have the field and one operator of "+opList())
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		if k == "field" {
			continue
		}
		f.Op = Op(k)
		if !validOp(f.Op) {
			return f, invalid(path, fmt.Sprintf("has %q, which is no operator of %s", truncate(k), opList()))
		}
		opPath := path + "." + k
		var err error
		switch f.Op {
		case Exists:
			var b bool
			if json.Unmarshal(v, &b) != nil {
				return f, invalid(opPath, "must be true or false")
			}
			f.Value = b
		case WithinDays, NotWithinDays:
			if f.Days, err = days(v, opPath, false); err != nil {
				return f, err
			}
		case In:
			var list []json.RawMessage
			if json.Unmarshal(v, &list) != nil || len(list) == 0 || len(list) > MaxInValues {
				return f, invalid(opPath, fmt.Sprintf("must be a list of 1 to %d values", MaxInValues))
			}
			values := make([]any, len(list))
			for i, item := range list {
				if values[i], err = scalar(item, fmt.Sprintf("%s[%d]", opPath, i)); err != nil {
					return f, err
				}
			}
			f.Value = values
		case Gt, Gte, Lt, Lte:
			if f.Value, err = scalar(v, opPath); err != nil {
				return f, err
			}
			switch f.Value.(type) {
			case json.Number, string:
			default:
				return f, invalid(opPath, "must be a number, a date or a datetime")
			}
			if s, ok := f.Value.(string); ok {
				if _, ok := instant(s); !ok {
					return f, invalid(opPath, "must be a number, a date (2026-03-01) or a datetime (2026-03-01T12:00:00Z)")
				}
			}
		case Contains:
			if f.Value, err = scalar(v, opPath); err != nil {
				return f, err
			}
			if f.Value == nil {
				return f, invalid(opPath, "must be a value, not null")
			}
		default: // eq, ne
			if f.Value, err = scalar(v, opPath); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

// scalar reads a value a field is compared with: a string, a number, a
// boolean or null, within MaxValueBytes.
func scalar(raw json.RawMessage, path string) (any, error) {
	if len(raw) > MaxValueBytes+2 {
		return nil, invalid(path, fmt.Sprintf("is longer than %d bytes", MaxValueBytes))
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, invalid(path, "must be a string, a number, true, false or null")
	}
	switch v := v.(type) {
	case string, bool, nil:
		return v, nil
	case json.Number:
		if _, err := strconv.ParseFloat(v.String(), 64); err != nil {
			return nil, invalid(path, "must be a number within the range of a double")
		}
		return v, nil
	}
	return nil, invalid(path, "must be a string, a number, true, false or null")
}

// days reads a window or a count: a whole number from 1 (0 too when
// zero) to MaxDays.
func days(raw json.RawMessage, path string, zero bool) (int, error) {
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&n) != nil {
		return 0, invalid(path, fmt.Sprintf("must be a whole number of days from 1 to %d", MaxDays))
	}
	v, err := strconv.ParseInt(n.String(), 10, 64)
	low := int64(1)
	if zero {
		low = 0
	}
	if err != nil || v < low || v > MaxDays {
		return 0, invalid(path, fmt.Sprintf("must be a whole number of days from 1 to %d", MaxDays))
	}
	return int(v), nil
}

// count reads a minimum count, 1 to a million.
func count(raw json.RawMessage, path string) (int, error) {
	var v int
	if json.Unmarshal(raw, &v) != nil || v < 1 || v > 1_000_000 {
		return 0, invalid(path, "must be a whole number from 1 to 1000000")
	}
	return v, nil
}

// event reads an event leaf's body.
func (p *parser) event(raw json.RawMessage, path string) (EventLeaf, error) {
	if err := p.leaf(path); err != nil {
		return EventLeaf{}, err
	}
	m, err := object(raw, path)
	if err != nil {
		return EventLeaf{}, err
	}
	ev := EventLeaf{MinCount: 1}
	if err := json.Unmarshal(m["type"], &ev.Type); err != nil || ev.Type == "" || len(ev.Type) > 200 {
		return ev, invalid(path+".type", "must be an event type")
	}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "type":
		case "within_days":
			if ev.WithinDays, err = days(v, path+"."+k, false); err != nil {
				return ev, err
			}
		case "min_count":
			if ev.MinCount, err = count(v, path+"."+k); err != nil {
				return ev, err
			}
		case "where":
			var list []json.RawMessage
			if json.Unmarshal(v, &list) != nil {
				return ev, invalid(path+".where", "must be a list of field leaves")
			}
			for i, item := range list {
				lp := fmt.Sprintf("%s.where[%d]", path, i)
				lm, err := object(item, lp)
				if err != nil {
					return ev, err
				}
				if _, ok := lm["field"]; !ok {
					return ev, invalid(lp, "must be a field leaf")
				}
				f, err := p.field(lm, lp)
				if err != nil {
					return ev, err
				}
				if f.Op == WithinDays || f.Op == NotWithinDays {
					// The event's window is the leaf's within_days: a second
					// window on one of its fields would move the answer with
					// time in a way no next-change instant follows.
					return ev, invalid(lp+"."+string(f.Op), "is not allowed on an event's fields: use the event leaf's within_days")
				}
				ev.Where = append(ev.Where, f)
			}
		default:
			return ev, invalid(path, fmt.Sprintf("has %q, which is not type, where, within_days or min_count", truncate(k)))
		}
	}
	return ev, nil
}

// sales reads a sales leaf's body.
func (p *parser) sales(raw json.RawMessage, path string) (SalesLeaf, error) {
	if err := p.leaf(path); err != nil {
		return SalesLeaf{}, err
	}
	m, err := object(raw, path)
	if err != nil {
		return SalesLeaf{}, err
	}
	s := SalesLeaf{MinCount: 1}
	for _, k := range slices.Sorted(maps.Keys(m)) {
		v := m[k]
		switch k {
		case "within_days":
			if s.WithinDays, err = days(v, path+"."+k, false); err != nil {
				return s, err
			}
		case "min_count":
			if s.MinCount, err = count(v, path+"."+k); err != nil {
				return s, err
			}
		case "min_revenue":
			if json.Unmarshal(v, &s.MinRevenue) != nil || s.MinRevenue < 0 {
				return s, invalid(path+"."+k, "must be a whole amount in minor units (cents), 0 or more")
			}
		case "product_id":
			if json.Unmarshal(v, &s.ProductID) != nil || s.ProductID == "" || len(s.ProductID) > 200 {
				return s, invalid(path+"."+k, "must be a product id")
			}
		default:
			return s, invalid(path, fmt.Sprintf("has %q, which is not within_days, min_count, min_revenue or product_id", truncate(k)))
		}
	}
	return s, nil
}

func validOp(op Op) bool {
	for _, o := range ops {
		if o == op {
			return true
		}
	}
	return false
}

func opList() string {
	s := make([]string, len(ops))
	for i, o := range ops {
		s[i] = string(o)
	}
	return strings.Join(s, ", ")
}

// truncate bounds a client's key quoted in an error.
func truncate(s string) string {
	if len(s) > 64 {
		return strings.ToValidUTF8(s[:64], "") + "..."
	}
	return s
}

// ValidKey reports whether key is a segment key: 1 to 100 letters, digits
// and dashes.
func ValidKey(key string) bool {
	if key == "" || len(key) > 100 {
		return false
	}
	for _, c := range key {
		if !(c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') {
			return false
		}
	}
	return true
}

// Ref is a segment leaf of a rule: the key it names and the path of the
// leaf, as a 422 names it.
type Ref struct {
	Key  string
	Path string
}

// Refs returns the segment leaves of the rule, in the order written.
func (r Rule) Refs() []Ref {
	var out []Ref
	var walk func(Rule, string)
	walk = func(r Rule, path string) {
		switch {
		case r.Segment != "":
			out = append(out, Ref{Key: r.Segment, Path: path + ".segment"})
		case r.Not != nil:
			walk(*r.Not, path+".not")
		}
		for i, sub := range r.All {
			walk(sub, fmt.Sprintf("%s.all[%d]", path, i))
		}
		for i, sub := range r.Any {
			walk(sub, fmt.Sprintf("%s.any[%d]", path, i))
		}
	}
	walk(r, "rule")
	return out
}

// Segments returns the keys of the segments the rule names, each once, in
// the order first named.
func (r Rule) Segments() []string {
	var out []string
	for _, ref := range r.Refs() {
		if !slices.Contains(out, ref.Key) {
			out = append(out, ref.Key)
		}
	}
	return out
}

// CheckRefs refuses a rule for the segment key that names a segment that
// does not exist, or that would make a cycle: key reached again by
// following segment leaves through the rules of the segments named.
// rules returns a segment's rule and whether the segment exists. The
// error is a domain.Validation naming the path of the leaf at fault.
func CheckRefs(key string, r Rule, rules func(key string) (Rule, bool, error)) error {
	for _, ref := range r.Refs() {
		if ref.Key == key {
			return invalid(ref.Path, "names the segment itself")
		}
		sub, ok, err := rules(ref.Key)
		if err != nil {
			return err
		}
		if !ok {
			return invalid(ref.Path, fmt.Sprintf("names %s, which is no segment of the company", ref.Key))
		}
		if back, err := reaches(key, sub, rules, map[string]bool{ref.Key: true}); err != nil {
			return err
		} else if back {
			return invalid(ref.Path, fmt.Sprintf("would make a cycle: %s leads back to %s", ref.Key, key))
		}
	}
	return nil
}

// reaches reports whether r leads to key through segment leaves; seen
// holds the segments visited.
func reaches(key string, r Rule, rules func(key string) (Rule, bool, error), seen map[string]bool) (bool, error) {
	for _, k := range r.Segments() {
		if k == key {
			return true, nil
		}
		if seen[k] {
			continue
		}
		seen[k] = true
		sub, ok, err := rules(k)
		if err != nil || !ok {
			return false, err
		}
		if back, err := reaches(key, sub, rules, seen); err != nil || back {
			return back, err
		}
	}
	return false, nil
}
