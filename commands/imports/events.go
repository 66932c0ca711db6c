package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/domain/product"
	"github.com/clientele/clientele/domain/values"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
)

// EventImporter imports event records (activity.Parser): each event finds
// its customer like a customer record does, and may create or change it
// (subscriptions, the customer fields it carries); it finds or creates its
// product (product_links.go); it gets the next integer id of the company
// and its personal fields are sealed with its customer's data key. The
// record {id, is_deleted: true} deletes an event. One commit per chunk
// holds every stream the chunk changes: customers, products created, and
// the company's activity stream.
type EventImporter struct {
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

var _ Importer = (*EventImporter)(nil)

// NewEventImporter returns the events importer; keys holds the customers'
// data keys, now stamps the customers' write-side state.
func NewEventImporter(store TxAppender, keys crypto.KeyStore, now func() time.Time) *EventImporter {
	if store == nil || keys.Keyring == nil || now == nil {
		panic("imports: NewEventImporter: nil dependency")
	}
	return &EventImporter{store: store, keys: keys, now: now}
}

// Entity implements Importer.
func (*EventImporter) Entity() importing.Entity { return importing.Events }

// Reasons of the rejections the events importer makes itself.
const (
	reasonNoEvent = "no event has this id"
)

// pendingEvent is an accepted event waiting for its seal.
type pendingEvent struct {
	rec      *activity.Record
	id       int64
	customer string
	product  string
}

// ImportChunk implements Importer.
func (h *EventImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	co := chunk.Company
	meta, err := chunkMetadata(chunk, "events")
	if err != nil {
		return importing.Outcome{}, err
	}
	rej := rejecter{chunk: chunk, entity: "events"}
	records, problems := chunkRecords(chunk, parseEvents)
	if err := rej.rejectAll(problems); err != nil {
		return importing.Outcome{}, err
	}
	customers := make([]*customer.Record, len(records))
	var refs []product.Ref
	for i, r := range records {
		if r != nil && r.DeleteID == 0 {
			customers[i] = &r.Customer
			refs = append(refs, r.Product)
		}
	}
	links, err := loadCustomerLinks(ctx, tx, h.keys, co.ID, customers)
	if err != nil {
		return importing.Outcome{}, err
	}
	products, err := loadProductLinks(ctx, tx, co.ID, co.Currency, refs)
	if err != nil {
		return importing.Outcome{}, err
	}
	var lastID int64
	if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT last_id FROM activity_counters WHERE company_id = $1 FOR UPDATE), 0)`,
		co.ID).Scan(&lastID); err != nil {
		return importing.Outcome{}, fmt.Errorf("imports: import events: read the id counter: %w", err)
	}
	firstID := lastID
	deleted, err := loadDeletedEvents(ctx, tx, co.ID, records)
	if err != nil {
		return importing.Outcome{}, err
	}

	// Decide in record order; the activity events keep that order.
	var pending []pendingEvent
	var order []int // per activity event: index in pending, or -id for a deletion
	var deletions []int64
	for i, r := range records {
		if r == nil {
			continue
		}
		if r.DeleteID > 0 {
			if !chunk.MayDestroy {
				if err := rej.reject(i, &activity.Problem{Field: "is_deleted", Reason: reasonNeedsAdmin}); err != nil {
					return importing.Outcome{}, err
				}
				continue
			}
			if r.DeleteID > lastID {
				if err := rej.reject(i, &activity.Problem{Field: "id", Reason: reasonNoEvent}); err != nil {
					return importing.Outcome{}, err
				}
				continue
			}
			rej.accept(i, r.Ignored)
			if !deleted[r.DeleteID] { // deleted already: nothing changes
				deleted[r.DeleteID] = true
				deletions = append(deletions, r.DeleteID)
				order = append(order, -int(r.DeleteID))
			}
			continue
		}
		o, err := links.decide(r.Customer)
		if err != nil {
			if err := rej.reject(i, eventCustomerProblem(err)); err != nil {
				return importing.Outcome{}, err
			}
			continue
		}
		rej.accept(i, r.Ignored)
		lastID++
		pe := pendingEvent{rec: r, id: lastID, customer: o.CustomerID}
		if !r.Product.Empty() {
			po := products.link(r.Product)
			r.Fields = withField(r.Fields, "product_id", po.ExternalID)
			pe.product = po.ProductID
		}
		if len(r.Personal) > 0 {
			links.sealFor(o.CustomerID)
		}
		order = append(order, len(pending))
		pending = append(pending, pe)
	}

	customerStreams, keys, err := links.seal(ctx, tx)
	if err != nil {
		return importing.Outcome{}, err
	}
	recorded, errs := make([]eventstore.Event, len(pending)), make([]error, len(pending))
	inParallel(len(pending), func(i int) {
		recorded[i], errs[i] = recordedEvent(pending[i], keys)
	})
	if err := errors.Join(errs...); err != nil {
		return importing.Outcome{}, err
	}
	c := eventstore.Commit{Metadata: meta, Streams: append(customerStreams, products.created...)}
	if len(order) > 0 {
		app := eventstore.StreamAppend{StreamID: activity.Stream(co.ID), ExpectedVersion: eventstore.Any}
		for _, o := range order {
			if o < 0 {
				app.Events = append(app.Events, eventstore.NewEvent(activity.TypeDeleted, activity.Deleted{ID: int64(-o)}))
				continue
			}
			app.Events = append(app.Events, recorded[o])
		}
		c.Streams = append(c.Streams, app)
	}
	if len(c.Streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, c); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: %w", err)
		}
	}
	if len(deletions) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO activity_deleted (company_id, id) SELECT $1, unnest($2::bigint[])`, co.ID, deletions); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: save the deletions: %w", err)
		}
	}
	if lastID != firstID {
		if _, err := tx.Exec(ctx, `INSERT INTO activity_counters (company_id, last_id) VALUES ($1, $2)
			ON CONFLICT (company_id) DO UPDATE SET last_id = EXCLUDED.last_id`, co.ID, lastID); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: save the id counter: %w", err)
		}
	}
	if err := links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	if err := products.save(ctx, tx); err != nil {
		return importing.Outcome{}, err
	}
	return rej.outcome(), nil
}

