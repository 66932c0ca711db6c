package readmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
)

// Bounds of a retrieval page (GET /api/data/<entity>/?limit=).
const (
	DefaultLimit = 100
	MaxLimit     = 10_000
)

// Filter asks that a field of the retrieved document equal Value or, when
// the field is a list, contain it. Value is text, as a query string gives
// it: "true", "false" and numbers also match the typed JSON value, since
// a client cannot say which it means.
type Filter struct {
	Field string
	Value string
}

// PageQuery asks for one page of a retrieval.
type PageQuery struct {
	CompanyID string
	// Filters must all hold.
	Filters []Filter
	// After is the id of the last document of the previous page (an
	// integer id in decimal); "" starts at the first.
	After string
	// Limit is the page size, 1 to MaxLimit.
	Limit int
	// MaxScan, when above 0, bounds the rows a filtered page reads: at
	// most MaxScan rows of the company after the cursor, in id order, are
	// checked against the filters. When they hold fewer matches than
	// Limit, the page is the matches found and its Next is the last row
	// read (Page.ScanBounded), so that a search matching few rows costs at
	// most MaxScan rows a page, not the whole company. It does not apply
	// to a page without filters (every row matches) nor to one with a
	// filter of stringIndexed (the index reads only matching rows).
	// Retrieval (the API) leaves it 0: its pages are full but the last.
	MaxScan int
	// Segment, when not empty, keeps only the members of that segment now
	// (segment_members; customers only).
	Segment string
}

// Page is one page of documents, in id order.
type Page struct {
	// Docs are the documents as stored: retrieval answers them unchanged.
	Docs []json.RawMessage
	// Next is the id of the last document when more documents follow (the
	// After of the next page), and "" on the last page.
	Next string
	// ScanBounded reports that the page stopped at PageQuery.MaxScan
	// before it was full: Docs are every match among the MaxScan rows
	// after the cursor (maybe none) and Next is the last of those rows, a
	// match or not. More rows follow.
	ScanBounded bool
	// Scanned is, for a page read under MaxScan, how many rows after the
	// cursor it read up to Next (MaxScan when ScanBounded); 0 on the last
	// page, and without the bound.
	Scanned int
}

// docTable is a read-model table of retrievable documents. Every such
// table has the same shape, which is what lets one query serve every
// entity: company_id, an id column that orders the pages (ids are
// UUIDv7, so this is creation order, and it never changes, so a page
// boundary stays put under concurrent writes) and, with company_id, is
// the primary key, a jsonb doc in the retrieval form, and a condition
// that hides rows retrieval never shows (deleted ones).
//
// Only the small catalogs (shops, products) index doc (GIN,
// jsonb_path_ops). Customers, events and sales do not: the index cost
// every written row more than a filtered retrieval gains from it
// (migration 00016). A filter there is checked on each row read, and the
// page is read in primary-key order from the cursor with a LIMIT, so the
// scan stops once the page is full; a filter that matches few rows reads
// the company's rows from the cursor on (docs/retrieval.md, "What a
// filter costs"), or up to PageQuery.MaxScan of them, but for the fields
// of stringIndexed.
type docTable struct {
	name, id, visible string
	// numeric marks an integer id column (events' ids): pages are in its
	// numeric order (9 before 10), and a cursor is its decimal text.
	numeric bool
	// stringIndexed are fields whose value in doc is always a JSON string
	// when present, each with an index on (company_id, (doc ->> field),
	// id) WHERE visible AND doc ->> field IS NOT NULL. A filter on one is
	// doc ->> field = value: for a string field exactly the rows that the
	// containment documents of filterDocs find (a string never equals a
	// number, a boolean or a list), read through that index.
	stringIndexed map[string]bool
}

// after is the lower bound of a page's ids: the cursor as the id
// column's type. An integer column's first page starts below every id.
func (t docTable) after(cursor string) (any, error) {
	if !t.numeric {
		return cursor, nil
	}
	if cursor == "" {
		return int64(math.MinInt64), nil
	}
	n, err := strconv.ParseInt(cursor, 10, 64)
	if err != nil {
		return nil, domain.Errorf(domain.Invalid, "the cursor is not one of this endpoint; follow next_url")
	}
	return n, nil
}

