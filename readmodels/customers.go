package readmodels

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain/customer"
)

// Customers reads the customers read model (projections/retrieval.Customers).
type Customers struct {
	db database
}

// NewCustomers returns the queries on pool.
func NewCustomers(pool *pgxpool.Pool) *Customers {
	if pool == nil {
		panic("readmodels: NewCustomers: nil pool")
	}
	return &Customers{db: database{pool}}
}

// customersTable is the retrieval shape of the customers table. Deleted
// customers are hidden; forgotten ones are shown, anonymised, so that a
// client keeping a copy learns to anonymise its own.
// The identifiers are index-backed filters (migration 00030): the parser
// stores each as text, so they are strings in doc.
var customersTable = docTable{name: "customers", id: "customer_id", visible: "NOT is_deleted",
	stringIndexed: map[string]bool{
		customer.FieldEmail:       true,
		customer.FieldPhoneNumber: true,
		customer.FieldExternalID:  true,
		customer.FieldToken:       true,
	}}

// Retrieve returns one page of the company's customers as retrieval shows
// them, in id (creation) order. The read model follows the log
// asynchronously: a customer appears within moments of its import.
func (q *Customers) Retrieve(ctx context.Context, pq PageQuery) (Page, error) {
	return customersTable.page(ctx, q.db, pq)
}

// Stream reads the page that Retrieve returns and hands each document to
// each as it arrives; it returns Retrieve's Page.Next.
func (q *Customers) Stream(ctx context.Context, pq PageQuery, each DocFunc) (next string, err error) {
	return customersTable.stream(ctx, q.db, pq, each)
}
