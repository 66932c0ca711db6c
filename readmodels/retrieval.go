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
	"github.com/jackc/pgx/v5/pgxpool"

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
}

// Page is one page of documents, in id order.
type Page struct {
	// Docs are the documents as stored: retrieval answers them unchanged.
	Docs []json.RawMessage
	// Next is the id of the last document when more documents follow (the
	// After of the next page), and "" on the last page.
	Next string
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
// filter costs"), but for the fields of stringIndexed.
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

// page reads one page of t. It asks for one row more than the limit to
// know whether another page follows.
func (t docTable) page(ctx context.Context, pool *pgxpool.Pool, q PageQuery) (Page, error) {
	sql, args, err := t.pageSQL(q)
	if err != nil {
		return Page{}, err
	}
	rows, err := pool.Query(ctx, sql, args...)
	if err != nil {
		return Page{}, fmt.Errorf("readmodels: %s: %w", t.name, err)
	}
	var p Page
	var ids []string
	var rowID string
	var doc []byte
	_, err = pgx.ForEachRow(rows, []any{&rowID, &doc}, func() error {
		ids = append(ids, rowID)
		p.Docs = append(p.Docs, json.RawMessage(append([]byte(nil), doc...)))
		return nil
	})
	if err != nil {
		return Page{}, fmt.Errorf("readmodels: %s: %w", t.name, err)
	}
	if len(p.Docs) > q.Limit {
		p.Docs = p.Docs[:q.Limit]
		p.Next = ids[q.Limit-1]
	}
	if p.Docs == nil {
		p.Docs = []json.RawMessage{}
	}
	return p, nil
}

// pageSQL is the query of a page of t, and its arguments.
func (t docTable) pageSQL(q PageQuery) (string, []any, error) {
	if q.Limit < 1 || q.Limit > MaxLimit {
		return "", nil, fmt.Errorf("readmodels: %s: limit %d out of 1..%d", t.name, q.Limit, MaxLimit)
	}
	after, err := t.after(q.After)
	if err != nil {
		return "", nil, err
	}
	args := []any{q.CompanyID, after}
	var where strings.Builder
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
	args = append(args, q.Limit+1)
	id := pgx.Identifier{t.id}.Sanitize()
	// The id is read as text under another name, so that ORDER BY takes
	// the column itself: an integer id orders numerically.
	sql := fmt.Sprintf(`SELECT %s::text AS page_cursor, doc FROM %s WHERE company_id = $1 AND %s > $2 AND %s%s ORDER BY %s LIMIT $%d`,
		id, pgx.Identifier{t.name}.Sanitize(), id, t.visible, where.String(), id, len(args))
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
