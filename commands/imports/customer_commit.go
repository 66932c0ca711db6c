package imports

import (
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// customerStreams gathers the outcomes of a chunk by customer, in the
// order the customers were first touched, so that each stream gets its
// events in record order.
type customerStreams struct {
	order []string
	byID  map[string]*customerStream
	// forgotten are the customers whose data key is to be destroyed.
	forgotten []string
}

type customerStream struct {
	expected int64 // the stream's version before the chunk
	outcomes []customer.Outcome
}

func (s *customerStreams) add(o customer.Outcome, version int64) {
	if o.Events() == 0 {
		return
	}
	st := s.byID[o.CustomerID]
	if st == nil {
		if s.byID == nil {
			s.byID = map[string]*customerStream{}
		}
		st = &customerStream{expected: version}
		s.byID[o.CustomerID] = st
		s.order = append(s.order, o.CustomerID)
	}
	st.outcomes = append(st.outcomes, o)
	if o.Forgotten {
		s.forgotten = append(s.forgotten, o.CustomerID)
	}
}

// sealedUpsert encrypts an outcome's changes with the customer's data key;
// the customer id is the associated data, so sealed changes copied to
// another customer's event do not open.
func sealedUpsert(o customer.Outcome, key []byte) (eventstore.Event, error) {
	if key == nil {
		// Forgotten customers are rejected before this: a customer that
		// is not forgotten has a key.
		return eventstore.Event{}, fmt.Errorf("imports: import customers: customer %s has no data key", o.CustomerID)
	}
	plain, err := json.Marshal(o.Changes)
	if err != nil {
		return eventstore.Event{}, fmt.Errorf("imports: import customers: encode changes: %w", err)
	}
	sealed, err := crypto.Seal(key, plain, []byte(o.CustomerID))
	if err != nil {
		return eventstore.Event{}, err
	}
	return eventstore.NewEvent(customer.TypeUpserted, customer.Upserted{
		CustomerID: o.CustomerID, Created: o.Created, Fields: o.Changes.FieldNames(), Sealed: sealed,
	}), nil
}
