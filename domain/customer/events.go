// Package customer is the customer aggregate: its fields and their rules,
// upsert semantics, identity resolution, deletion and forgetting.
//
// Parser turns an import record into a validated Record; Book decides,
// record by record, which customer it is and what it changes (Outcome);
// the events below are what the write side appends. The rules are also
// written for people in docs/customers.md.
package customer

// Event types of the customer stream "customer-<company>-<id>".
const (
	// TypeUpserted: a record created or changed a customer.
	TypeUpserted = "CustomerUpserted"
	// TypeDeleted: the customer was deleted (irreversible).
	TypeDeleted = "CustomerDeleted"
	// TypeForgotten: the customer was forgotten (irreversible); its data
	// key is destroyed in the same transaction.
	TypeForgotten = "CustomerForgotten"
)

// Upserted is the data of a CustomerUpserted event. Everything a record
// says about the person is in Sealed, encrypted with the customer's data
// key (crypto-shredding); what stays in clear is the customer id and the
// names of the fields that changed, which say nothing about the person and
// let an auditor see what changed after the person is forgotten.
type Upserted struct {
	CustomerID string `json:"customer_id"`
	// Created is true on the event that created the customer.
	Created bool `json:"created,omitempty"`
	// Fields are the names of the fields the record changed, sorted.
	Fields []string `json:"fields"`
	// Sealed is crypto.Seal(dataKey, json(Changes), aad = customer id).
	Sealed []byte `json:"sealed"`
}

// Changes is what a record changed; it is sealed in Upserted.
//
// A reader applies Set and Unset (they never name the same field), then
// Add, then Remove, to the customer as the earlier events left it. Fields
// named nowhere keep their value. Values of Set, by field, as JSON:
//
//	external_id                 string: ASCII letters, digits and dashes, as sent (case kept)
//	phone_number                string: E.164, "+358401234567"
//	email                       string: the address lower-cased
//	country                     string: ISO 3166-1 alpha-2, upper-case ("GB" for "uk")
//	language                    string: ISO 639 base language, lower-case ("en" for "en_US")
//	birth_date                  string: "YYYY-MM-DD" (DateLayout)
//	date_joined, last_login     string: UTC "YYYY-MM-DDThh:mm:ss[.ffffff]Z" (DateTimeLayout)
//	can_email, can_post, can_profile, can_push, can_sms
//	                            boolean; every one is in Set of the event that
//	                            created the customer (false when not sent)
//	mailing_lists, tags         list of strings, sorted, without duplicates
//	                            (possibly empty); replaces the whole list
//	customer_token              string: the tracking token Clientele issued; set
//	                            once, by the event that created the customer
//	                            (or by the backfill that issued tokens to older
//	                            customers, an upsert of it alone); never by a
//	                            record
//	<ShortName>__<name>         any JSON value, as sent (decode with UseNumber
//	                            to keep every digit); the prefix is the company's
//	                            short name as configured
//	every other field           string, as sent
//
// is_deleted and is_forgotten are never in Changes: they are the events
// CustomerDeleted and CustomerForgotten.
type Changes struct {
	// Set gives fields their new value, in the retrieval form (normalised
	// strings, booleans, lists of strings; "COMPANY__x" custom fields as
	// sent). A list in Set replaces the whole list.
	Set map[string]any `json:"set,omitempty"`
	// Unset removes fields (a record sent "" for them), sorted. A removed
	// field is absent from the customer, as if never set.
	Unset []string `json:"unset,omitempty"`
	// Add and Remove change the lists "tags" and "mailing_lists"
	// incrementally (keys "tags.add", "mailing_lists.remove", ...). They
	// are keyed by the list's name ("tags"), each a sorted set. Add makes
	// the list the union (creating it when absent), Remove takes the
	// elements out (an absent list stays absent); the result stays sorted
	// and without duplicates.
	Add    map[string][]string `json:"add,omitempty"`
	Remove map[string][]string `json:"remove,omitempty"`
}

// Deleted is the data of a CustomerDeleted event.
type Deleted struct {
	CustomerID string `json:"customer_id"`
}

// Forgotten is the data of a CustomerForgotten event.
type Forgotten struct {
	CustomerID string `json:"customer_id"`
}
