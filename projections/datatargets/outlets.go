package datatargets

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// outletRows collects the outlet rows of the datatargets projector.
type outletRows struct {
	created  []outletRow
	disabled []outletDisabledRow
}

type outletRow struct {
	CompanyID    string    `json:"company_id"`
	ID           string    `json:"id"`
	DatatargetID string    `json:"datatarget_id"`
	OutletType   string    `json:"outlet_type"`
	Request      string    `json:"request"`
	IsBatched    bool      `json:"is_batched"`
	MaxBatchSize int       `json:"max_batch_size"`
	MinInterval  int64     `json:"min_request_interval_ms"`
	Secret       string    `json:"secret"`
	Enabled      bool      `json:"enabled"`
	CreatedBy    string    `json:"created_by"`
	CreatedAt    time.Time `json:"created_at"`
}

type outletDisabledRow struct {
	CompanyID  string    `json:"company_id"`
	ID         string    `json:"id"`
	Reason     string    `json:"reason"`
	DisabledAt time.Time `json:"disabled_at"`
}

func (o *outletRows) add(e eventstore.RecordedEvent) error {
	switch e.Type {
	case datatarget.OutletCreatedType:
		var ev datatarget.OutletCreated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		out := ev.Outlet(e.Metadata.CompanyID)
		// The request is stored as json text (not jsonb), with the content
		// template as written.
		req, err := json.Marshal(out.Request)
		if err != nil {
			return err
		}
		o.created = append(o.created, outletRow{
			CompanyID: e.Metadata.CompanyID, ID: ev.ID, DatatargetID: ev.DatatargetID, OutletType: ev.OutletType,
			Request: string(req), IsBatched: ev.IsBatched, MaxBatchSize: ev.MaxBatchSize, MinInterval: ev.MinInterval,
			Secret: ev.Secret, Enabled: ev.Enabled, CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt,
		})
	case datatarget.OutletDisabledType:
		var ev datatarget.OutletDisabled
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		o.disabled = append(o.disabled, outletDisabledRow{CompanyID: e.Metadata.CompanyID, ID: ev.ID, Reason: ev.Reason, DisabledAt: ev.DisabledAt})
	}
	return nil
}

func (o *outletRows) queue(b *pgx.Batch) error {
	if err := bulk.QueueRows(b, "datatarget_outlets", `
		INSERT INTO datatarget_outlets (company_id, id, datatarget_id, outlet_type, request, is_batched, max_batch_size,
			min_request_interval_ms, secret, enabled, created_by, created_at, updated_at)
		SELECT company_id, id, datatarget_id, outlet_type, request::json, is_batched, max_batch_size,
			min_request_interval_ms, secret, enabled, created_by, created_at, created_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, datatarget_id text, outlet_type text,
			request text, is_batched boolean, max_batch_size integer, min_request_interval_ms bigint, secret text,
			enabled boolean, created_by text, created_at timestamptz)
		ON CONFLICT (company_id, id) DO NOTHING`, o.created); err != nil {
		return err
	}
	// Disabling is final (re-enabling is not in the interface yet), so the
	// order of several disablings does not matter.
	return bulk.QueueRows(b, "datatarget_outlets", `
		UPDATE datatarget_outlets o SET enabled = false, disabled_reason = r.reason, updated_at = r.disabled_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, reason text, disabled_at timestamptz)
		WHERE o.company_id = r.company_id AND o.id = r.id`, o.disabled)
}
