package imports

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
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
// product (product_link.go); it gets the next integer id of the company
// and its personal fields are sealed with its customer's data key. The
// record {id, is_deleted: true} deletes an event. One commit per chunk
// holds every stream the chunk changes: customers, products created, and
// the company's activity stream.
type EventImporter struct {
	store TxAppender
	keys  crypto.KeyStore
	now   func() time.Time
}

var _ Resolver = (*EventImporter)(nil)

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
	// fields are the event's fields with its product's product_id, or
	// nil for the record's own (the parsed record is not changed: a
	// chunk resolved again re-parses it, but its fields are shared).
	fields map[string]any
}

// ImportChunk implements Importer: it resolves the chunk (unless it was
// resolved ahead: Chunk.Resolution) and writes it.
func (h *EventImporter) ImportChunk(ctx context.Context, tx pgx.Tx, chunk Chunk) (importing.Outcome, error) {
	return writeResolved(ctx, tx, chunk, "events", h.resolve, h.write)
}

// eventsResolved is a chunk of event records decided and sealed, not yet
// written.
type eventsResolved struct {
	companyID string
	links     *customerLinks
	products  *productLinks
	// firstID is the company's last event id before the chunk, lastID
	// after it; deleted are the ids known deleted after it, deletions the
	// ones it deletes.
	firstID, lastID int64
	deleted         map[int64]bool
	deletions       []int64
	streams         []eventstore.StreamAppend
	outcome         importing.Outcome
}

// Resolve implements Resolver.
func (h *EventImporter) Resolve(ctx context.Context, q Reader, chunk Chunk, prev Resolution) (Resolution, error) {
	p, _ := prev.(*eventsResolved)
	return h.resolve(ctx, q, chunk, p)
}

// resolve decides the chunk's records in order: each event's customer
// (as a customer record would be), its product, its id; after prev's
// decisions when prev is not nil.
func (h *EventImporter) resolve(ctx context.Context, q Reader, chunk Chunk, prev *eventsResolved) (*eventsResolved, error) {
	co := chunk.Company
	rej := rejecter{chunk: chunk, entity: "events"}
	records, problems := chunkRecords(chunk, parseEvents)
	if err := rej.rejectAll(problems); err != nil {
		return nil, err
	}
	r, err := h.load(ctx, q, co, records, prev)
	if err != nil {
		return nil, err
	}
	pending, order, err := r.decide(chunk, records, &rej)
	if err != nil {
		return nil, err
	}
	if err := r.seal(ctx, q, co.ID, pending, order); err != nil {
		return nil, err
	}
	r.outcome = rej.outcome()
	return r, nil
}

// load reads what the records can reach: their customers, their
// products, the company's last event id and which of the events they
// delete are deleted already; prev's decisions laid over it.
func (h *EventImporter) load(ctx context.Context, q Reader, co company.Company, records []*activity.Record, prev *eventsResolved) (*eventsResolved, error) {
	customers := make([]*customer.Record, len(records))
	var refs []product.Ref
	for i, r := range records {
		if r != nil && r.DeleteID == 0 {
			customers[i] = &r.Customer
			refs = append(refs, r.Product)
		}
	}
	links, err := loadCustomerLinks(ctx, q, h.keys, co.ID, customers)
	if err != nil {
		return nil, err
	}
	products, err := loadProductLinks(ctx, q, co.ID, co.Currency, refs)
	if err != nil {
		return nil, err
	}
	rows, err := q.Query(ctx, `SELECT coalesce((SELECT last_id FROM activity_counters WHERE company_id = $1), 0)`, co.ID)
	var lastID int64
	if err == nil {
		lastID, err = pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
	}
	if err != nil {
		return nil, fmt.Errorf("imports: import events: read the id counter: %w", err)
	}
	deleted, err := loadDeletedEvents(ctx, q, co.ID, records)
	if err != nil {
		return nil, err
	}
	if prev != nil {
		links.after(prev.links)
		products.after(prev.products)
		lastID = prev.lastID
		for _, id := range prev.deletions {
			deleted[id] = true
		}
	}
	return &eventsResolved{companyID: co.ID, links: links, products: products, firstID: lastID, lastID: lastID, deleted: deleted}, nil
}

