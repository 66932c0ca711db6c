package readmodels

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/crypto"
)

// Datatargets reads datatargets, their outlets (with their delivery
// progress), their message queues and the outlets' attempt logs.
type Datatargets struct {
	db   database
	keys crypto.KeyStore // opens the outlet log's sealed raw texts
}

// NewDatatargets returns the queries on pool; keys opens the raw texts
// of the outlets' attempts.
func NewDatatargets(pool *pgxpool.Pool, keys crypto.KeyStore) *Datatargets {
	if pool == nil || keys.Keyring == nil {
		panic("readmodels: NewDatatargets: nil pool or keyring")
	}
	return &Datatargets{db: database{pool}, keys: keys}
}

func errNoDatatarget() error { return domain.Errorf(domain.NotFound, "no such datatarget") }

// selectDatatarget reads a datatarget; the datasync projection counts a
// datasync datatarget's messages in its own table, the campaign_stats
// projection those of a datasync datatarget of campaigns in its own, and
// the segment_members projection those of a segment in its own.
const selectDatatarget = `SELECT d.company_id, d.id, d.datatarget_type, d.name, d.description, d.enabled,
	d.created_by, d.created_at, d.updated_at,
	greatest(d.last_message_number, coalesce(s.last_message_number, 0), coalesce(g.last_message_number, 0),
		coalesce(e.last_message_number, 0)), d.settings,
	d.message_retention_days
	FROM datatargets d LEFT JOIN datasync_targets s ON s.datatarget_id = d.id
	LEFT JOIN campaign_sync_targets g ON g.datatarget_id = d.id
	LEFT JOIN segment_sync_targets e ON e.datatarget_id = d.id `

// Datatargets returns every datatarget of the company with its outlets,
// oldest first (identifiers are time-ordered).
func (q *Datatargets) Datatargets(ctx context.Context, companyID string) ([]datatarget.Datatarget, error) {
	rows, err := q.db.Query(ctx, selectDatatarget+`WHERE d.company_id = $1 ORDER BY d.id`, companyID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: datatargets: %w", err)
	}
	list, err := pgx.CollectRows(rows, scanDatatarget)
	if err != nil {
		return nil, fmt.Errorf("readmodels: datatargets: %w", err)
	}
	outlets, err := q.outlets(ctx, `WHERE o.company_id = $1`, companyID)
	if err != nil {
		return nil, err
	}
	byID := map[string]*datatarget.Datatarget{}
	for i := range list {
		byID[list[i].ID] = &list[i]
	}
	for _, o := range outlets {
		if d := byID[o.DatatargetID]; d != nil {
			d.Outlets = append(d.Outlets, o)
		}
	}
	return list, nil
}

// Datatarget returns one datatarget of the company with its outlets.
func (q *Datatargets) Datatarget(ctx context.Context, companyID, id string) (datatarget.Datatarget, error) {
	rows, err := q.db.Query(ctx, selectDatatarget+`WHERE d.company_id = $1 AND d.id = $2`, companyID, id)
	if err != nil {
		return datatarget.Datatarget{}, fmt.Errorf("readmodels: datatarget: %w", err)
	}
	d, err := pgx.CollectExactlyOneRow(rows, scanDatatarget)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, errNoDatatarget()
	}
	if err != nil {
		return d, fmt.Errorf("readmodels: datatarget: %w", err)
	}
	if d.Outlets, err = q.outlets(ctx, `WHERE o.company_id = $1 AND o.datatarget_id = $2`, companyID, id); err != nil {
		return d, err
	}
	return d, nil
}

func scanDatatarget(row pgx.CollectableRow) (datatarget.Datatarget, error) {
	var d datatarget.Datatarget
	err := row.Scan(&d.CompanyID, &d.ID, &d.Type, &d.Name, &d.Description, &d.Enabled, &d.CreatedBy, &d.CreatedAt, &d.UpdatedAt,
		&d.LastMessageNumber, &d.Settings, &d.MessageRetentionDays)
	d.CreatedAt, d.UpdatedAt = d.CreatedAt.UTC(), d.UpdatedAt.UTC()
	return d, err
}

// Outlet returns one outlet of a datatarget of the company.
func (q *Datatargets) Outlet(ctx context.Context, companyID, datatargetID, id string) (datatarget.Outlet, error) {
	list, err := q.outlets(ctx, `WHERE o.company_id = $1 AND o.datatarget_id = $2 AND o.id = $3`, companyID, datatargetID, id)
	if err != nil {
		return datatarget.Outlet{}, err
	}
	if len(list) == 0 {
		return datatarget.Outlet{}, domain.Errorf(domain.NotFound, "no such outlet")
	}
	return list[0], nil
}

