// Package activity is the Event entity of the interface: what a customer
// did or had done to them (BROWSE, MAIL_SUBSCRIBE, ORDER_SHIPPED, company
// types ...), each with an integer id. The package is named activity so
// that "event" keeps meaning a domain event of the event store.
//
// Parser turns an import record into a Record: the event's own fields,
// the customer part it carries (identifiers, customer fields and the
// subscription effects of its type, as a customer.Record), and the
// product it names. The write side resolves the customer and the product
// and appends a Recorded event. The rules are written for people in
// docs/events.md.
package activity

// Event types of the company's activity stream "activity-<company>"
// (one stream per company, appended with eventstore.Any: ids come from the
// write-side counter, not from stream versions).
const (
	// TypeRecorded: an event was imported.
	TypeRecorded = "EventRecorded"
	// TypeDeleted: an event was deleted (import of {id, is_deleted: true}
	// or a data query); it leaves retrieval.
	TypeDeleted = "EventDeleted"
)

// Recorded is the data of an EventRecorded event.
//
// What identifies or describes the person (customer_id, email,
// phone_number, customer_token, first_name, last_name, street_address,
// zip_code, country, language, company: the Personal fields) is in Sealed,
// encrypted with the customer's data key like a CustomerUpserted, so that
// forgetting the customer shreds it. Everything else is in Fields, in the
// retrieval form.
type Recorded struct {
	// ID is the event's integer id, unique per company, increasing in
	// import order.
	ID int64 `json:"id"`
	// CustomerID is the internal id of the customer the event belongs to.
	CustomerID string `json:"customer_id"`
	Type       string `json:"type"`
	// Date is UTC, values.DateTimeLayout.
	Date string `json:"date"`
	// ProductID is the internal id of the linked product, "" when the
	// event names none.
	ProductID string `json:"product_id,omitempty"`
	// Fields are the event's other fields in the retrieval form: type
	// and date are not repeated; product_id is the product's external_id
	// (a synthetic one when the product was created from sku or ean).
	Fields map[string]any `json:"fields,omitempty"`
	// Sealed is crypto.Seal(dataKey, json(personal fields), aad =
	// customer id); nil when the event carries no personal field.
	Sealed []byte `json:"sealed,omitempty"`
}

// Deleted is the data of an EventDeleted event.
type Deleted struct {
	ID int64 `json:"id"`
}

// Personal are the fields of an event that identify or describe the
// person; they are sealed (see Recorded).
var Personal = []string{
	"customer_id", "email", "phone_number", "customer_token",
	"first_name", "last_name", "street_address", "zip_code", "country", "language", "company",
}
