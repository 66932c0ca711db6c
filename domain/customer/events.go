// Package customer is the customer aggregate: its fields and their rules,
// upsert semantics, identity resolution, deletion and forgetting.
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
type Changes struct {
	// Set gives fields their new value, in the retrieval form (normalised
	// strings, booleans, lists of strings; "COMPANY__x" custom fields as
	// sent). A list in Set replaces the whole list.
	Set map[string]any `json:"set,omitempty"`
	// Unset removes fields (a record sent "" for them).
	Unset []string `json:"unset,omitempty"`
	// Add and Remove change the lists "tags" and "mailing_lists"
	// incrementally (keys "tags.add", "mailing_lists.remove", ...).
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
