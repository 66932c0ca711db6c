package readmodels

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/segment"
)

// FactRange are the facts of a range of a company's customers, in
// customer id order, reduced to what some rules read (segment.Reads):
// the named fields of each document, the events of the named types with
// only the named fields, the sales only when a sales leaf reads them,
// and the memberships of the named segments. Deciding those rules on
// them gives what deciding them on all the facts gives.
type FactRange struct {
	// IDs are the customers with a document, in customer id order.
	IDs []string
	// Facts are their facts, in the order of IDs, Member unset.
	Facts []segment.Facts
	// Docs are their whole documents as retrieval shows them, when
	// asked for (the feed of a segment's entries needs them).
	Docs map[string]json.RawMessage
	// Members are the segments, of those asked for, each customer of the
	// range is a member of now.
	Members map[string]map[string]bool
}

// FactQuery is what Range reads.
type FactQuery struct {
	Company string
	// After is the customer id the range starts after ("": the first);
	// Limit how many customers it holds at most.
	After string
	Limit int
	// Reads are the facts the rules read.
	Reads segment.Reads
	// Members are the segments whose memberships are read.
	Members []string
	// Docs asks for the whole documents too.
	Docs bool
}

// Range returns the facts q asks for of at most q.Limit customers with a
// document after q.After, from the membership projection's own facts
// (SegmentFactsIn). It reads the company in one ordered pass: a page of
// documents by the primary key, then the events, sales and memberships
// of the range of customer ids the page covers (customer_id > After AND
// customer_id <= the page's last), which the facts tables' indexes on
// (company_id, customer_id) serve, in one round trip, merged by customer.
func (s *SegmentFacts) Range(ctx context.Context, q FactQuery) (FactRange, error) {
	if s.src.personal {
		return FactRange{}, fmt.Errorf("readmodels: segment facts: ranges are read from the membership facts only")
	}
	r := FactRange{Members: map[string]map[string]bool{}}
	if err := r.readDocs(ctx, s.db, q); err != nil {
		return r, fmt.Errorf("readmodels: segment facts: %w", err)
	}
	if len(r.IDs) == 0 {
		return r, nil
	}
	at := make(map[string]int, len(r.IDs))
	for i, id := range r.IDs {
		at[id] = i
	}
	last := r.IDs[len(r.IDs)-1]
	var b pgx.Batch
	if len(q.Reads.Events) > 0 {
		fields := q.Reads.EventFields()
		sql, args := selectFields(`SELECT customer_id, type, at`, "fields", fields,
			` FROM segment_activity WHERE company_id = $1 AND customer_id > $2 AND customer_id <= $3 AND type = ANY($4)`,
			q.Company, q.After, last, q.Reads.EventTypes())
		b.Queue(sql, args...).Query(func(rows pgx.Rows) error {
			return r.readEvents(rows, q.Reads, fields, at)
		})
	}
	if q.Reads.Sales {
		b.Queue(`SELECT customer_id, at, revenue, `+salesProducts(q.Reads)+` FROM segment_sales
			WHERE company_id = $1 AND customer_id > $2 AND customer_id <= $3 AND counted AND at IS NOT NULL`,
			q.Company, q.After, last).Query(r.readSales(at))
	}
	if len(q.Members) > 0 {
		b.Queue(`SELECT customer_id, segment_key FROM segment_members
			WHERE company_id = $1 AND segment_key = ANY($2) AND customer_id > $3 AND customer_id <= $4`,
			q.Company, q.Members, q.After, last).Query(r.readMembers)
	}
	if b.Len() > 0 {
		if err := s.db.SendBatch(ctx, &b); err != nil {
			return r, fmt.Errorf("readmodels: segment facts: %w", err)
		}
	}
	return r, nil
}

// readDocs reads the page of documents, reduced to the named fields.
func (r *FactRange) readDocs(ctx context.Context, db database, q FactQuery) error {
	head := `SELECT customer_id`
	if q.Docs {
		head += `, doc::text`
	}
	sql, args := selectFields(head, "doc", q.Reads.Fields,
		` FROM segment_customers WHERE company_id = $1 AND customer_id > $2 ORDER BY customer_id LIMIT $3`,
		q.Company, q.After, q.Limit)
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	if q.Docs {
		r.Docs = map[string]json.RawMessage{}
	}
	first := 1
	if q.Docs {
		first = 2
	}
	shared := newSharedDocs()
	for rows.Next() {
		raw := rows.RawValues()
		id := string(raw[0])
		// An absent field is as null for every leaf: not in the map.
		doc, err := shared.doc(0, q.Reads.Fields, raw[first:], nil)
		if err != nil {
			return fmt.Errorf("the document of %s: %w", id, err)
		}
		r.IDs = append(r.IDs, id)
		r.Facts = append(r.Facts, segment.Facts{Customer: doc})
		if q.Docs {
			r.Docs[id] = slices.Clone(raw[1])
		}
	}
	return rows.Err()
}

// selectFields is head, then one text column per field of the jsonb
// column (NULL when absent), then tail; args are tail's, the fields'
// names following them.
func selectFields(head, column string, fields []string, tail string, args ...any) (string, []any) {
	var sb strings.Builder
	sb.WriteString(head)
	for _, f := range fields {
		args = append(args, f)
		fmt.Fprintf(&sb, `, (%s -> $%d::text)::text`, column, len(args))
	}
	sb.WriteString(tail)
	return sb.String(), args
}

