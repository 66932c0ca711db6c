package readmodels

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Products reads the products read model (projections/retrieval.Products).
type Products struct {
	db database
}

// NewProducts returns the queries on pool.
func NewProducts(pool *pgxpool.Pool) *Products {
	if pool == nil {
		panic("readmodels: NewProducts: nil pool")
	}
	return &Products{db: database{pool}}
}

// productsTable is the retrieval shape of the products table. Deleted
// products (is_deleted: true) are left out; end-of-life ones (visible:
// false) are shown, so that clients learn to stop offering them.
var productsTable = docTable{name: "products", id: "product_id", visible: "NOT is_deleted"}

// Retrieve returns one page of the company's products in creation order.
func (q *Products) Retrieve(ctx context.Context, pq PageQuery) (Page, error) {
	return productsTable.page(ctx, q.db, pq)
}

// Stream reads the page that Retrieve returns and hands each document to
// each as it arrives; it returns Retrieve's Page.Next.
func (q *Products) Stream(ctx context.Context, pq PageQuery, each DocFunc) (next string, err error) {
	return productsTable.stream(ctx, q.db, pq, each)
}
