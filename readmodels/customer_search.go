package readmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// CustomerSearch asks for a page of the customers that a text typed by a
// person finds (the console's customer search): case-insensitive prefixes
// of their names, emails and ids, at bounded cost.
type CustomerSearch struct {
	CompanyID string
	// Text is what was typed; "" finds every customer.
	Text string
	// Sort orders the matches: "newest" (the default), "oldest", "name"
	// or "email".
	Sort string
	// Offset and Limit are the page within the matches.
	Offset, Limit int
}

// Bounds of a customer search.
const (
	// SearchMaxMatches bounds the matches a search gathers, sorts and
	// pages through; a search that finds more says "at least".
	SearchMaxMatches = 1000
	// SearchMaxScan bounds the customers whose names a search reads: the
	// newest of the company. Names are not indexed (they are a record's
	// free text), so a name is looked for among these only.
	SearchMaxScan = 50_000
)

// CustomerMatches is a page of a search's matches.
type CustomerMatches struct {
	Docs []json.RawMessage
	// Total is how many matches the search gathered; AtLeast is true when
	// more may exist (a bound was reached): Total is then a lower bound.
	Total   int
	AtLeast bool
}

// customerSortOrders are the orders of a search, as SQL on the matches
// (m) joined to their rows (c).
var customerSortOrders = map[string]string{
	"newest": "c.customer_id DESC",
	"oldest": "c.customer_id",
	"name":   "lower(concat_ws(' ', c.doc ->> 'first_name', c.doc ->> 'last_name') COLLATE \"und-x-icu\"), c.customer_id",
	"email":  "c.doc ->> 'email' NULLS LAST, c.customer_id",
}

