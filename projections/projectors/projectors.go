package projectors

import (
	"context"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/access"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/datatargets"
	"github.com/clientele/clientele/projections/segments"
)

// Inline returns the projectors that run in the append transaction: the
// read models of tenancy and access, which every request reads (its
// company, its token) and which a client must see at once after creating
// them; the datatarget queues, which a client that posts reads at once;
// the SFTP keys, whose removal must end their log-ins at once; and the
// campaigns and the segments, which a client that creates or changes one
// reads at once.
func Inline() []projections.Projector {
	return []projections.Projector{access.Companies{}, access.Users{}, access.Integrations{}, access.AccessTokens{}, datatargets.Datatargets{}, access.SFTPKeys{}, campaignstats.Campaigns{}, segments.Segments{}}
}

// InlineHook is the store hook that applies the Inline projectors to each
// commit in its append transaction, in order, as the runtime's inline
// hook does; for code that appends without a runtime (tests, tools).
func InlineHook() eventstore.TxHook {
	return eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, c eventstore.Committed) error {
		for _, p := range Inline() {
			if err := p.Apply(ctx, tx, c.Events); err != nil {
				return err
			}
		}
		return nil
	})
}
