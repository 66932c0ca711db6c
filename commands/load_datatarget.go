package commands

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// loadDatatarget folds a datatarget's stream into its current state and
// version. An unknown datatarget is NotFound.
func loadDatatarget(ctx context.Context, store eventstore.Store, companyID, id string) (datatarget.Datatarget, int64, error) {
	evs, err := store.ReadStream(ctx, datatarget.Stream(companyID, id), 0)
	if err != nil {
		return datatarget.Datatarget{}, 0, err
	}
	var d datatarget.Datatarget
	var version int64
	for _, e := range evs {
		version = e.StreamVersion
		switch e.Type {
		case datatarget.CreatedType:
			var ev datatarget.Created
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				return d, 0, fmt.Errorf("commands: decode %s: %w", e.Type, err)
			}
			d = ev.Datatarget(companyID)
		case datatarget.UpdatedType:
			var ev datatarget.Updated
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				return d, 0, fmt.Errorf("commands: decode %s: %w", e.Type, err)
			}
			d = ev.Apply(d)
		}
	}
	if version == 0 {
		return d, 0, domain.Errorf(domain.NotFound, "no such datatarget")
	}
	return d, version, nil
}

// loadOutlet reads an outlet of a datatarget. An unknown outlet, or one of
// another datatarget, is NotFound.
func loadOutlet(ctx context.Context, store eventstore.Store, companyID, datatargetID, id string) (datatarget.Outlet, int64, error) {
	evs, err := store.ReadStream(ctx, datatarget.OutletStream(companyID, id), 0)
	if err != nil {
		return datatarget.Outlet{}, 0, err
	}
	var o datatarget.Outlet
	var version int64
	for _, e := range evs {
		version = e.StreamVersion
		switch e.Type {
		case datatarget.OutletCreatedType:
			var ev datatarget.OutletCreated
			if err := json.Unmarshal(e.Data, &ev); err != nil {
				return o, 0, fmt.Errorf("commands: decode %s: %w", e.Type, err)
			}
			o = ev.Outlet(companyID)
		case datatarget.OutletDisabledType:
			o.Enabled = false
		}
	}
	if version == 0 || o.DatatargetID != datatargetID {
		return o, 0, domain.Errorf(domain.NotFound, "no such outlet")
	}
	return o, version, nil
}
