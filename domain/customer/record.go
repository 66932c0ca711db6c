package customer

import (
	"maps"
	"slices"

	"github.com/clientele/clientele/domain/values"
)

// Record is one import record, validated and normalised by Parser.Parse.
type Record struct {
	// ExternalID, Email and Phone are the record's identities in their
	// normal forms ("" when it gives none); they find the customer.
	ExternalID, Email, Phone string
	// Token is the customer_token the record names (trimmed; "" for
	// none). It finds the customer only when the record gives none of the
	// identities above (ByToken), and it is never a change: Clientele
	// issues tokens, no record sets one.
	Token string
	// Changes are what the record says about the customer. A record that
	// deletes or forgets applies none of them (see Book.Decide).
	Changes Changes
	// Delete and Forget are is_deleted and is_forgotten sent as true.
	Delete, Forget bool
	// MustExist: the record may change a customer but never create one
	// (an event that only refers to its customer); Decide rejects it with
	// ReasonNoMatch when nobody holds its identifiers.
	MustExist bool
	// Embedded: the record is the customer part of an event or a sale
	// (Parser.ParseEmbedded, where a blank value is not given and so
	// removes nothing). Identity fields that repeat what the customer
	// already holds are then no change, and a record left with no change
	// appends no event (a customer import records every record it
	// accepts).
	Embedded bool
	// Ignored are the record's keys that are no field of a customer
	// (values.Ignored): the import run lists them as warnings.
	Ignored values.Ignored
}

// Identity returns the record's identity of kind k, "" when it has none.
func (r Record) Identity(k Kind) string {
	switch k {
	case ExternalID:
		return r.ExternalID
	case Email:
		return r.Email
	case Phone:
		return r.Phone
	case Token:
		return r.Token
	}
	return ""
}

// ByToken reports whether the record's customer is found by its
// customer_token: the record names a token and no other identity. A token
// beside an external_id, email or phone number is ignored (see Token).
func (r Record) ByToken() bool {
	return r.Token != "" && r.ExternalID == "" && r.Email == "" && r.Phone == ""
}

// Problem is why a record is rejected: the field at fault, when one is,
// and a reason that never quotes the value, since rejections are stored
// and the value may be personal data.
type Problem = values.Problem

// Reasons of the rejections Book.Decide makes.
const (
	ReasonForgotten = "customer was forgotten"
	ReasonDeleted   = "customer was deleted; deletion is irreversible"
	ReasonNoMatch   = "no customer has the record's identifiers"
	ReasonNoID      = "at least one of external_id, phone_number, email, customer_token is required"
)

// FieldNames returns the names of the fields c changes, sorted: the
// Fields of its Upserted event. A list changed by add or remove is named
// as the list ("tags").
func (c Changes) FieldNames() []string {
	names := make([]string, 0, len(c.Set)+len(c.Unset)+len(c.Add)+len(c.Remove))
	names = slices.AppendSeq(names, maps.Keys(c.Set))
	names = append(names, c.Unset...)
	names = slices.AppendSeq(names, maps.Keys(c.Add))
	names = slices.AppendSeq(names, maps.Keys(c.Remove))
	slices.Sort(names)
	return slices.Compact(names)
}

func (c *Changes) set(field string, v any) {
	if c.Set == nil {
		c.Set = map[string]any{}
	}
	c.Set[field] = v
	c.Unset = slices.DeleteFunc(c.Unset, func(f string) bool { return f == field })
}

func (c *Changes) unset(field string) {
	delete(c.Set, field)
	if !slices.Contains(c.Unset, field) {
		c.Unset = append(c.Unset, field)
	}
}

// change adds elements to the list operation m[list] (c.Add or c.Remove).
func change(m *map[string][]string, list string, elems []string) {
	if len(elems) == 0 {
		return
	}
	if *m == nil {
		*m = map[string][]string{}
	}
	(*m)[list] = set(append((*m)[list], elems...))
}

// set sorts a list and drops duplicates: lists of a customer are sets.
func set(l []string) []string {
	slices.Sort(l)
	return slices.Compact(l)
}

// clone copies c so that an outcome does not share maps with its record.
func (c Changes) clone() Changes {
	return Changes{Set: maps.Clone(c.Set), Unset: slices.Clone(c.Unset),
		Add: maps.Clone(c.Add), Remove: maps.Clone(c.Remove)}
}
