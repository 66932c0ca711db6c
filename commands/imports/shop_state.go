package imports

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/shop"
)

// loadShops loads into book the stored shops of the given external ids,
// in one query, and returns their stream versions by shop id.
func loadShops(ctx context.Context, tx pgx.Tx, companyID string, externalIDs []string, book *shop.Book) (map[string]int64, error) {
	versions := map[string]int64{}
	if len(externalIDs) == 0 {
		return versions, nil
	}
	// The array goes through a subquery so that both key columns stay the
	// index condition even with the stale statistics of a table an import
	// is filling (see loadCustomerBook in customer_state.go).
	rows, err := tx.Query(ctx, `SELECT external_id, shop_id, version FROM shop_states
		WHERE company_id = $1 AND external_id = ANY((SELECT $2::text[])::text[])`, companyID, externalIDs)
	if err != nil {
		return nil, fmt.Errorf("imports: load shops: %w", err)
	}
	var s shop.State
	if _, err := pgx.ForEachRow(rows, []any{&s.ExternalID, &s.ID, &s.Version}, func() error {
		book.Load(s)
		versions[s.ID] = s.Version
		return nil
	}); err != nil {
		return nil, fmt.Errorf("imports: load shops: %w", err)
	}
	return versions, nil
}

// saveShops upserts the changed registry rows in one statement.
func saveShops(ctx context.Context, tx pgx.Tx, companyID string, states []shop.State) error {
	if len(states) == 0 {
		return nil
	}
	ext, ids, versions := make([]string, len(states)), make([]string, len(states)), make([]int64, len(states))
	for i, s := range states {
		ext[i], ids[i], versions[i] = s.ExternalID, s.ID, s.Version
	}
	_, err := tx.Exec(ctx, `INSERT INTO shop_states (company_id, external_id, shop_id, version)
		SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bigint[])
		ON CONFLICT (company_id, external_id) DO UPDATE SET version = EXCLUDED.version`,
		companyID, ext, ids, versions)
	if err != nil {
		return fmt.Errorf("imports: save shops: %w", err)
	}
	return nil
}
