package commands

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

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

// keyNeeds returns the customers that need a new data key (created by the
// chunk) and those whose stored key must be loaded (changed by it).
func (s *customerStreams) keyNeeds() (created, changed []string) {
	for _, id := range s.order {
		st := s.byID[id]
		if st.outcomes[0].Created {
			created = append(created, id)
			continue
		}
		for _, o := range st.outcomes {
			if o.Changes != nil {
				changed = append(changed, id)
				break
			}
		}
	}
	return created, changed
}

// customerCommit creates the data keys of the new customers, loads those
// of the others, and builds the chunk's commit: one stream append per
// customer, at the version the stream had before the chunk.
func (h *CustomerImporter) customerCommit(ctx context.Context, tx pgx.Tx, companyID string, s *customerStreams) (eventstore.Commit, error) {
	created, changed := s.keyNeeds()
	keys, err := h.keys.Create(ctx, tx, companyID, created)
	if err != nil {
		return eventstore.Commit{}, err
	}
	old, err := h.keys.Load(ctx, tx, companyID, changed)
	if err != nil {
		return eventstore.Commit{}, err
	}
	for id, k := range old {
		keys[id] = k
	}
	// Seal every upsert first, in parallel, then lay the events out.
	var upserts []customer.Outcome
	for _, id := range s.order {
		for _, o := range s.byID[id].outcomes {
			if o.Changes != nil {
				upserts = append(upserts, o)
			}
		}
	}
	sealed, errs := make([]eventstore.Event, len(upserts)), make([]error, len(upserts))
	inParallel(len(upserts), func(i int) {
		sealed[i], errs[i] = sealedUpsert(upserts[i], keys[upserts[i].CustomerID])
	})
	if err := errors.Join(errs...); err != nil {
		return eventstore.Commit{}, err
	}
	var c eventstore.Commit
	for _, id := range s.order {
		st := s.byID[id]
		app := eventstore.StreamAppend{StreamID: CustomerStream(companyID, id), ExpectedVersion: st.expected}
		for _, o := range st.outcomes {
			if o.Changes != nil {
				app.Events = append(app.Events, sealed[0])
				sealed = sealed[1:]
			}
			if o.Deleted {
				app.Events = append(app.Events, event(customer.TypeDeleted, customer.Deleted{CustomerID: id}))
			}
			if o.Forgotten {
				app.Events = append(app.Events, event(customer.TypeForgotten, customer.Forgotten{CustomerID: id}))
			}
		}
		c.Streams = append(c.Streams, app)
	}
	return c, nil
}

// sealedUpsert encrypts an outcome's changes with the customer's data key;
// the customer id is the associated data, so sealed changes copied to
// another customer's event do not open.
func sealedUpsert(o customer.Outcome, key []byte) (eventstore.Event, error) {
	if key == nil {
		// Forgotten customers are rejected before this: a customer that
		// is not forgotten has a key.
		return eventstore.Event{}, fmt.Errorf("commands: import customers: customer %s has no data key", o.CustomerID)
	}
	plain, err := json.Marshal(o.Changes)
	if err != nil {
		return eventstore.Event{}, fmt.Errorf("commands: import customers: encode changes: %w", err)
	}
	sealed, err := crypto.Seal(key, plain, []byte(o.CustomerID))
	if err != nil {
		return eventstore.Event{}, err
	}
	return event(customer.TypeUpserted, customer.Upserted{
		CustomerID: o.CustomerID, Created: o.Created, Fields: o.Changes.FieldNames(), Sealed: sealed,
	}), nil
}
