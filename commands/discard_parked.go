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
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := datatarget.MayControl(p); err != nil {
		return err
	}
	if _, _, err := loadOutlet(ctx, h.store, p.CompanyID, cmd.DatatargetID, cmd.OutletID); err != nil {
		return err
	}
	_, err := h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.OutletStream(p.CompanyID, cmd.OutletID), ExpectedVersion: eventstore.Any,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.ParkedDiscardedType, datatarget.ParkedDiscarded{
				ID: cmd.OutletID, ParkedID: cmd.ParkedID, DiscardedAt: stamp(h.now()),
			})},
		}},
	})
	return appendError(err)
}
