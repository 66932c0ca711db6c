package projections

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// customerRow is a row of the customers table while events are applied to
// it. Doc holds the customer's fields in the retrieval form; finish adds
// the fields the projector owns.
type customerRow struct {
	CompanyID   string
	CustomerID  string
	Doc         map[string]any
	IsDeleted   bool
	IsForgotten bool
	Version     int64
	CreatedAt   time.Time
	UpdatedAt   time.Time
	changed     bool
}

func newCustomerRow(k customerKey, at time.Time) *customerRow {
	return &customerRow{CompanyID: k.company, CustomerID: k.id, Doc: map[string]any{}, CreatedAt: at.UTC(), UpdatedAt: at.UTC()}
}

// Fields of the retrieved customer that the projector owns: changes never
// set them, so that a record cannot pass itself off as another customer or
// undo a deletion.
var ownedCustomerFields = []string{"id", customer.FieldIsDeleted, customer.FieldIsForgotten}

// customerLists are the list fields. Retrieval always shows them, [] when
// empty, so that clients need not tell an absent list from an empty one.
var customerLists = []string{customer.FieldTags, customer.FieldMailingLists}

// Datetime fields, normalised to UTC with Z as every retrieved datetime is.
var customerDatetimes = []string{"date_joined", "last_login"}

// customerEvent is a customer event with its data decoded.
type customerEvent struct {
	*eventstore.RecordedEvent
	data customer.Upserted
	key  customerKey
}

// applyEvent folds one event into the row. Events the row already
// reflects (a version it has) are skipped, so applying a commit twice
// changes nothing.
func (r *customerRow) applyEvent(e customerEvent, keys map[customerKey][]byte) error {
	if e.StreamVersion <= r.Version {
		return nil
	}
	r.Version, r.UpdatedAt, r.changed = e.StreamVersion, e.RecordedAt.UTC(), true
	switch e.Type {
	case customer.TypeDeleted:
		r.IsDeleted = true
	case customer.TypeForgotten:
		r.forget()
	case customer.TypeUpserted:
		if r.IsForgotten {
			return nil // irreversible: nothing is recorded again
		}
		key, ok := keys[e.key]
		var plain []byte
		var err error
		if ok {
			plain, err = crypto.Open(key, e.data.Sealed, []byte(e.key.id))
		}
		if !ok || errors.Is(err, crypto.ErrDecrypt) {
			// The key that sealed it is destroyed (the customer has none,
			// or one made after the forgetting): the person is forgotten,
			// and the read model learns it from the first such event.
			r.forget()
			return nil
		}
		if err != nil {
			return fmt.Errorf("projections: customers: open %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		var ch customer.Changes
		if err := decodeNumbers(plain, &ch); err != nil {
			return fmt.Errorf("projections: customers: changes of %s/%d: %w", e.StreamID, e.StreamVersion, err)
		}
		r.apply(ch)
	}
	return nil
}

// forget drops everything the row knows about the person, for good.
func (r *customerRow) forget() {
	r.IsForgotten = true
	r.Doc = map[string]any{}
}

// apply applies one record's changes: Set, then Unset, then the
// incremental Add and Remove of the lists.
func (r *customerRow) apply(ch customer.Changes) {
	for k, v := range ch.Set {
		switch {
		case slices.Contains(ownedCustomerFields, k):
		case v == nil: // null is absent
			delete(r.Doc, k)
		case slices.Contains(customerLists, k):
			r.Doc[k] = addToList(nil, stringList(v))
		case slices.Contains(customerDatetimes, k):
			r.Doc[k] = utcDatetime(v)
		default:
			r.Doc[k] = v
		}
	}
	for _, k := range ch.Unset {
		if !slices.Contains(ownedCustomerFields, k) {
			delete(r.Doc, k)
		}
	}
	for k, add := range ch.Add {
		if list := listName(k); list != "" {
			r.Doc[list] = addToList(stringList(r.Doc[list]), add)
		}
	}
	for k, remove := range ch.Remove {
		if list := listName(k); list != "" {
			kept := slices.DeleteFunc(stringList(r.Doc[list]), func(s string) bool { return slices.Contains(remove, s) })
			r.Doc[list] = orNone(kept)
		}
	}
}

// finish sets the fields the projector owns and the empty lists. (The
// permissions' default, false, is the write side's: a created customer's
// first event sets every permission.) A forgotten customer keeps its id and
// two flags, nothing else.
func (r *customerRow) finish() {
	if r.IsForgotten {
		r.Doc = map[string]any{"id": r.CustomerID, customer.FieldIsDeleted: r.IsDeleted, customer.FieldIsForgotten: true}
		return
	}
	r.Doc["id"], r.Doc[customer.FieldIsDeleted], r.Doc[customer.FieldIsForgotten] = r.CustomerID, r.IsDeleted, false
	for _, l := range customerLists {
		if _, ok := r.Doc[l]; !ok {
			r.Doc[l] = []string{}
		}
	}
}
