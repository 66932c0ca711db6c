package projections

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/clientele/clientele/eventstore"
	"github.com/jackc/pgx/v5"
)

// A commit that an async projector cannot apply, for a reason that will
// come back however often it is tried (permanent says which; a panic
// always does), must not stop the projector for every company: one
// customer record holding a value the read model cannot store would keep
// every company's changes, and forgettings, out of retrieval. Every commit
// belongs to one company, and nothing orders one company's read model
// after another's, so after a few attempts (catchup.go) the projector
// parks the commit's company:
//
//   - one transaction, with the checkpoint row locked, writes a row of
//     projection_stalls (the company, the stalled commit, the error) and
//     moves the checkpoint past the commit; every other company goes on;
//   - the company's later commits are held: the checkpoint passes them
//     without applying them (lockCheckpointFor notes the last one in the
//     stall row), and they wait in the log, in order. An outage (a
//     transient error) never parks anything: it stops the projector, which
//     retries, as before; nor does a schema the code does not match
//     (pg.SchemaMismatch: an older binary after a migration), whose every
//     commit fails so until a newer binary takes over;
//   - a held commit that forgets a customer still has its forgetting
//     applied at once, by a projector that holds personal data
//     (Forgetter): forgetting is never stuck behind another commit;
//   - the company is retried, with backoff (as long again as it has been
//     parked, from StallAfter up to StallRetryMax), at once when a process
//     starts (a fix is deployed) and on an operator's command
//     (RetryStall): its stalled commit is read alone (ReadCommit, by its
//     transaction id) and tried, so a retry that fails again walks no
//     log; once it applies, the commits held behind it are read from the
//     log (ReadCompanyLog), and they are applied in order, each in its
//     own transaction that locks the checkpoint row and moves the stall
//     row past it, or deletes it after the last. The live handler
//     takes the same lock, so a commit is held or applied, never both,
//     never neither; once the row is gone the company's next commits are
//     applied as they come.
//
// A rebuild parks too (rebuild.go): it replays the log into fresh tables,
// parks the companies whose commits fail there, and its swap replaces the
// projector's stalls with its own.

// Stall is a company parked for an async projection: its commits from
// Commit up to HeldUntil are not applied yet.
type Stall struct {
	Projection string `json:"projection"`
	CompanyID  string `json:"company_id"`
	// Commit is the position of the first event of the stalled commit,
	// the company's first commit not applied: Commit.TxID names it.
	Commit eventstore.Position `json:"commit"`
	// HeldUntil is the position of the last event of the company's last
	// commit held behind it (the stalled commit's own, when none is).
	HeldUntil eventstore.Position `json:"held_until"`
	// Error is why the stalled commit could not be applied, as its last
	// attempt failed.
	Error string `json:"error"`
	// Since is when the company was parked.
	Since time.Time `json:"since"`
	// Attempts counts the failed attempts since then.
	Attempts int `json:"attempts"`
	// RetryAt is when the company is next retried.
	RetryAt time.Time `json:"retry_at"`
}

// Stalls returns the companies parked for the runtime's async
// projections, by projection and company. A readiness probe or an
// operator looks here: the usual answer is none.
func (r *Runtime) Stalls(ctx context.Context) ([]Stall, error) {
	return listStalls(ctx, r.cfg.Pool, r.asyncNames())
}

// StalledCompanies counts the parked companies by projection (for a
// readiness probe, which must name neither companies nor errors).
// It counts in the database: the stalls' errors (a panic's stack) are
// not read.
func (r *Runtime) StalledCompanies(ctx context.Context) (map[string]int, error) {
	return countStalls(ctx, r.cfg.Pool, r.asyncNames())
}

// RetryStall retries now the company parked for the async projection
// called name: its held commits are applied in log order. It returns the
// number applied, and the error of the commit that still cannot be, which
// the stall then records (it is retried later as before). A company that
// is not parked is no error.
func (r *Runtime) RetryStall(ctx context.Context, name, companyID string) (int, error) {
	p, kind, err := r.projector(name)
	if err != nil {
		return 0, err
	}
	if kind != KindAsync {
		return 0, fmt.Errorf("projections: %s is inline: it parks no company", name)
	}
	n, err := r.resume(ctx, p, companyID)
	r.updateStalled(ctx)
	return n, err
}

