package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/customer"
)

// loadCustomerBook loads into book the registry rows of every identity of
// the records (and of the tokens of those found by token), then the state
// of every customer holding one: one query per table for the whole chunk.
// It returns the customers' stream versions.
func loadCustomerBook(ctx context.Context, q Reader, companyID string, book *customer.Book, records []*customer.Record) (map[string]int64, error) {
	seen := map[customer.Key]bool{}
	var hashes [][]byte
	add := func(k customer.Kind, v string) {
		if key := book.Key(k, v); !seen[key] {
			seen[key] = true
			hashes = append(hashes, []byte(key))
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
	if len(hashes) == 0 {
		return versions, nil
	}
	// The arrays travel as InitPlan parameters ((SELECT $2)), whose length
	// the planner cannot see: with a plain array parameter, the stale
	// statistics of a table a large import is filling (autovacuum analyzes
	// it a minute or more later) make it scan the table and filter, a cost
	// per chunk that grows with the table. This way the primary key
	// (key_hash16 alone: the hash covers the company) is always the index
	// condition; company_id = $1 is a filter that never removes a row, kept
	// so that no query can reach another company's registry.
	rows, err := q.Query(ctx, `SELECT kind, key_hash16, customer_id FROM customer_identities
		WHERE company_id = $1 AND key_hash16 = ANY((SELECT $2::bytea[])::bytea[])`, companyID, hashes)
	if err != nil {
		return nil, fmt.Errorf("imports: load customer identities: %w", err)
	}
	var kind, id string
	var hash []byte
	owners := map[string]bool{}
	var ids []string
	if _, err := pgx.ForEachRow(rows, []any{&kind, &hash, &id}, func() error {
		book.LoadKey(customer.Kind(kind), customer.Key(hash), id)
		if !owners[id] {
			owners[id] = true
			ids = append(ids, id)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: load customer identities: %w", err)
	}
	if len(ids) == 0 {
		return versions, nil
	}
	rows, err = q.Query(ctx, `SELECT `+customerStateColumns+`
		FROM customer_states WHERE company_id = $1 AND customer_id = ANY((SELECT $2::text[])::text[])`, companyID, ids)
	if err != nil {
		return nil, fmt.Errorf("imports: load customer states: %w", err)
	}
	if err := loadCustomerStates(rows, book, versions); err != nil {
		return nil, err
	}
	// A registry row without its state is a broken invariant; Decide
	// reports it rather than taking the customer for a new one.
	return versions, nil
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
func refusingCustomers(ctx context.Context, tx pgx.Tx, companyID string, ids []string) (map[string]string, error) {
	out := map[string]string{}
	if len(ids) == 0 {
		return out, nil
	}
	rows, err := tx.Query(ctx, `SELECT customer_id, forgotten FROM customer_states
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
