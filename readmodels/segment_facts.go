package readmodels

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/segment"
)

// SegmentFacts is the one loader of the facts a segment rule is decided
// on (segment.Facts: each customer's document, its events, its counted
// sales, and the segments it is a member of now). The membership
// projection (projections/segments) decides its members with it, within
// its transaction, and the preview decides a rule with it.
//
// It reads one of two sources, with the same answer on the same settled
// data: the facts the membership projection keeps for a company with a
// segment (segment_customers, segment_activity, segment_sales, as of the
// commits it applied), or the retrieval read models (customers,
// activity_events, sales, as of theirs), which hold the same folds of the
// log. The members now are segment_members in both.
type SegmentFacts struct {
	db  database
	src factSource
}

// SegmentFactsIn returns the loader of the membership projection's own
// facts within tx: the projector reads the facts it has just written,
// before its commit.
func SegmentFactsIn(tx pgx.Tx) *SegmentFacts {
	return &SegmentFacts{db: database{tx}, src: membershipFacts}
}

// CustomerFacts are the facts of some customers of a company.
type CustomerFacts struct {
	// IDs are the customers with a document (neither deleted nor
	// forgotten), by customer id.
	IDs []string
	// Docs are their documents as retrieval shows them.
	Docs map[string]json.RawMessage
	// Facts are their facts, Member unset.
	Facts map[string]*segment.Facts
	// Members are the segments each customer (of the ones asked for,
	// documents or not) is a member of now.
	Members map[string]map[string]bool
}

// factSource is where the facts are read: the statements that read a
// page of documents, the documents of given customers, their events and
// their counted sales, each with $1 the company.
type factSource struct {
	// page: customer_id, doc::text of the customers after $2, $3 of them.
	page string
	// docs: customer_id, doc::text of the customers = ANY($2).
	docs string
	// events: customer_id, type, at, fields::text of their
	// non-deleted events.
	events string
	// sales: customer_id, at, revenue, products of their counted sales
	// with a date.
	sales string
	// personal says that the events' documents hold personal fields,
	// which no event leaf reads (the membership facts drop them).
	personal bool
}

// membershipFacts are the facts the membership projection keeps.
var membershipFacts = factSource{
	page: `SELECT customer_id, doc::text FROM segment_customers WHERE company_id = $1 AND customer_id > $2
		ORDER BY customer_id LIMIT $3`,
	docs:   `SELECT customer_id, doc::text FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2)`,
	events: `SELECT customer_id, type, at, fields::text FROM segment_activity WHERE company_id = $1 AND customer_id = ANY($2)`,
	sales: `SELECT customer_id, at, revenue, products FROM segment_sales
		WHERE company_id = $1 AND customer_id = ANY($2) AND counted AND at IS NOT NULL`,
}

// retrievalFacts are the retrieval read models: the same folds of the
// log (the customers' documents, the events' documents, the sales'
// counted, revenue, sale_date and rows), kept for every company.
var retrievalFacts = factSource{
	page: `SELECT customer_id, doc::text FROM customers WHERE company_id = $1 AND customer_id > $2
		AND NOT is_deleted AND NOT is_forgotten ORDER BY customer_id LIMIT $3`,
	docs: `SELECT customer_id, doc::text FROM customers WHERE company_id = $1 AND customer_id = ANY($2)
		AND NOT is_deleted AND NOT is_forgotten`,
	events: `SELECT customer_id, doc->>'type', (doc->>'date')::timestamptz, doc::text FROM activity_events
		WHERE company_id = $1 AND customer_id = ANY($2) AND NOT is_deleted`,
	sales: `SELECT customer_id, sale_date, revenue, ARRAY(SELECT DISTINCT r->>'product_id'
			FROM jsonb_array_elements(CASE WHEN jsonb_typeof(doc->'sale_rows') = 'array' THEN doc->'sale_rows' END) r
			WHERE jsonb_typeof(r->'product_id') = 'string')
		FROM sales WHERE company_id = $1 AND customer_id = ANY($2) AND counted AND sale_date IS NOT NULL`,
	personal: true,
}

// decodeFacts reads a stored document with numbers as json.Number, as
// the evaluator takes them.
func decodeFacts(text []byte) (map[string]any, error) {
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var m map[string]any
	err := d.Decode(&m)
	return m, err
}

func newCustomerFacts() CustomerFacts {
	return CustomerFacts{Docs: map[string]json.RawMessage{}, Facts: map[string]*segment.Facts{}, Members: map[string]map[string]bool{}}
}

