package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// RedeliverParked asks for a parked batch of an outlet (ParkedID), or
// every one (ParkedID 0), to be sent again; it needs the admin role.
type RedeliverParked struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
	ParkedID     int64
}

// RedeliverParkedHandler handles RedeliverParked.
type RedeliverParkedHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewRedeliverParkedHandler returns a handler on store.
func NewRedeliverParkedHandler(store eventstore.Store, now func() time.Time) RedeliverParkedHandler {
	if store == nil || now == nil {
		panic("commands: NewRedeliverParkedHandler: nil dependency")
	}
	return RedeliverParkedHandler{store: store, now: now}
}

// Handle appends the request; the datatargets projector marks the parked
// batches, and the outlet's worker sends them, oldest first, before the
// queue's next batch.
func (h RedeliverParkedHandler) Handle(ctx context.Context, cmd RedeliverParked) error {
	return controlOutlet(ctx, h.store, cmd.Principal, cmd.DatatargetID, cmd.OutletID, false, func(o datatarget.Outlet) (eventstore.Event, error) {
		return eventstore.NewEvent(datatarget.ParkedRedeliveryRequestedType, datatarget.ParkedRedeliveryRequested{
			ID: o.ID, ParkedID: cmd.ParkedID, RequestedAt: stamp(h.now()),
		}), nil
	})
}
