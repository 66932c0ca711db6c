package document

import (
	"encoding/json"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strconv"
	"time"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/tidwall/gjson"
)

// CustomerRow is a row of the customers table while events are applied to
// it. Its document (doc) is the customer as retrieval shows it: the fields
// the projector owns, then fields.
//
// The values stay JSON from the sealed changes to the jsonb column: an
// import applies a thousand records a commit, and decoding each value into
// Go values only to encode it again cost more than the rest of the
// projector (it is how the projector first did it, and what the values
// must still look like, see canonicalJSON).
type CustomerRow struct {
	CompanyID  string
	CustomerID string
	// fields are the customer's fields but the owned ones, each the JSON
	// of its value in the retrieval form. Values are never changed in
	// place, so a copy of the map shares them safely. Those read from
	// the table are as PostgreSQL prints them (spaces after commas), which
	// only ever goes back into jsonb; those applied from events are
	// canonical, as the datasync messages need them.
	Fields      map[string]json.RawMessage
	IsDeleted   bool
	IsForgotten bool
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	Changed     bool
}

// NewCustomerRow is the row of a customer no event was applied to yet.
func NewCustomerRow(k CustomerKey, at time.Time) *CustomerRow {
	return &CustomerRow{CompanyID: k.Company, CustomerID: k.ID, Fields: map[string]json.RawMessage{}, CreatedAt: at.UTC(), UpdatedAt: at.UTC()}
}

// OwnedCustomerFields are the fields of the retrieved customer that the projector owns: changes never
// set them, so that a record cannot pass itself off as another customer or
// undo a deletion.
var OwnedCustomerFields = []string{"id", customer.FieldIsDeleted, customer.FieldIsForgotten}

// CustomerLists are the list fields. Retrieval always shows them, [] when
// empty, so that clients need not tell an absent list from an empty one.
var CustomerLists = []string{customer.FieldTags, customer.FieldMailingLists}

// CustomerDatetimes are the datetime fields, normalised to UTC with Z as every retrieved datetime is.
var CustomerDatetimes = []string{"date_joined", "last_login"}

// CustomerEventData is what the projector reads of the data of a customer
// event: customer.Upserted without Fields, whose decoding would cost as
// much as the rest (Deleted and Forgotten are Upserted's first field
// alone).
type CustomerEventData struct {
	CustomerID string `json:"customer_id"`
	Sealed     []byte `json:"sealed"`
}

// customerChanges is customer.Changes with the values of Set left as
// JSON (see customerRow), in the order written (customerDecoder.changes).
type customerChanges struct {
	Set    []jsonMember
	Unset  []string
	Add    map[string][]string
	Remove map[string][]string
}

// jsonMember is a member of a JSON object, its value as gjson found it
// (its JSON is value.Raw).
type jsonMember struct {
	name  string
	value gjson.Result
}

// CustomerEvent is a customer event with its data decoded.
type CustomerEvent struct {
	*eventstore.RecordedEvent
	Data CustomerEventData
	Key  CustomerKey
}

