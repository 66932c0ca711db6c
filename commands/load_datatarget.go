package commands

import (
	"context"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// loadDatatarget folds a datatarget's stream into its current state and
// version. An unknown datatarget is NotFound.
func loadDatatarget(ctx context.Context, store eventstore.Store, companyID, id string) (datatarget.Datatarget, int64, error) {
	apply := func(d datatarget.Datatarget, e eventstore.RecordedEvent) (datatarget.Datatarget, error) {
		switch e.Type {
		case datatarget.CreatedType:
			ev, err := decodeEvent[datatarget.Created](e)
			return ev.Datatarget(companyID), err
		case datatarget.UpdatedType:
			ev, err := decodeEvent[datatarget.Updated](e)
			return ev.Apply(d), err
		}
		return d, nil
	}
	return foldStream(ctx, store, datatarget.Stream(companyID, id), datatarget.Datatarget{}, apply, func() error {
		return domain.Errorf(domain.NotFound, "no such datatarget")
	})
}

// loadOutlet reads an outlet of a datatarget. An unknown outlet, or one of
// another datatarget, is NotFound.
func loadOutlet(ctx context.Context, store eventstore.Store, companyID, datatargetID, id string) (datatarget.Outlet, int64, error) {
	errNoOutlet := func() error { return domain.Errorf(domain.NotFound, "no such outlet") }
	apply := func(o datatarget.Outlet, e eventstore.RecordedEvent) (datatarget.Outlet, error) {
		switch e.Type {
		case datatarget.OutletCreatedType:
			ev, err := decodeEvent[datatarget.OutletCreated](e)
			return ev.Outlet(companyID), err
		case datatarget.OutletDisabledType:
			o.Enabled = false
		}
		return o, nil
	}
	o, version, err := foldStream(ctx, store, datatarget.OutletStream(companyID, id), datatarget.Outlet{}, apply, errNoOutlet)
	if err == nil && o.DatatargetID != datatargetID {
		return o, 0, errNoOutlet()
	}
	return o, version, err
}