// page reads one page of t (stream), its documents kept in one buffer
// of which Docs are slices.
func (t docTable) page(ctx context.Context, db database, q PageQuery) (Page, error) {
	if t.bounded(q) {
		return t.boundedPage(ctx, db, q)
	}
	var buf []byte
	var ends []int
	next, err := t.stream(ctx, db, q, func(doc []byte) error {
		buf = append(buf, doc...)
		ends = append(ends, len(buf))
		return nil
	})
	if err != nil {
		return Page{}, err
	}
	p := Page{Docs: make([]json.RawMessage, len(ends)), Next: next}
	start := 0
	for i, end := range ends {
		p.Docs[i] = buf[start:end:end]
		start = end
	}
	return p, nil
}

// DocFunc receives a document of a page as PostgreSQL prints it (JSON,
// with a space after each ',' and ':'); doc is valid only until it
// returns. An error stops the page.
type DocFunc func(doc []byte) error

// stream reads one page of t and hands each document to each as it
// arrives, in page order, so that a caller can write a page out while
// PostgreSQL still sends it, without holding it. It returns the id of the
// page's last document when more follow (the After of the next page), and
// "" on the last page. It asks for one row more than the limit to know
// whether another page follows. A page under PageQuery.MaxScan is read
// whole first (boundedPage).
func (t docTable) stream(ctx context.Context, db database, q PageQuery, each DocFunc) (next string, err error) {
	if t.bounded(q) {
		p, err := t.boundedPage(ctx, db, q)
		if err != nil {
			return "", err
		}
		for _, d := range p.Docs {
			if err := each(d); err != nil {
				return "", err
			}
		}
		return p.Next, nil
	}
	sql, args, err := t.pageSQL(q)
	if err != nil {
		return "", err
	}
	err = t.inKeyOrder(ctx, db, q, sql, args, func(rows pgx.Rows) error {
		var last []byte
		for n := 0; rows.Next(); n++ {
			raw := rows.RawValues()
			if n == q.Limit {
				next = string(last)
				break
			}
			if err := each(raw[1]); err != nil {
				return err
			}
			last = append(last[:0], raw[0]...)
		}
		return rows.Err()
	})
	if err != nil {
		return "", fmt.Errorf("readmodels: %s: %w", t.name, err)
	}
	return next, nil
}

// inKeyOrder runs read on the rows of sql, q's page query: when q has no
// filter but those of stringIndexed, in a transaction in which PostgreSQL
// may not sort, so that the page is read along an index in page order
// (the primary key, or an identifier's) from the cursor, and the scan
// stops once the page is full. Left to its estimates, the planner reads
// every row of the company after the cursor and sorts them whenever it
// expects fewer rows than the page: on a table not analysed since a bulk
// import, or for a company the statistics have not met yet. That made
// paging through 200,000 customers quadratic: 200 ms in PostgreSQL for
// the first page of 1,000 instead of 0.5 ms (docs/benchmarks.md, "Issue
// 15: paging"). The transaction is sent as one batch, one round trip; an
// error in it leaves the connection in a failed transaction, which the
// pool then closes. A containment filter is left to the planner: when it
// expects few matches, a parallel scan and a sort of those can beat
// reading the company in order.
func (t docTable) inKeyOrder(ctx context.Context, db database, q PageQuery, sql string, args []any, read func(pgx.Rows) error) error {
	if !t.keyOrdered(q) {
		rows, err := db.Query(ctx, sql, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		return read(rows)
	}
	var b pgx.Batch
	b.Queue(`BEGIN READ ONLY`)
	b.Queue(`SET LOCAL enable_sort = off`)
	page := b.Queue(sql, args...)
	b.Queue(`COMMIT`)
	page.Query(read)
	return db.SendBatch(ctx, &b)
}

// keyOrdered reports whether every filter of q is one of stringIndexed,
// whose index holds the rows in page order.
func (t docTable) keyOrdered(q PageQuery) bool {
	if q.Segment != "" {
		return false
	}
	for _, f := range q.Filters {
		if !t.stringIndexed[f.Field] {
			return false
		}
	}
	return true
}

// bounded reports whether q is read under its scan bound: it has one,
// and filters none of which an index serves.
func (t docTable) bounded(q PageQuery) bool {
	if q.MaxScan <= 0 || len(q.Filters) == 0 {
		return false
	}
	for _, f := range q.Filters {
		if t.stringIndexed[f.Field] {
			return false
		}
	}
	return true
}

// boundedPage reads a page of t under q.MaxScan (boundedSQL): the
// matches, then either the bound (the rows ranked MaxScan and MaxScan+1
// after the cursor, when the page is not full) or how many rows lie
// between the cursor and the page's last match (when it is).
func (t docTable) boundedPage(ctx context.Context, db database, q PageQuery) (Page, error) {
	sql, args, err := t.boundedSQL(q)
	if err != nil {
		return Page{}, err
	}
	rows, err := db.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, fmt.Errorf("readmodels: %s: %w", t.name, err)
	}
	p := Page{Docs: []json.RawMessage{}}
	var ids, bound []string
	var counted int
	var kind string
	var rowID *string
	var doc []byte
	var n int
	_, err = pgx.ForEachRow(rows, []any{&kind, &rowID, &doc, &n}, func() error {
		switch kind {
		case "match":
			ids = append(ids, *rowID)
			p.Docs = append(p.Docs, json.RawMessage(append([]byte(nil), doc...)))
		case "bound":
			bound = append(bound, *rowID)
		case "count":
			counted = n
		}
		return nil
	})
	if err != nil {
		return Page{}, fmt.Errorf("readmodels: %s: %w", t.name, err)
	}
	switch {
	case len(p.Docs) > q.Limit:
		p.Docs = p.Docs[:q.Limit]
		p.Next, p.Scanned = ids[q.Limit-1], counted
	case len(bound) == 2:
		// Every row up to the bound was checked, and more follow: the
		// next page starts after the bound, whether or not it matched.
		p.Next, p.Scanned = bound[0], q.MaxScan
		p.ScanBounded = len(p.Docs) < q.Limit
	}
	return p, nil
}

