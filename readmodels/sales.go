package readmodels

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Sales reads the sales read model (projections/retrieval.Sales): one document per
// transaction, its rows in sale_rows.
type Sales struct {
	db database
}

// NewSales returns the queries on pool.
func NewSales(pool *pgxpool.Pool) *Sales {
	if pool == nil {
		panic("readmodels: NewSales: nil pool")
	}
	return &Sales{db: database{pool}}
}

// salesTable is the retrieval shape of the sales table. Deleted sales
// (sale_is_deleted: true) are left out; cancelled ones are shown.
var salesTable = docTable{name: "sales", id: "sale_id", visible: "NOT is_deleted"}

// Retrieve returns one page of the company's sales in creation order.
func (q *Sales) Retrieve(ctx context.Context, pq PageQuery) (Page, error) {
	return salesTable.page(ctx, q.db, pq)
}

// Stream reads the page that Retrieve returns and hands each document to
// each as it arrives; it returns Retrieve's Page.Next.
func (q *Sales) Stream(ctx context.Context, pq PageQuery, each DocFunc) (next string, err error) {
	return salesTable.stream(ctx, q.db, pq, each)
}
