package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// customerLinks is the customer side of one chunk, for every importer
// whose records name customers: customer imports, and the events and
// sales that create or update their customer. It loads the identity
// registry and the states the records can reach, decides each customer
// record in order (customer.Book), and then writes back in a fixed number
// of round trips: the data keys, the customers' sealed events (to go in
// the chunk's one commit), the destroyed keys of the forgotten, and the
// registry and states.
type customerLinks struct {
	companyID string
	keys      crypto.KeyStore
	book      *customer.Book
	versions  map[string]int64
	streams   customerStreams
	// sealing are the customers whose data key the chunk needs to seal
	// personal fields of its own (an event's, a sale's).
	sealing     []string
	sealingSeen map[string]bool
	// dataKeys are the clear data keys of the customers the chunk seals
	// for (seal), and created the customers it creates, whose wrapped keys
	// save stores.
	dataKeys map[string][]byte
	created  []string
	wrapped  [][]byte
	// prevKeys are the data keys of the chunk before, when the chunk is
	// resolved after it (after), and forgottenBefore the customers it
	// forgot, whose keys it destroyed.
	prevKeys        map[string][]byte
	forgottenBefore []string
}

// loadCustomerLinks loads the registry rows and states that records (nil
// ones skipped) can reach.
func loadCustomerLinks(ctx context.Context, q Reader, keys crypto.KeyStore, companyID string, records []*customer.Record) (*customerLinks, error) {
	l := newCustomerLinks(keys, companyID)
	versions, err := loadCustomerBook(ctx, q, companyID, l.book, records)
	if err != nil {
		return nil, err
	}
	l.versions = versions
	return l, nil
}

// after lays what prev, the links of the company's chunk before, decided
// over what l loaded: l was loaded from the state before prev was written
// (prev's transaction had not committed), or after (it had: then this
// changes nothing). Every customer a decision of prev changed is among
// prev's touched states, with its stream version, and every key whose
// owner it changed among its key changes; the data keys prev made or
// loaded come with them. The result is the state that prev's write
// leaves, as far as the records of l can reach it.
func (l *customerLinks) after(prev *customerLinks) {
	for _, s := range prev.book.Touched() {
		l.book.LoadState(s)
		l.versions[s.ID] = s.Version
	}
	for _, kc := range prev.book.KeyChanges() {
		l.book.LoadKey(kc.Kind, kc.Key, kc.CustomerID)
	}
	l.prevKeys = prev.dataKeys
	l.forgottenBefore = prev.streams.forgotten
}

// newCustomerLinks returns links with an empty book, for the caller to
// load, and its versions. Identities are keyed by the company's keyed
// hashes; new customers get ids from commands.NewID and tokens from
// NewCustomerToken.
func newCustomerLinks(keys crypto.KeyStore, companyID string) *customerLinks {
	book := customer.NewBook(func(k customer.Kind, v string) customer.Key {
		return customer.Key(keys.Keyring.IdentifierHash(companyID, string(k), v))
	}, commands.NewID, NewCustomerToken)
	return &customerLinks{companyID: companyID, keys: keys, book: book, versions: map[string]int64{}, sealingSeen: map[string]bool{}}
}

// decide decides one record; a *customer.Problem rejects it.
func (l *customerLinks) decide(r customer.Record) (customer.Outcome, error) {
	o, err := l.book.Decide(r)
	if err != nil {
		return o, err
	}
	l.streams.add(o, l.versions[o.CustomerID])
	return o, nil
}

// sealFor asks for the data key of a customer the chunk seals data for.
func (l *customerLinks) sealFor(customerID string) {
	if !l.sealingSeen[customerID] {
		l.sealingSeen[customerID] = true
		l.sealing = append(l.sealing, customerID)
	}
}

// seal makes the data keys of the new customers (stored by save), loads
// those of the others the chunk needs, and returns the customers' stream
// appends (one per customer, at the version it had before the chunk),
// their changes sealed, and the clear keys by customer id, for sealing
// more. It writes nothing.
func (l *customerLinks) seal(ctx context.Context, q Reader) ([]eventstore.StreamAppend, map[string][]byte, error) {
	s := &l.streams
	var created, load []string
	need := map[string]bool{}
	for _, id := range s.order {
		st := s.byID[id]
		if st.outcomes[0].Created {
			created = append(created, id)
			need[id] = true
			continue
		}
		for _, o := range st.outcomes {
			if o.Changes != nil {
				load, need[id] = append(load, id), true
				break
			}
		}
	}
	for _, id := range l.sealing {
		if !need[id] {
			load, need[id] = append(load, id), true
		}
	}
	keys, wrapped, err := l.keys.Generate(created)
	if err != nil {
		return nil, nil, err
	}
	l.created, l.wrapped = created, wrapped
	if len(l.prevKeys) > 0 {
		load = slices.DeleteFunc(load, func(id string) bool {
			k, ok := l.prevKeys[id]
			if ok {
				keys[id] = k
			}
			return ok
		})
	}
	old, err := l.keys.Load(ctx, q, l.companyID, load)
	if err != nil {
		return nil, nil, err
	}
	for id, k := range old {
		keys[id] = k
	}
	for _, id := range l.forgottenBefore {
		delete(keys, id)
	}
	l.dataKeys = keys
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
		return nil, nil, err
	}
	var out []eventstore.StreamAppend
	for _, id := range s.order {
		st := s.byID[id]
		app := eventstore.StreamAppend{StreamID: customer.Stream(l.companyID, id), ExpectedVersion: st.expected}
		for _, o := range st.outcomes {
			if o.Changes != nil {
				app.Events = append(app.Events, sealed[0])
				sealed = sealed[1:]
			}
			if o.Deleted {
				app.Events = append(app.Events, eventstore.NewEvent(customer.TypeDeleted, customer.Deleted{CustomerID: id}))
			}
			if o.Forgotten {
				app.Events = append(app.Events, eventstore.NewEvent(customer.TypeForgotten, customer.Forgotten{CustomerID: id}))
			}
		}
		out = append(out, app)
	}
	return out, keys, nil
}

// save stores the data keys seal made, destroys those of the customers
// forgotten (in the transaction that records the forgetting: both happen
// or neither) and writes back the registry and the states, in the
// transaction that appends the commit.
func (l *customerLinks) save(ctx context.Context, tx pgx.Tx, now time.Time) error {
	if err := l.keys.Store(ctx, tx, l.companyID, l.created, l.wrapped); err != nil {
		return err
	}
	if err := l.keys.Destroy(ctx, tx, l.companyID, l.streams.forgotten); err != nil {
		return err
	}
	return saveCustomerBook(ctx, tx, l.companyID, l.book, l.versions, now.UTC())
}

// sealPersonal encrypts an entity's personal fields with its customer's
// data key, the customer id as associated data (like a CustomerUpserted):
// forgetting the customer shreds them. nil when there are none.
func sealPersonal(keys map[string][]byte, customerID string, personal any) ([]byte, error) {
	key := keys[customerID]
	if key == nil {
		return nil, fmt.Errorf("imports: customer %s has no data key", customerID)
	}
	plain, err := json.Marshal(personal)
	if err != nil {
		return nil, fmt.Errorf("imports: encode personal fields: %w", err)
	}
	return crypto.Seal(key, plain, []byte(customerID))
}
