package commands

import (
	"context"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// loadDatatarget folds a datatarget's stream into its current state and
// version. An unknown or deleted datatarget is NotFound.
func loadDatatarget(ctx context.Context, store eventstore.Store, companyID, id string) (datatarget.Datatarget, int64, error) {
	errNoDatatarget := func() error { return domain.Errorf(domain.NotFound, "no such datatarget") }
	deleted := false
	apply := func(d datatarget.Datatarget, e eventstore.RecordedEvent) (datatarget.Datatarget, error) {
		switch e.Type {
		case datatarget.CreatedType:
			ev, err := decodeEvent[datatarget.Created](e)
			return ev.Datatarget(companyID), err
		case datatarget.UpdatedType:
			ev, err := decodeEvent[datatarget.Updated](e)
			return ev.Apply(d), err
		case datatarget.DeletedType:
			deleted = true
		}
		return d, nil
	}
	d, version, err := foldStream(ctx, store, datatarget.Stream(companyID, id), datatarget.Datatarget{}, apply, errNoDatatarget)
	if err == nil && deleted {
		return d, 0, errNoDatatarget()
	}
	return d, version, err
}

// loadOutlet reads an outlet of a datatarget, its credentials opened
// with sealer (nil: not opened, their hints only). An unknown or deleted
// outlet, one of another datatarget, or one of a deleted datatarget, is
// NotFound.
func loadOutlet(ctx context.Context, store eventstore.Store, sealer datatarget.Sealer, companyID, datatargetID, id string) (datatarget.Outlet, int64, error) {
	errNoOutlet := func() error { return domain.Errorf(domain.NotFound, "no such outlet") }
	deleted := false
	apply := func(o datatarget.Outlet, e eventstore.RecordedEvent) (datatarget.Outlet, error) {
		switch e.Type {
		case datatarget.OutletCreatedType:
			ev, err := decodeEvent[datatarget.OutletCreated](e)
			if err != nil {
				return o, err
			}
			return ev.Outlet(companyID, sealer)
		case datatarget.OutletDisabledType:
			ev, err := decodeEvent[datatarget.OutletDisabled](e)
			o.Enabled, o.DisabledReason = false, ev.Reason
			return o, err
		case datatarget.OutletChangedType:
			ev, err := decodeEvent[datatarget.OutletChanged](e)
			if err != nil {
				return o, err
			}
			return ev.Apply(o, sealer)
		case datatarget.OutletDeletedType:
			deleted = true
		}
		return o, nil
	}
	o, version, err := foldStream(ctx, store, datatarget.OutletStream(companyID, id), datatarget.Outlet{}, apply, errNoOutlet)
	if err == nil && (o.DatatargetID != datatargetID || deleted) {
		return o, 0, errNoOutlet()
	}
	if err != nil {
		return o, version, err
	}
	if _, _, err := loadDatatarget(ctx, store, companyID, datatargetID); err != nil {
		return o, 0, err
	}
	return o, version, nil
}
