package datasync

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
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
		evs, err := p.log.ReadCompanyTypes(ctx, tx, t.company, types, after, t.applied, backlogPage)
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
