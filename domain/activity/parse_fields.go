package activity

import (
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
	// listsGiven: the record has mailing_lists, even blank.
	listsGiven bool
	// ignored are the keys that are no field of an event.
	ignored values.Ignored
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
	d.listsGiven = d.listsGiven || key == fieldMailingLists
	if values.Blank(v) && f.kind != kindCustomer {
		// An event itself is never updated: "" is no value of it. The
		// customer part says what "" is there (customer.ParseEmbedded).
		return nil
	}
	var reason string
	switch f.kind {
	case kindOwn:
	case kindText:
		var s string
		if s, reason = values.Text(v); key == "campaign_key" {
			// Matched against a campaign's key, which is trimmed: " CA-1"
			// is CA-1's activity, not a key no campaign can have.
			s = strings.TrimSpace(s)
		}
		d.fields[key] = s
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
		// A blank is kept for ParseEmbedded, which reads it as not given.
		d.customer[f.to], d.customerFrom[f.to] = v, key
	case kindToken:
		var s string
		s, reason = values.Text(v)
		d.token = strings.TrimSpace(s)
		// The customer part's field of the same name: it finds the
		// customer when the event gives no other identifier.
		d.customer[fieldToken] = d.token
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
// acme__size and ACME__size are one field (as for customers). Any other
// key is no field of an event: it is ignored (values.Ignored).
func (p *Parser) companyField(d *draft, key string, v any) error {
	field, ok := values.CompanyField(p.shortName, key)
	if !ok {
		d.ignored.Ignore(key)
		return nil
	}
	if !values.Blank(v) {
		d.fields[field] = v
	}
	return nil
}
