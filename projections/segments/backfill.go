package segments

import (
	"context"
	"encoding/binary"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/readmodels"
)

// backfillRange is how many customers a backfill reads and decides at a
// time: memory stays bounded by a range (a variable for the tests, which
// cross ranges with fewer customers).
var backfillRange = 10_000

// backfillPlan is what a backfill of some changed segments decides and
// reads.
type backfillPlan struct {
	// rules are the affected active segments, in dependency order: the
	// changed ones and those that name one of them, transitively.
	rules []compiled
	// keys are the affected segments, sorted: those rules, and the
	// changed segments that are not active (archived, or left out on a
	// cycle), which hold for no one.
	keys     []string
	affected map[string]bool
	// unaffected are the active segments the rules name but that are
	// not affected: their members now are read, not decided.
	unaffected map[string]bool
	reads      segment.Reads
}

// planBackfill returns the backfill of the changed segments among the
// company's active rules (activeRules, in dependency order).
func planBackfill(rules []compiled, changed []string) backfillPlan {
	p := backfillPlan{affected: map[string]bool{}, unaffected: map[string]bool{}}
	active := map[string]bool{}
	for _, c := range rules {
		active[c.key] = true
	}
	for _, k := range changed {
		p.affected[k] = true
	}
	for _, c := range rules {
		// Dependency order: a segment's named segments come first, so
		// whether they are affected is known.
		if !p.affected[c.key] && !slices.ContainsFunc(c.rule.Segments(), func(k string) bool { return p.affected[k] }) {
			continue
		}
		p.affected[c.key] = true
		p.rules = append(p.rules, c)
		p.reads.Union(c.rule.Reads())
	}
	p.keys = sortedKeys(p.affected)
	for _, k := range p.reads.Segments {
		if !p.affected[k] && active[k] {
			p.unaffected[k] = true
		}
	}
	return p
}

// backfill decides the changed segments (created, changed, archived or
// made active by the commit at pos) again for every customer of the
// company at the instant at, with the active segments that name them,
// transitively, in dependency order; a segment leaf naming a segment
// that is not affected reads its members now. Only the affected
// segments' entries and exits are recorded: the others' answers do not
// change (every timer due by at has fired, and the customers whose
// facts the commit changed, skip, are decided on every segment by the
// caller). The cause is CauseRule.
//
// It reads the company in one ordered pass, a range of customers at a
// time, and only the facts the affected rules read
// (readmodels.SegmentFacts.Range); the whole documents only when an
// affected segment has a datatarget (the feed's entries carry them).
func backfill(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, at time.Time, changed []string, skip map[string]string) error {
	rules, err := activeRules(ctx, tx, company)
	if err != nil {
		return err
	}
	p := planBackfill(rules, changed)
	var fed bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM segment_sync_targets
		WHERE company_id = $1 AND segment_key = ANY($2) AND NOT deleted)`, company, p.keys).Scan(&fed); err != nil {
		return err
	}
	q := readmodels.FactQuery{Company: company, Limit: backfillRange, Reads: p.reads, Docs: fed,
		Members: append(slices.Clone(p.keys), sortedKeys(p.unaffected)...)}
	facts := readmodels.SegmentFactsIn(tx)
	for {
		r, err := facts.Range(ctx, q)
		if err != nil {
			return err
		}
		if len(r.IDs) == 0 {
			return nil
		}
		last := r.IDs[len(r.IDs)-1]
		timers, err := timersIn(ctx, tx, company, q.After, last)
		if err != nil {
			return err
		}
		w := p.decide(company, at, r, timers, skip)
		if err := w.write(ctx, tx); err != nil {
			return err
		}
		if err := feed(ctx, tx, company, pos, w.changes, r.Docs); err != nil {
			return err
		}
		q.After = last
	}
}

// timersIn returns the timers of the company's customers in the range
// (after, last], by customer id.
func timersIn(ctx context.Context, tx pgx.Tx, company, after, last string) (map[string]time.Time, error) {
	rows, err := tx.Query(ctx, `SELECT customer_id, due_at FROM segment_timers
		WHERE company_id = $1 AND customer_id > $2 AND customer_id <= $3`, company, after, last)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]time.Time{}
	binaryDue := rows.FieldDescriptions()[1].Format == pgx.BinaryFormatCode
	var due time.Time
	for rows.Next() {
		raw := rows.RawValues()
		if binaryDue && len(raw[1]) == 8 {
			// timestamptz, binary: microseconds since 2000-01-01 UTC.
			due = time.UnixMicro(int64(binary.BigEndian.Uint64(raw[1])) + y2kMicros)
		} else if err := rows.Scan(nil, &due); err != nil {
			return nil, err
		}
		out[string(raw[0])] = due
	}
	return out, rows.Err()
}

// y2kMicros is the epoch of PostgreSQL's binary timestamps
// (2000-01-01 UTC), in microseconds since the Unix epoch.
const y2kMicros = 946_684_800_000_000

// decide decides the plan's rules for the customers of r at the instant
// at, the customers of skip aside: the entries and exits of the affected
// segments, and the timers that move.
func (p backfillPlan) decide(company string, at time.Time, r readmodels.FactRange, timers map[string]time.Time, skip map[string]string) *rowWriter {
	w := &rowWriter{company: company, changes: make([]change, 0, len(r.IDs)),
		timerIDs: make([]string, 0, len(r.IDs)), timerDue: make([]time.Time, 0, len(r.IDs))}
	decided := make(map[string]bool, len(p.rules))
	nexts := make(map[string]time.Time, len(p.rules))
	var current map[string]bool
	member := func(k string) (bool, time.Time) {
		if p.affected[k] {
			return decided[k], nexts[k]
		}
		// Not affected: its members now. Its next instant is left out:
		// the customer's timer is never later than it (below).
		return p.unaffected[k] && current[k], time.Time{}
	}
	for i, id := range r.IDs {
		if _, ok := skip[id]; ok {
			continue
		}
		f := r.Facts[i]
		f.Member = member
		current = r.Members[id]
		clear(decided)
		clear(nexts)
		var next time.Time
		for _, c := range p.rules {
			in, n := segment.Decide(c.rule, f, at)
			decided[c.key], nexts[c.key] = in, n
			if !n.IsZero() && (next.IsZero() || n.Before(next)) {
				next = n
			}
		}
		for _, k := range p.keys {
			if decided[k] && !current[k] {
				w.changes = append(w.changes, change{company, k, id, true, at, CauseRule})
			}
		}
		for _, k := range p.keys {
			if current[k] && !decided[k] {
				w.changes = append(w.changes, change{company, k, id, false, at, CauseRule})
			}
		}
		// The customer's timer becomes the earlier of the one it has and
		// the affected segments' next instant. The one it has is the
		// earliest next instant of every segment as last decided (none
		// of them due: they fired before the backfill), so it is never
		// later than an unaffected segment's, which is why member leaves
		// those out. It may be earlier than needed (the next instant of a
		// segment's rule before the change, say): a timer that fires
		// early decides every segment again and changes nothing, so
		// keeping it is safe, and saves writing the timers that do not
		// move.
		if has, ok := timers[id]; !next.IsZero() && (!ok || next.Before(has)) {
			w.timerIDs, w.timerDue = append(w.timerIDs, id), append(w.timerDue, next)
		}
	}
	return w
}
