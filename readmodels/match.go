package readmodels

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/dataquery"
	"github.com/clientele/clientele/domain/importing"
)

// Matcher finds the documents a data query matches
// (POST /api/data/query/), in the read models retrieval reads.
type Matcher struct {
	db database
}

// NewMatcher returns the matcher on pool.
func NewMatcher(pool *pgxpool.Pool) *Matcher {
	if pool == nil {
		panic("readmodels: NewMatcher: nil pool")
	}
	return &Matcher{db: database{pool}}
}

// matchTables are the read models by datatype: what retrieval shows is
// what a query can match.
var matchTables = map[importing.Entity]docTable{
	importing.Customers: customersTable,
	importing.Products:  productsTable,
	importing.Shops:     shopsTable,
	importing.Events:    eventsTable,
	importing.Sales:     salesTable,
}

// Match calls fn with each document of the company that meets every
// condition of q, in id order, streaming: a query matching millions of
// documents holds one at a time. Customers, events and sales have no
// index on doc (see docTable), so a query of them reads every row of the
// company once, whatever it matches.
func (m *Matcher) Match(ctx context.Context, companyID string, q dataquery.Query, fn func(doc []byte) error) error {
	t, ok := matchTables[q.Datatype]
	if !ok {
		return fmt.Errorf("readmodels: match: no read model for %q", q.Datatype)
	}
	args := []any{companyID}
	var where strings.Builder
	for _, c := range q.Match {
		switch {
		case c.Exists != nil:
			args = append(args, c.Field)
			not := ""
			if !*c.Exists {
				not = "NOT "
			}
			fmt.Fprintf(&where, " AND %s(doc ? $%d)", not, len(args))
		default:
			// {"f": v} or {"f": [v]}: the field is v or a list holding it.
			one, err := json.Marshal(map[string]json.RawMessage{c.Field: c.Value})
			if err != nil {
				return fmt.Errorf("readmodels: match: %w", err)
			}
			list, err := json.Marshal(map[string][]json.RawMessage{c.Field: {c.Value}})
			if err != nil {
				return fmt.Errorf("readmodels: match: %w", err)
			}
			args = append(args, string(one), string(list))
			fmt.Fprintf(&where, " AND (doc @> $%d::jsonb OR doc @> $%d::jsonb)", len(args)-1, len(args))
		}
	}
	sql := fmt.Sprintf(`SELECT doc FROM %s WHERE company_id = $1 AND %s%s ORDER BY %s`,
		pgx.Identifier{t.name}.Sanitize(), t.visible, where.String(), pgx.Identifier{t.id}.Sanitize())
	rows, err := m.db.Query(ctx, sql, args...)
	if err != nil {
		return fmt.Errorf("readmodels: match %s: %w", t.name, err)
	}
	var doc []byte
	if _, err := pgx.ForEachRow(rows, []any{&doc}, func() error { return fn(doc) }); err != nil {
		return fmt.Errorf("readmodels: match %s: %w", t.name, err)
	}
	return nil
}
