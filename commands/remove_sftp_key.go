package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/eventstore"
)

// RemoveSFTPKey removes a registered SFTP key of the principal's company
// (admins only): it no longer logs in. Sessions it opened are not cut.
type RemoveSFTPKey struct {
	Principal access.Principal
	KeyID     string
}

// RemoveSFTPKeyHandler handles RemoveSFTPKey.
type RemoveSFTPKeyHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewRemoveSFTPKeyHandler returns a handler on store.
func NewRemoveSFTPKeyHandler(store eventstore.Store, now func() time.Time) RemoveSFTPKeyHandler {
	if store == nil || now == nil {
		panic("commands: NewRemoveSFTPKeyHandler: nil dependency")
	}
	return RemoveSFTPKeyHandler{store: store, now: now}
}

// Handle records the removal. An unknown key, or one already removed, is
// NotFound.
func (h RemoveSFTPKeyHandler) Handle(ctx context.Context, cmd RemoveSFTPKey) error {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return err
	}
	if err := access.MayManageSFTPKeys(p); err != nil {
		return err
	}
	stream := access.SFTPKeyStream(p.CompanyID, cmd.KeyID)
	evs, err := h.store.ReadStream(ctx, stream, 0)
	if err != nil {
		return err
	}
	if len(evs) == 0 || evs[len(evs)-1].Type == access.SFTPKeyRemovedType {
		return domain.Errorf(domain.NotFound, "no such SFTP key")
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: stream, ExpectedVersion: evs[len(evs)-1].StreamVersion,
			Events: []eventstore.Event{eventstore.NewEvent(access.SFTPKeyRemovedType, access.SFTPKeyRemoved{ID: cmd.KeyID, RemovedAt: stamp(h.now())})},
		}},
	})
	if err != nil {
		return appendError(err)
	}
	return nil
}
