package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// CustomerAsOf reads one customer as retrieval shows it: now, from the
// customers read model, or as of a past instant, from the customer's
// stream in the log up to that instant, folded by the code that builds
// the read model (a CustomerFolder), so that the two cannot differ.
type CustomerAsOf struct {
	store eventLog
	db    database
	fold  CustomerFolder
}

// CustomerFolder folds the events of one customer's stream, from its
// first, into the document the customers read model would hold after
// them, nil when they make no customer; q reads the customer's data key.
// projections/retrieval.Customers implements it (readmodels imports no
// projection: cmd hands it over).
type CustomerFolder interface {
	Fold(ctx context.Context, q crypto.Reader, events []eventstore.RecordedEvent) (json.RawMessage, error)
}

// NewCustomerAsOf returns the query on the event store; db holds the read
// model and the customers' data keys.
func NewCustomerAsOf(store eventstore.Store, db crypto.Querier, fold CustomerFolder) *CustomerAsOf {
	if store == nil || db == nil || fold == nil {
		panic("readmodels: NewCustomerAsOf: nil dependency")
	}
	return &CustomerAsOf{store: eventLog{store}, db: database{db}, fold: fold}
}

// shownCustomer is the customer d (a jsonb document of the customers
// table) as one customer is answered: as stored, but a deleted customer
// with its id, is_deleted and is_forgotten only.
const shownCustomer = `CASE WHEN (d->>'is_deleted')::boolean
	THEN jsonb_build_object('id', d->'id', 'is_deleted', true, 'is_forgotten', d->'is_forgotten') ELSE d END`

// Now returns a customer of the company as retrieval shows it now (the
// read model, which follows the log within moments), a deleted one
// shown as deleted; NotFound when there is none (or not yet).
func (q *CustomerAsOf) Now(ctx context.Context, companyID, customerID string) (json.RawMessage, error) {
	var doc []byte
	err := q.db.QueryRow(ctx, `SELECT `+shownCustomer+` FROM (SELECT doc AS d FROM customers WHERE company_id = $1 AND customer_id = $2) s`,
		companyID, customerID).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.Errorf(domain.NotFound, "no such customer")
	}
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer: %w", err)
	}
	return doc, nil
}

// AsOf returns a customer of the company as retrieval would have shown it
// at the instant at: the events of its stream recorded (committed) at or
// before at, folded. A customer created after at, or none, is NotFound; a
// customer forgotten since is forgotten at every instant, its data key
// being gone.
func (q *CustomerAsOf) AsOf(ctx context.Context, companyID, customerID string, at time.Time) (json.RawMessage, error) {
	// The stream name holds the company: another company's customer with
	// the same id is another stream, and is never read.
	events, err := q.store.ReadStream(ctx, customer.Stream(companyID, customerID), 0)
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer as of: %w", err)
	}
	n := 0
	for n < len(events) && !events[n].RecordedAt.After(at) {
		n++
	}
	doc, err := q.fold.Fold(ctx, q.db, events[:n])
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer as of: %w", err)
	}
	if doc == nil {
		return nil, domain.Errorf(domain.NotFound, "no such customer at %s", at.UTC().Format(time.RFC3339Nano))
	}
	// Through jsonb, so that it reads as the read model's documents do
	// (numbers as PostgreSQL prints them, keys in jsonb's order).
	var shown []byte
	if err := q.db.QueryRow(ctx, `SELECT `+shownCustomer+` FROM (SELECT $1::text::jsonb AS d) s`, string(doc)).Scan(&shown); err != nil {
		return nil, fmt.Errorf("readmodels: customer as of: %w", err)
	}
	return shown, nil
}
