package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// RewindOutlet makes an outlet send again every message numbered above
// After; it needs the admin role. Position is how far the outlet has
// delivered, as the caller read it: After above it is refused.
type RewindOutlet struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
	After        int64
	Position     int64
}

// RewindOutletHandler handles RewindOutlet.
type RewindOutletHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewRewindOutletHandler returns a handler on store.
func NewRewindOutletHandler(store eventstore.Store, now func() time.Time) RewindOutletHandler {
	if store == nil || now == nil {
		panic("commands: NewRewindOutletHandler: nil dependency")
	}
	return RewindOutletHandler{store: store, now: now}
}

// Handle appends the rewind. The worker holding the outlet's lease
// applies it before its next request (never during one), moving its
// progress back to After (or leaving it where it is, if that is lower
// by then).
func (h RewindOutletHandler) Handle(ctx context.Context, cmd RewindOutlet) error {
	return controlOutlet(ctx, h.store, cmd.Principal, cmd.DatatargetID, cmd.OutletID, false, func(o datatarget.Outlet) (eventstore.Event, error) {
		if err := o.Rewind(cmd.Principal, cmd.After, cmd.Position); err != nil {
			return eventstore.Event{}, err
		}
		return eventstore.NewEvent(datatarget.OutletRewoundType, datatarget.OutletRewound{
			ID: o.ID, After: cmd.After, RewoundAt: stamp(h.now()),
		}), nil
	})
}
