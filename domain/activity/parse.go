package activity

import (
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
)

// Problem is why a record is rejected: the field at fault, as the record
// named it, when one is, and a reason that never quotes the value, since
// rejections are stored and the value may be personal data.
type Problem = values.Problem

// Record is one import record of events, validated and normalised by
// Parser.Parse.
type Record struct {
	// DeleteID > 0: the record is the deletion form {id, is_deleted:
	// true}; nothing else is set.
	DeleteID int64
	// Type is upper case: a built-in type, a campaign type or one of the
	// company's types.
	Type string
	// Date is UTC, values.DateTimeLayout.
	Date string
	// Customer is the customer part: the identifiers and customer fields
	// the event gives, and the effects of its type (subscriptions). It is
	// Embedded always, and MustExist unless the type creates the customer
	// (MAIL_SUBSCRIBE, SMS_SUBSCRIBE).
	Customer customer.Record
	// Product is the product the event names; empty when it names none.
	// Its Details are set only when it names one.
	Product product.Ref
	// Fields are the event's non-personal fields in the retrieval form,
	// under the names the record used (type, date and id are not among
	// them). Never nil.
	Fields map[string]any
	// Personal are the fields of Personal the record gives, in the forms
	// retrieval shows them (the customer's normal forms: an email
	// lower-cased, a phone number in E.164, customer_id trimmed). A field
	// sent as "" is not in it (the customer part does not take it).
	Personal map[string]any
	// Ignored are the record's keys that are no field of an event
	// (values.Ignored): the import run lists them as warnings.
	Ignored values.Ignored
}

// Parser validates and normalises the event records of one company. It
// is safe for concurrent use: the importer parses a chunk's records in
// parallel.
type Parser struct {
	types     map[string]bool
	shortName string
	loc       *time.Location
	customers *customer.Parser
	products  *product.Parser
}

// NewParser returns a parser for c's records: c's event types are known
// beside the built-in and campaign ones, naive datetimes are read in c's
// timezone and company-specific fields carry c's short name.
func NewParser(c company.Company) *Parser {
	types := make(map[string]bool, len(builtinTypes)+len(campaignTypes)+len(c.CustomEventTypes))
	for _, t := range slices.Concat(builtinTypes, campaignTypes, c.CustomEventTypes) {
		types[t] = true
	}
	return &Parser{types: types, shortName: c.ShortName, loc: c.Location(),
		customers: customer.NewParser(c), products: product.NewParser(c)}
}

// Parse validates one record, a JSON object, and returns it normalised.
// A record breaking any rule is refused whole with a *Problem; the rules
// are written for people in docs/events.md. In short:
//
//   - null is absent, and so is "" (in the customer fields too: a blank
//     never removes anything from the customer, customer.ParseEmbedded);
//   - a customer_id of 0, "0" or "" is a guest's (values.NoCustomerID),
//     and so is an email address (customer.GuestByEmail);
//   - {id, is_deleted: true} deletes a stored event, and an id in any
//     other record is refused: ids are the service's;
//   - type (known, upper case) and date are required, and so is a
//     customer identifier (customer_token finds the customer only when
//     the event gives no other); some types need more fields
//     (requiredByType);
//   - an unknown key, or a company field with another company's prefix,
//     is ignored and listed in Record.Ignored, as in every import.
func (p *Parser) Parse(raw []byte) (Record, error) {
	m, field, reason := values.DecodeRecord(raw)
	if reason != "" {
		return Record{}, &Problem{Field: field, Reason: reason}
	}
	maps.DeleteFunc(m, func(k string, v any) bool { return v == nil || k == fieldCustomerID && values.NoCustomerID(v) })
	m = customer.GuestByEmail(m, fieldCustomerID, fieldEmail)
	id, err := deletion(m)
	if err != nil || id > 0 {
		return Record{DeleteID: id}, err
	}
	return p.event(m)
}

// deletion reads the deletion form: the id of the event to delete, 0 for
// any other record. Ids come from the service's counter, so an id in a
// record that does not delete is refused rather than ignored: the client
// believes it names the event.
func deletion(m map[string]any) (int64, error) {
	del := false
	if v, ok := m[fieldIsDeleted]; ok && !values.Blank(v) {
		b, reason := values.Bool(v)
		if reason != "" {
			return 0, &Problem{Field: fieldIsDeleted, Reason: reason}
		}
		del = b
	}
	v, hasID := m[fieldID]
	hasID = hasID && !values.Blank(v)
	switch {
	case !del && hasID:
		return 0, &Problem{Field: fieldID, Reason: "ids are given by the service; send {id, is_deleted: true} to delete an event"}
	case !del:
		return 0, nil
	case !hasID:
		return 0, &Problem{Field: fieldID, Reason: "is required with is_deleted true: the id of the event to delete"}
	}
	id, ok := integer(v)
	if !ok || id <= 0 {
		return 0, &Problem{Field: fieldID, Reason: "must be a positive whole number, the id of a stored event"}
	}
	return id, nil
}

// event parses a record that is not the deletion form.
func (p *Parser) event(m map[string]any) (Record, error) {
	typ, err := p.eventType(m[fieldType])
	if err != nil {
		return Record{}, err
	}
	date, reason := "", "is required"
	if v, ok := m[fieldDate]; ok && !values.Blank(v) {
		date, reason = values.DateTime(v, p.loc)
	}
	if reason != "" {
		return Record{}, &Problem{Field: fieldDate, Reason: reason}
	}
	d := newDraft()
	for _, key := range slices.Sorted(maps.Keys(m)) {
		if err := p.field(d, key, m[key]); err != nil {
			return Record{}, err
		}
	}
	if err := d.identified(); err != nil {
		return Record{}, err
	}
	if err := required(typ, d.fields); err != nil {
		return Record{}, err
	}
	c, err := p.customerPart(typ, d)
	if err != nil {
		return Record{}, err
	}
	ref, err := p.productRef(d)
	if err != nil {
		return Record{}, err
	}
	return Record{Type: typ, Date: date, Customer: c, Product: ref, Fields: d.fields, Personal: d.personal(c), Ignored: d.ignored}, nil
}

// eventType reads type. A type in the wrong case is refused rather than
// upper-cased: the interface says upper case, and a lower-case name is
// more often another system's type name than a typo.
func (p *Parser) eventType(v any) (string, error) {
	s, ok := v.(string)
	s = strings.TrimSpace(s)
	reason := ""
	switch {
	case v == nil || values.Blank(v):
		reason = "is required"
	case !ok:
		reason = "must be a string"
	case strings.ToUpper(s) != s:
		reason = "must be upper case, such as BROWSE"
	case !p.types[s]:
		reason = "unknown event type; company types are defined with `clientele company update --event-type`"
	default:
		return s, nil
	}
	return "", &Problem{Field: fieldType, Reason: reason}
}

// required checks the fields an event of type typ needs (interface,
// required additional fields by type).
func required(typ string, fields map[string]any) error {
	if typ == "BROWSE" && !slices.ContainsFunc(browseAny, func(f string) bool { return fields[f] != nil }) {
		return &Problem{Reason: "a BROWSE event needs one of label, path, utm_campaign, product_id, product_ean"}
	}
	if f := requiredByType[typ]; f != "" && fields[f] == nil {
		return &Problem{Field: f, Reason: "is required for " + typ}
	}
	return nil
}
