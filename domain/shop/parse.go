package shop

import (
	"maps"
	"slices"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/values"
)

// fields maps each field of a shop to its validator, which returns the
// normal form or a reason.
var fields = map[string]func(any) (any, string){
	"name":           text,
	"email":          email,
	FieldShopType:    shopType,
	"phone_number":   text, // a shop's number is shown, never matched: kept as sent
	"street_address": text,
	"city":           text,
	"country":        country,
	FieldIsHidden:    boolean,
}

// Record is one import record, validated and normalised.
type Record struct {
	ExternalID string
	// Set and Unset are the record's changes (see Upserted).
	Set   map[string]any
	Unset []string
	// Ignored are the record's keys that are no field of a shop
	// (values.Ignored): the import run lists them as warnings.
	Ignored values.Ignored
}

// Problem is why a record is rejected; Reason never quotes the value.
type Problem = values.Problem

// Parser validates the records of one company.
type Parser struct{ shortName string }

// NewParser returns a parser for c's records: company fields carry c's
// short name.
func NewParser(c company.Company) *Parser { return &Parser{shortName: c.ShortName} }

// Parse validates one record, a JSON object. null is absent, "" removes
// the field (is_hidden: sets it to false, its default); an unknown key or
// another company's field is ignored and listed in Record.Ignored;
// external_id is required.
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	r := Record{Set: map[string]any{}}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		if v == nil {
			continue
		}
		if key == FieldExternalID {
			id, reason := externalID(v)
			if reason != "" {
				return Record{}, &Problem{Field: key, Reason: reason}
			}
			r.ExternalID = id
			continue
		}
		field, check := p.field(key)
		switch {
		case check == nil:
			r.Ignored.Ignore(key)
		case field == FieldIsHidden && values.Blank(v):
			r.Set[field] = false
		case values.Blank(v):
			r.Unset = append(r.Unset, field)
		default:
			nv, reason := check(v)
			if reason != "" {
				return Record{}, &Problem{Field: key, Reason: reason}
			}
			r.Set[field] = nv
		}
	}
	if r.ExternalID == "" {
		return Record{}, &Problem{Field: FieldExternalID, Reason: "external_id is required"}
	}
	return r, nil
}

// asSent keeps a company field's value as the client sent it.
func asSent(v any) (any, string) { return v, "" }

// field returns the stored name and validator of a record key, and a nil
// validator for a key that is no field of a shop. Company fields
// ("<ShortName>__<name>", prefix in any case) are stored under the
// company's short name, so that acme__x and ACME__x are one field.
func (p *Parser) field(key string) (string, func(any) (any, string)) {
	if check, ok := fields[key]; ok {
		return key, check
	}
	if field, ok := values.CompanyField(p.shortName, key); ok {
		return field, asSent
	}
	return "", nil
}
