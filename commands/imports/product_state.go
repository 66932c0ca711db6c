package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/product"
)

// loadProducts loads into book the stored products of the given external
// ids, in one query, and returns their stream versions by product id.
func loadProducts(ctx context.Context, q Reader, companyID string, externalIDs []string, book *product.Book) (map[string]int64, error) {
	versions := map[string]int64{}
	if len(externalIDs) == 0 {
		return versions, nil
	}
	// The array goes through a subquery so that both key columns stay the
	// index condition even with the stale statistics of a table an import
	// is filling (see loadCustomerBook in customer_state.go).
	rows, err := q.Query(ctx, `SELECT external_id, product_id, version, language FROM product_states
		WHERE company_id = $1 AND external_id = ANY((SELECT $2::text[])::text[])`, companyID, externalIDs)
	if err != nil {
		return nil, fmt.Errorf("imports: load products: %w", err)
	}
	var s product.State
	if _, err := pgx.ForEachRow(rows, []any{&s.ExternalID, &s.ID, &s.Version, &s.Language}, func() error {
		book.Load(s)
		versions[s.ID] = s.Version
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: load products: %w", err)
	}
	return versions, nil
}

// saveProducts upserts the changed registry rows in one statement.
func saveProducts(ctx context.Context, tx pgx.Tx, companyID string, states []product.State) error {
	if len(states) == 0 {
		return nil
	}
	n := len(states)
	ext, ids, versions, langs := make([]string, n), make([]string, n), make([]int64, n), make([]string, n)
	for i, s := range states {
		ext[i], ids[i], versions[i], langs[i] = s.ExternalID, s.ID, s.Version, s.Language
	}
	_, err := tx.Exec(ctx, `INSERT INTO product_states (company_id, external_id, product_id, version, language)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[])
		ON CONFLICT (company_id, external_id) DO UPDATE SET version = EXCLUDED.version, language = EXCLUDED.language`,
		companyID, ext, ids, versions, langs)
	if err != nil {
		return fmt.Errorf("imports: save products: %w", err)
	}
	return nil
}
