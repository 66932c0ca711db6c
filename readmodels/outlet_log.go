package readmodels

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/crypto"
)

// Outlet log page sizes.
const (
	DefaultLogLimit = 100
	MaxLogLimit     = 1000
)

// LogQuery selects a page of an outlet's attempt log.
type LogQuery struct {
	CompanyID, DatatargetID, OutletID string
	// From is the entry number the page starts at (inclusive); 0 means
	// the newest entry when Descending, the first one otherwise.
	From       int64
	Limit      int
	Descending bool
}

// LogPage is a page of an outlet's attempt log, without the raw texts.
type LogPage struct {
	Entries []datatarget.LogEntry
	// TotalCount is the number of all entries of the outlet.
	TotalCount int64
	// Next is the From of the next page, 0 when this is the last.
	Next int64
}

// selectEntry reads an attempt. An entry with an after_update is a
// datasync outlet's, which the interface shows without its
// first_message_number.
const selectEntry = `SELECT entry_number, date, batch_number, batch_size,
	CASE WHEN after_update IS NULL THEN coalesce(first_message_number, 0) ELSE 0 END,
	coalesce(after_update, ''), status, http_status, request_time_ms, fail_reason, http_request_available `

// Log returns a page of an outlet's attempts. An unknown outlet is
// NotFound.
func (q *Datatargets) Log(ctx context.Context, lq LogQuery) (LogPage, error) {
	var page LogPage
	err := q.db.QueryRow(ctx, `SELECT coalesce(s.entry_count, 0) FROM datatarget_outlets o
		LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id
		WHERE o.company_id = $1 AND o.datatarget_id = $2 AND o.id = $3`,
		lq.CompanyID, lq.DatatargetID, lq.OutletID).Scan(&page.TotalCount)
	if err != nil {
		return page, notFoundOr(err, domain.Errorf(domain.NotFound, "no such outlet"), "outlet log")
	}
	limit := max(1, min(lq.Limit, MaxLogLimit))
	sql := selectEntry + `FROM outlet_log WHERE outlet_id = $1 AND entry_number >= $2 ORDER BY entry_number LIMIT $3`
	from := max(lq.From, 1)
	if lq.Descending {
		sql = selectEntry + `FROM outlet_log WHERE outlet_id = $1 AND entry_number <= $2 ORDER BY entry_number DESC LIMIT $3`
		from = lq.From
		if from <= 0 {
			from = page.TotalCount
		}
	}
	rows, err := q.db.Query(ctx, sql, lq.OutletID, from, limit+1)
	if err != nil {
		return page, fmt.Errorf("readmodels: outlet log: %w", err)
	}
	entries, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (datatarget.LogEntry, error) {
		var e datatarget.LogEntry
		err := row.Scan(&e.EntryNumber, &e.Date, &e.BatchNumber, &e.BatchSize, &e.FirstMessageNumber, &e.AfterUpdate,
			&e.Status, &e.HTTPStatus, &e.RequestTimeMS, &e.FailReason, &e.HTTPRequestAvailable)
		e.Date = e.Date.UTC()
		return e, err
	})
	if err != nil {
		return page, fmt.Errorf("readmodels: outlet log: %w", err)
	}
	if len(entries) > limit {
		page.Next = entries[limit].EntryNumber
		entries = entries[:limit]
	}
	page.Entries = entries
	return page, nil
}

// LogEntry returns one attempt of an outlet with its raw request and
// reply.
func (q *Datatargets) LogEntry(ctx context.Context, companyID, datatargetID, outletID string, number int64) (datatarget.LogEntry, error) {
	var e datatarget.LogEntry
	var key, request, reply []byte
	err := q.db.QueryRow(ctx, selectEntry+`, l.http_request, l.http_reply, l.raw_key, l.sealed_request, l.sealed_reply
		FROM outlet_log l
		JOIN datatarget_outlets o ON o.id = l.outlet_id AND o.company_id = $1 AND o.datatarget_id = $2
		WHERE l.outlet_id = $3 AND l.entry_number = $4`, companyID, datatargetID, outletID, number).Scan(
		&e.EntryNumber, &e.Date, &e.BatchNumber, &e.BatchSize, &e.FirstMessageNumber, &e.AfterUpdate,
		&e.Status, &e.HTTPStatus, &e.RequestTimeMS, &e.FailReason, &e.HTTPRequestAvailable, &e.HTTPRequest, &e.HTTPReply,
		&key, &request, &reply)
	if err != nil {
		return e, notFoundOr(err, domain.Errorf(domain.NotFound, "no such log entry"), "outlet log entry")
	}
	if key != nil {
		// Sealed (migration 00032; delivery.sealRawTexts); attempts
		// logged before keep their texts in clear.
		if e.HTTPRequest, e.HTTPReply, err = q.openRawTexts(outletID, key, request, reply); err != nil {
			return e, err
		}
	}
	e.Date = e.Date.UTC()
	return e, nil
}

// openRawTexts opens an attempt's sealed raw request and reply.
func (q *Datatargets) openRawTexts(outletID string, wrapped, request, reply []byte) (string, string, error) {
	key, err := q.keys.Keyring.Unwrap(wrapped)
	if err == nil {
		request, err = crypto.OpenCompressed(key, request, datatarget.RawTextAAD(outletID, "request"))
	}
	if err == nil {
		reply, err = crypto.OpenCompressed(key, reply, datatarget.RawTextAAD(outletID, "reply"))
	}
	if err != nil {
		return "", "", fmt.Errorf("readmodels: outlet log entry of %s: open its texts: %w", outletID, err)
	}
	return string(request), string(reply), nil
}

// notFoundOr turns pgx.ErrNoRows into notFound and wraps any other error.
func notFoundOr(err, notFound error, what string) error {
	if errors.Is(err, pgx.ErrNoRows) {
		return notFound
	}
	return fmt.Errorf("readmodels: %s: %w", what, err)
}