// filterSQL appends to args the values of q's filters and returns the
// conditions on doc that they make, each led by " AND ".
func (t docTable) filterSQL(q PageQuery, args []any) (string, []any) {
	var where strings.Builder
	if q.Segment != "" {
		args = append(args, q.Segment)
		fmt.Fprintf(&where, " AND %s IN (SELECT customer_id FROM segment_members WHERE company_id = $1 AND segment_key = $%d)",
			pgx.Identifier{t.id}.Sanitize(), len(args))
	}
	for _, f := range q.Filters {
		if t.stringIndexed[f.Field] {
			// The field is one of stringIndexed's keys, written in the
			// code, and so safe as a literal: the expression must be
			// the index's own for the planner to use it.
			v, ok := storableString(f.Value)
			if !ok {
				where.WriteString(" AND false")
				continue
			}
			args = append(args, v)
			fmt.Fprintf(&where, " AND doc ->> '%s' = $%d", f.Field, len(args))
			continue
		}
		alts := filterDocs(f)
		where.WriteString(" AND (")
		for i, d := range alts {
			if i > 0 {
				where.WriteString(" OR ")
			}
			args = append(args, d)
			fmt.Fprintf(&where, "doc @> $%d::jsonb", len(args))
		}
		where.WriteString(")")
	}
	return where.String(), args
}

// pageArgs checks q's limit and returns the arguments every page query
// starts with: the company and the cursor.
func (t docTable) pageArgs(q PageQuery) ([]any, error) {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return nil, fmt.Errorf("readmodels: %s: limit %d out of 1..%d", t.name, q.Limit, MaxLimit)
	}
	after, err := t.after(q.After)
	if err != nil {
		return nil, err
	}
	return []any{q.CompanyID, after}, nil
}

// pageSQL is the query of a page of t, and its arguments.
func (t docTable) pageSQL(q PageQuery) (string, []any, error) {
	args, err := t.pageArgs(q)
	if err != nil {
		return "", nil, err
	}
	where, args := t.filterSQL(q, args)
	args = append(args, q.Limit+1)
	id := pgx.Identifier{t.id}.Sanitize()
	// The id is read as text under another name, so that ORDER BY takes
	// the column itself: an integer id orders numerically. Both are read
	// as text, which is their bytes in either of the wire's formats.
	sql := fmt.Sprintf(`SELECT %s::text AS page_cursor, doc::text FROM %s WHERE company_id = $1 AND %s > $2 AND %s%s ORDER BY %s LIMIT $%d`,
		id, pgx.Identifier{t.name}.Sanitize(), id, t.visible, where, id, len(args))
	return sql, args, nil
}

