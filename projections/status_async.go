package projections

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
)

// CompanyStatus is the status of the async projectors (see Status, and
// for log) as
// one company's console shows it: StalledCompanies is 1 for a projection
// that parked this company and 0 otherwise, since other companies'
// stalls are none of its business. The inline projectors are left out:
// they are always at the head, and their status costs a count of the
// whole log, which no page may wait for.
func CompanyStatus(ctx context.Context, pool *pgxpool.Pool, store eventstore.Store, log eventstore.EventLog, async []Projector, companyID string) ([]ProjectionStatus, error) {
	st, err := Status(ctx, pool, store, log, nil, async)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(async))
	for i, p := range async {
		names[i] = p.Name()
	}
	rows, err := pool.Query(ctx, `SELECT projector FROM projection_stalls WHERE company_id = $1 AND projector = ANY($2)`, companyID, names)
	if err != nil {
		return nil, fmt.Errorf("projections: company stalls: %w", err)
	}
	parked, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("projections: company stalls: %w", err)
	}
	for i := range st {
		st[i].StalledCompanies = 0
		for _, name := range parked {
			if name == st[i].Name {
				st[i].StalledCompanies = 1
			}
		}
	}
	return st, nil
}

// CompanyStatus is CompanyStatus of the runtime's async projectors.
func (r *Runtime) CompanyStatus(ctx context.Context, companyID string) ([]ProjectionStatus, error) {
	return CompanyStatus(ctx, r.cfg.Pool, r.cfg.Store, r.cfg.Log, r.cfg.Async, companyID)
}
