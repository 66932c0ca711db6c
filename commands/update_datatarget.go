package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// UpdateDatatarget changes a datatarget's name or description (PATCH);
// it needs the staff role.
type UpdateDatatarget struct {
	Principal    access.Principal
	DatatargetID string
	Patch        datatarget.Patch
}

// UpdateDatatargetHandler handles UpdateDatatarget.
type UpdateDatatargetHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewUpdateDatatargetHandler returns a handler on store.
func NewUpdateDatatargetHandler(store eventstore.Store, now func() time.Time) UpdateDatatargetHandler {
	if store == nil || now == nil {
		panic("commands: NewUpdateDatatargetHandler: nil dependency")
	}
	return UpdateDatatargetHandler{store: store, now: now}
}

// Handle applies the patch and returns the datatarget's new state (without
// its outlets and counters, which the read model adds). A patch that
// changes nothing appends nothing. A concurrent change of the same
// datatarget is retried: each attempt re-reads and decides again.
func (h UpdateDatatargetHandler) Handle(ctx context.Context, cmd UpdateDatatarget) (datatarget.Datatarget, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return datatarget.Datatarget{}, err
	}
	stream := datatarget.Stream(p.CompanyID, cmd.DatatargetID)
	for attempt := 1; ; attempt++ {
		d, err := h.try(ctx, cmd, stream)
		if conflictOn(err, stream) && attempt < updateAttempts {
			continue
		}
		if err != nil {
			return datatarget.Datatarget{}, appendError(err)
		}
		return d, nil
	}
}

func (h UpdateDatatargetHandler) try(ctx context.Context, cmd UpdateDatatarget, stream string) (datatarget.Datatarget, error) {
	old, version, err := loadDatatarget(ctx, h.store, cmd.Principal.CompanyID, cmd.DatatargetID)
	if err != nil {
		return old, err
	}
	d, changed, err := old.Apply(cmd.Principal, cmd.Patch, stamp(h.now()))
	if err != nil || !changed {
		return d, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, cmd.Principal, cmd.Principal.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: stream, ExpectedVersion: version,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.UpdatedType, datatarget.NewUpdated(d))},
		}},
	})
	return d, err
}
