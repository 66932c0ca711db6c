package datasync_test

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// tables dumps the datasync tables exactly, bodies as stored.
func (e *datasyncEnv) tables() []string {
	e.T.Helper()
	var out []string
	for _, sql := range []string{
		`SELECT concat_ws('|', datatarget_id, company_id, datatype, fields::text, last_message_number, applied_tx, applied_position)
			FROM datasync_targets ORDER BY datatarget_id`,
		`SELECT concat_ws('|', datatarget_id, number, company_id, entity_id, update_id, body::text, posted_at)
			FROM datasync_messages ORDER BY datatarget_id, number`,
	} {
		rows, err := e.Pool.Query(context.Background(), sql)
		if err != nil {
			e.T.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			e.T.Fatal(err)
		}
		out = append(out, got...)
	}
	return out
}

// rebuild rebuilds the datasync projection and waits for it.
func (e *datasyncEnv) rebuild() {
	e.T.Helper()
	if err := e.rt.Rebuild(context.Background(), e.sync.Name(), nil); err != nil {
		e.T.Fatal(err)
	}
	projectiontest.WaitCaughtUp(e.T, e.Pool, e.sync)
}

// applyAll applies the whole log to the datasync tables once more.
func (e *datasyncEnv) applyAll() {
	e.T.Helper()
	ctx := context.Background()
	// Straight from the table: ReadLog stops at the oldest transaction on
	// the server, which other tests may hold open.
	rows, err := e.Pool.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
		transaction_id::text, global_position FROM events ORDER BY events.transaction_id, events.global_position`)
	if err != nil {
		e.T.Fatal(err)
	}
	events, err := postgres.ScanEvents(rows)
	if err != nil {
		e.T.Fatal(err)
	}
	if err := pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error { return e.sync.Apply(ctx, tx, events) }); err != nil {
		e.T.Fatal(err)
	}
}
