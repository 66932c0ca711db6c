package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/sale"
)

// loadSales loads into book the stored sales of the given
// sale_external_ids, in one query, and returns their stream versions by
// sale id.
func loadSales(ctx context.Context, q Reader, companyID string, externalIDs []string, book *sale.Book) (map[string]int64, error) {
	versions := map[string]int64{}
	if len(externalIDs) == 0 {
		return versions, nil
	}
	// ANY((SELECT ...)): an index condition on both key columns whatever
	// the statistics (see loadCustomerBook).
	rows, err := q.Query(ctx, `SELECT external_id, sale_id, customer_id, version, currency, rate, state, has_total, row_totals, discount
		FROM sale_states WHERE company_id = $1 AND external_id = ANY((SELECT $2::text[])::text[])`, companyID, externalIDs)
	if err != nil {
		return nil, fmt.Errorf("imports: load sales: %w", err)
	}
	var s sale.State
	if _, err := pgx.ForEachRow(rows, []any{&s.ExternalID, &s.ID, &s.CustomerID, &s.Version, &s.Currency, &s.Rate, &s.SaleState, &s.HasTotal, &s.Totals, &s.Discount}, func() error {
		book.Load(s)
		s.Totals = nil // a map of its own for each sale
		versions[s.ID] = s.Version
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: load sales: %w", err)
	}
	return versions, nil
}

// saveSales upserts the changed states in one statement.
func saveSales(ctx context.Context, tx pgx.Tx, companyID string, states []sale.State) error {
	if len(states) == 0 {
		return nil
	}
	n := len(states)
	ext, ids, customers, versions := make([]string, n), make([]string, n), make([]string, n), make([]int64, n)
	currencies, rates, st, totals := make([]string, n), make([]string, n), make([]string, n), make([]bool, n)
	rowTotals, discounts := make([]map[string]int64, n), make([]int64, n)
	for i, s := range states {
		ext[i], ids[i], customers[i], versions[i] = s.ExternalID, s.ID, s.CustomerID, s.Version
		currencies[i], rates[i], st[i], totals[i] = s.Currency, s.Rate, s.SaleState, s.HasTotal
		rowTotals[i], discounts[i] = s.Totals, s.Discount
		if rowTotals[i] == nil {
			rowTotals[i] = map[string]int64{}
		}
	}
	_, err := tx.Exec(ctx, `INSERT INTO sale_states (company_id, external_id, sale_id, customer_id, version, currency, rate, state, has_total,
			row_totals, discount)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::text[], $8::text[], $9::boolean[],
			$10::jsonb[], $11::bigint[])
		ON CONFLICT (company_id, external_id) DO UPDATE SET customer_id = EXCLUDED.customer_id, version = EXCLUDED.version,
			currency = EXCLUDED.currency, rate = EXCLUDED.rate, state = EXCLUDED.state, has_total = EXCLUDED.has_total,
			row_totals = EXCLUDED.row_totals, discount = EXCLUDED.discount`,
		companyID, ext, ids, customers, versions, currencies, rates, st, totals, rowTotals, discounts)
	if err != nil {
		return fmt.Errorf("imports: save sales: %w", err)
	}
	return nil
}
