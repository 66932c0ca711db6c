package retrieval

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/bulk"
	"github.com/clientele/clientele/projections/internal/document"
)

// Events keeps the activity_events table: each event (the interface's
// Event entity, package activity) as retrieval shows it
// (document/activity.go). Deleted events stay, flagged, and retrieval leaves
// them out. It is async, like every entity an import fills.
//
// The event's personal fields reach it only sealed with the customer's
// data key. Forgetting the customer removes them from every event of the
// customer, when CustomerForgotten is applied or as soon as an event
// shows the key gone (a rebuild replays the events before the
// forgetting, with the key already destroyed).
type Events struct {
	keys crypto.KeyStore
}

// NewEvents returns the projector; keys opens the sealed personal fields.
func NewEvents(keys crypto.KeyStore) *Events {
	if keys.Keyring == nil {
		panic("projections: NewEvents: KeyStore without a keyring")
	}
	return &Events{keys: keys}
}

// Name implements Projector.
func (*Events) Name() string { return "events" }

// Tables implements Projector. (The log's own table is events.)
func (*Events) Tables() []string { return []string{"activity_events"} }

// EventTypes implements TypeFilter.
func (*Events) EventTypes() []string {
	return []string{activity.TypeRecorded, activity.TypeDeleted, customer.TypeForgotten}
}

// ForgetTypes implements projections.Forgetter: forgetting a customer
// (CustomerForgotten) is applied ahead of the commits held before it.
func (*Events) ForgetTypes() []string { return []string{customer.TypeForgotten} }

// Forget implements projections.Forgetter: applying a forgetting removes the
// customer's personal fields from all of the customer's events there are,
// whenever it comes, and the held events recorded before it open to
// nothing once applied, the key being gone.
func (p *Events) Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	return p.Apply(ctx, tx, events)
}

// activityChange is one event the projector uses, decoded.
type activityChange struct {
	e      *eventstore.RecordedEvent
	rec    activity.Recorded    // TypeRecorded
	key    document.ActivityKey // TypeRecorded, TypeDeleted
	forgot document.CustomerKey // customer.TypeForgotten
}

// Apply implements Projector in three round trips whatever the number of
// events (plus one per further company): the rows of the events named,
// the data keys of their customers, and one batch that upserts the
// changed rows and removes the personal fields of forgotten customers.
func (p *Events) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var changes []activityChange
	var order []document.ActivityKey
	seen := map[document.ActivityKey]bool{}
	needKeys := map[document.CustomerKey]bool{}
	byCompany := map[string][]string{}
	for i, e := range events {
		c := activityChange{e: &events[i]}
		company := e.Metadata.CompanyID
		switch e.Type {
		case activity.TypeRecorded:
			if err := document.DecodeNumbersEvent(e, &c.rec); err != nil {
				return err
			}
			c.key = document.ActivityKey{Company: company, ID: c.rec.ID}
			if ck := (document.CustomerKey{Company: company, ID: c.rec.CustomerID}); len(c.rec.Sealed) > 0 && !needKeys[ck] {
				needKeys[ck] = true
				byCompany[company] = append(byCompany[company], ck.ID)
			}
		case activity.TypeDeleted:
			var d activity.Deleted
			if err := bulk.Decode(e, &d); err != nil {
				return err
			}
			c.key = document.ActivityKey{Company: company, ID: d.ID}
		case customer.TypeForgotten:
			var f customer.Forgotten
			if err := bulk.Decode(e, &f); err != nil {
				return err
			}
			c.forgot = document.CustomerKey{Company: company, ID: f.CustomerID}
		default:
			continue
		}
		if e.Type != customer.TypeForgotten && !seen[c.key] {
			seen[c.key] = true
			order = append(order, c.key)
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil
	}
	rows, err := loadActivityRows(ctx, tx, order)
	if err != nil {
		return err
	}
	keys, err := document.LoadCustomerKeys(ctx, tx, p.keys, byCompany)
	if err != nil {
		return fmt.Errorf("projections: events: %w", err)
	}
	gone := map[document.CustomerKey]bool{}
	for _, c := range changes {
		switch c.e.Type {
		case activity.TypeRecorded:
			r := rows[c.key]
			if r != nil && c.e.StreamVersion <= r.Version {
				continue
			}
			ck := document.CustomerKey{Company: c.key.Company, ID: c.rec.CustomerID}
			var personal map[string]any
			if len(c.rec.Sealed) > 0 {
				fields, ok, err := document.OpenPersonal(keys, ck, c.rec.Sealed, activity.Personal)
				if err != nil {
					return fmt.Errorf("projections: events: open %s/%d: %w", c.e.StreamID, c.e.StreamVersion, err)
				}
				personal = fields
				if !ok {
					gone[ck] = true
				}
			}
			if r == nil {
				r = &document.ActivityRow{CompanyID: c.key.Company, ID: c.key.ID, CreatedAt: c.e.RecordedAt.UTC()}
				rows[c.key] = r
			}
			r.Advance(c.e)
			r.CustomerID, r.Doc = c.rec.CustomerID, document.EventDoc(c.rec, personal, r.IsDeleted)
		case activity.TypeDeleted:
			// An id never recorded has nothing to hide.
			if r := rows[c.key]; r != nil && r.Advance(c.e) {
				r.IsDeleted, r.Doc["is_deleted"] = true, true
			}
		case customer.TypeForgotten:
			gone[c.forgot] = true
		}
	}
	var out []*document.ActivityRow
	for _, k := range order {
		if r := rows[k]; r != nil && r.Changed {
			// Dropped before the write too: no row version holds them.
			if gone[document.CustomerKey{Company: r.CompanyID, ID: r.CustomerID}] {
				document.DropFields(r.Doc, activity.Personal)
			}
			out = append(out, r)
		}
	}
	var b pgx.Batch
	if err := queueActivityRows(&b, out); err != nil {
		return err
	}
	document.QueueForget(&b, "activity_events", gone, activity.Personal)
	if b.Len() == 0 {
		return nil
	}
	return bulk.SendBatch(ctx, tx, "events", &b)
}

