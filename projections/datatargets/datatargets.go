package datatargets

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// Datatargets keeps the datatargets, their outlets and their message
// queues. It runs inline, so a client that posts messages retrieves them at
// once, and a post's numbers are in the queue when the post commits.
//
// The delivery state of outlets (progress, lease, attempt log) is not
// here: the delivery workers write it, and a rebuild leaves it alone.
type Datatargets struct{}

// Name implements Projector.
func (Datatargets) Name() string { return "datatargets" }

// Tables implements Projector.
func (Datatargets) Tables() []string {
	return []string{"datatargets", "datatarget_outlets", "datatarget_messages"}
}

type datatargetRow struct {
	CompanyID   string          `json:"company_id"`
	ID          string          `json:"id"`
	Type        datatarget.Type `json:"datatarget_type"`
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Enabled     bool            `json:"enabled"`
	CreatedBy   string          `json:"created_by"`
	CreatedAt   time.Time       `json:"created_at"`
	UpdatedAt   time.Time       `json:"updated_at"`
	// Settings are a datasync datatarget's, nil ({} in the table) for
	// messages.
	Settings *datatarget.Settings `json:"settings"`
	// MessageRetentionDays: nil takes the server's default.
	MessageRetentionDays *int `json:"message_retention_days"`
}

type deletedRow struct {
	CompanyID string `json:"company_id"`
	ID        string `json:"id"`
}

// Apply writes the commit's datatargets, outlets and messages in one round
// trip: creations first, then changes, then messages and counters.
func (Datatargets) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var (
		created []datatargetRow
		// updated keeps each datatarget's latest change by stream version:
		// every change carries the whole new name and description.
		updated  = map[string]eventstore.RecordedEvent{}
		outlets  outletRows
		messages messageRows
		deleted  []deletedRow
	)
	for _, e := range events {
		switch e.Type {
		case datatarget.MessagePostedType:
			if err := messages.add(e); err != nil {
				return err
			}
		case datatarget.CreatedType:
			var ev datatarget.Created
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			created = append(created, datatargetRow{
				CompanyID: e.Metadata.CompanyID, ID: ev.ID, Type: ev.Type, Name: ev.Name, Description: ev.Description,
				Enabled: ev.Enabled, CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt, UpdatedAt: ev.CreatedAt, Settings: ev.Settings,
				MessageRetentionDays: ev.MessageRetentionDays,
			})
		case datatarget.UpdatedType:
			if prev, ok := updated[e.StreamID]; !ok || prev.StreamVersion < e.StreamVersion {
				updated[e.StreamID] = e
			}
		case datatarget.DeletedType:
			var ev datatarget.Deleted
			if err := bulk.Decode(e, &ev); err != nil {
				return err
			}
			deleted = append(deleted, deletedRow{CompanyID: e.Metadata.CompanyID, ID: ev.ID})
		case datatarget.OutletCreatedType, datatarget.OutletDisabledType, datatarget.OutletChangedType, datatarget.OutletDeletedType,
			datatarget.ParkedRedeliveryRequestedType, datatarget.ParkedDiscardedType, datatarget.OutletRewoundType:
			if err := outlets.add(e); err != nil {
				return err
			}
		}
	}
	type changedRow struct {
		CompanyID   string    `json:"company_id"`
		ID          string    `json:"id"`
		Name        string    `json:"name"`
		Description string    `json:"description"`
		Enabled     *bool     `json:"enabled"` // nil before datatargets could be paused
		UpdatedAt   time.Time `json:"updated_at"`
		// MessageRetentionDays: nil takes the server's default.
		MessageRetentionDays *int `json:"message_retention_days"`
	}
	var changed []changedRow
	for _, e := range updated {
		var ev datatarget.Updated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		changed = append(changed, changedRow{CompanyID: e.Metadata.CompanyID, ID: ev.ID, Name: ev.Name, Description: ev.Description,
			Enabled: ev.Enabled, UpdatedAt: ev.UpdatedAt, MessageRetentionDays: ev.MessageRetentionDays})
	}

	var b pgx.Batch
	if err := bulk.QueueRows(&b, "datatargets", `
		INSERT INTO datatargets (company_id, id, datatarget_type, name, description, enabled, created_by, created_at, updated_at, settings,
			message_retention_days)
		SELECT company_id, id, datatarget_type, name, description, enabled, created_by, created_at, updated_at, coalesce(nullif(settings, 'null'), '{}'),
			message_retention_days
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, datatarget_type text, name text,
			description text, enabled boolean, created_by text, created_at timestamptz, updated_at timestamptz, settings jsonb,
			message_retention_days integer)
		ON CONFLICT (company_id, id) DO NOTHING`, created); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "datatargets", `
		UPDATE datatargets d SET name = r.name, description = r.description, enabled = coalesce(r.enabled, d.enabled),
			updated_at = r.updated_at, message_retention_days = r.message_retention_days
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, name text, description text, enabled boolean,
			updated_at timestamptz, message_retention_days integer)
		WHERE d.company_id = r.company_id AND d.id = r.id`, changed); err != nil {
		return err
	}
	if err := outlets.queue(&b); err != nil {
		return err
	}
	messages.queue(&b)
	// Deleting is final, so it comes last: whatever this commit (or a
	// rebuild's run of commits) wrote of the datatarget goes with it.
	if err := bulk.QueueRows(&b, "datatargets", `
		WITH r AS (SELECT * FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text)),
		m AS (DELETE FROM datatarget_messages x USING r WHERE x.datatarget_id = r.id),
		o AS (DELETE FROM datatarget_outlets x USING r WHERE x.company_id = r.company_id AND x.datatarget_id = r.id)
		DELETE FROM datatargets d USING r WHERE d.company_id = r.company_id AND d.id = r.id`, deleted); err != nil {
		return err
	}
	if b.Len() == 0 {
		return nil
	}
	return bulk.SendBatch(ctx, tx, "datatargets", &b)
}
