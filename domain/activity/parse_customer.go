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

// identified checks that the record names its customer: by customer_id,
// email or phone_number, or by the customer_token Clientele issued to the
// customer (which finds it only when the event gives no other identifier,
// customer.Token).
func (d *draft) identified() error {
	for id := range identities {
		if customer.Given(d.customer[id]) {
			return nil
		}
	}
	if d.token != "" {
		return nil
	}
	return &Problem{Reason: "a customer identifier is required: customer_id, email, phone_number or customer_token"}
}

// customerPart validates the customer part with the customer's own rules
// (customer.ParseEmbedded), with the effects of the type: a subscription
// changes the customer's permissions and mailing lists. Its problems are
// renamed to the fields of the event.
//
// The interface requires mailing_lists of MAIL_SUBSCRIBE and
// MAIL_UNSUBSCRIBE, but Magento's newsletter sends none (a shop with one
// newsletter has no list to name). Without it the event is about email
// marketing as a whole: MAIL_SUBSCRIBE grants can_email and leaves the
// lists as they are; MAIL_UNSUBSCRIBE is the "_" of every list, leaving
// them all and email marketing. A mailing_lists sent without a list name
// ("", [], [""]) is still refused: it names lists, and none is meant.
func (p *Parser) customerPart(typ string, d *draft) (customer.Record, error) {
	lists, _ := d.fields[fieldMailingLists].([]string)
	if (typ == "MAIL_SUBSCRIBE" || typ == "MAIL_UNSUBSCRIBE") && d.listsGiven && len(lists) == 0 {
		return customer.Record{}, &Problem{Field: fieldMailingLists,
			Reason: "must name at least one list, or be left out for email marketing as a whole"}
	}
	effects := map[string]any{}
	switch typ {
	case "MAIL_SUBSCRIBE":
		effects["can_email"] = true
		if len(lists) > 0 {
			effects["mailing_lists.add"] = anyList(lists)
		}
	case "MAIL_UNSUBSCRIBE":
		all := len(lists) == 0 || slices.ContainsFunc(lists, isAllLists)
		switch {
		case all && slices.ContainsFunc(lists, func(s string) bool { return !isAllLists(s) }):
			return customer.Record{}, &Problem{Field: fieldMailingLists, Reason: "_ (every list) cannot be given with list names"}
		case all:
			// Leaving every list is leaving email marketing.
			effects[customer.FieldMailingLists], effects["can_email"] = "", false
		default:
			effects["mailing_lists.remove"] = anyList(lists)
		}
	case "SMS_SUBSCRIBE":
		effects["can_sms"] = true
	case "SMS_UNSUBSCRIBE":
		effects["can_sms"] = false
	}
	r, err := p.customers.ParseEmbedded(d.customer, effects)
	if cp := (*customer.Problem)(nil); errors.As(err, &cp) {
		return customer.Record{}, &Problem{Field: d.customerField(cp.Field), Reason: cp.Reason}
	}
	if err != nil {
		return customer.Record{}, err
	}
	r.MustExist = !createsCustomer[typ]
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
