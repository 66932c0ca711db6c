package projections

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/clientele/clientele/eventstore"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// countStalls returns the number of companies parked for each of the
// projectors named.
func countStalls(ctx context.Context, pool *pgxpool.Pool, names []string) (map[string]int, error) {
	rows, err := pool.Query(ctx, `SELECT projector, count(*) FROM projection_stalls WHERE projector = ANY($1) GROUP BY projector`, names)
	if err != nil {
		return nil, fmt.Errorf("projections: count stalls: %w", err)
	}
	out := map[string]int{}
	var name string
	var n int
	if _, err := pgx.ForEachRow(rows, []any{&name, &n}, func() error { out[name] = n; return nil }); err != nil {
		return nil, fmt.Errorf("projections: count stalls: %w", err)
	}
	return out, nil
}

const selectStall = `SELECT projector, company_id, transaction_id::text, global_position, held_transaction_id::text,
	held_global_position, error, since, attempts, retry_at FROM projection_stalls `

// readStall returns the stall of company for the projector, and false
// when the company is not parked.
func readStall(ctx context.Context, q querier, name, company string) (Stall, bool, error) {
	s, err := scanStall(q.QueryRow(ctx, selectStall+`WHERE projector = $1 AND company_id = $2`, name, company))
	if errors.Is(err, pgx.ErrNoRows) {
		return Stall{}, false, nil
	}
	if err != nil {
		return Stall{}, false, fmt.Errorf("projections: %s: read the stall of company %s: %w", name, company, err)
	}
	return s, true, nil
}

// listStalls returns the stalls of the projectors named.
func listStalls(ctx context.Context, pool *pgxpool.Pool, names []string) ([]Stall, error) {
	rows, err := pool.Query(ctx, selectStall+`WHERE projector = ANY($1) ORDER BY projector, company_id`, names)
	if err != nil {
		return nil, fmt.Errorf("projections: stalls: %w", err)
	}
	defer rows.Close()
	out := []Stall{}
	for rows.Next() {
		s, err := scanStall(rows)
		if err != nil {
			return nil, fmt.Errorf("projections: stalls: %w", err)
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("projections: stalls: %w", err)
	}
	return out, nil
}

func scanStall(row pgx.Row) (Stall, error) {
	var s Stall
	var tx, held string
	err := row.Scan(&s.Projection, &s.CompanyID, &tx, &s.Commit.Global, &held, &s.HeldUntil.Global, &s.Error, &s.Since, &s.Attempts, &s.RetryAt)
	if err != nil {
		return Stall{}, err
	}
	if s.Commit.TxID, err = strconv.ParseUint(tx, 10, 64); err == nil {
		s.HeldUntil.TxID, err = strconv.ParseUint(held, 10, 64)
	}
	s.Since, s.RetryAt = s.Since.UTC(), s.RetryAt.UTC()
	return s, err
}

// replaceStalls makes parked, by company, the projector's stalls: what a
// rebuild found, which replaces what the live projector had.
func replaceStalls(ctx context.Context, tx pgx.Tx, name string, parked map[string]rebuildStall) error {
	if _, err := tx.Exec(ctx, `DELETE FROM projection_stalls WHERE projector = $1`, name); err != nil {
		return fmt.Errorf("projections: %s: replace stalls: %w", name, err)
	}
	if len(parked) == 0 {
		return nil
	}
	var companies, txs, heldTxs, errs []string
	var globals, heldGlobals []int64
	for company, s := range parked {
		companies, errs = append(companies, company), append(errs, s.err)
		txs, globals = append(txs, xid(s.first)), append(globals, s.first.Global)
		heldTxs, heldGlobals = append(heldTxs, xid(s.held)), append(heldGlobals, s.held.Global)
	}
	_, err := tx.Exec(ctx, `INSERT INTO projection_stalls (projector, company_id, transaction_id, global_position,
			held_transaction_id, held_global_position, error)
		SELECT $1, c, t::xid8, g, ht::xid8, hg, e FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[])
			AS u(c, t, g, ht, hg, e)`, name, companies, txs, globals, heldTxs, heldGlobals, errs)
	if err != nil {
		return fmt.Errorf("projections: %s: replace stalls: %w", name, err)
	}
	return nil
}

// xid is a position's transaction id as SQL takes it ($n::text::xid8:
// pgx has no xid8 type).
func xid(p eventstore.Position) string { return strconv.FormatUint(p.TxID, 10) }
