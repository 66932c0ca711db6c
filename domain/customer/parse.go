package customer

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/values"
)

// Parser validates and normalises the records of one company.
type Parser struct {
	shortName string
	loc       *time.Location
	// phoneRegion is the company's phone_region: the country of a phone
	// number without + in a record that names none ("" for no country).
	phoneRegion string
}

// NewParser returns a parser for c's records: naive datetimes are read in
// c's timezone, company-specific fields carry c's short name, and a phone
// number without + is read in the record's country, else in c's
// phone_region.
func NewParser(c company.Company) *Parser {
	return &Parser{shortName: c.ShortName, loc: c.Location(), phoneRegion: c.PhoneRegion}
}

// Parse validates one record, a JSON object, and returns it normalised.
// A record breaking any rule is refused whole with a *Problem naming the
// first field at fault in key order. The rules:
//
//   - null is absent; "" (or only spaces) removes the field (Unset),
//     except that it sets a permission to false and is no flag at all;
//   - every value is checked and normalised to the form the doc of
//     Changes lists, and values from CSV (all strings) are coerced;
//   - an external_id that is an email address is a guest's (GuestByEmail);
//   - a phone number without + is read in the record's country, else in
//     the company's phone_region, else refused (phone);
//   - an unknown key, or a company field with another company's prefix,
//     is ignored and listed in Record.Ignored (values.Ignored): shop
//     plugins send fields of their own, and the import run reports them;
//   - the record needs one of external_id, phone_number, email, or the
//     customer_token Clientele issued (which only finds a customer).
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	return p.ParseMap(m)
}

// ParseMap validates a decoded record (values.DecodeRecord) by the rules
// of Parse. The customer part of an event or a sale is ParseEmbedded's.
func (p *Parser) ParseMap(m map[string]any) (Record, error) {
	m = GuestByEmail(m, FieldExternalID, FieldEmail)
	// Room for the permissions a created customer gets by default.
	r := Record{Changes: Changes{Set: make(map[string]any, len(m)+len(Permissions))}}
	region := p.region(m)
	keys := make([]string, 0, len(m))
	for key := range m {
		keys = append(keys, key)
	}
	slices.Sort(keys)
	for _, key := range keys {
		if v := m[key]; v != nil {
			if err := p.field(&r, key, v, region); err != nil {
				return Record{}, err
			}
		}
	}
	if r.ExternalID == "" && r.Email == "" && r.Phone == "" && r.Token == "" {
		return Record{}, &Problem{Reason: ReasonNoID}
	}
	slices.Sort(r.Changes.Unset)
	return r, nil
}

// ParseEmbedded validates the customer part of an event or a sale by the
// rules of Parse: given are the fields the client sent, in the customer's
// names; effects what the event's type does to the customer (a
// subscription's permission and lists; nil for none), applied over them.
//
// In a customer part a value that is not Given means "not given": it
// never removes anything from the customer, neither a field nor an
// identity nor a permission. Shop plugins send every field of their map,
// "" for what the order lacks: an order placed without a phone number
// must not take the customer's number, and with it what finds them.
func (p *Parser) ParseEmbedded(given, effects map[string]any) (Record, error) {
	m := make(map[string]any, len(given)+len(effects))
	for k, v := range given {
		if Given(v) {
			m[k] = v
		}
	}
	maps.Copy(m, effects)
	r, err := p.ParseMap(m)
	if err != nil {
		return Record{}, err
	}
	r.Embedded = true
	return r, nil
}

// Given reports whether v, a value of a customer part (ParseEmbedded), is
// given: null and a string of spaces only are not.
func Given(v any) bool { return v != nil && !values.Blank(v) }

// region returns the country a phone number without + of the record m is
// read in: the record's own country when it is a valid one (an invalid
// one rejects the record by itself), else the company's phone_region.
func (p *Parser) region(m map[string]any) string {
	if c, reason := values.Country(m["country"]); reason == "" {
		return c
	}
	return p.phoneRegion
}

func (p *Parser) field(r *Record, key string, v any, region string) error {
	if op, ok := listOps[key]; ok {
		return listOp(&r.Changes, key, op.list, op.add, v)
	}
	k, ok := fields[key]
	if !ok {
		return p.companyField(r, key, v)
	}
	c := &r.Changes
	switch k {
	case kindToken:
		// It only finds the customer: "" removes nothing (a record
		// never takes a token away), and no value is ever a change.
		if values.Blank(v) {
			return nil
		}
		s, reason := values.Text(v)
		if reason != "" {
			return &Problem{Field: key, Reason: reason}
		}
		r.Token = strings.TrimSpace(s)
		return nil
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
	s, reason := p.value(k, v, region)
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

// value normalises a scalar field of kind k; region is the country of a
// phone number without + (Parser.region).
func (p *Parser) value(k kind, v any, region string) (string, string) {
	switch k {
	case kindExternalID:
		return externalID(v)
	case kindPhone:
		return phone(v, region)
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