// boundedSQL is the query of a page of t under q.MaxScan, and its
// arguments: one statement, so that its parts read one snapshot. The
// page's matches are found among at most MaxScan rows after the cursor
// read in primary-key order, the filters checked above that scan, so
// that they cannot lead the planner away from it (to a scan of the
// whole company and a sort); the scan stops at the bound or as soon as
// the page is full. Then, only when the page is not full, the rows
// ranked MaxScan and MaxScan+1 after the cursor (from the index alone,
// without reading the documents again), and only when it is, the count
// of the rows up to its last match (Page.Scanned). Ranking each row of
// the scan instead (row_number()) cost twice as much: the window
// function copies every row it ranks. (The ids are read as text under
// another name, so that ORDER BY takes the column itself, as in
// pageSQL.)
func (t docTable) boundedSQL(q PageQuery) (string, []any, error) {
	args, err := t.pageArgs(q)
	if err != nil {
		return "", nil, err
	}
	args = append(args, q.MaxScan, q.Limit)
	where, args := t.filterSQL(q, args)
	id := pgx.Identifier{t.id}.Sanitize()
	rows := fmt.Sprintf(`FROM %s WHERE company_id = $1 AND %s > $2 AND %s`, pgx.Identifier{t.name}.Sanitize(), id, t.visible)
	sql := fmt.Sprintf(`WITH page AS (
			SELECT %[1]s AS page_id, doc FROM (SELECT %[1]s, doc %[2]s ORDER BY %[1]s LIMIT $3) scan
			WHERE true%[3]s ORDER BY %[1]s LIMIT $4 + 1)
		(SELECT 'match', page_id::text AS page_cursor, doc, 0 FROM page ORDER BY page_id)
		UNION ALL
		(SELECT 'bound', %[1]s::text AS page_cursor, NULL, 0 %[2]s AND (SELECT count(*) FROM page) <= $4 ORDER BY %[1]s OFFSET $3 - 1 LIMIT 2)
		UNION ALL
		(SELECT 'count', NULL, NULL, count(*)::int %[2]s AND %[1]s <= (SELECT page_id FROM page ORDER BY page_id OFFSET $4 - 1 LIMIT 1)
			AND (SELECT count(*) FROM page) > $4)`, id, rows, where)
	return sql, args, nil
}

// filterDocs returns the containment documents of which the doc must
// contain one: {"f": v} and {"f": [v]} (a list holding v), for v the text
// and, when the text reads as one, the boolean or number. Containment is
// what a jsonb_path_ops GIN index serves (each document one lookup), on
// the tables that have one.
func filterDocs(f Filter) []string {
	values := []any{f.Value}
	switch {
	case f.Value == "true" || f.Value == "false":
		values = append(values, f.Value == "true")
	case isJSONNumber(f.Value):
		values = append(values, json.Number(f.Value))
	}
	out := make([]string, 0, 2*len(values))
	for _, v := range values {
		for _, x := range []any{v, []any{v}} {
			b, err := json.Marshal(map[string]any{f.Field: x})
			if err != nil {
				panic(fmt.Sprintf("readmodels: encode filter: %v", err)) // strings, booleans and numbers always encode
			}
			out = append(out, string(b))
		}
	}
	return out
}

// storableString returns the string that the filter value v stands for in
// a string field, as filterDocs makes it: invalid UTF-8 becomes U+FFFD, as
// encoding/json writes it. ok is false when no stored string can equal it:
// jsonb holds no NUL character.
func storableString(v string) (s string, ok bool) {
	if strings.ContainsRune(v, 0) {
		return "", false
	}
	if utf8.ValidString(v) {
		return v, true
	}
	b, _ := json.Marshal(v) // a string always encodes
	err := json.Unmarshal(b, &s)
	return s, err == nil
}

// isJSONNumber reports whether s is a number as JSON writes it (so not
// "NaN", " 1" or "0x10").
func isJSONNumber(s string) bool {
	if _, err := strconv.ParseFloat(s, 64); err != nil {
		return false
	}
	return json.Valid([]byte(s))
}
