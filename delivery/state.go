package delivery

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/internal/crypto"
)

// outletRef names an outlet.
type outletRef struct {
	companyID, datatargetID, outletID string
	// datasync is true for an outlet of a datasync datatarget, whose
	// messages are in datasync_messages and carry update ids.
	datasync bool
}

// state is an outlet's delivery state (its outlet_deliveries row).
type state struct {
	lastDelivered, batchCount, entryCount int64
	pendingSize, failedAttempts           int
	nextAttemptAt, lastAttemptAt          time.Time
	// firstFailedAt is when the batch being retried first failed.
	firstFailedAt time.Time
	// rewindApplied is the version of the last rewind applied.
	rewindApplied int64
}

// loadOutlet reads the outlet's configuration, its credentials opened
// (the only place that opens them for a request: its secret signs it and
// its headers are sent); enabled is false when the outlet or its
// datatarget is disabled.
func (d *Deliverer) loadOutlet(ctx context.Context, o outletRef) (datatarget.Outlet, rewind, error) {
	var out datatarget.Outlet
	var stored datatarget.StoredOutlet
	var rw rewind
	var req, key, sealed []byte
	var interval int64
	err := d.cfg.Pool.QueryRow(ctx, `SELECT o.request, o.is_batched, o.max_batch_size, o.min_request_interval_ms,
			o.secret, o.credentials_key, o.sealed_credentials, o.failure_policy, o.enabled AND t.enabled, o.rewind_seq, o.rewind_after
		FROM datatarget_outlets o JOIN datatargets t ON t.company_id = o.company_id AND t.id = o.datatarget_id
		WHERE o.company_id = $1 AND o.id = $2`, o.companyID, o.outletID).Scan(
		&req, &out.IsBatched, &out.MaxBatchSize, &interval, &stored.Secret, &key, &sealed, &out.FailurePolicy, &out.Enabled, &rw.seq, &rw.after)
	if err != nil {
		return out, rw, fmt.Errorf("delivery: outlet %s: %w", o.outletID, err)
	}
	out.ID, out.CompanyID, out.DatatargetID = o.outletID, o.companyID, o.datatargetID
	out.MinRequestInterval = time.Duration(interval) * time.Millisecond
	if err := json.Unmarshal(req, &stored.Request); err != nil {
		return out, rw, fmt.Errorf("delivery: outlet %s: request: %w", o.outletID, err)
	}
	if sealed != nil {
		stored.Sealed = &datatarget.SealedCredentials{Key: key, Sealed: sealed}
	}
	if out, err = stored.Open(out, d.cfg.Keys.Keyring); err != nil {
		return out, rw, fmt.Errorf("delivery: outlet %s: %w", o.outletID, err)
	}
	return out, rw, nil
}

// rewind is the last rewind asked of an outlet: the version of its event
// (0: none) and the number to send again after.
type rewind struct {
	seq, after int64
}

// message is a queued message.
type message struct {
	number int64
	body   json.RawMessage
	// afterUpdate is, in a datasync queue, the update_id of the message
	// before this one ("" for the first).
	afterUpdate string
}

// fetch reads up to limit messages numbered above after, in order.
func (d *Deliverer) fetch(ctx context.Context, o outletRef, after int64, limit int) ([]message, error) {
	if o.datasync {
		return d.fetchDatasync(ctx, o.datatargetID, after, limit)
	}
	rows, err := d.cfg.Pool.Query(ctx, `SELECT number, body FROM datatarget_messages
		WHERE datatarget_id = $1 AND number > $2 ORDER BY number LIMIT $3`, o.datatargetID, after, limit)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (message, error) {
		var m message
		err := row.Scan(&m.number, &m.body)
		return m, err
	})
}

// record writes an attempt: its log entry and the outlet's new state, in
// one statement, only while this worker holds the lease and the outlet's
// progress is where the attempt started from. ok advances the progress
// past the batch; a failure keeps the batch pending until retry. A datasync
// outlet's entry has an after_update ("" before the first update), which
// readers take as the sign to show it instead of first_message_number, as
// the interface has it; the number is kept for the fence and for
// forgetting (projections.anonymiseStored erases the attempts by it).
//
// A datasync outlet's attempt is written in the transaction that compares
// its batch with the queue (batchForgotten), so no crash can leave a raw
// text that a forgetting should have erased.
func (d *Deliverer) record(ctx context.Context, o outletRef, e datatarget.LogEntry, retryIn time.Duration, batch []message) error {
	return d.recordAttempt(ctx, o, e, retryIn, batch, 0)
}

// recordAttempt is record, of a parked batch's redelivery when parkedID
// is not 0 (insertRedelivery).
func (d *Deliverer) recordAttempt(ctx context.Context, o outletRef, e datatarget.LogEntry, retryIn time.Duration, batch []message, parkedID int64) error {
	err := d.writeAttempt(ctx, o, e, retryIn, batch, parkedID)
	if err == nil && e.Status != datatarget.StatusOK {
		d.failures.note(o, e)
	}
	return err
}