// outlets returns outlets with their delivery progress, oldest first. A
// rewind not applied yet shows as applied: its worker applies it before
// its next request.
func (q *Datatargets) outlets(ctx context.Context, where string, args ...any) ([]datatarget.Outlet, error) {
	rows, err := q.db.Query(ctx, `SELECT o.company_id, o.id, o.datatarget_id, o.outlet_type, o.request, o.is_batched,
		o.max_batch_size, o.min_request_interval_ms, o.secret, o.sealed_credentials IS NOT NULL, o.failure_policy, o.enabled, o.disabled_reason, o.created_by, o.created_at,
		pos.n, coalesce(s.delivered_batch_count, 0),
		(SELECT count(*) FROM outlet_parked p WHERE p.outlet_id = o.id),
		CASE WHEN NOT o.enabled AND o.disabled_reason <> '' THEN 'disabled'
			WHEN NOT o.enabled OR NOT t.enabled THEN 'paused'
			WHEN coalesce(s.failed_attempts, 0) > 0 THEN 'retrying'
			ELSE 'delivering' END,
		(SELECT min(m.posted_at) FROM (
			SELECT posted_at FROM datatarget_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
			UNION ALL SELECT posted_at FROM datasync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
			UNION ALL SELECT posted_at FROM campaign_sync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1
			UNION ALL SELECT posted_at FROM segment_sync_messages WHERE datatarget_id = o.datatarget_id AND number = pos.n + 1) m)
		FROM datatarget_outlets o JOIN datatargets t ON t.company_id = o.company_id AND t.id = o.datatarget_id
		LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id
		CROSS JOIN LATERAL (SELECT CASE WHEN o.rewind_seq > coalesce(s.rewind_applied, 0)
			THEN least(coalesce(s.last_delivered_message_number, 0), o.rewind_after)
			ELSE coalesce(s.last_delivered_message_number, 0) END AS n) pos `+where+` ORDER BY o.id`, args...)
	if err != nil {
		return nil, fmt.Errorf("readmodels: outlets: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (datatarget.Outlet, error) {
		var o datatarget.Outlet
		var stored datatarget.StoredOutlet
		var req []byte
		var interval int64
		var sealed bool
		err := row.Scan(&o.CompanyID, &o.ID, &o.DatatargetID, &o.Type, &req, &o.IsBatched, &o.MaxBatchSize, &interval,
			&stored.Secret, &sealed, &o.FailurePolicy, &o.Enabled, &o.DisabledReason, &o.CreatedBy, &o.CreatedAt, &o.Progress.LastDeliveredMessageNumber, &o.Progress.DeliveredBatchCount,
			&o.Progress.ParkedCount, &o.Progress.State, &o.Progress.OldestUndeliveredAt)
		if err != nil {
			return o, err
		}
		o.CreatedAt = o.CreatedAt.UTC()
		if t := o.Progress.OldestUndeliveredAt; t != nil {
			utc := t.UTC()
			o.Progress.OldestUndeliveredAt = &utc
		}
		o.MinRequestInterval = time.Duration(interval) * time.Millisecond
		if err := json.Unmarshal(req, &stored.Request); err != nil {
			return o, fmt.Errorf("request of outlet %s: %w", o.ID, err)
		}
		if sealed {
			// Only whether they are sealed matters here: what is answered
			// is their hints, never opened.
			stored.Sealed = &datatarget.SealedCredentials{}
		}
		return stored.Outlet(o), nil
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: outlets: %w", err)
	}
	return list, nil
}

// Parked returns an outlet's parked batches, oldest first, or NotFound.
func (q *Datatargets) Parked(ctx context.Context, companyID, datatargetID, outletID string) ([]datatarget.Parked, error) {
	if _, err := q.Outlet(ctx, companyID, datatargetID, outletID); err != nil {
		return nil, err
	}
	rows, err := q.db.Query(ctx, `SELECT id, first_message_number, last_message_number, batch_size, attempts,
		first_failed_at, parked_at, last_http_status, last_fail_reason, redeliver
		FROM outlet_parked WHERE outlet_id = $1 ORDER BY id`, outletID)
	if err != nil {
		return nil, fmt.Errorf("readmodels: parked: %w", err)
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (datatarget.Parked, error) {
		var p datatarget.Parked
		err := row.Scan(&p.ID, &p.FirstMessageNumber, &p.LastMessageNumber, &p.BatchSize, &p.Attempts,
			&p.FirstFailedAt, &p.ParkedAt, &p.LastHTTPStatus, &p.LastFailReason, &p.Redeliver)
		p.FirstFailedAt, p.ParkedAt = p.FirstFailedAt.UTC(), p.ParkedAt.UTC()
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("readmodels: parked: %w", err)
	}
	return list, nil
}
