package activity

import (
	"errors"
	"slices"
	"strings"

	"github.com/clientele/clientele/domain/customer"
)

// allLists is the one element of MAIL_UNSUBSCRIBE's mailing_lists that
// means every list (interface, required additional fields by type).
const allLists = "_"

func isAllLists(s string) bool { return strings.TrimSpace(s) == allLists }

// identified checks that the record names its customer. customer_token
// alone does not: the interface's token is the customer's stored tracking
// token, and Clientele issues none, so no customer could ever match it.
func (d *draft) identified() error {
	for id := range identities {
		if d.customer[id] != nil {
			return nil
		}
	}
	if d.token != "" {
		return &Problem{Field: fieldToken, Reason: "Clientele issues no tracking tokens, so a token finds no customer: identify the customer by customer_id, email or phone_number"}
	}
	return &Problem{Reason: "a customer identifier is required: customer_id, email or phone_number"}
}

// customerPart validates the customer part with the customer's own rules,
// adding the effects of the type: a subscription changes the customer's
// permissions and mailing lists. Its problems are renamed to the fields
// of the event.
func (p *Parser) customerPart(typ string, d *draft) (customer.Record, error) {
	m := d.customer
	lists, _ := d.fields[fieldMailingLists].([]string)
	switch typ {
	case "MAIL_SUBSCRIBE":
		m["can_email"], m["mailing_lists.add"] = true, anyList(lists)
	case "MAIL_UNSUBSCRIBE":
		all := slices.ContainsFunc(lists, isAllLists)
		switch {
		case all && slices.ContainsFunc(lists, func(s string) bool { return !isAllLists(s) }):
			return customer.Record{}, &Problem{Field: fieldMailingLists, Reason: "_ (every list) cannot be given with list names"}
		case all:
			// Leaving every list is leaving email marketing.
			m[customer.FieldMailingLists], m["can_email"] = "", false
		default:
			m["mailing_lists.remove"] = anyList(lists)
		}
	case "SMS_SUBSCRIBE":
		m["can_sms"] = true
	case "SMS_UNSUBSCRIBE":
		m["can_sms"] = false
	}
	r, err := p.customers.ParseMap(m)
	if cp := (*customer.Problem)(nil); errors.As(err, &cp) {
		return customer.Record{}, &Problem{Field: d.customerField(cp.Field), Reason: cp.Reason}
	}
	if err != nil {
		return customer.Record{}, err
	}
	r.MustExist, r.Embedded = !createsCustomer[typ], true
	return r, nil
}

// customerField returns the event field that gave the customer field f.
func (d *draft) customerField(f string) string {
	if k, ok := d.customerFrom[f]; ok {
		return k
	}
	switch f {
	case customer.FieldMailingLists, "mailing_lists.add", "mailing_lists.remove":
		return fieldMailingLists
	}
	return f
}

// personal returns the Personal fields the record gives, in the forms the
// customer part normalised them to.
func (d *draft) personal(c customer.Record) map[string]any {
	out := make(map[string]any, len(d.customerFrom)+1)
	for f, key := range d.customerFrom {
		if v, ok := c.Changes.Set[f]; ok {
			out[key] = v
		}
	}
	if d.token != "" {
		out[fieldToken] = d.token
	}
	return out
}

// anyList is l as a decoded JSON list, the form customer.Parser reads.
func anyList(l []string) []any {
	out := make([]any, len(l))
	for i, s := range l {
		out[i] = s
	}
	return out
}