// writeAttempt writes the attempt for recordAttempt.
func (d *Deliverer) writeAttempt(ctx context.Context, o outletRef, e datatarget.LogEntry, retryIn time.Duration, batch []message, parkedID int64) error {
	insert := func(q querier) error {
		if parkedID != 0 {
			return d.insertRedelivery(ctx, q, o, e, parkedID)
		}
		return d.insertEntry(ctx, q, o, e, retryIn)
	}
	if !o.datasync {
		return insert(d.cfg.Pool)
	}
	return pgx.BeginFunc(ctx, d.cfg.Pool, func(tx pgx.Tx) error {
		changed, err := batchForgotten(ctx, tx, o, batch)
		if err != nil {
			return err
		}
		if changed {
			e.HTTPRequest, e.HTTPReply, e.HTTPRequestAvailable = "", "", false
		}
		return insert(tx)
	})
}

// querier is a pool or a transaction.
type querier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// insertEntry writes the entry and the outlet's new state in one
// statement (see record).
func (d *Deliverer) insertEntry(ctx context.Context, q querier, o outletRef, e datatarget.LogEntry, retryIn time.Duration) error {
	ok := e.Status == datatarget.StatusOK
	raw, err := d.sealRawTexts(o.outletID, e)
	if err != nil {
		return err
	}
	var n int64
	err = q.QueryRow(ctx, `WITH s AS (
			UPDATE outlet_deliveries SET
				entry_count = entry_count + 1,
				last_delivered_message_number = CASE WHEN $3 THEN $4 + $5 - 1 ELSE last_delivered_message_number END,
				delivered_batch_count = delivered_batch_count + CASE WHEN $3 THEN 1 ELSE 0 END,
				pending_size = CASE WHEN $3 THEN 0 ELSE $5 END,
				failed_attempts = CASE WHEN $3 THEN 0 ELSE failed_attempts + 1 END,
				first_failed_at = CASE WHEN $3 THEN '-infinity' WHEN failed_attempts = 0 THEN $7 ELSE first_failed_at END,
				next_attempt_at = CASE WHEN $3 THEN '-infinity' ELSE now() + $6::interval END,
				last_attempt_at = $7,
				lease_expires_at = greatest(lease_expires_at, now() + $8::interval)
			WHERE outlet_id = $1 AND lease_holder = $2 AND last_delivered_message_number = $4 - 1
			RETURNING entry_count, company_id)
		`+insertLogEntry,
		o.outletID, d.cfg.Holder, ok, e.FirstMessageNumber, e.BatchSize, retryIn, e.Date, d.cfg.LeaseTTL,
		e.BatchNumber, e.Status, e.HTTPStatus, e.RequestTimeMS, e.FailReason, e.HTTPRequestAvailable,
		o.datasync, e.AfterUpdate, raw.key, raw.request, raw.reply).Scan(&n)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLeaseLost
	}
	return err
}

// insertLogEntry ends the statements that record an attempt (insertEntry,
// and the redelivery of a parked batch): the entry, numbered by the
// outlet's state row that the statement's CTE s updated and returned. Its
// parameters: $1 the outlet, $4 the first message, $5 the batch size, $7
// the date, $9 the batch number, $10-$14 the status, HTTP status, time,
// reason and whether the request was kept, $15 datasync, $16 its
// after_update, $17-$19 the sealed texts (sealRawTexts).
const insertLogEntry = `INSERT INTO outlet_log (outlet_id, entry_number, company_id, date, batch_number, batch_size, first_message_number,
		after_update, status, http_status, request_time_ms, fail_reason, http_request_available, http_request, http_reply,
		raw_key, sealed_request, sealed_reply)
	SELECT $1, s.entry_count, s.company_id, $7, $9, $5, $4,
		CASE WHEN $15 THEN $16::text END, $10, $11, $12, $13, $14, '', '', $17, $18, $19 FROM s
	RETURNING entry_number`

// sealedTexts are an attempt's raw texts as stored: sealed with a key of
// the attempt, wrapped by the master key; all nil when there are none.
type sealedTexts struct {
	key, request, reply []byte
}

// sealRawTexts seals the attempt's raw request and reply, so that the
// outlet log's files (and the WAL) never hold a person's data in clear:
// a forgetting erases the key with the texts (datasync's
// anonymiseStored), and what a dead row version keeps opens no more.
func (d *Deliverer) sealRawTexts(outletID string, e datatarget.LogEntry) (sealedTexts, error) {
	if e.HTTPRequest == "" && e.HTTPReply == "" {
		return sealedTexts{}, nil
	}
	plain, wrapped, err := d.cfg.Keys.Keyring.NewDataKey()
	if err != nil {
		return sealedTexts{}, fmt.Errorf("delivery: seal the attempt's texts: %w", err)
	}
	out := sealedTexts{key: wrapped}
	if out.request, err = crypto.SealCompressed(plain, []byte(e.HTTPRequest), datatarget.RawTextAAD(outletID, "request")); err == nil {
		out.reply, err = crypto.SealCompressed(plain, []byte(e.HTTPReply), datatarget.RawTextAAD(outletID, "reply"))
	}
	if err != nil {
		return sealedTexts{}, fmt.Errorf("delivery: seal the attempt's texts: %w", err)
	}
	return out, nil
}