// Search returns a page of the customers text finds, deleted ones left
// out. A customer matches when, ignoring case, its email, external id,
// customer token or id starts with the text, or a word of its name
// (first_name and last_name) starts with each word of the text in turn
// ("liisa", "ääk", "liisa ää" find Liisa Ääkkönen).
//
// What it costs is bounded whatever the company's size. Emails,
// external ids and tokens are read through their indexes (migration
// 00030), each as a range of the index (emails are stored lower-case, so
// the typed text lower-cased; the identifiers as typed, lower-cased and
// upper-cased); ids through the primary key; at most SearchMaxMatches
// of each. Names are not indexed: they are checked among the newest
// SearchMaxScan customers only. The matches, at most SearchMaxMatches,
// are sorted and paged; AtLeast says a bound was reached. The ranges are
// the prefix's on a database of the C collation (the embedded server's);
// under another collation the index is read the same way and each value
// is checked to start with the prefix.
//
// Names are compared lower-cased by ICU's rules (the collation
// "und-x-icu", which PostgreSQL built with ICU has, as Debian's is): the
// C collation lower-cases ASCII only, and "ääk" would not find
// Ääkkönen.
//
// What the read model can search is what it stores in the clear: the
// customers table's documents. The event log's values are sealed
// (encrypted per customer) and are never searched.
func (q *Customers) Search(ctx context.Context, s CustomerSearch) (CustomerMatches, error) {
	if s.Limit < 1 || s.Limit > SearchMaxMatches {
		return CustomerMatches{}, fmt.Errorf("readmodels: customer search: limit %d out of 1..%d", s.Limit, SearchMaxMatches)
	}
	order, ok := customerSortOrders[s.Sort]
	if !ok {
		order = customerSortOrders["newest"]
	}
	text := strings.Join(strings.Fields(strings.ToValidUTF8(strings.ReplaceAll(s.Text, "\x00", ""), "")), " ")
	lower := strings.ToLower(text)
	var matches string
	args := []any{s.CompanyID, SearchMaxMatches}
	upper := strings.ToUpper(text)
	if text == "" {
		matches = `SELECT customer_id FROM customers WHERE company_id = $1 AND NOT is_deleted ORDER BY customer_id DESC LIMIT $2 + 1`
	} else {
		args = append(args, text, lower, SearchMaxScan, likeWords(lower), upper)
		var parts []string
		for _, f := range []string{"email", "external_id", "customer_token"} {
			for _, p := range []string{"$3", "$4", "$7"} {
				if f == "email" && p != "$4" {
					continue // emails are stored lower-case
				}
				parts = append(parts, fmt.Sprintf(`(SELECT customer_id FROM customers WHERE company_id = $1 AND NOT is_deleted
					AND doc ->> '%[1]s' IS NOT NULL AND doc ->> '%[1]s' >= %[2]s AND doc ->> '%[1]s' < %[2]s || chr(1114111)
					AND starts_with(doc ->> '%[1]s', %[2]s) ORDER BY doc ->> '%[1]s' LIMIT $2 + 1)`, f, p))
			}
		}
		parts = append(parts, `(SELECT customer_id FROM customers WHERE company_id = $1 AND NOT is_deleted
				AND customer_id >= $4 AND customer_id < $4 || chr(1114111) AND starts_with(customer_id, $4) ORDER BY customer_id LIMIT $2 + 1)`,
			`(SELECT customer_id FROM (SELECT customer_id, doc FROM customers WHERE company_id = $1 AND NOT is_deleted
				ORDER BY customer_id DESC LIMIT $5) newest
				WHERE (' ' || lower(concat_ws(' ', doc ->> 'first_name', doc ->> 'last_name') COLLATE "und-x-icu")) LIKE $6
				LIMIT $2 + 1)`)
		matches = strings.Join(parts, " UNION ")
	}
	// The scan of names stops at SearchMaxScan: whether the company has
	// more customers than that is read from the primary key, up to one
	// more.
	scanBounded := `false`
	if text != "" {
		scanBounded = `(SELECT count(*) FROM (SELECT 1 FROM customers WHERE company_id = $1 AND NOT is_deleted LIMIT $5 + 1) n) > $5`
	}
	args = append(args, s.Offset, s.Limit)
	nOffset, nLimit := len(args)-1, len(args)
	// The matches are gathered (m), a page of them read in order and
	// aggregated in that order, with their count and whether the scan of
	// names stopped at its bound.
	sql := fmt.Sprintf(`WITH m AS (SELECT DISTINCT customer_id FROM (%[1]s) found),
		page AS (SELECT c.doc, row_number() OVER (ORDER BY %[2]s) AS ord
			FROM m JOIN customers c ON c.company_id = $1 AND c.customer_id = m.customer_id
			ORDER BY %[2]s LIMIT LEAST($%[3]d, GREATEST(0, $2 - $%[4]d)) OFFSET $%[4]d)
		SELECT (SELECT count(*) FROM m)::int, %[5]s, coalesce((SELECT json_agg(doc ORDER BY ord)::text FROM page), '[]')`,
		matches, order, nLimit, nOffset, scanBounded)
	var (
		n       int
		bounded bool
		docs    string
	)
	if err := q.db.QueryRow(ctx, sql, args...).Scan(&n, &bounded, &docs); err != nil {
		return CustomerMatches{}, fmt.Errorf("readmodels: customer search: %w", err)
	}
	var out CustomerMatches
	if err := json.Unmarshal([]byte(docs), &out.Docs); err != nil {
		return CustomerMatches{}, fmt.Errorf("readmodels: customer search: %w", err)
	}
	out.Total, out.AtLeast = min(n, SearchMaxMatches), n > SearchMaxMatches || bounded
	return out, nil
}

// likeWords is the LIKE pattern that finds text's words as prefixes of
// successive words of a name (the name led by a space): " liisa% ää%".
func likeWords(text string) string {
	var b strings.Builder
	b.WriteString("%")
	for _, w := range strings.Fields(text) {
		b.WriteString(" ")
		for _, r := range w {
			if r == '%' || r == '_' || r == '\\' {
				b.WriteByte('\\')
			}
			b.WriteRune(r)
		}
		b.WriteString("%")
	}
	return b.String()
}
