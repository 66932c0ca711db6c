package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
)

// loadCustomerBook loads into book the state of every customer holding an
// identity of the records (or the token of those found by token): one
// query for the whole chunk. The states are the registry: each holds the
// keys its customer holds, each key column unique (migration 00031). It
// returns the customers' stream versions.
func loadCustomerBook(ctx context.Context, q Reader, companyID string, book *customer.Book, records []*customer.Record) (map[string]int64, error) {
	seen := map[customer.Key]bool{}
	var ext, email, phone, token [][]byte
	add := func(k customer.Kind, v string) {
		key := book.Key(k, v)
		if seen[key] {
			return
		}
		seen[key] = true
		switch k {
		case customer.ExternalID:
			ext = append(ext, []byte(key))
		case customer.Email:
			email = append(email, []byte(key))
		case customer.Phone:
			phone = append(phone, []byte(key))
		default:
			token = append(token, []byte(key))
		}
	}
	for _, r := range records {
		if r == nil {
			continue
		}
		for _, k := range customer.Kinds {
			if v := r.Identity(k); v != "" {
				add(k, v)
			}
		}
		if r.ByToken() {
			add(customer.Token, r.Token)
		}
	}
	versions := map[string]int64{}
	if len(seen) == 0 {
		return versions, nil
	}
	// The arrays travel as InitPlan parameters ((SELECT $2)), whose length
	// the planner cannot see: with a plain array parameter, the stale
	// statistics of a table a large import is filling (autovacuum analyzes
	// it a minute or more later) make it scan the table and filter, a cost
	// per chunk that grows with the table. This way each key column's
	// unique index is an index condition (a BitmapOr of the four). The key
	// covers the company; company_id = $1 is a filter that never removes a
	// row, kept so that no query can reach another company's customers,
	// and applied outside a fence (a MATERIALIZED CTE): inside, the
	// planner ANDs the bitmap with one of the primary key's company_id,
	// every customer of the company (15 ms a chunk at 200,000 customers,
	// growing with them).
	rows, err := q.Query(ctx, `WITH found AS MATERIALIZED (SELECT * FROM customer_states
			WHERE external_id_hash = ANY((SELECT $2::bytea[])::bytea[])
				OR email_hash = ANY((SELECT $3::bytea[])::bytea[])
				OR phone_hash = ANY((SELECT $4::bytea[])::bytea[])
				OR token_hash = ANY((SELECT $5::bytea[])::bytea[]))
		SELECT `+customerStateColumns+` FROM found WHERE company_id = $1`,
		companyID, orNone(ext), orNone(email), orNone(phone), orNone(token))
	if err != nil {
		return nil, fmt.Errorf("imports: load customer states: %w", err)
	}
	if err := loadCustomerStates(rows, book, versions); err != nil {
		return nil, err
	}
	return versions, nil
}

// orNone turns no keys into an empty array rather than NULL, which
// ANY(...) would compare as unknown.
func orNone(keys [][]byte) [][]byte {
	if keys == nil {
		return [][]byte{}
	}
	return keys
}

// customerStateColumns are the columns of customer_states that
// loadCustomerStates reads, in its order.
const customerStateColumns = `customer_id, version, deleted, forgotten, external_id_hash, email_hash, phone_hash, token_hash`

// loadCustomerStates loads rows of customerStateColumns into book, and
// their stream versions into versions.
func loadCustomerStates(rows pgx.Rows, book *customer.Book, versions map[string]int64) error {
	var s customer.State
	var ext, email, phone, token []byte
	if _, err := pgx.ForEachRow(rows, []any{&s.ID, &s.Version, &s.Deleted, &s.Forgotten, &ext, &email, &phone, &token}, func() error {
		s.Keys = customer.Keys{ExternalID: customer.Key(ext), Email: customer.Key(email), Phone: customer.Key(phone), Token: customer.Key(token)}
		book.LoadState(s)
		versions[s.ID] = s.Version
		return nil
	}); err != nil {
		return fmt.Errorf("imports: load customer states: %w", err)
	}
	return nil
}

// refusingCustomers returns, of the given customers, those that refuse
// anything new (deleted or forgotten), with the reason: one query.
func refusingCustomers(ctx context.Context, q Reader, companyID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := q.Query(ctx, `SELECT customer_id, forgotten FROM customer_states
		WHERE company_id = $1 AND customer_id = ANY((SELECT $2::text[])::text[]) AND (deleted OR forgotten)`, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("imports: load customer states: %w", err)
	}
	var id string
	var forgotten bool
	if _, err := pgx.ForEachRow(rows, []any{&id, &forgotten}, func() error {
		out[id] = customer.ReasonDeleted
		if forgotten {
			out[id] = customer.ReasonForgotten
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: load customer states: %w", err)
	}
	return out, nil
}