// decodeValue reads one JSON value as decodeFacts reads a document's
// (numbers as json.Number); plain strings, numbers and literals without
// the general decoder.
func decodeValue(text []byte) (any, error) {
	switch {
	case len(text) >= 2 && text[0] == '"' && text[len(text)-1] == '"' && bytes.IndexByte(text[1:len(text)-1], '\\') < 0 &&
		bytes.IndexByte(text[1:len(text)-1], '"') < 0:
		return string(text[1 : len(text)-1]), nil
	case string(text) == "true":
		return true, nil
	case string(text) == "false":
		return false, nil
	case string(text) == "null":
		return nil, nil
	case len(text) > 0 && (text[0] == '-' || text[0] >= '0' && text[0] <= '9'):
		if _, err := strconv.ParseFloat(string(text), 64); err == nil {
			return json.Number(text), nil
		}
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var v any
	err := d.Decode(&v)
	return v, err
}

// readEvents reads the rows of the events' statement (customer_id, type,
// at, then the fields) into the facts of the customers at indexes.
// Each event keeps only the fields its own type's leaves name.
func (r *FactRange) readEvents(rows pgx.Rows, reads segment.Reads, fields []string, indexes map[string]int) error {
	defer rows.Close()
	if err := rows.Err(); err != nil {
		return err // the query failed: its rows have no field descriptions
	}
	types := reads.EventTypes()
	named := make([][]bool, len(types))
	for i, t := range types {
		named[i] = make([]bool, len(fields))
		for k, f := range fields {
			named[i][k] = slices.Contains(reads.Events[t], f)
		}
	}
	binaryAt := rows.FieldDescriptions()[2].Format == pgx.BinaryFormatCode
	shared := newSharedDocs()
	var when time.Time
	for rows.Next() {
		raw := rows.RawValues()
		i, ok := indexes[string(raw[0])]
		if !ok {
			continue
		}
		ti := slices.Index(types, string(raw[1]))
		if ti < 0 {
			continue
		}
		if binaryAt && len(raw[2]) == 8 {
			// timestamptz, binary: microseconds since 2000-01-01 UTC.
			when = time.UnixMicro(int64(binary.BigEndian.Uint64(raw[2])) + y2kMicros)
		} else if err := rows.Scan(nil, nil, &when); err != nil {
			return err
		}
		doc, err := shared.doc(ti, fields, raw[3:], named[ti])
		if err != nil {
			return fmt.Errorf("an event of %s: %w", raw[0], err)
		}
		f := &r.Facts[i]
		f.Events = append(f.Events, segment.Activity{Type: types[ti], At: when.UTC(), Fields: doc})
	}
	return rows.Err()
}

// y2kMicros is the epoch of PostgreSQL's binary timestamps
// (2000-01-01 UTC), in microseconds since the Unix epoch.
const y2kMicros = 946_684_800_000_000

// sharedDocs hands out one map for each combination of values read. The
// evaluator only reads the maps, and the values of the fields rules
// name repeat (cities, flags, labels): the customers, or the events,
// with the same values share one map instead of each decoding its own.
// At most maxSharedDocs maps are kept; the others are each their own.
type sharedDocs struct {
	key  []byte
	docs map[string]map[string]any
}

const maxSharedDocs = 4096

func newSharedDocs() *sharedDocs {
	return &sharedDocs{docs: map[string]map[string]any{}}
}

// doc returns the map of the fields names whose values are not null and
// that keep holds (nil: every one), tagged by kind (an event type);
// nil when there is none.
func (s *sharedDocs) doc(kind int, names []string, values [][]byte, keep []bool) (map[string]any, error) {
	s.key = binary.BigEndian.AppendUint32(s.key[:0], uint32(kind))
	for k, v := range values[:len(names)] {
		if v == nil || keep != nil && !keep[k] {
			s.key = append(s.key, 0)
			continue
		}
		s.key = append(s.key, 1)
		s.key = binary.BigEndian.AppendUint32(s.key, uint32(len(v)))
		s.key = append(s.key, v...)
	}
	if doc, ok := s.docs[string(s.key)]; ok {
		return doc, nil
	}
	var doc map[string]any
	for k, v := range values[:len(names)] {
		if v == nil || keep != nil && !keep[k] {
			continue
		}
		x, err := decodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("field %s: %w", names[k], err)
		}
		if doc == nil {
			doc = make(map[string]any, len(names))
		}
		doc[names[k]] = x
	}
	if len(s.docs) < maxSharedDocs {
		s.docs[string(s.key)] = doc
	}
	return doc, nil
}

// salesProducts is the column of the sales' products a query of the
// facts selects: the products only when a leaf reads them.
func salesProducts(reads segment.Reads) string {
	if reads.Products {
		return `products`
	}
	return `NULL::text[]`
}

// readSales returns the reader of a query's sales (customer_id, at,
// revenue, products) into the facts of the customers at their indexes.
func (r *FactRange) readSales(at map[string]int) func(pgx.Rows) error {
	return func(rows pgx.Rows) error {
		var id string
		var when time.Time
		var revenue int64
		var products []string
		_, err := pgx.ForEachRow(rows, []any{&id, &when, &revenue, &products}, func() error {
			if i, ok := at[id]; ok {
				f := &r.Facts[i]
				f.Sales = append(f.Sales, segment.Sale{At: when, Revenue: revenue, Products: slices.Clone(products)})
			}
			return nil
		})
		return err
	}
}

// readMembers reads a query's memberships (customer_id, segment_key).
func (r *FactRange) readMembers(rows pgx.Rows) error {
	var id, key string
	_, err := pgx.ForEachRow(rows, []any{&id, &key}, func() error {
		if r.Members[id] == nil {
			r.Members[id] = map[string]bool{}
		}
		r.Members[id][key] = true
		return nil
	})
	return err
}
