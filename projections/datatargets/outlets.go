package datatargets

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// outletRows collects the outlet rows of the datatargets projector: the
// creations, in one statement, then every later change in the order of
// the log (a pause then a resume must end resumed).
type outletRows struct {
	created []outletRow
	changes []outletChange
}

// outletChange is one statement on an outlet row and its arguments.
type outletChange struct {
	sql  string
	args []any
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
	Key          []byte    `json:"credentials_key"`
	Sealed       []byte    `json:"sealed_credentials"`
	Policy       string    `json:"failure_policy"`
	Enabled      bool      `json:"enabled"`
	CreatedBy    string    `json:"created_by"`
	CreatedAt    time.Time `json:"created_at"`
}

func (o *outletRows) add(e eventstore.RecordedEvent) error {
	switch e.Type {
	case datatarget.OutletCreatedType:
		var ev datatarget.OutletCreated
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		stored := ev.Stored()
		// The request is stored as json text (not jsonb), with the content
		// template as written.
		req, err := json.Marshal(stored.Request)
		if err != nil {
			return err
		}
		policy, err := json.Marshal(policyOf(ev.FailurePolicy))
		if err != nil {
			return err
		}
		key, sealed := sealedColumns(stored)
		o.created = append(o.created, outletRow{
			CompanyID: e.Metadata.CompanyID, ID: ev.ID, DatatargetID: ev.DatatargetID, OutletType: ev.OutletType,
			Request: string(req), IsBatched: ev.IsBatched, MaxBatchSize: ev.MaxBatchSize, MinInterval: ev.MinInterval,
			Secret: stored.Secret, Key: key, Sealed: sealed, Policy: string(policy), Enabled: ev.Enabled,
			CreatedBy: ev.CreatedBy, CreatedAt: ev.CreatedAt,
		})
	case datatarget.OutletDisabledType:
		var ev datatarget.OutletDisabled
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		o.changes = append(o.changes, outletChange{`UPDATE datatarget_outlets SET enabled = false, disabled_reason = $3, updated_at = $4
			WHERE company_id = $1 AND id = $2`, []any{e.Metadata.CompanyID, ev.ID, ev.Reason, ev.DisabledAt}})
	case datatarget.OutletChangedType:
		var ev datatarget.OutletChanged
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		stored := ev.Stored()
		req, err := json.Marshal(stored.Request)
		if err != nil {
			return err
		}
		policy, err := json.Marshal(policyOf(ev.FailurePolicy))
		if err != nil {
			return err
		}
		key, sealed := sealedColumns(stored)
		// Enabling clears the reason the service disabled it for; a
		// change that leaves it disabled keeps the reason.
		o.changes = append(o.changes, outletChange{`UPDATE datatarget_outlets SET request = $3::json, is_batched = $4,
				max_batch_size = $5, min_request_interval_ms = $6, secret = $7, failure_policy = $8::jsonb, enabled = $9,
				disabled_reason = CASE WHEN $9 THEN '' ELSE disabled_reason END, updated_at = $10,
				credentials_key = $11, sealed_credentials = $12
			WHERE company_id = $1 AND id = $2`,
			[]any{e.Metadata.CompanyID, ev.ID, string(req), ev.IsBatched, ev.MaxBatchSize, ev.MinInterval, stored.Secret,
				string(policy), ev.Enabled, ev.ChangedAt, key, sealed}})
	case datatarget.OutletRewoundType:
		var ev datatarget.OutletRewound
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		// The event's version orders rewinds: the worker applies one whose
		// version is above the last it applied.
		o.changes = append(o.changes, outletChange{`UPDATE datatarget_outlets SET rewind_seq = greatest(rewind_seq, $3),
				rewind_after = CASE WHEN $3 > rewind_seq THEN $4 ELSE rewind_after END
			WHERE company_id = $1 AND id = $2`, []any{e.Metadata.CompanyID, ev.ID, e.StreamVersion, ev.After}})
	case datatarget.ParkedRedeliveryRequestedType:
		var ev datatarget.ParkedRedeliveryRequested
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		// outlet_parked is the delivery workers' table; the admins' part
		// of it (which batches to send again, which to drop) is applied
		// here, in the transaction of their event.
		o.changes = append(o.changes, outletChange{`UPDATE outlet_parked SET redeliver = true
			WHERE outlet_id = $1 AND ($2 = 0 OR id = $2)`, []any{ev.ID, ev.ParkedID}})
	case datatarget.ParkedDiscardedType:
		var ev datatarget.ParkedDiscarded
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		o.changes = append(o.changes, outletChange{`DELETE FROM outlet_parked WHERE outlet_id = $1 AND id = $2`, []any{ev.ID, ev.ParkedID}})
	case datatarget.OutletDeletedType:
		var ev datatarget.OutletDeleted
		if err := bulk.Decode(e, &ev); err != nil {
			return err
		}
		o.changes = append(o.changes, outletChange{`DELETE FROM datatarget_outlets WHERE company_id = $1 AND id = $2`,
			[]any{e.Metadata.CompanyID, ev.ID}})
	}
	return nil
}

// policyOf is the failure policy an event records (nil: none).
func policyOf(f *datatarget.FailurePolicy) datatarget.FailurePolicy {
	if f == nil {
		return datatarget.FailurePolicy{}
	}
	return *f
}

// sealedColumns are the outlet's credentials_key and sealed_credentials:
// nil for an event written before its credentials were sealed.
func sealedColumns(s datatarget.StoredOutlet) (key, sealed []byte) {
	if s.Sealed == nil {
		return nil, nil
	}
	return s.Sealed.Key, s.Sealed.Sealed
}

func (o *outletRows) queue(b *pgx.Batch) error {
	if err := bulk.QueueRows(b, "datatarget_outlets", `
		INSERT INTO datatarget_outlets (company_id, id, datatarget_id, outlet_type, request, is_batched, max_batch_size,
			min_request_interval_ms, secret, credentials_key, sealed_credentials, failure_policy, enabled, created_by,
			created_at, updated_at)
		SELECT company_id, id, datatarget_id, outlet_type, request::json, is_batched, max_batch_size,
			min_request_interval_ms, secret, decode(credentials_key, 'base64'), decode(sealed_credentials, 'base64'),
			failure_policy::jsonb, enabled, created_by, created_at, created_at
		FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, id text, datatarget_id text, outlet_type text,
			request text, is_batched boolean, max_batch_size integer, min_request_interval_ms bigint, secret text,
			credentials_key text, sealed_credentials text, failure_policy text, enabled boolean, created_by text,
			created_at timestamptz)
		ON CONFLICT (company_id, id) DO NOTHING`, o.created); err != nil {
		return err
	}
	// Changes are rare (an operator's, or a 410): one statement each.
	for _, c := range o.changes {
		b.Queue(c.sql, c.args...)
	}
	return nil
}
