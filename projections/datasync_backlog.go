package projections

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
)

// backlogPage is how many changes of a from_start backlog are read and
// turned into messages at a time: memory stays bounded by a page whatever
// the size of the company.
const backlogPage = 5_000

// backlog gives the datatarget t, created with from_start, the changes of
// its company and datatype from the start of the log up to its creation,
// as its first messages, in log order.
//
// It runs in the transaction that applies the creation. Every event before
// the creation is visible then: the projector gets a commit only once no
// earlier transaction can still commit (see eventstore/postgres), and a
// rebuild reads the same prefix of the same log. It is one long
// transaction for a large company; the page bounds memory, not time.
func (p *Datasync) backlog(ctx context.Context, tx pgx.Tx, ts *syncTargets, t *syncTarget) error {
	types := p.feeds[t.datatype].eventTypes()
	var after eventstore.Position
	for {
		// events.transaction_id: the bare name would order by the output
		// column, the text (see nextCommit).
		rows, err := tx.Query(ctx, `SELECT stream_id, stream_version, event_type, data, metadata, recorded_at,
				transaction_id::text, global_position
			FROM events WHERE company_id = $1 AND event_type = ANY($2)
				AND (transaction_id, global_position) > ($3::text::xid8, $4)
				AND (transaction_id, global_position) < ($5::text::xid8, $6)
			ORDER BY events.transaction_id, events.global_position LIMIT $7`,
			t.company, types, strconv.FormatUint(after.TxID, 10), after.Global,
			strconv.FormatUint(t.applied.TxID, 10), t.applied.Global, backlogPage)
		if err != nil {
			return fmt.Errorf("projections: datasync: backlog of %s: %w", t.id, err)
		}
		evs, err := postgres.ScanEvents(rows)
		if err != nil {
			return fmt.Errorf("projections: datasync: backlog of %s: %w", t.id, err)
		}
		if len(evs) == 0 {
			return nil
		}
		changes := make([]syncChange, len(evs))
		for i := range evs {
			changes[i] = syncChange{event: &evs[i], targets: []*syncTarget{t}}
		}
		if err := p.emit(ctx, tx, t.datatype, ts, changes); err != nil {
			return err
		}
		if len(evs) < backlogPage {
			return nil
		}
		after = evs[len(evs)-1].Position
	}
}