// queueDocs queues a statement of documents into p.
func (p *CustomerFacts) queueDocs(b *pgx.Batch, sql string, args ...any) {
	b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
		var id string
		var text []byte
		_, err := pgx.ForEachRow(rows, []any{&id, &text}, func() error {
			doc, err := decodeFacts(text)
			if err != nil {
				return err
			}
			p.IDs = append(p.IDs, id)
			p.Docs[id] = slices.Clone(text)
			p.Facts[id] = &segment.Facts{Customer: doc}
			return nil
		})
		return err
	})
}

// queueRest queues the events, sales and memberships of the customers
// ids into p.
func (p *CustomerFacts) queueRest(b *pgx.Batch, src factSource, company string, ids []string) {
	b.Queue(src.events, company, ids).Query(func(rows pgx.Rows) error {
		var id, typ string
		var when time.Time
		var text []byte
		_, err := pgx.ForEachRow(rows, []any{&id, &typ, &when, &text}, func() error {
			f := p.Facts[id]
			if f == nil {
				return nil
			}
			fields, err := decodeFacts(text)
			if err != nil {
				return err
			}
			if src.personal {
				for _, k := range activity.Personal {
					delete(fields, k)
				}
			}
			f.Events = append(f.Events, segment.Activity{Type: typ, At: when.UTC(), Fields: fields})
			return nil
		})
		return err
	})
	b.Queue(src.sales, company, ids).Query(func(rows pgx.Rows) error {
		var id string
		var at time.Time
		var revenue int64
		var products []string
		_, err := pgx.ForEachRow(rows, []any{&id, &at, &revenue, &products}, func() error {
			if f := p.Facts[id]; f != nil {
				f.Sales = append(f.Sales, segment.Sale{At: at, Revenue: revenue, Products: slices.Clone(products)})
			}
			return nil
		})
		return err
	})
	b.Queue(`SELECT customer_id, segment_key FROM segment_members WHERE company_id = $1 AND customer_id = ANY($2)`,
		company, ids).Query(func(rows pgx.Rows) error {
		var id, key string
		_, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
			if p.Members[id] == nil {
				p.Members[id] = map[string]bool{}
			}
			p.Members[id][key] = true
			return nil
		})
		return err
	})
}

// CustomersQuery is what Customers reads.
type CustomersQuery struct {
	Company string
	// IDs are the customers whose facts are read.
	IDs []string
	// Known are documents the caller holds already, by customer id (the
	// projector's, which it has just written): they are not read again.
	Known map[string]json.RawMessage
	// Reads are the facts the rules read (the union of the company's
	// active rules' Reads).
	Reads segment.Reads
	// Docs asks for the whole documents too (the feed of a segment's
	// entries carries them).
	Docs bool
}

