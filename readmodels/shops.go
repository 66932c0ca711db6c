package readmodels

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"
)

// Shops reads the shops read model (projections/retrieval.Shops).
type Shops struct {
	db database
}

// NewShops returns the queries on pool.
func NewShops(pool *pgxpool.Pool) *Shops {
	if pool == nil {
		panic("readmodels: NewShops: nil pool")
	}
	return &Shops{db: database{pool}}
}

// shopsTable is the retrieval shape of the shops table. Hidden shops are
// shown: is_hidden is for the company's own displays, and a client
// keeping a copy must see the flag change.
var shopsTable = docTable{name: "shops", id: "shop_id", visible: "true"}

// Retrieve returns one page of the company's shops in creation order.
func (q *Shops) Retrieve(ctx context.Context, pq PageQuery) (Page, error) {
	return shopsTable.page(ctx, q.db, pq)
}

// Stream reads the page that Retrieve returns and hands each document to
// each as it arrives; it returns Retrieve's Page.Next.
func (q *Shops) Stream(ctx context.Context, pq PageQuery, each DocFunc) (next string, err error) {
	return shopsTable.stream(ctx, q.db, pq, each)
}
