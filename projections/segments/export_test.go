package segments

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/readmodels"
)

// BackfillChanged backfills the changed segments of the company at at,
// as a commit that changes them does (the tests' measurements and the
// differential test).
func BackfillChanged(ctx context.Context, tx pgx.Tx, company string, at time.Time, changed []string) error {
	return backfill(ctx, tx, company, nil, at, changed, nil)
}

// referencePage is how many customers DecideEveryone decides at a time.
const referencePage = 1000

// DecideEveryone decides every active segment again for every customer
// of the company at at, with the evaluator a commit touching customers
// runs (evaluate), in pages of 1,000 customers: the backfill as it was
// before it decided only the changed segments, kept as the reference
// the backfill is compared with, and the baseline of its measurement.
func DecideEveryone(ctx context.Context, tx pgx.Tx, company string, at time.Time) error {
	after := ""
	for {
		rows, err := tx.Query(ctx, `SELECT customer_id FROM segment_customers WHERE company_id = $1 AND customer_id > $2
			ORDER BY customer_id LIMIT $3`, company, after, referencePage)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			return nil
		}
		if err := evaluate(ctx, tx, company, nil, ids, nil, func(string) time.Time { return at },
			func(string) string { return CauseRule }); err != nil {
			return err
		}
		after = ids[len(ids)-1]
	}
}

// FireDueCompany fires every timer of the company due by by.
func FireDueCompany(ctx context.Context, tx pgx.Tx, company string, by time.Time) error {
	return fireDueCompany(ctx, tx, company, nil, by)
}

// SetBackfillRange makes the backfill read n customers at a time until
// the test ends.
func SetBackfillRange(t testing.TB, n int) {
	was := backfillRange
	backfillRange = n
	t.Cleanup(func() { backfillRange = was })
}

// DecideOnAllFacts makes the projector decide the customers it touches on
// every fact they have (whole documents, every event with every field,
// every sale), not only on what the rules read, until the test ends: the
// reference the reduced read is compared with.
func DecideOnAllFacts(t testing.TB) {
	was := customerFacts
	customerFacts = func(ctx context.Context, tx pgx.Tx, q readmodels.CustomersQuery) (readmodels.FactRange, error) {
		all, err := readmodels.SegmentFactsIn(tx).AllCustomers(ctx, q.Company, q.IDs, q.Known)
		if err != nil {
			return readmodels.FactRange{}, err
		}
		r := readmodels.FactRange{Docs: all.Docs, Members: all.Members}
		at := map[string]bool{}
		for _, id := range all.IDs {
			at[id] = true
		}
		for _, id := range q.IDs {
			if at[id] {
				r.IDs = append(r.IDs, id)
				r.Facts = append(r.Facts, *all.Facts[id])
			}
		}
		return r, nil
	}
	t.Cleanup(func() { customerFacts = was })
}
