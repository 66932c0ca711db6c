package commands

import (
	"context"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// controlOutlet runs an admin's action on an outlet (a rewind, a
// deletion, a redelivery or a discarding of parked batches), written once:
// it checks the principal, loads the outlet, lets decide make the action's
// event or refuse it, and appends the event to the outlet's stream, at the
// version it read when exact (the action depends on the outlet's state),
// else at any.
func controlOutlet(ctx context.Context, store eventstore.Store, p access.Principal, datatargetID, outletID string, exact bool,
	decide func(o datatarget.Outlet) (eventstore.Event, error)) error {
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := datatarget.MayControl(p); err != nil {
		return err
	}
	o, version, err := loadOutlet(ctx, store, nil, p.CompanyID, datatargetID, outletID)
	if err != nil {
		return err
	}
	ev, err := decide(o)
	if err != nil {
		return err
	}
	if !exact {
		version = eventstore.Any
	}
	_, err = store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.OutletStream(p.CompanyID, o.ID), ExpectedVersion: version,
			Events: []eventstore.Event{ev},
		}},
	})
	return appendError(err)
}