// park parks the company of commit, which failed with cause, for p: in
// one transaction, if the checkpoint is still at after (right before the
// commit), it records the stall, applies the commit's forgettings and
// moves the checkpoint past it.
func (r *Runtime) park(ctx context.Context, p Projector, after eventstore.Position, commit []eventstore.RecordedEvent, cause error) (int, error) {
	name := p.Name()
	first, last := commit[0].Position, commit[len(commit)-1].Position
	company := commit[0].Metadata.CompanyID
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: park: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	cp, err := lockCheckpoint(ctx, tx, name)
	if err != nil {
		return 0, err
	}
	if cp.Position != after {
		return 0, nil // moved on meanwhile; the caller reads again
	}
	_, err = tx.Exec(ctx, `INSERT INTO projection_stalls AS s (projector, company_id, transaction_id, global_position,
			held_transaction_id, held_global_position, error, attempts, retry_at)
		VALUES ($1, $2, $3::text::xid8, $4, $5::text::xid8, $6, $7, $8, now() + $9::interval)
		ON CONFLICT (projector, company_id) DO UPDATE
		SET held_transaction_id = EXCLUDED.held_transaction_id, held_global_position = EXCLUDED.held_global_position`,
		name, company, xid(first), first.Global, xid(last), last.Global, cause.Error(), r.cfg.MessageAttempts, r.cfg.StallAfter)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: park company %s: %w", name, company, err)
	}
	if err := r.forgetHeld(ctx, tx, p, forgottenIn(p, commit)); err != nil {
		return 0, err
	}
	if err := advanceCheckpoint(ctx, tx, name, last, len(commit)); err != nil {
		return 0, err
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("projections: %s: park: %w", name, err)
	}
	r.cfg.Logger.Error("projections: a commit cannot be applied: its company is parked for this projector, whose other companies go on; its later commits wait for it, and it is retried",
		"projector", name, "company", company, "commit", first.TxID, "attempts", r.cfg.MessageAttempts, "err", cause)
	r.updateStalled(ctx)
	return len(commit), nil
}

// resume applies to p the commits held for company, in log order, until
// none is held (it returns nil) or one fails (its error, which the stall
// records when it is not transient).
func (r *Runtime) resume(ctx context.Context, p Projector, company string) (int, error) {
	total := 0
	for {
		s, ok, err := readStall(ctx, r.cfg.Pool, p.Name(), company)
		if err != nil || !ok {
			return total, err
		}
		n, err := r.resumeFrom(ctx, p, s)
		total += n
		if err != nil {
			return total, err
		}
	}
}

