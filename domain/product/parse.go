package product

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/values"
)

// Record is one import record, validated and normalised.
type Record struct {
	ExternalID string
	// Language is the record's language ("" when it names none); Book
	// uses it to tell a translation (method A) from the base record.
	Language string
	Changes  Changes
}

// Problem is why a record is rejected; Reason never quotes the value.
type Problem = values.Problem

// Parser validates the records of one company.
type Parser struct{ loc *time.Location }

// NewParser returns a parser for c's records: naive datetimes are read in
// c's timezone.
func NewParser(c company.Company) *Parser { return &Parser{loc: c.Location()} }

// Parse validates one record, a JSON object: external_id is required; null
// is absent; "" removes a field (but price, which a product always has);
// an unknown key rejects the record. Whether price is needed depends on
// the product's state, so Book.Decide checks it.
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	var r Record
	base := FieldChanges{Set: map[string]any{}}
	for _, key := range slices.Sorted(maps.Keys(m)) {
		v := m[key]
		var err error
		switch {
		case v == nil:
		case key == FieldExternalID:
			s, ok := values.Scalar(v)
			if r.ExternalID = strings.TrimSpace(s); !ok || r.ExternalID == "" || len(r.ExternalID) > 200 {
				err = &Problem{Field: key, Reason: "must be a non-empty string of at most 200 characters"}
			}
		case key == FieldStock && !values.Blank(v):
			r.Changes.Stock, err = stock(v)
		case key == FieldVersions && !values.Blank(v):
			r.Changes.Versions, err = p.versions(v)
		default:
			err = p.field(&base, key, v, true)
		}
		if err != nil {
			return Record{}, err
		}
	}
	if r.ExternalID == "" {
		return Record{}, &Problem{Field: FieldExternalID, Reason: "external_id is required"}
	}
	if l, ok := base.Set[FieldLanguage].(string); ok {
		r.Language = l
	}
	r.Changes.Set, r.Changes.Unset = base.Set, base.Unset
	return r, nil
}

// field validates one field into c. top is false inside a version, where
// only versionable fields are allowed.
func (p *Parser) field(c *FieldChanges, key string, v any, top bool) error {
	k, ok := fields[key]
	if top && (key == FieldStock || key == FieldVersions) {
		ok = true // "" for them: remove them whole
	}
	if !ok || (!top && !versionable(key)) {
		if values.SafeName(key) == "" {
			return &Problem{Reason: "unknown field (its name is not shown: it does not look like a field name)"}
		}
		if ok {
			return &Problem{Field: key, Reason: key + " cannot differ per version"}
		}
		return &Problem{Field: key, Reason: "unknown field " + key}
	}
	if values.Blank(v) {
		if key == FieldPrice && top {
			return &Problem{Field: key, Reason: "price is mandatory and cannot be removed"}
		}
		c.Unset = append(c.Unset, key)
		return nil
	}
	nv, reason := value(k, v, p.loc)
	if reason == "" && key == FieldRecSetIDs && len(nv.([]string)) > maxRecommendationSet {
		reason = "must hold at most 20 ids"
	}
	if reason != "" {
		return &Problem{Field: key, Reason: reason}
	}
	c.Set[key] = nv
	return nil
}
