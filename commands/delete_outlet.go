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
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := datatarget.MayControl(p); err != nil {
		return err
	}
	o, version, err := loadOutlet(ctx, h.store, p.CompanyID, cmd.DatatargetID, cmd.OutletID)
	if err != nil {
		return err
	}
	if err := o.MayDelete(p); err != nil {
		return err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.OutletStream(p.CompanyID, o.ID), ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.OutletDeletedType, datatarget.OutletDeleted{ID: o.ID, DeletedAt: stamp(h.now())})},
		}},
	})
	return appendError(err)
}