// resumeFrom applies the commits held by s, from its stalled commit on,
// as far as one page of the log goes, each in its own transaction
// (resumeCommit), and stops early when the stall moved under it (another
// process resumed it, or a rebuild replaced it).
//
// The stalled commit is read alone, by its transaction id (a lookup of
// the log's key), and tried first: a company whose commit still fails is
// retried again and again, and each retry must not walk the log. The
// commits held behind it are read (ReadCompanyLog, a walk of every
// company's events from the stalled commit on) only once it applies:
// that try is rolled back, the page is read outside any lock, and the
// commit is then applied for good with the stall moved to the next held
// commit, in one transaction.
func (r *Runtime) resumeFrom(ctx context.Context, p Projector, s Stall) (int, error) {
	name := p.Name()
	// Read outside any lock: the log does not change, and each of these
	// commits is before the checkpoint, so visible.
	stalled, err := r.cfg.Store.ReadCommit(ctx, s.Commit.TxID)
	if err != nil {
		return 0, fmt.Errorf("projections: %s: resume company %s: %w", name, s.CompanyID, err)
	}
	if len(stalled) == 0 || stalled[0].Position != s.Commit || stalled[0].Metadata.CompanyID != s.CompanyID {
		return 0, fmt.Errorf("projections: %s: resume company %s: its stalled commit %s is not in the log", name, s.CompanyID, s.Commit)
	}
	types := eventTypes(p)
	cs := [][]eventstore.RecordedEvent{stalled}
	var page []eventstore.RecordedEvent
	if end := stalled[len(stalled)-1].Position; end.Less(s.HeldUntil) {
		// Commits are held behind it: the stall moves to the first of
		// them, which only the walk finds.
		done, err := r.resumeCommit(ctx, p, s.CompanyID, stalled, nil, types, true)
		if err != nil {
			if Permanent(err) {
				r.stallFailed(ctx, name, s.CompanyID, s.Commit, err)
			}
			return 0, err
		}
		if !done {
			return 0, nil
		}
		if page, err = r.cfg.Store.ReadCompanyLog(ctx, s.CompanyID, end, s.HeldUntil, catchUpPage); err != nil {
			return 0, fmt.Errorf("projections: %s: resume company %s: %w", name, s.CompanyID, err)
		}
		cs = append(cs, commits(page)...)
	}
	for i, c := range cs {
		var next *eventstore.Position
		if i+1 < len(cs) {
			next = &cs[i+1][0].Position
		} else if len(page) >= catchUpPage {
			// A full page: the next held commit is beyond it.
			if next, err = r.nextHeld(ctx, s.CompanyID, c[len(c)-1].Position, s.HeldUntil); err != nil {
				return i, err
			}
		}
		done, err := r.resumeCommit(ctx, p, s.CompanyID, c, next, types, false)
		if err != nil {
			if Permanent(err) {
				r.stallFailed(ctx, name, s.CompanyID, c[0].Position, err)
			}
			return i, err
		}
		if !done {
			return i, nil
		}
	}
	return len(cs), nil
}

