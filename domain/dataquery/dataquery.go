// Package dataquery is the bulk conditional update of the interface
// (POST /api/data/query/ {datatype, match, update}): which records match,
// and the import record that applies the update to each.
//
// An update is applied as import records through the entity's import
// pipeline, so that it follows every rule of an import (the same
// validation, events and projections, one writer per company) and is
// reported like one (an import run with its rejections). The matching
// reads the read models (what retrieval shows).
package dataquery

import (
	"bytes"
	"encoding/json"
	"errors"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/values"
)

// Condition is one key of match: the field equals Value (a JSON value; a
// list field matches when it contains it), or, for "<field>.exists", the
// field is present (Exists true) or absent.
type Condition struct {
	Field  string
	Value  json.RawMessage
	Exists *bool
}

// Query is a parsed request.
type Query struct {
	Datatype importing.Entity
	Match    []Condition
	// Update holds the fields to set on every match, as in an import
	// record of the datatype.
	Update map[string]any
}

// identifiers are, by datatype, the fields that name a record in an
// import, in the order they are tried on a matched document; an update
// must not change them (it would move every match onto one record). A
// customer is named by its tracking token first: the token finds exactly
// the customer it was issued to, whereas a stored external_id, email or
// phone number may be one whose key moved to another customer since
// (docs/customers.md, Identity, rule 4). Customers from before tokens not
// yet given one are named by the others.
var identifiers = map[importing.Entity][]string{
	importing.Events:    {"id"},
	importing.Customers: {"customer_token", "external_id", "email", "phone_number"},
	importing.Products:  {"external_id"},
	importing.Shops:     {"external_id"},
	importing.Sales:     {"sale_external_id"},
}

var fieldRE = regexp.MustCompile(`^[A-Za-z0-9_]{1,100}$`)

// Parse reads and checks a request body. A malformed body is
// domain.Invalid (400); a well-formed one that breaks a rule is
// domain.Validation (422) with the problems in Details. The values of
// update are checked by the datatype's import rules when applied, and a
// bad one is a rejection on the import run; CheckUpdate (in the commands)
// refuses an update that no record could accept before anything runs.
func Parse(body []byte) (Query, error) {
	var req struct {
		Datatype string                     `json:"datatype"`
		Match    map[string]json.RawMessage `json:"match"`
		Update   map[string]json.RawMessage `json:"update"`
	}
	d := json.NewDecoder(bytes.NewReader(body))
	d.DisallowUnknownFields()
	if err := d.Decode(&req); err != nil {
		e := domain.JSONDecodeError(err)
		var de *domain.Error
		if errors.As(e, &de) {
			return Query{}, &domain.Error{Code: domain.Invalid, Message: "a data query is a JSON object {datatype, match, update}: " + de.Message, Details: de.Details}
		}
		return Query{}, domain.Errorf(domain.Invalid, "a data query is a JSON object {datatype, match, update}")
	}
	if err := storable(body, req.Match, req.Update); err != nil {
		return Query{}, err
	}
	var problems []domain.FieldError
	bad := func(field, reason string) {
		problems = append(problems, domain.FieldError{Field: field, Reason: reason})
	}
	q := Query{Datatype: importing.Entity(strings.ToLower(strings.TrimSpace(req.Datatype)))}
	ids, ok := identifiers[q.Datatype]
	if !ok {
		bad("datatype", "must be one of customers, events, products, sales, shops")
	}
	if len(req.Match) == 0 {
		bad("match", "must name at least one field: an update of every record is not done by accident")
	}
	for _, key := range slices.Sorted(maps.Keys(req.Match)) {
		raw := req.Match[key]
		field, exists := strings.CutSuffix(key, ".exists")
		if !fieldRE.MatchString(field) {
			bad("match", "a key must be a field name or <field>.exists")
			continue
		}
		c := Condition{Field: field}
		if exists {
			var b bool
			if err := json.Unmarshal(raw, &b); err != nil {
				bad("match."+key, "must be true or false")
				continue
			}
			c.Exists = &b
		} else {
			if !scalar(raw) {
				bad("match."+key, "must be a string, a number, a boolean or null")
				continue
			}
			if string(bytes.TrimSpace(raw)) == "null" {
				// null is absent, as in imports.
				f := false
				c.Exists = &f
			} else {
				c.Value = raw
			}
		}
		q.Match = append(q.Match, c)
	}
	if len(req.Update) == 0 {
		bad("update", "must set at least one field")
	}
	q.Update = map[string]any{}
	for _, key := range slices.Sorted(maps.Keys(req.Update)) {
		if slices.Contains(ids, key) {
			bad("update."+key, key+" identifies the records and cannot be updated in bulk")
			continue
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(req.Update[key]))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			bad("update."+key, "is not a JSON value")
			continue
		}
		q.Update[key] = v
	}
	if q.Datatype == importing.Events && len(problems) == 0 {
		if len(q.Update) != 1 || q.Update["is_deleted"] != true {
			bad("update", `events are immutable: the only update is {"is_deleted": true}`)
		}
	}
	if len(problems) > 0 {
		return Query{}, &domain.Error{Code: domain.Validation, Message: "invalid data query", Details: problems}
	}
	return q, nil
}

// Record returns the import record that applies the update to a matched
// document (retrieval form): its identifier and the update. ok is false
// when the document has no identifier left (a forgotten customer), and
// then nothing can be applied to it.
func (q Query) Record(doc map[string]any) (record map[string]any, ok bool) {
	for _, f := range identifiers[q.Datatype] {
		if v, found := doc[f]; found && v != nil && v != "" {
			record = maps.Clone(q.Update)
			record[f] = v
			return record, true
		}
	}
	return nil, false
}

// storable refuses, as a malformed request (400), a body holding a value
// PostgreSQL cannot store (values.Storable): match values are compared
// in jsonb, and update values become import records, in which a lone
// surrogate escape would have been turned into U+FFFD on the way. The
// member at fault is named when it is a value of match or update.
func storable(body []byte, match, update map[string]json.RawMessage) error {
	var problems []domain.FieldError
	for _, part := range []struct {
		name    string
		members map[string]json.RawMessage
	}{{"match", match}, {"update", update}} {
		for _, key := range slices.Sorted(maps.Keys(part.members)) {
			if _, reason := values.Storable(part.members[key]); reason != "" {
				name := part.name
				if f := values.SafeName(key); f != "" {
					name += "." + f
				}
				problems = append(problems, domain.FieldError{Field: name, Reason: reason})
			}
		}
	}
	if len(problems) == 0 {
		// The rest: keys, datatype.
		if field, reason := values.Storable(body); reason != "" {
			problems = append(problems, domain.FieldError{Field: field, Reason: reason})
		}
	}
	if len(problems) == 0 {
		return nil
	}
	return &domain.Error{Code: domain.Invalid, Message: "the data query holds a value that cannot be stored: " + strings.TrimSpace(problems[0].Field+" "+problems[0].Reason), Details: problems}
}

// scalar reports whether raw is a JSON string, number, boolean or null.
// Numbers are read as text: a float64 cannot hold every number PostgreSQL
// can (1e400).
func scalar(raw json.RawMessage) bool {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return false
	}
	switch v.(type) {
	case string, json.Number, bool, nil:
		return true
	}
	return false
}
