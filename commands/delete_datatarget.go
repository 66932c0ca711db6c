package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// DeleteDatatarget removes a datatarget and with it its outlets and its
// queue; it needs the admin role.
type DeleteDatatarget struct {
	Principal    access.Principal
	DatatargetID string
}

// DeleteDatatargetHandler handles DeleteDatatarget.
type DeleteDatatargetHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewDeleteDatatargetHandler returns a handler on store.
func NewDeleteDatatargetHandler(store eventstore.Store, now func() time.Time) DeleteDatatargetHandler {
	if store == nil || now == nil {
		panic("commands: NewDeleteDatatargetHandler: nil dependency")
	}
	return DeleteDatatargetHandler{store: store, now: now}
}

// Handle deletes the datatarget: it answers 404 afterwards, its outlets
// stop, and its stream stays, so its id is never used again. A post that
// raced the deletion may leave its messages in the queue's table, where
// nothing reads them.
func (h DeleteDatatargetHandler) Handle(ctx context.Context, cmd DeleteDatatarget) error {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	d, version, err := loadDatatarget(ctx, h.store, p.CompanyID, cmd.DatatargetID)
	if err != nil {
		return err
	}
	if err := d.MayDelete(p); err != nil {
		return err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.Stream(p.CompanyID, d.ID), ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.DeletedType, datatarget.Deleted{ID: d.ID, DeletedAt: stamp(h.now())})},
		}},
	})
	return appendError(err)
}
