package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// ChangeOutlet changes, pauses or resumes an outlet (PATCH); it needs the
// admin role.
type ChangeOutlet struct {
	Principal    access.Principal
	DatatargetID string
	OutletID     string
	Patch        datatarget.OutletPatch
}

// ChangeOutletHandler handles ChangeOutlet.
type ChangeOutletHandler struct {
	store  eventstore.Store
	sealer datatarget.Sealer
	now    func() time.Time
}

// NewChangeOutletHandler returns a handler on store; sealer opens the
// outlet's credentials and seals them again in the event.
func NewChangeOutletHandler(store eventstore.Store, sealer datatarget.Sealer, now func() time.Time) ChangeOutletHandler {
	if store == nil || sealer == nil || now == nil {
		panic("commands: NewChangeOutletHandler: nil dependency")
	}
	return ChangeOutletHandler{store: store, sealer: sealer, now: now}
}

// Handle applies the patch as one OutletChanged event carrying the whole
// new configuration; a patch that changes nothing appends nothing. The
// delivery workers read the configuration before every request, so the
// change applies from the next one. A concurrent change of the same
// outlet is retried: each attempt re-reads and decides again.
func (h ChangeOutletHandler) Handle(ctx context.Context, cmd ChangeOutlet) error {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := datatarget.MayControl(p); err != nil {
		return err
	}
	stream := datatarget.OutletStream(p.CompanyID, cmd.OutletID)
	for attempt := 1; ; attempt++ {
		err := h.try(ctx, cmd, stream)
		if conflictOn(err, stream) && attempt < updateAttempts {
			continue
		}
		return appendError(err)
	}
}

func (h ChangeOutletHandler) try(ctx context.Context, cmd ChangeOutlet, stream string) error {
	p := cmd.Principal
	old, version, err := loadOutlet(ctx, h.store, h.sealer, p.CompanyID, cmd.DatatargetID, cmd.OutletID)
	if err != nil {
		return err
	}
	o, changed, err := old.Change(p, cmd.Patch)
	if err != nil || !changed {
		return err
	}
	ev, err := datatarget.NewOutletChanged(o, stamp(h.now()), h.sealer)
	if err != nil {
		return err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: stream, ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.OutletChangedType, ev)},
		}},
	})
	return err
}
