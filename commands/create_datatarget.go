package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// CreateDatatarget creates a datatarget in the principal's company; it
// needs the staff role.
type CreateDatatarget struct {
	Principal   access.Principal
	Type        datatarget.Type
	Name        string
	Description string
	// Settings are a datasync datatarget's: its datatype, fields and
	// from_start.
	Settings datatarget.Settings
	// MessageRetentionDays (admin role): nil takes the server's default.
	MessageRetentionDays *int
}

// CreateDatatargetHandler handles CreateDatatarget.
type CreateDatatargetHandler struct {
	store eventstore.Store
	now   func() time.Time
}

// NewCreateDatatargetHandler returns a handler on store.
func NewCreateDatatargetHandler(store eventstore.Store, now func() time.Time) CreateDatatargetHandler {
	if store == nil || now == nil {
		panic("commands: NewCreateDatatargetHandler: nil dependency")
	}
	return CreateDatatargetHandler{store: store, now: now}
}

// Handle creates the datatarget, enabled and empty. A datasync
// datatarget's messages are written by the async projection "datasync"
// (projections/datasync.go), which starts following the datatype at this
// event's place in the log: its creation is this append, nothing more.
func (h CreateDatatargetHandler) Handle(ctx context.Context, cmd CreateDatatarget) (datatarget.Datatarget, error) {
	p := cmd.Principal
	if err := RequireCompany(p); err != nil {
		return datatarget.Datatarget{}, err
	}
	if err := checkSystemCompany(ctx, h.store, p); err != nil {
		return datatarget.Datatarget{}, err
	}
	d, err := datatarget.New(p, NewID(), datatarget.Spec{
		Type: cmd.Type, Name: cmd.Name, Description: cmd.Description, Settings: cmd.Settings,
		MessageRetentionDays: cmd.MessageRetentionDays,
	}, stamp(h.now()))
	if err != nil {
		return datatarget.Datatarget{}, err
	}
	_, err = h.store.Append(ctx, eventstore.Commit{
		Metadata: Metadata(ctx, p, p.CompanyID),
		Streams: []eventstore.StreamAppend{{
			StreamID: datatarget.Stream(p.CompanyID, d.ID), ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{eventstore.NewEvent(datatarget.CreatedType, datatarget.NewCreated(d))},
		}},
	})
	if err != nil {
		return datatarget.Datatarget{}, appendError(err)
	}
	return d, nil
}