// decide decides the records in order; the activity events keep that
// order: order holds, per activity event, its index in pending, or -id
// for a deletion.
func (r *eventsResolved) decide(chunk Chunk, records []*activity.Record, rej *rejecter) (pending []pendingEvent, order []int, err error) {
	for i, rec := range records {
		if rec == nil {
			continue
		}
		if rec.DeleteID > 0 {
			if !chunk.MayDestroy {
				if err := rej.reject(i, &activity.Problem{Field: "is_deleted", Reason: reasonNeedsAdmin}); err != nil {
					return nil, nil, err
				}
				continue
			}
			if rec.DeleteID > r.lastID {
				if err := rej.reject(i, &activity.Problem{Field: "id", Reason: reasonNoEvent}); err != nil {
					return nil, nil, err
				}
				continue
			}
			rej.accept(i, rec.Ignored)
			if !r.deleted[rec.DeleteID] { // deleted already: nothing changes
				r.deleted[rec.DeleteID] = true
				r.deletions = append(r.deletions, rec.DeleteID)
				order = append(order, -int(rec.DeleteID))
			}
			continue
		}
		o, err := r.links.decide(rec.Customer)
		if err != nil {
			if err := rej.reject(i, eventCustomerProblem(err)); err != nil {
				return nil, nil, err
			}
			continue
		}
		rej.accept(i, rec.Ignored)
		r.lastID++
		pe := pendingEvent{rec: rec, id: r.lastID, customer: o.CustomerID}
		if !rec.Product.Empty() {
			po := r.products.link(rec.Product)
			pe.fields = withField(maps.Clone(rec.Fields), "product_id", po.ExternalID)
			pe.product = po.ProductID
		}
		if len(rec.Personal) > 0 {
			r.links.sealFor(o.CustomerID)
		}
		order = append(order, len(pending))
		pending = append(pending, pe)
	}
	return pending, order, nil
}

// seal seals the customers' changes and the events' personal fields, and
// lays out the chunk's streams: the customers', the products created, and
// the company's activity stream.
func (r *eventsResolved) seal(ctx context.Context, q Reader, companyID string, pending []pendingEvent, order []int) error {
	customerStreams, keys, err := r.links.seal(ctx, q)
	if err != nil {
		return err
	}
	recorded, errs := make([]eventstore.Event, len(pending)), make([]error, len(pending))
	inParallel(len(pending), func(i int) {
		recorded[i], errs[i] = recordedEvent(pending[i], keys)
	})
	if err := errors.Join(errs...); err != nil {
		return err
	}
	r.streams = append(customerStreams, r.products.created...)
	if len(order) > 0 {
		app := eventstore.StreamAppend{StreamID: activity.Stream(companyID), ExpectedVersion: eventstore.Any}
		for _, o := range order {
			if o < 0 {
				app.Events = append(app.Events, eventstore.NewEvent(activity.TypeDeleted, activity.Deleted{ID: int64(-o)}))
				continue
			}
			app.Events = append(app.Events, recorded[o])
		}
		r.streams = append(r.streams, app)
	}
	return nil
}

// write appends the resolved chunk's events as one commit and writes back
// the write-side state, in tx. The event id counter is written only if it
// is still what the chunk was resolved against (errStale otherwise).
func (h *EventImporter) write(ctx context.Context, tx pgx.Tx, meta eventstore.Metadata, r *eventsResolved) (importing.Outcome, error) {
	if len(r.streams) > 0 {
		if _, err := h.store.AppendTx(ctx, tx, eventstore.Commit{Metadata: meta, Streams: r.streams}); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: %w", err)
		}
	}
	if len(r.deletions) > 0 {
		if _, err := tx.Exec(ctx, `INSERT INTO activity_deleted (company_id, id) SELECT $1, unnest($2::bigint[])`, r.companyID, r.deletions); err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: save the deletions: %w", err)
		}
	}
	if r.lastID != r.firstID {
		tag, err := tx.Exec(ctx, `INSERT INTO activity_counters (company_id, last_id) VALUES ($1, $3)
			ON CONFLICT (company_id) DO UPDATE SET last_id = EXCLUDED.last_id WHERE activity_counters.last_id = $2`,
			r.companyID, r.firstID, r.lastID)
		if err != nil {
			return importing.Outcome{}, fmt.Errorf("imports: import events: save the id counter: %w", err)
		}
		if tag.RowsAffected() != 1 {
			return importing.Outcome{}, fmt.Errorf("imports: import events: the id counter moved from %d: %w", r.firstID, errStale)
		}
	}
	if err := r.links.save(ctx, tx, h.now()); err != nil {
		return importing.Outcome{}, err
	}
	if err := r.products.save(ctx, tx); err != nil {
		return importing.Outcome{}, err
	}
	return r.outcome, nil
}

// recordedEvent is the EventRecorded of an accepted event, its personal
// fields sealed with its customer's data key.
func recordedEvent(pe pendingEvent, keys map[string][]byte) (eventstore.Event, error) {
	r := pe.rec
	fields := r.Fields
	if pe.fields != nil {
		fields = pe.fields
	}
	data := activity.Recorded{ID: pe.id, CustomerID: pe.customer, Type: r.Type, Date: r.Date, ProductID: pe.product, Fields: fields}
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
func loadDeletedEvents(ctx context.Context, q Reader, companyID string, records []*activity.Record) (map[int64]bool, error) {
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
	rows, err := q.Query(ctx, `SELECT id FROM activity_deleted WHERE company_id = $1 AND id = ANY($2)`, companyID, ids)
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
