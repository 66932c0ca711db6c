package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Retention. The pruner keeps the outlet log and the queues from growing
// for ever, in bounded statements (Retention.Batch rows each), never one
// large DELETE that would hold locks and bloat the WAL at once:
//
//   - the raw request and reply of an attempt are erased (with their key)
//     once the attempt is older than Retention.OKTexts (successes) or
//     Retention.FailedTexts (failures); the entry itself stays, with
//     http_request_available false;
//   - a datatarget's messages that every outlet has delivered (none
//     parked, none waiting for a rewind to apply) and that are older than
//     its retention (message_retention_days, else Retention.Messages) are
//     deleted, oldest first and only as a prefix of the queue, so what is
//     kept is always a range of consecutive numbers; with them go the log
//     entries of the attempts that carried only pruned messages and are
//     older than that retention too.
//
// The last message every outlet has delivered is kept (it is below no
// outlet's position): a datasync outlet's next entry names its update_id
// as after_update. Numbers never change: retrieval answers a number below
// the kept range with Gone (readmodels.Datatargets.Messages), and an
// outlet that starts below it (a new outlet, a rewind further back)
// starts at the first message kept (skipPruned).
//
// Every serve process prunes; the statements are idempotent and skip
// rows another one has locked, so two pruners only share the work.

// Retention configures the pruner (Config.Retention). Zero fields take
// their defaults.
type Retention struct {
	// OKTexts is how long the raw texts of a successful attempt are kept.
	// Default 30 days.
	OKTexts time.Duration
	// FailedTexts is how long the raw texts of a failed attempt are kept.
	// Default 90 days.
	FailedTexts time.Duration
	// Messages is how long a datatarget that sets no retention of its own
	// keeps its delivered messages. Default 0: for ever.
	Messages time.Duration
	// Interval is how often the pruner runs. Default 10 minutes.
	Interval time.Duration
	// Batch is how many rows one statement prunes at most. Default 1,000.
	Batch int
}

// Default values of Retention.
const (
	DefaultOKTextRetention     = 30 * 24 * time.Hour
	DefaultFailedTextRetention = 90 * 24 * time.Hour
	DefaultPruneInterval       = 10 * time.Minute
	DefaultPruneBatch          = 1000
)

func (r *Retention) setDefaults() {
	if r.OKTexts == 0 {
		r.OKTexts = DefaultOKTextRetention
	}
	if r.FailedTexts == 0 {
		r.FailedTexts = DefaultFailedTextRetention
	}
	if r.Interval == 0 {
		r.Interval = DefaultPruneInterval
	}
	if r.Batch == 0 {
		r.Batch = DefaultPruneBatch
	}
}

func (r Retention) validate() []error {
	var errs []error
	for name, d := range map[string]time.Duration{"Retention.OKTexts": r.OKTexts, "Retention.FailedTexts": r.FailedTexts,
		"Retention.Messages": r.Messages, "Retention.Interval": r.Interval} {
		if d < 0 {
			errs = append(errs, fmt.Errorf("delivery: %s must be positive, got %v", name, d))
		}
	}
	if r.Batch < 0 {
		errs = append(errs, fmt.Errorf("delivery: Retention.Batch must be positive, got %d", r.Batch))
	}
	return errs
}

// Pruned counts what a pass of the pruner removed.
type Pruned struct {
	// Texts counts the attempts whose raw texts were erased.
	Texts int64
	// Messages counts the messages deleted from the queues.
	Messages int64
	// Entries counts the log entries deleted with them.
	Entries int64
}

