package activity

import (
	"regexp"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain/values"
)

// draft collects a record's fields by destination while Parse reads them
// in key order.
type draft struct {
	// fields become Record.Fields.
	fields map[string]any
	// customer is the customer part in customer field names, as sent;
	// customerFrom the record's key that gave each of them.
	customer     map[string]any
	customerFrom map[string]string
	// ref and details are the product part in product field names: ref
	// normalised, details as sent. productFrom are the record's keys that
	// gave each, in key order (sku and product_sku may both be given).
	ref         map[string]string
	details     map[string]any
	productFrom map[string][]string
	token       string
}

func newDraft() *draft {
	return &draft{fields: map[string]any{}, customer: map[string]any{}, customerFrom: map[string]string{},
		ref: map[string]string{}, details: map[string]any{}, productFrom: map[string][]string{}}
}

// field reads one key of the record into d.
func (p *Parser) field(d *draft, key string, v any) error {
	f, ok := fields[key]
	if !ok {
		return p.companyField(d, key, v)
	}
	if values.Blank(v) {
		// "" removes a customer field, as in a customer import; an event
		// itself is never updated, so anywhere else it is no value.
		if f.kind == kindCustomer && !identities[f.to] {
			d.customer[f.to], d.customerFrom[f.to] = "", key
		}
		return nil
	}
	var reason string
	switch f.kind {
	case kindOwn:
	case kindText:
		d.fields[key], reason = values.Text(v)
	case kindList, kindSet:
		var l []string
		if l, reason = values.StringList(v); len(l) > 0 {
			if f.kind == kindSet {
				slices.Sort(l)
				l = slices.Compact(l)
			}
			d.fields[key] = l
		}
	case kindInteger:
		n, ok := integer(v)
		if !ok {
			reason = "must be a whole number"
		} else {
			d.fields[key] = n
		}
	case kindCustomer:
		// customer.Parser validates it, with the effects of the type.
		d.customer[f.to], d.customerFrom[f.to] = v, key
	case kindToken:
		var s string
		s, reason = values.Text(v)
		d.token = strings.TrimSpace(s)
	case kindRef:
		return d.putRef(key, f.to, v)
	case kindDetail:
		return d.putDetail(key, f.to, v)
	}
	if reason != "" {
		return &Problem{Field: key, Reason: reason}
	}
	return nil
}

// companyField keeps "<ShortName>__<name>" as sent. The prefix is matched
// without regard to case and stored as the company's short name, so that
// acme__size and ACME__size are one field (as for customers).
func (p *Parser) companyField(d *draft, key string, v any) error {
	prefix, name, ok := strings.Cut(key, "__")
	if !ok || prefix == "" {
		return unknownField(key)
	}
	f := safeName(key)
	if !strings.EqualFold(prefix, p.shortName) {
		if f == "" {
			return unknownField(key)
		}
		return &Problem{Field: f, Reason: "unknown field " + f + ": company-specific fields are named " + p.shortName + "__<name>"}
	}
	if name == "" {
		return &Problem{Field: f, Reason: "a company-specific field needs a name after " + p.shortName + "__"}
	}
	if !values.Blank(v) {
		d.fields[p.shortName+"__"+name] = v
	}
	return nil
}

var fieldNameRE = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,100}$`)

// safeName returns a key fit to be quoted in a rejection. A key that does
// not look like a field name (a CSV file whose header line is a data row)
// may itself be personal data, and is not quoted.
func safeName(key string) string {
	if fieldNameRE.MatchString(key) {
		return key
	}
	return ""
}

func unknownField(key string) error {
	if f := safeName(key); f != "" {
		return &Problem{Field: f, Reason: "unknown field " + f}
	}
	return &Problem{Reason: "unknown field (its name is not shown: it does not look like a field name)"}
}