// queueActivityRows queues the upsert of the rows, one statement.
func queueActivityRows(b *pgx.Batch, out []*document.ActivityRow) error {
	if len(out) == 0 {
		return nil
	}
	n := len(out)
	companies, ids, customers, docs := make([]string, n), make([]int64, n), make([]string, n), make([][]byte, n)
	deleted, versions, created, updated := make([]bool, n), make([]int64, n), make([]time.Time, n), make([]time.Time, n)
	for i, r := range out {
		doc, err := json.Marshal(r.Doc)
		if err != nil {
			return fmt.Errorf("projections: events: encode %d: %w", r.ID, err)
		}
		companies[i], ids[i], customers[i], docs[i] = r.CompanyID, r.ID, r.CustomerID, doc
		deleted[i], versions[i], created[i], updated[i] = r.IsDeleted, r.Version, r.CreatedAt, r.UpdatedAt
	}
	b.Queue(`
		INSERT INTO activity_events (company_id, event_id, customer_id, doc, is_deleted, version, created_at, updated_at)
		SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::jsonb[], $5::boolean[], $6::bigint[], $7::timestamptz[], $8::timestamptz[])
		ON CONFLICT (company_id, event_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, doc = EXCLUDED.doc,
			is_deleted = EXCLUDED.is_deleted, version = EXCLUDED.version, updated_at = EXCLUDED.updated_at`,
		companies, ids, customers, docs, deleted, versions, created, updated)
	return nil
}

// loadActivityRows reads the rows of the given events, in one query.
func loadActivityRows(ctx context.Context, tx pgx.Tx, keys []document.ActivityKey) (map[document.ActivityKey]*document.ActivityRow, error) {
	companies, ids := make([]string, len(keys)), make([]int64, len(keys))
	for i, k := range keys {
		companies[i], ids[i] = k.Company, k.ID
	}
	rows, err := tx.Query(ctx, `SELECT t.company_id, t.event_id, t.customer_id, t.doc, t.is_deleted, t.version, t.created_at
		FROM activity_events t JOIN unnest($1::text[], $2::bigint[]) AS k(company_id, event_id) USING (company_id, event_id)`,
		companies, ids)
	if err != nil {
		return nil, fmt.Errorf("projections: events: load: %w", err)
	}
	out := make(map[document.ActivityKey]*document.ActivityRow, len(keys))
	var r document.ActivityRow
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&r.CompanyID, &r.ID, &r.CustomerID, &doc, &r.IsDeleted, &r.Version, &r.CreatedAt}, func() error {
		row := r
		row.CreatedAt = row.CreatedAt.UTC()
		if err := document.DecodeNumbers(doc, &row.Doc); err != nil {
			return fmt.Errorf("doc of %d: %w", row.ID, err)
		}
		out[document.ActivityKey{Company: row.CompanyID, ID: row.ID}] = &row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections: events: load: %w", err)
	}
	return out, nil
}
