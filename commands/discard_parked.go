package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// DiscardParked drops a parked batch of an outlet: it is never sent; it
// needs the admin role.
type DiscardParked struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
	ParkedID     int64
}

// DiscardParkedHandler handles DiscardParked.
type DiscardParkedHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewDiscardParkedHandler returns a handler on store.
func NewDiscardParkedHandler(store eventstore.Store, now func() time.Time) DiscardParkedHandler {
	if store == nil || now == nil {
		panic("commands: NewDiscardParkedHandler: nil dependency")
	}
	return DiscardParkedHandler{store: store, now: now}
}

// Handle appends the discarding; the datatargets projector deletes the
// parked batch in the same transaction.
func (h DiscardParkedHandler) Handle(ctx context.Context, cmd DiscardParked) error {
	return controlOutlet(ctx, h.store, cmd.Principal, cmd.DatatargetID, cmd.OutletID, false, func(o datatarget.Outlet) (eventstore.Event, error) {
		return eventstore.NewEvent(datatarget.ParkedDiscardedType, datatarget.ParkedDiscarded{
			ID: o.ID, ParkedID: cmd.ParkedID, DiscardedAt: stamp(h.now()),
		}), nil
	})
}
