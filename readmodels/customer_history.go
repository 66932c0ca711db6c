package readmodels

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// CustomerHistory reads a customer's audit history from the event log
// itself, not from a read model: the log is the record of what was known,
// when, and who sent it.
type CustomerHistory struct {
	store eventLog
	db    database
	keys  crypto.KeyStore
}

// NewCustomerHistory returns the query on the event store; db holds the
// customers' data keys, which open the recorded values.
func NewCustomerHistory(store eventstore.Store, db crypto.Querier, keys crypto.KeyStore) *CustomerHistory {
	if store == nil || db == nil || keys.Keyring == nil {
		panic("readmodels: NewCustomerHistory: nil dependency")
	}
	return &CustomerHistory{store: eventLog{store}, db: database{db}, keys: keys}
}

// History is every event of one customer, in order.
type History struct {
	CustomerID string
	// Forgotten is true once the customer is forgotten: its data key is
	// destroyed, so the events keep only the names of the fields they
	// changed, never the values.
	Forgotten bool
	Deleted   bool
	Events    []HistoryEvent
}

// HistoryEvent is one event of a customer's stream.
type HistoryEvent struct {
	Version    int64
	Type       string
	RecordedAt time.Time
	// Metadata says who caused the event: run, actor, source, correlation.
	Metadata eventstore.Metadata
	// Fields names the fields the event changed.
	Fields []string
	// Changes are the recorded values; nil when they cannot be opened
	// (the customer is forgotten) or the event records none.
	Changes *customer.Changes
	// Redacted is true when the event recorded values that can no longer
	// be opened.
	Redacted bool
}

// Customer returns the history of a customer of the company; a customer
// of another company, or none, is NotFound.
func (q *CustomerHistory) Customer(ctx context.Context, companyID, customerID string) (History, error) {
	// The stream name holds the company: another company's customer with
	// the same id is another stream, and is never read.
	events, err := q.store.ReadStream(ctx, customer.Stream(companyID, customerID), 0)
	if err != nil {
		return History{}, fmt.Errorf("readmodels: customer history: %w", err)
	}
	if len(events) == 0 {
		return History{}, domain.Errorf(domain.NotFound, "no such customer")
	}
	keys, err := q.keys.Load(ctx, q.db, companyID, []string{customerID})
	if err != nil {
		return History{}, fmt.Errorf("readmodels: customer history: %w", err)
	}
	key, hasKey := keys[customerID]
	h := History{CustomerID: customerID, Events: make([]HistoryEvent, 0, len(events))}
	for _, e := range events {
		he := HistoryEvent{Version: e.StreamVersion, Type: e.Type, RecordedAt: e.RecordedAt.UTC(), Metadata: e.Metadata, Fields: []string{}}
		switch e.Type {
		case customer.TypeUpserted:
			var ev customer.Upserted
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				return History{}, fmt.Errorf("readmodels: customer history: %s/%d: %w", e.StreamID, e.StreamVersion, err)
			}
			if ev.Fields != nil {
				he.Fields = ev.Fields
			}
			if !hasKey {
				he.Redacted = true
				break
			}
			plain, err := crypto.Open(key, ev.Sealed, []byte(customerID))
			if errors.Is(err, crypto.ErrDecrypt) {
				// Sealed with a key destroyed before this one was made.
				he.Redacted = true
				break
			}
			if err != nil {
				return History{}, fmt.Errorf("readmodels: customer history: open %s/%d: %w", e.StreamID, e.StreamVersion, err)
			}
			he.Changes = &customer.Changes{}
			dec := json.NewDecoder(bytes.NewReader(plain))
			dec.UseNumber() // custom numeric fields exactly as sent
			if err := dec.Decode(he.Changes); err != nil {
				return History{}, fmt.Errorf("readmodels: customer history: %s/%d: %w", e.StreamID, e.StreamVersion, err)
			}
		case customer.TypeDeleted:
			he.Fields, h.Deleted = []string{"is_deleted"}, true
		case customer.TypeForgotten:
			he.Fields, h.Forgotten = []string{"is_forgotten"}, true
		}
		// Values that cannot be opened mean a destroyed key: forgotten.
		h.Forgotten = h.Forgotten || he.Redacted
		h.Events = append(h.Events, he)
	}
	return h, nil
}
