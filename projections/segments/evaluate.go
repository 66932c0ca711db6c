package segments

import (
	"cmp"
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/readmodels"
)

// compiled is an active segment's rule, read.
type compiled struct {
	key  string
	rule segment.Rule
}

// activeRules returns the company's active segments in dependency order:
// a segment after every segment its rule names. A rule that does not read
// (none should) or that sits on a cycle (the commands refuse them) is
// left out: it has no members.
func activeRules(ctx context.Context, tx pgx.Tx, company string) ([]compiled, error) {
	rows, err := tx.Query(ctx, activeRulesSQL, company)
	if err != nil {
		return nil, err
	}
	return collectRules(rows)
}

// activeRulesSQL reads the company's ($1) active rules, as collectRules
// takes them.
const activeRulesSQL = `SELECT segment_key, rule FROM segment_rules WHERE company_id = $1 AND state = 'active'
	ORDER BY segment_key`

// collectRules reads the rows of activeRulesSQL and orders the rules.
func collectRules(rows pgx.Rows) ([]compiled, error) {
	byKey := map[string]segment.Rule{}
	var keys []string
	var key, text string
	if _, err := pgx.ForEachRow(rows, []any{&key, &text}, func() error {
		if r, err := segment.ParseRule(json.RawMessage(text)); err == nil {
			byKey[key] = r
			keys = append(keys, key)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []compiled
	state := map[string]int{} // 1 visiting, 2 done, 3 on a cycle
	var visit func(k string) bool
	visit = func(k string) bool {
		switch state[k] {
		case 1, 3:
			state[k] = 3
			return false
		case 2:
			return true
		}
		r, ok := byKey[k]
		if !ok {
			return true // archived or unknown: a leaf that holds for no one
		}
		state[k] = 1
		for _, dep := range r.Segments() {
			if !visit(dep) {
				state[k] = 3
				return false
			}
		}
		state[k] = 2
		out = append(out, compiled{key: k, rule: r})
		return true
	}
	for _, k := range keys {
		visit(k)
	}
	return out, nil
}

// customerFacts reads the facts evaluate decides on: only what the rules
// read (a variable for the tests, which compare deciding on them with
// deciding on every fact).
var customerFacts = func(ctx context.Context, tx pgx.Tx, q readmodels.CustomersQuery) (readmodels.FactRange, error) {
	return readmodels.SegmentFactsIn(tx).Customers(ctx, q)
}

// liveState is what deciding some customers of a company starts from:
// the active rules in dependency order and the union of what they read,
// whether a segment of the company has a datatarget (its entries then
// carry whole documents), and the customers' timers now.
type liveState struct {
	rules  []compiled
	reads  segment.Reads
	fed    bool
	timers map[string]time.Time
}

// readLive reads the liveState of the company's customers ids, in one
// round trip.
func readLive(ctx context.Context, tx pgx.Tx, company string, ids []string) (liveState, error) {
	s := liveState{timers: make(map[string]time.Time, len(ids))}
	var b pgx.Batch
	b.Queue(activeRulesSQL, company).Query(func(rows pgx.Rows) error {
		var err error
		s.rules, err = collectRules(rows)
		return err
	})
	b.Queue(`SELECT EXISTS (SELECT 1 FROM segment_sync_targets WHERE company_id = $1 AND NOT deleted)`, company).
		QueryRow(func(row pgx.Row) error { return row.Scan(&s.fed) })
	// Bounded by the least and greatest id too (readmodels.SegmentFacts.Customers
	// says why).
	b.Queue(`SELECT customer_id, due_at FROM segment_timers WHERE company_id = $1 AND customer_id = ANY($2)
		AND customer_id BETWEEN $3 AND $4`, company, ids, slices.Min(ids), slices.Max(ids)).
		Query(func(rows pgx.Rows) error {
			var id string
			var due time.Time
			_, err := pgx.ForEachRow(rows, []any{&id, &due}, func() error {
				s.timers[id] = due
				return nil
			})
			return err
		})
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return s, err
	}
	for _, c := range s.rules {
		s.reads.Union(c.rule.Reads())
	}
	return s, nil
}

// evaluate decides every active segment for the customers ids, each at
// its instant at(id), records the entries and exits against segment_members with
// the cause causeOf gives, writes their messages to the segments'
// datatargets (feed; pos is the position of the commit that decides
// them, nil for a timer fired on its own), and sets each customer's
// timer to the next instant its answers may change with no new data.
// known are customers' documents the caller has just written
// (writeFacts), not read again.
//
// It reads only what the active rules read (their Reads: the named
// fields, the events of the named types with the named fields, the sales
// when a sales leaf reads them), whole documents only when a segment of
// the company has a datatarget, and writes only the timers that move.
func evaluate(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, ids []string, known map[string]json.RawMessage, at func(id string) time.Time, causeOf func(id string) string) error {
	if len(ids) == 0 {
		return nil
	}
	live, err := readLive(ctx, tx, company, ids)
	if err != nil {
		return err
	}
	loaded, err := customerFacts(ctx, tx, readmodels.CustomersQuery{Company: company, IDs: ids,
		Known: known, Reads: live.reads, Docs: live.fed})
	if err != nil {
		return err
	}
	index := make(map[string]int, len(loaded.IDs))
	for i, id := range loaded.IDs {
		index[id] = i
	}
	current := loaded.Members

	w := &rowWriter{company: company}
	decided := make(map[string]bool, len(live.rules))
	nexts := make(map[string]time.Time, len(live.rules))
	member := func(k string) (bool, time.Time) { return decided[k], nexts[k] }
	for _, id := range ids {
		clear(decided)
		clear(nexts)
		when := at(id)
		var next time.Time
		if i, ok := index[id]; ok {
			f := loaded.Facts[i]
			f.Member = member
			for _, c := range live.rules {
				in, n := segment.Decide(c.rule, f, when)
				decided[c.key], nexts[c.key] = in, n
				if !n.IsZero() && (next.IsZero() || n.Before(next)) {
					next = n
				}
			}
		}
		cause := causeOf(id)
		for _, k := range sortedKeys(decided) {
			if decided[k] && !current[id][k] {
				w.changes = append(w.changes, change{company, k, id, true, when, cause})
			}
		}
		for _, k := range sortedKeys(current[id]) {
			if !decided[k] {
				w.changes = append(w.changes, change{company, k, id, false, when, cause})
			}
		}
		// Only the timers that move are written.
		has, ok := live.timers[id]
		switch {
		case next.IsZero():
			if ok {
				w.noTimer = append(w.noTimer, id)
			}
		case !ok || !has.Equal(next):
			w.timerIDs, w.timerDue = append(w.timerIDs, id), append(w.timerDue, next)
		}
	}
	if err := w.write(ctx, tx); err != nil {
		return err
	}
	if !live.fed {
		return nil // no datatarget to tell
	}
	return feed(ctx, tx, company, pos, w.changes, loaded.Docs)
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// leave records the exit of the gone customers (deleted or forgotten)
// from every segment at the instant at, decided by the commit at pos,
// writes their messages (feed), and drops their timers.
func leave(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, gone map[string]string, at time.Time) error {
	ids := make([]string, 0, len(gone))
	causes := make([]string, 0, len(gone))
	for _, id := range sortedKeys(boolSet(gone)) {
		ids, causes = append(ids, id), append(causes, gone[id])
	}
	rows, err := tx.Query(ctx, `
		WITH g AS (SELECT * FROM unnest($2::text[], $3::text[]) AS g(customer_id, cause)),
		left_ AS (DELETE FROM segment_members m USING g WHERE m.company_id = $1 AND m.customer_id = g.customer_id
			RETURNING m.segment_key, m.customer_id, g.cause),
		timers AS (DELETE FROM segment_timers t USING g WHERE t.company_id = $1 AND t.customer_id = g.customer_id)
		INSERT INTO segment_history (company_id, segment_key, customer_id, member, at, cause)
		SELECT $1, segment_key, customer_id, false, $4, cause FROM left_ ORDER BY customer_id, segment_key
		RETURNING segment_key, customer_id, cause`,
		company, ids, causes, at)
	if err != nil {
		return err
	}
	changes, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (change, error) {
		c := change{CompanyID: company, At: at}
		return c, r.Scan(&c.SegmentKey, &c.CustomerID, &c.Cause)
	})
	if err != nil {
		return err
	}
	// In the order recorded (RETURNING does not keep it).
	slices.SortFunc(changes, func(a, b change) int {
		return cmp.Or(cmp.Compare(a.CustomerID, b.CustomerID), cmp.Compare(a.SegmentKey, b.SegmentKey))
	})
	return feed(ctx, tx, company, pos, changes, nil)
}

func boolSet(m map[string]string) map[string]bool {
	out := make(map[string]bool, len(m))
	for k := range m {
		out[k] = true
	}
	return out
}

// fireDue fires the timers of the customers ids due by the instant by,
// in the commit at pos: each customer is decided at its due instant, on
// the facts it has, all of them in one evaluation, in the order of their
// instants (then ids), as one at a time would record them; again while
// the decisions set timers due by then.
func fireDue(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, ids []string, by time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	for {
		rows, err := tx.Query(ctx, `SELECT customer_id, due_at FROM segment_timers
			WHERE company_id = $1 AND customer_id = ANY($2) AND customer_id BETWEEN $4 AND $5 AND due_at <= $3
			ORDER BY due_at, customer_id`, company, ids, by, slices.Min(ids), slices.Max(ids))
		if err != nil {
			return err
		}
		due := map[string]time.Time{}
		var order []string
		var id string
		var at time.Time
		if _, err := pgx.ForEachRow(rows, []any{&id, &at}, func() error {
			due[id] = at.UTC()
			order = append(order, id)
			return nil
		}); err != nil || len(order) == 0 {
			return err
		}
		if err := evaluate(ctx, tx, company, pos, order, nil, func(id string) time.Time { return due[id] },
			func(string) string { return CauseTime }); err != nil {
			return err
		}
	}
}

// fireDueCompany fires every timer of the company due by the instant by,
// in the commit at pos.
func fireDueCompany(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, by time.Time) error {
	rows, err := tx.Query(ctx, `SELECT customer_id FROM segment_timers WHERE company_id = $1 AND due_at <= $2`, company, by)
	if err != nil {
		return err
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return err
	}
	slices.Sort(ids)
	return fireDue(ctx, tx, company, pos, ids, by)
}