// ApplyEvent folds one event into the row. Events the row already
// reflects (a version it has) are skipped, so applying a commit twice
// changes nothing.
func (r *CustomerRow) ApplyEvent(e CustomerEvent, keys map[CustomerKey][]byte, dec *customerDecoder) error {
	if e.StreamVersion <= r.Version {
		return nil
	}
	r.Version, r.UpdatedAt, r.Changed = e.StreamVersion, e.RecordedAt.UTC(), true
	switch e.Type {
	case customer.TypeDeleted:
		r.IsDeleted = true
	case customer.TypeForgotten:
		r.Forget()
	case customer.TypeUpserted:
		if r.IsForgotten {
			return nil // irreversible: nothing is recorded again
		}
		key, ok := keys[e.Key]
		var plain []byte
		var err error
		if ok {
			plain, err = crypto.Open(key, e.Data.Sealed, []byte(e.Key.ID))
		}
		if !ok || errors.Is(err, crypto.ErrDecrypt) {
			// The key that sealed it is destroyed (the customer has none,
			// or one made after the forgetting): the person is forgotten,
			// and the read model learns it from the first such event.
			r.Forget()
			return nil
		}
		if err != nil {
			return fmt.Errorf("projections: customers: open %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		ch, err := dec.Changes(plain)
		if err == nil {
			err = r.Apply(ch)
		}
		if err != nil {
			return fmt.Errorf("projections: customers: changes of %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
	}
	return nil
}

// Forget drops everything the row knows about the person, for good.
func (r *CustomerRow) Forget() {
	r.IsForgotten = true
	r.Fields = map[string]json.RawMessage{}
}

// Apply applies one record's changes: Set, then Unset, then the
// incremental Add and Remove of the lists.
func (r *CustomerRow) Apply(ch *customerChanges) error {
	if len(r.Fields) == 0 {
		// A new customer: its first record sets most of its fields.
		r.Fields = make(map[string]json.RawMessage, len(ch.Set)+len(CustomerLists))
	}
	// Each member of Set in turn: where a field is named twice, the last
	// wins, as when Set was decoded into a map.
	for _, m := range ch.Set {
		k, v := m.name, m.value
		var err error
		switch {
		case slices.Contains(OwnedCustomerFields, k):
		case v.Type == gjson.Null: // null is absent
			delete(r.Fields, k)
		case slices.Contains(CustomerLists, k):
			r.Fields[k] = jsonList(AddToList(nil, rawStringList(v)))
		case slices.Contains(CustomerDatetimes, k):
			r.Fields[k], err = rawUTCDatetime(v)
		default:
			r.Fields[k], err = canonicalJSON(v)
		}
		if err != nil {
			return fmt.Errorf("field %s: %w", k, err)
		}
	}
	for _, k := range ch.Unset {
		delete(r.Fields, k) // the owned fields are not in fields
	}
	for k, add := range ch.Add {
		if list := ListName(k); list != "" {
			r.Fields[list] = jsonList(AddToList(r.list(list), add))
		}
	}
	for k, remove := range ch.Remove {
		if list := ListName(k); list != "" {
			kept := slices.DeleteFunc(r.list(list), func(s string) bool { return slices.Contains(remove, s) })
			r.Fields[list] = jsonList(kept)
		}
	}
	return nil
}

// list returns the elements of a list field, none when it is absent.
func (r *CustomerRow) list(name string) []string {
	v, ok := r.Fields[name]
	if !ok {
		return nil
	}
	return rawStringList(gjson.ParseBytes(v))
}

// Doc yields the fields of the retrieved customer, each with the JSON of
// its value: the ones the projector owns, then the others and the empty
// lists. (The permissions' default, false, is the write side's: a created
// customer's first event sets every permission.) A forgotten customer
// keeps its id and two flags, nothing else. The order of the fields is
// the map's: jsonb and the datasync messages order them themselves.
func (r *CustomerRow) Doc() iter.Seq2[string, json.RawMessage] {
	return func(yield func(string, json.RawMessage) bool) {
		if !yield("id", jsonString(r.CustomerID)) ||
			!yield(customer.FieldIsDeleted, strconv.AppendBool(nil, r.IsDeleted)) ||
			!yield(customer.FieldIsForgotten, strconv.AppendBool(nil, r.IsForgotten)) ||
			r.IsForgotten {
			return
		}
		for k, v := range r.Fields {
			if !yield(k, v) {
				return
			}
		}
		for _, l := range CustomerLists {
			if _, ok := r.Fields[l]; !ok && !yield(l, emptyJSONList) {
				return
			}
		}
	}
}

var emptyJSONList = json.RawMessage("[]")

// AppendDoc appends the JSON object of the retrieved customer (doc) to b.
// Written by hand rather than by json.Marshal of a map, which sorts the
// keys and reflects on every value: the values are JSON already. keys
// holds the field names written so far as JSON: the docs of a commit have
// the same few names a thousand times.
func (r *CustomerRow) AppendDoc(b []byte, keys map[string]json.RawMessage) []byte {
	b = append(b, `{"id":`...)
	b = append(b, jsonString(r.CustomerID)...)
	b = append(b, `,"`+customer.FieldIsDeleted+`":`...)
	b = strconv.AppendBool(b, r.IsDeleted)
	b = append(b, `,"`+customer.FieldIsForgotten+`":`...)
	b = strconv.AppendBool(b, r.IsForgotten)
	if !r.IsForgotten {
		for k, v := range r.Fields {
			b = append(b, ',')
			q, ok := keys[k]
			if !ok {
				q = jsonString(k)
				keys[k] = q
			}
			b = append(b, q...)
			b = append(b, ':')
			b = append(b, v...)
		}
		for _, l := range CustomerLists {
			if _, ok := r.Fields[l]; !ok {
				b = append(b, `,"`...)
				b = append(b, l...)
				b = append(b, `":[]`...)
			}
		}
	}
	return append(b, '}')
}

// CustomerKey identifies a customer across companies.
type CustomerKey struct{ Company, ID string }