// resumeCommit applies commit, the stalled commit of company, and moves
// the stall to next, the company's next held commit (nil: none as far as
// the caller read), or deletes it when commit was the last held, in one
// transaction with the checkpoint row locked. done is false when the
// stall is not at commit any more. With try, it only tries: it applies
// the commit, and rolls it back.
func (r *Runtime) resumeCommit(ctx context.Context, p Projector, company string, commit []eventstore.RecordedEvent, next *eventstore.Position, types []string, try bool) (done bool, err error) {
	defer recovered(&err)
	name := p.Name()
	tx, err := r.cfg.Pool.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("projections: %s: %w", name, err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck
	// The lock orders this against the live handler, which holds the
	// company's commits while the stall is there and applies them once
	// it is gone.
	if _, err := lockCheckpoint(ctx, tx, name); err != nil {
		return false, err
	}
	s, ok, err := readStall(ctx, tx, name, company)
	if err != nil || !ok || s.Commit != commit[0].Position {
		return false, err
	}
	last := commit[len(commit)-1].Position
	if events := ofTypes(commit, types); len(events) > 0 {
		if err := p.Apply(ctx, tx, events); err != nil {
			return false, fmt.Errorf("projections: %s: apply commit %d: %w", name, last.TxID, err)
		}
	}
	if try {
		return true, nil // rolled back
	}
	switch {
	case !last.Less(s.HeldUntil):
		_, err = tx.Exec(ctx, `DELETE FROM projection_stalls WHERE projector = $1 AND company_id = $2`, name, company)
	default:
		if next == nil {
			// Held since the caller read: the next one is near.
			if next, err = r.nextHeld(ctx, company, last, s.HeldUntil); err != nil {
				return false, err
			}
			if next == nil {
				return false, fmt.Errorf("projections: %s: company %s: no commit held after %s up to %s", name, company, last, s.HeldUntil)
			}
		}
		_, err = tx.Exec(ctx, `UPDATE projection_stalls SET transaction_id = $3::text::xid8, global_position = $4
			WHERE projector = $1 AND company_id = $2`, name, company, xid(*next), next.Global)
	}
	if err != nil {
		return false, fmt.Errorf("projections: %s: company %s: move its stall: %w", name, company, err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("projections: %s: commit: %w", name, err)
	}
	return true, nil
}

// nextHeld returns the position of the first event of company's first
// commit after after, up to upTo; nil when there is none.
func (r *Runtime) nextHeld(ctx context.Context, company string, after, upTo eventstore.Position) (*eventstore.Position, error) {
	events, err := r.cfg.Store.ReadCompanyLog(ctx, company, after, upTo, 1)
	if err != nil || len(events) == 0 {
		return nil, err
	}
	return &events[0].Position, nil
}

// stallFailed records that the stalled commit at failed again with cause,
// and when to retry: after as long again as the company has been parked,
// from StallAfter up to StallRetryMax.
func (r *Runtime) stallFailed(ctx context.Context, name, company string, at eventstore.Position, cause error) {
	_, err := r.cfg.Pool.Exec(ctx, `UPDATE projection_stalls
		SET error = $5, attempts = attempts + 1, retry_at = now() + least(greatest(now() - since, $6::interval), $7::interval)
		WHERE projector = $1 AND company_id = $2 AND transaction_id = $3::text::xid8 AND global_position = $4`,
		name, company, xid(at), at.Global, cause.Error(), r.cfg.StallAfter, r.cfg.StallRetryMax)
	if err != nil && ctx.Err() == nil {
		r.cfg.Logger.Warn("projections: record a failed retry", "projector", name, "company", company, "err", err)
	}
}

// retryDue resumes the companies parked for p whose retry is due.
func (r *Runtime) retryDue(ctx context.Context, p Projector) {
	name := p.Name()
	rows, err := r.cfg.Pool.Query(ctx, `SELECT company_id FROM projection_stalls WHERE projector = $1 AND retry_at <= now() ORDER BY company_id`, name)
	var due []string
	if err == nil {
		due, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("projections: look for parked companies to retry", "projector", name, "err", err)
		}
		return
	}
	for _, company := range due {
		n, err := r.resume(ctx, p, company)
		switch {
		case err == nil:
			r.cfg.Logger.Info("projections: a parked company resumed", "projector", name, "company", company, "commits", n)
		case ctx.Err() == nil:
			r.metrics.errors.WithLabelValues(name).Inc()
			r.cfg.Logger.Error("projections: a parked company is still stalled; it is retried later", "projector", name,
				"company", company, "commits_applied", n, "err", err)
		}
	}
	if len(due) > 0 {
		r.updateStalled(ctx)
	}
}

// wakeParked hands to the catch-up loop every projector with a parked
// company due for a retry; first makes every one due, once per process,
// so that a deployed fix is tried at once.
func (r *Runtime) wakeParked(ctx context.Context, first bool) error {
	names := r.asyncNames()
	if first {
		if _, err := r.cfg.Pool.Exec(ctx, `UPDATE projection_stalls SET retry_at = now() WHERE projector = ANY($1) AND retry_at > now()`, names); err != nil {
			return err
		}
	}
	rows, err := r.cfg.Pool.Query(ctx, `SELECT DISTINCT projector FROM projection_stalls WHERE projector = ANY($1) AND retry_at <= now()`, names)
	if err != nil {
		return err
	}
	due, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	for _, name := range due {
		r.catchUps.Resume(name)
	}
	return nil
}

// updateStalled refreshes the gauge of parked companies.
func (r *Runtime) updateStalled(ctx context.Context) {
	names := r.asyncNames()
	counts, err := countStalls(ctx, r.cfg.Pool, names)
	if err != nil {
		if ctx.Err() == nil {
			r.cfg.Logger.Warn("projections: count parked companies", "err", err)
		}
		return
	}
	for _, name := range names {
		r.metrics.stalled.WithLabelValues(name).Set(float64(counts[name]))
	}
}

func (r *Runtime) asyncNames() []string {
	names := make([]string, len(r.cfg.Async))
	for i, p := range r.cfg.Async {
		names[i] = p.Name()
	}
	return names
}

// eventTypes returns the types p uses, nil for all (TypeFilter).
func eventTypes(p Projector) []string {
	if f, ok := p.(TypeFilter); ok {
		return f.EventTypes()
	}
	return nil
}

// ofTypes returns the events of commit of the types, all when types is
// nil.
func ofTypes(commit []eventstore.RecordedEvent, types []string) []eventstore.RecordedEvent {
	if types == nil {
		return commit
	}
	return slices.DeleteFunc(slices.Clone(commit), func(e eventstore.RecordedEvent) bool { return !slices.Contains(types, e.Type) })
}
