package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// CreateOutlet adds a webhook outlet to a datatarget; it needs the staff
// role.
type CreateOutlet struct {
	Principal    access.Principal
	DatatargetID string
	Spec         datatarget.OutletSpec
}

// CreateOutletHandler handles CreateOutlet.
type CreateOutletHandler struct {
	store  eventstore.Store
	sealer datatarget.Sealer
	now    func() time.Time
}

// NewCreateOutletHandler returns a handler on store; sealer seals the
// outlet's credentials in its event.
func NewCreateOutletHandler(store eventstore.Store, sealer datatarget.Sealer, now func() time.Time) CreateOutletHandler {
	if store == nil || sealer == nil || now == nil {
		panic("commands: NewCreateOutletHandler: nil dependency")
	}
	return CreateOutletHandler{store: store, sealer: sealer, now: now}
}

// Handle creates the outlet, enabled; it delivers from the datatarget's
// first message.
func (h CreateOutletHandler) Handle(ctx context.Context, cmd CreateOutlet) (datatarget.Outlet, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return datatarget.Outlet{}, err
	}
	if err := datatarget.MayManage(p); err != nil {
		return datatarget.Outlet{}, err
	}
	d, _, err := loadDatatarget(ctx, h.store, p.CompanyID, cmd.DatatargetID)
	if err != nil {
		return datatarget.Outlet{}, err
	}
	o, err := datatarget.NewOutlet(p, d, NewID(), cmd.Spec, stamp(h.now()))
	if err != nil {
		return datatarget.Outlet{}, err
	}
	ev, err := datatarget.NewOutletCreated(o, h.sealer)
	if err != nil {
		return datatarget.Outlet{}, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.OutletStream(p.CompanyID, o.ID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.OutletCreatedType, ev)},
		}},
	})
	if err != nil {
		return datatarget.Outlet{}, appendError(err)
	}
	return o, nil
}