// Customers returns the facts of the company's customers q.IDs that
// have a document, in the order of q.IDs, reduced to what q.Reads names
// (as Range reduces them: the named fields of each document, the events
// of the named types with only the named fields, the sales only when a
// sales leaf reads them), and the segments each of q.IDs (documents or
// not) is a member of now, in one round trip. Deciding the rules on them
// gives what deciding them on all the facts gives. A known document is
// given whole (its fields beyond the named ones are read by no leaf).
func (s *SegmentFacts) Customers(ctx context.Context, q CustomersQuery) (FactRange, error) {
	r := FactRange{Members: map[string]map[string]bool{}}
	if len(q.IDs) == 0 {
		return r, nil
	}
	if s.src.personal {
		return r, fmt.Errorf("readmodels: segment facts: customers are read from the membership facts only")
	}
	if q.Docs {
		r.Docs = map[string]json.RawMessage{}
	}
	// Every customer asked for has a place, documents or not; those
	// without one are dropped at the end (their events and sales with
	// them: a customer without a document is decided on nothing).
	r.Facts = make([]segment.Facts, len(q.IDs))
	has := make([]bool, len(q.IDs))
	at := make(map[string]int, len(q.IDs))
	var read []string
	for i, id := range q.IDs {
		at[id] = i
		text, ok := q.Known[id]
		if !ok {
			read = append(read, id)
			continue
		}
		doc, err := decodeFacts(text)
		if err != nil {
			return r, fmt.Errorf("readmodels: segment facts: the document of %s: %w", id, err)
		}
		r.Facts[i].Customer, has[i] = doc, true
		if q.Docs {
			r.Docs[id] = text
		}
	}
	// Each statement is bounded by the least and greatest id too: the
	// customers of an import's commit are mostly neighbours (ids follow
	// creation), and the bound makes PostgreSQL read them by the index
	// instead of scanning the company, as it does for a long = ANY list.
	lo, hi := bounds(q.IDs)
	var b pgx.Batch
	if len(read) > 0 {
		head := `SELECT customer_id`
		first := 1
		if q.Docs {
			head, first = head+`, doc::text`, 2
		}
		lo, hi := bounds(read)
		sql, args := selectFields(head, "doc", q.Reads.Fields,
			` FROM segment_customers WHERE company_id = $1 AND customer_id = ANY($2) AND customer_id BETWEEN $3 AND $4`,
			q.Company, read, lo, hi)
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			shared := newSharedDocs()
			for rows.Next() {
				raw := rows.RawValues()
				i, ok := at[string(raw[0])]
				if !ok {
					continue
				}
				doc, err := shared.doc(0, q.Reads.Fields, raw[first:], nil)
				if err != nil {
					return fmt.Errorf("the document of %s: %w", raw[0], err)
				}
				r.Facts[i].Customer, has[i] = doc, true
				if q.Docs {
					r.Docs[q.IDs[i]] = slices.Clone(raw[1])
				}
			}
			return rows.Err()
		})
	}
	if len(q.Reads.Events) > 0 {
		fields := q.Reads.EventFields()
		sql, args := selectFields(`SELECT customer_id, type, at`, "fields", fields,
			` FROM segment_activity WHERE company_id = $1 AND customer_id = ANY($2) AND type = ANY($3)
				AND customer_id BETWEEN $4 AND $5`,
			q.Company, q.IDs, q.Reads.EventTypes(), lo, hi)
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			return r.readEvents(rows, q.Reads, fields, at)
		})
	}
	if q.Reads.Sales {
		b.Queue(`SELECT customer_id, at, revenue, `+salesProducts(q.Reads)+` FROM segment_sales
			WHERE company_id = $1 AND customer_id = ANY($2) AND customer_id BETWEEN $3 AND $4 AND counted AND at IS NOT NULL`,
			q.Company, q.IDs, lo, hi).Query(r.readSales(at))
	}
	b.Queue(`SELECT customer_id, segment_key FROM segment_members WHERE company_id = $1 AND customer_id = ANY($2)
		AND customer_id BETWEEN $3 AND $4`, q.Company, q.IDs, lo, hi).Query(r.readMembers)
	if err := s.db.SendBatch(ctx, &b); err != nil {
		return r, fmt.Errorf("readmodels: segment facts: %w", err)
	}
	kept := r.Facts[:0]
	for i, id := range q.IDs {
		if has[i] {
			r.IDs = append(r.IDs, id)
			kept = append(kept, r.Facts[i])
		}
	}
	r.Facts = kept
	return r, nil
}

// AllCustomers returns every fact of the company's customers ids (whole
// documents, all their events with all their fields, their sales, their
// memberships), in one round trip: what Customers reduces, kept as the
// reference the tests compare deciding on the reduced facts with. known
// are documents the caller holds already, by customer id: they are not
// read again.
func (s *SegmentFacts) AllCustomers(ctx context.Context, company string, ids []string, known map[string]json.RawMessage) (CustomerFacts, error) {
	p := newCustomerFacts()
	if len(ids) == 0 {
		return p, nil
	}
	var read []string
	for _, id := range ids {
		text, ok := known[id]
		if !ok {
			read = append(read, id)
			continue
		}
		doc, err := decodeFacts(text)
		if err != nil {
			return p, fmt.Errorf("readmodels: segment facts: the document of %s: %w", id, err)
		}
		p.IDs = append(p.IDs, id)
		p.Docs[id] = text
		p.Facts[id] = &segment.Facts{Customer: doc}
	}
	var b pgx.Batch
	if len(read) > 0 {
		p.queueDocs(&b, s.src.docs, company, read)
	}
	p.queueRest(&b, s.src, company, ids)
	if err := s.db.SendBatch(ctx, &b); err != nil {
		return p, fmt.Errorf("readmodels: segment facts: %w", err)
	}
	slices.Sort(p.IDs)
	return p, nil
}

// Page returns the facts of at most limit customers of the company with
// a document, after the customer id after, in customer id order.
func (s *SegmentFacts) Page(ctx context.Context, company, after string, limit int) (CustomerFacts, error) {
	p := newCustomerFacts()
	var b pgx.Batch
	p.queueDocs(&b, s.src.page, company, after, limit)
	if err := s.db.SendBatch(ctx, &b); err != nil {
		return p, fmt.Errorf("readmodels: segment facts: %w", err)
	}
	if len(p.IDs) == 0 {
		return p, nil
	}
	var rest pgx.Batch
	p.queueRest(&rest, s.src, company, p.IDs)
	if err := s.db.SendBatch(ctx, &rest); err != nil {
		return p, fmt.Errorf("readmodels: segment facts: %w", err)
	}
	return p, nil
}

// bounds returns the least and the greatest of ids (not empty).
func bounds(ids []string) (lo, hi string) {
	return slices.Min(ids), slices.Max(ids)
}
