package commands

import (
	"context"
	"time"

	"github.com/clientele/clientele/domain"
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
		MessageRetentionDays: cmd.MessageRetentionDays, SegmentExists: h.segmentExists(ctx, p.CompanyID),
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

// segmentExists asks the company's segment streams whether a segment of
// the key exists; segments are never deleted, so the answer holds when
// the datatarget's creation is appended.
func (h CreateDatatargetHandler) segmentExists(ctx context.Context, companyID string) func(string) (bool, error) {
	return func(key string) (bool, error) {
		_, _, err := loadSegment(ctx, h.store, companyID, key)
		if domain.ErrorCode(err) == domain.NotFound {
			return false, nil
		}
		return err == nil, err
	}
}