// recordedEvent is the EventRecorded of an accepted event, its personal
// fields sealed with its customer's data key.
func recordedEvent(pe pendingEvent, keys map[string][]byte) (eventstore.Event, error) {
	r := pe.rec
	data := activity.Recorded{ID: pe.id, CustomerID: pe.customer, Type: r.Type, Date: r.Date, ProductID: pe.product, Fields: r.Fields}
	if len(r.Personal) > 0 {
		sealed, err := sealPersonal(keys, pe.customer, r.Personal)
		if err != nil {
			return eventstore.Event{}, err
		}
		data.Sealed = sealed
	}
	return eventstore.NewEvent(activity.TypeRecorded, data), nil
}

// eventCustomerProblem names, in a rejection by the customer registry, the
// event's field rather than the customer's (customer_id for external_id),
// and no field when the customer's state refuses the event (deleted).
func eventCustomerProblem(err error) error {
	var p *customer.Problem
	if !errors.As(err, &p) {
		return err
	}
	switch p.Field {
	case customer.FieldExternalID:
		return &customer.Problem{Field: "customer_id", Reason: p.Reason}
	case customer.FieldIsDeleted, customer.FieldIsForgotten:
		// The customer's state, not a field of the event.
		return &customer.Problem{Reason: p.Reason}
	}
	return err
}

// withField returns m with key set to v, allocating m when nil.
func withField(m map[string]any, key string, v any) map[string]any {
	if m == nil {
		m = map[string]any{}
	}
	m[key] = v
	return m
}

// problemOf returns the field and reason of a rejection by any domain
// parser or book (a *values.Problem, which every entity's Problem is), and
// false for any other error (a failure, not a rejection).
func problemOf(err error) (field, reason string, ok bool) {
	var p *values.Problem
	if !errors.As(err, &p) {
		return "", "", false
	}
	return p.Field, p.Reason, true
}

// parseEvents returns the company's events parser.
func parseEvents(co company.Company) func([]byte) (activity.Record, error) {
	return activity.NewParser(co).Parse
}

// Prepare implements Preparer.
func (*EventImporter) Prepare(co company.Company, records []json.RawMessage) Prepared {
	return parseChunk(records, parseEvents(co))
}

// loadDeletedEvents returns which of the events the records delete are
// deleted already.
func loadDeletedEvents(ctx context.Context, tx pgx.Tx, companyID string, records []*activity.Record) (map[int64]bool, error) {
	var ids []int64
	for _, r := range records {
		if r != nil && r.DeleteID > 0 {
			ids = append(ids, r.DeleteID)
		}
	}
	deleted := map[int64]bool{}
	if len(ids) == 0 {
		return deleted, nil
	}
	rows, err := tx.Query(ctx, `SELECT id FROM activity_deleted WHERE company_id = $1 AND id = ANY($2)`, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("imports: import events: read the deletions: %w", err)
	}
	var id int64
	if _, err := pgx.ForEachRow(rows, []any{&id}, func() error {
		deleted[id] = true
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: import events: read the deletions: %w", err)
	}
	return deleted, nil
}
