package segments

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// Backfill decides every customer of the company at at (for the tests'
// measurements).
func Backfill(ctx context.Context, tx pgx.Tx, company string, at time.Time) error {
	return backfill(ctx, tx, company, nil, at, nil)
}
