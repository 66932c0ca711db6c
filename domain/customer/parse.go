package customer

import (
	"slices"
	"time"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/values"
)

// Parser validates and normalises the records of one company.
type Parser struct {
	shortName string
	loc       *time.Location
}

// NewParser returns a parser for c's records: naive datetimes are read in
// c's timezone and company-specific fields carry c's short name.
func NewParser(c company.Company) *Parser {
	return &Parser{shortName: c.ShortName, loc: c.Location()}
}

// Parse validates one record, a JSON object, and returns it normalised.
// A record breaking any rule is refused whole with a *Problem naming the
// first field at fault in key order. The rules:
//
//   - null is absent; "" (or only spaces) removes the field (Unset),
//     except that it sets a permission to false and is no flag at all;
//   - every value is checked and normalised to the form the doc of
//     Changes lists, and values from CSV (all strings) are coerced;
//   - an unknown key, or a company field with another company's prefix,
//     rejects the record: dropping it would lose data the client believes
//     stored, and a typo in a column name would go unnoticed;
//   - the record needs one of external_id, phone_number, email.
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	return p.ParseMap(m)
}

// ParseMap validates a decoded record (values.DecodeRecord) by the rules
// of Parse. Events and sales use it for the customer part they carry,
// written with the customer's field names.
func (p *Parser) ParseMap(m map[string]any) (Record, error) {
	// Room for the permissions a created customer gets by default.
	r := Record{Changes: Changes{Set: make(map[string]any, len(m)+len(Permissions))}}
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if v := m[key]; v != nil {
			if err := p.field(&r, key, v); err != nil {
				return Record{}, err
			}
		}
	}
	if r.ExternalID == "" && r.Email == "" && r.Phone == "" {
		return Record{}, &Problem{Reason: ReasonNoID}
	}
	slices.Sort(r.Changes.Unset)
	return r, nil
}

func (p *Parser) field(r *Record, key string, v any) error {
	if op, ok := listOps[key]; ok {
		return listOp(&r.Changes, key, op.list, op.add, v)
	}
	k, ok := fields[key]
	if !ok {
		return p.companyField(&r.Changes, key, v)
	}
	c := &r.Changes
	switch k {
	case kindFlag:
		if values.Blank(v) {
			return nil
		}
		b, reason := values.Bool(v)
		if reason != "" {
			return &Problem{Field: key, Reason: reason}
		}
		if key == FieldIsDeleted {
			r.Delete = b
		} else {
			r.Forget = b
		}
		return nil
	case kindPermission:
		// Without a permission there is no permission: removing one is
		// setting it to false, so the field always has a value.
		b, reason := false, ""
		if !values.Blank(v) {
			b, reason = values.Bool(v)
		}
		if reason != "" {
			return &Problem{Field: key, Reason: reason}
		}
		c.set(key, b)
		return nil
	case kindList:
		if obj, ok := v.(map[string]any); ok {
			// {"tags": {"add": [...]}}: what property-path CSV columns
			// such as tags.add.0 become.
			return listOpObject(c, key, obj)
		}
		if values.Blank(v) {
			c.unset(key)
			return nil
		}
		l, reason := values.StringList(v)
		if reason != "" {
			return &Problem{Field: key, Reason: reason}
		}
		c.set(key, set(l))
		return nil
	}
	if values.Blank(v) {
		c.unset(key)
		return nil
	}
	s, reason := p.value(k, v)
	if reason != "" {
		return &Problem{Field: key, Reason: reason}
	}
	switch k {
	case kindExternalID:
		r.ExternalID = s
	case kindPhone:
		r.Phone = s
	case kindEmail:
		r.Email = s
	}
	c.set(key, s)
	return nil
}

// value normalises a scalar field of kind k.
func (p *Parser) value(k kind, v any) (string, string) {
	switch k {
	case kindExternalID:
		return externalID(v)
	case kindPhone:
		return phone(v)
	case kindEmail:
		return values.Email(v)
	case kindCountry:
		return values.Country(v)
	case kindLanguage:
		return values.Language(v)
	case kindDate:
		return values.Date(v)
	case kindDateTime:
		return values.DateTime(v, p.loc)
	}
	return values.Text(v)
}
