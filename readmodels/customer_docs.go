package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
)

// Lookups by customer, for a page about one customer (the console):
// each reads the rows of one customer through an index on
// (company_id, customer_id), whatever the size of the company, and
// answers the documents as retrieval shows them.

// Doc returns a customer of the company as retrieval shows it, or a
// domain.NotFound error when retrieval does not show it (none, another
// company's, deleted, or not projected yet).
func (q *Customers) Doc(ctx context.Context, companyID, customerID string) (json.RawMessage, error) {
	var doc []byte
	err := q.db.QueryRow(ctx, `SELECT doc FROM customers WHERE company_id = $1 AND customer_id = $2 AND `+customersTable.visible,
		companyID, customerID).Scan(&doc)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, domain.Errorf(domain.NotFound, "no such customer")
	}
	if err != nil {
		return nil, fmt.Errorf("readmodels: customer: %w", err)
	}
	return doc, nil
}

// OfCustomer returns the newest events of a customer of the company, at
// most limit, newest first.
func (q *Events) OfCustomer(ctx context.Context, companyID, customerID string, limit int) ([]json.RawMessage, error) {
	return eventsTable.ofCustomer(ctx, q.db, companyID, customerID, limit)
}

// OfCustomer returns the newest sales of a customer of the company, at
// most limit, newest first.
func (q *Sales) OfCustomer(ctx context.Context, companyID, customerID string, limit int) ([]json.RawMessage, error) {
	return salesTable.ofCustomer(ctx, q.db, companyID, customerID, limit)
}

// ofCustomer reads the visible documents of a table that has a
// customer_id column, newest (highest id) first.
func (t docTable) ofCustomer(ctx context.Context, db database, companyID, customerID string, limit int) ([]json.RawMessage, error) {
	if limit < 1 || limit > MaxLimit {
		return nil, fmt.Errorf("readmodels: %s of customer: limit %d out of 1..%d", t.name, limit, MaxLimit)
	}
	sql := fmt.Sprintf(`SELECT doc FROM %s WHERE company_id = $1 AND customer_id = $2 AND %s ORDER BY %s DESC LIMIT $3`,
		pgx.Identifier{t.name}.Sanitize(), t.visible, pgx.Identifier{t.id}.Sanitize())
	rows, err := db.Query(ctx, sql, companyID, customerID, limit)
	if err != nil {
		return nil, fmt.Errorf("readmodels: %s of customer: %w", t.name, err)
	}
	docs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (json.RawMessage, error) {
		var doc []byte
		err := row.Scan(&doc)
		return doc, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: %s of customer: %w", t.name, err)
	}
	return docs, nil
}
