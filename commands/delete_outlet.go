package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// DeleteOutlet removes an outlet; it needs the admin role.
type DeleteOutlet struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
}

// DeleteOutletHandler handles DeleteOutlet.
type DeleteOutletHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewDeleteOutletHandler returns a handler on store.
func NewDeleteOutletHandler(store eventstore.Store, now func() time.Time) DeleteOutletHandler {
	if store == nil || now == nil {
		panic("commands: NewDeleteOutletHandler: nil dependency")
	}
	return DeleteOutletHandler{store: store, now: now}
}

// Handle deletes the outlet: it answers 404 afterwards, and its worker
// stops before its next request (it reads the outlet before each).
func (h DeleteOutletHandler) Handle(ctx context.Context, cmd DeleteOutlet) error {
	return controlOutlet(ctx, h.store, cmd.Principal, cmd.DatatargetID, cmd.OutletID, true, func(o datatarget.Outlet) (eventstore.Event, error) {
		if err := o.MayDelete(cmd.Principal); err != nil {
			return eventstore.Event{}, err
		}
		return eventstore.NewEvent(datatarget.OutletDeletedType, datatarget.OutletDeleted{ID: o.ID, DeletedAt: stamp(h.now())}), nil
	})
}