// Prune runs one pass of the pruner (see Retention), with the clock of
// Config.Now, until nothing more is due.
func (d *Deliverer) Prune(ctx context.Context) (Pruned, error) {
	var out Pruned
	now := d.cfg.Now()
	r := d.cfg.Retention
	for status, age := range map[string]time.Duration{"OK": r.OKTexts, "FAIL": r.FailedTexts} {
		n, err := d.pruneTexts(ctx, status, now.Add(-age))
		out.Texts += n
		if err != nil {
			return out, err
		}
	}
	rows, err := d.cfg.Pool.Query(ctx, `SELECT t.company_id, t.id, coalesce(make_interval(days => t.message_retention_days), $1::interval),
			least((SELECT min(CASE WHEN o.rewind_seq > coalesce(s.rewind_applied, 0)
						THEN least(coalesce(s.last_delivered_message_number, 0), o.rewind_after)
						ELSE coalesce(s.last_delivered_message_number, 0) END)
					FROM datatarget_outlets o LEFT JOIN outlet_deliveries s ON s.outlet_id = o.id
					WHERE o.company_id = t.company_id AND o.datatarget_id = t.id),
				(SELECT min(p.first_message_number) - 1
					FROM outlet_parked p JOIN datatarget_outlets o ON o.id = p.outlet_id
					WHERE o.company_id = t.company_id AND o.datatarget_id = t.id),
				greatest(t.last_message_number, f.last_message_number, g.last_message_number, e.last_message_number))
		FROM datatargets t
		LEFT JOIN datasync_targets f ON f.datatarget_id = t.id
		LEFT JOIN campaign_sync_targets g ON g.datatarget_id = t.id
		LEFT JOIN segment_sync_targets e ON e.datatarget_id = t.id
		WHERE coalesce(make_interval(days => t.message_retention_days), $1::interval) > interval '0'`, r.Messages)
	if err != nil {
		return out, fmt.Errorf("delivery: prune: %w", err)
	}
	type due struct {
		companyID string
		id        string
		retention time.Duration
		floor     int64
	}
	list, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (due, error) {
		var x due
		err := row.Scan(&x.companyID, &x.id, &x.retention, &x.floor)
		return x, err
	})
	if err != nil {
		return out, fmt.Errorf("delivery: prune: %w", err)
	}
	for _, x := range list {
		cutoff := now.Add(-x.retention)
		n, err := d.pruneMessages(ctx, x.id, x.floor, cutoff)
		out.Messages += n
		if err != nil {
			return out, err
		}
		n, err = d.pruneEntries(ctx, x.companyID, x.id, cutoff)
		out.Entries += n
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// pruneTexts erases the raw texts of the attempts of status dated before
// cutoff, a batch at a time.
func (d *Deliverer) pruneTexts(ctx context.Context, status string, cutoff time.Time) (int64, error) {
	return d.inBatches(ctx, `WITH b AS (
			SELECT outlet_id, entry_number FROM outlet_log
			WHERE (raw_key IS NOT NULL OR http_request <> '' OR http_reply <> '') AND status = $1 AND date < $2
			ORDER BY status, date LIMIT $3 FOR UPDATE SKIP LOCKED)
		UPDATE outlet_log l SET raw_key = NULL, sealed_request = NULL, sealed_reply = NULL,
			http_request = '', http_reply = '', http_request_available = false
		FROM b WHERE l.outlet_id = b.outlet_id AND l.entry_number = b.entry_number`, status, cutoff)
}

// queues are the tables that hold messages: a datatarget's are in one.
var queues = []string{"datatarget_messages", "datasync_messages", "campaign_sync_messages", "segment_sync_messages"}

// pruneMessages deletes the datatarget's messages numbered below floor
// and posted before cutoff, as a prefix of its queue: a message is
// deleted only if every message before it is too, so what stays is a
// consecutive range (a clock that moved back never leaves a hole).
func (d *Deliverer) pruneMessages(ctx context.Context, datatargetID string, floor int64, cutoff time.Time) (int64, error) {
	var total int64
	for _, table := range queues {
		n, err := d.inBatches(ctx, `DELETE FROM `+table+` m WHERE m.datatarget_id = $1 AND m.number IN (
				SELECT number FROM (
					SELECT number, bool_and(posted_at < $3) OVER (ORDER BY number) AS old
					FROM `+table+` WHERE datatarget_id = $1 AND number < $2 ORDER BY number LIMIT $4) b
				WHERE old)`, datatargetID, floor, cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// pruneEntries deletes the log entries of the datatarget's outlets whose
// batch is below the first message the queue keeps and that are dated
// before cutoff, as a prefix of each outlet's log (entry numbers stay; the
// outlet's entry count still counts them). Each statement reads at most a
// batch of an outlet's oldest entries, as pruneMessages does.
func (d *Deliverer) pruneEntries(ctx context.Context, companyID, datatargetID string, cutoff time.Time) (int64, error) {
	var first int64
	err := d.cfg.Pool.QueryRow(ctx, `SELECT coalesce(least(
			(SELECT min(number) FROM datatarget_messages WHERE datatarget_id = $1),
			(SELECT min(number) FROM datasync_messages WHERE datatarget_id = $1),
			(SELECT min(number) FROM campaign_sync_messages WHERE datatarget_id = $1),
			(SELECT min(number) FROM segment_sync_messages WHERE datatarget_id = $1)), 0)`, datatargetID).Scan(&first)
	if err != nil || first <= 1 {
		return 0, err
	}
	rows, err := d.cfg.Pool.Query(ctx, `SELECT id FROM datatarget_outlets WHERE company_id = $1 AND datatarget_id = $2`, companyID, datatargetID)
	if err != nil {
		return 0, fmt.Errorf("delivery: prune: %w", err)
	}
	outlets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return 0, fmt.Errorf("delivery: prune: %w", err)
	}
	var total int64
	for _, id := range outlets {
		n, err := d.inBatches(ctx, `DELETE FROM outlet_log l WHERE l.outlet_id = $1 AND l.entry_number IN (
				SELECT entry_number FROM (
					SELECT entry_number, bool_and(coalesce(date < $3 AND first_message_number + batch_size <= $2, false))
						OVER (ORDER BY entry_number) AS old
					FROM outlet_log WHERE outlet_id = $1 ORDER BY entry_number LIMIT $4) e
				WHERE old)`, id, first, cutoff)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// inBatches runs a statement that prunes at most $N rows (its last
// parameter, the batch size, is added) until it prunes fewer.
func (d *Deliverer) inBatches(ctx context.Context, sql string, args ...any) (int64, error) {
	var total int64
	args = append(args, d.cfg.Retention.Batch)
	for {
		tag, err := d.cfg.Pool.Exec(ctx, sql, args...)
		if err != nil {
			return total, fmt.Errorf("delivery: prune: %w", err)
		}
		total += tag.RowsAffected()
		if tag.RowsAffected() < int64(d.cfg.Retention.Batch) || ctx.Err() != nil {
			return total, ctx.Err()
		}
	}
}

// prune runs the pruner every Retention.Interval until ctx ends; a pass
// that fails is logged and tried again at the next.
func (d *Deliverer) prune(ctx context.Context) {
	t := time.NewTicker(d.cfg.Retention.Interval)
	defer t.Stop()
	for {
		p, err := d.Prune(ctx)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			d.cfg.Logger.Warn("delivery: pruning the outlet log and the queues", "err", err)
		case p != Pruned{}:
			d.cfg.Logger.Info("delivery: pruned", "raw_texts", p.Texts, "messages", p.Messages, "log_entries", p.Entries)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// skipPruned moves a new outlet's progress (or a rewound one's) up to
// just before the first message its queue keeps, first: the messages
// before were pruned (see Retention). Only an outlet with no batch being
// retried moves, fenced by the lease and the progress.
func (d *Deliverer) skipPruned(ctx context.Context, o outletRef, st *state, first int64) error {
	err := d.cfg.Pool.QueryRow(ctx, `UPDATE outlet_deliveries SET last_delivered_message_number = $4
		WHERE outlet_id = $1 AND lease_holder = $2 AND last_delivered_message_number = $3 AND pending_size = 0
		RETURNING last_delivered_message_number`, o.outletID, d.cfg.Holder, st.lastDelivered, first-1).Scan(&st.lastDelivered)
	if errors.Is(err, pgx.ErrNoRows) {
		return errLeaseLost
	}
	if err != nil {
		return err
	}
	d.cfg.Logger.Info("delivery: the outlet starts at the first message kept; the ones before were pruned",
		"outlet", o.outletID, "first_message_number", first)
	return nil
}
