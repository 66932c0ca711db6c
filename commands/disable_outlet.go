package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// DisableOutlet stops an outlet's deliveries. The delivery workers issue
// it as the system when a receiver answers 410 Gone; it needs the staff
// role otherwise.
type DisableOutlet struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
	Reason       string
}

// DisableOutletHandler handles DisableOutlet.
type DisableOutletHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewDisableOutletHandler returns a handler on store.
func NewDisableOutletHandler(store eventstore.Store, now func() time.Time) DisableOutletHandler {
	if store == nil || now == nil {
		panic("commands: NewDisableOutletHandler: nil dependency")
	}
	return DisableOutletHandler{store: store, now: now}
}

// Handle disables the outlet. Disabling a disabled outlet appends nothing.
func (h DisableOutletHandler) Handle(ctx context.Context, cmd DisableOutlet) error {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := datatarget.MayManage(p); err != nil {
		return err
	}
	o, version, err := loadOutlet(ctx, h.store, nil, p.CompanyID, cmd.DatatargetID, cmd.OutletID)
	if err != nil || !o.Enabled {
		return err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.OutletStream(p.CompanyID, o.ID), ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.OutletDisabledType, datatarget.OutletDisabled{
				ID: o.ID, Reason: cmd.Reason, DisabledAt: stamp(h.now()),
			})},
		}},
	})
	if conflictOn(err, datatarget.OutletStream(p.CompanyID, o.ID)) {
		// Disabled concurrently (two workers seeing 410 is impossible, but
		// an operator may race one): the outcome is the same.
		return nil
	}
	return appendError(err)
}

// BySystem disables an outlet as the service itself: the delivery workers
// call it when a receiver answers 410 Gone (it fits delivery.DisableFunc).
func (h DisableOutletHandler) BySystem(ctx context.Context, companyID, datatargetID, outletID, reason string) error {
	return h.Handle(WithRequest(ctx, "system", ""), DisableOutlet{
		Principal: access.System(companyID), DatatargetID: datatargetID, OutletID: outletID, Reason: reason,
	})
}
