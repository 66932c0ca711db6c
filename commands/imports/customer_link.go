package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
}

// loadCustomerLinks loads the registry rows and states that records (nil
// ones skipped) can reach.
func loadCustomerLinks(ctx context.Context, tx pgx.Tx, keys crypto.KeyStore, companyID string, records []*customer.Record) (*customerLinks, error) {
	l := newCustomerLinks(keys, companyID)
	versions, err := loadCustomerBook(ctx, tx, companyID, l.book, records)
	if err != nil {
		return nil, err
	}
	l.versions = versions
	return l, nil
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

// commit creates the data keys of the new customers, loads those of the
// others the chunk needs, and returns the customers' stream appends (one
// per customer, at the version it had before the chunk) and the clear
// keys by customer id, for sealing.
func (l *customerLinks) commit(ctx context.Context, tx pgx.Tx) ([]eventstore.StreamAppend, map[string][]byte, error) {
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
	keys, err := l.keys.Create(ctx, tx, l.companyID, created)
	if err != nil {
		return nil, nil, err
	}
	old, err := l.keys.Load(ctx, tx, l.companyID, load)
	if err != nil {
		return nil, nil, err
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
		return nil, nil, err
	}
	var out []eventstore.StreamAppend
	for _, id := range s.order {
		st := s.byID[id]
		app := eventstore.StreamAppend{StreamID: CustomerStream(l.companyID, id), ExpectedVersion: st.expected}
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

// save destroys the data keys of the customers forgotten (in the
// transaction that records the forgetting: both happen or neither) and
// writes back the registry and the states. Call it after the commit is
// appended.
func (l *customerLinks) save(ctx context.Context, tx pgx.Tx, now time.Time) error {
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
