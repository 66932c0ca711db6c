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
	// Ignored are the record's keys that are no field of a product
	// (values.Ignored); a key of a version as "versions.<dimension>.<key>"
	// whatever the version, and of a stock entry as "stock.<key>": the
	// import run lists them as warnings.
	Ignored values.Ignored
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
// a key that is no field of a product, at the top or in a version or a
// stock entry, is ignored and listed in Record.Ignored. Whether price is
// needed depends on the product's state, so Book.Decide checks it.
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
			r.Changes.Stock, err = stock(&r.Ignored, v)
		case key == FieldVersions && !values.Blank(v):
			r.Changes.Versions, err = p.versions(&r.Ignored, v)
		default:
			var known bool
			if known, err = p.field(&base, key, v, true); !known {
				r.Ignored.Ignore(key)
			}
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
// only versionable fields are allowed. known is false, and c unchanged,
// for a key that is no field of a product: the caller ignores it.
func (p *Parser) field(c *FieldChanges, key string, v any, top bool) (known bool, err error) {
	k, ok := fields[key]
	if !ok && key != FieldExternalID && key != FieldStock && key != FieldVersions {
		return false, nil
	}
	if !top && !versionable(key) {
		return true, &Problem{Field: key, Reason: key + " cannot differ per version"}
	}
	if values.Blank(v) {
		// At the top, "" for stock and versions removes them whole.
		if key == FieldPrice && top {
			return true, &Problem{Field: key, Reason: "price is mandatory and cannot be removed"}
		}
		c.Unset = append(c.Unset, key)
		return true, nil
	}
	nv, reason := value(k, v, p.loc)
	if reason == "" && key == FieldRecSetIDs && len(nv.([]string)) > maxRecommendationSet {
		reason = "must hold at most 20 ids"
	}
	if reason != "" {
		return true, &Problem{Field: key, Reason: reason}
	}
	c.Set[key] = nv
	return true, nil
}
