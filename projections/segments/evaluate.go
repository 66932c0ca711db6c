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
	"github.com/clientele/clientele/projections/internal/bulk"
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
	rows, err := tx.Query(ctx, `SELECT segment_key, rule FROM segment_rules WHERE company_id = $1 AND state = 'active'
		ORDER BY segment_key`, company)
	if err != nil {
		return nil, err
	}
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

// evaluate decides every active segment for the customers ids at the
// instant at, records the entries and exits against segment_members with
// the cause causeOf gives, writes their messages to the segments'
// datatargets (feed; pos is the position of the commit that decides
// them, nil for a timer fired on its own), and sets each customer's
// timer to the next instant its answers may change with no new data.
// known are customers' documents the caller has just written
// (writeFacts), not read again.
func evaluate(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, ids []string, known map[string]json.RawMessage, at time.Time, causeOf func(id string) string) error {
	if len(ids) == 0 {
		return nil
	}
	rules, err := activeRules(ctx, tx, company)
	if err != nil {
		return err
	}
	loaded, err := readmodels.SegmentFactsIn(tx).Customers(ctx, company, ids, known)
	if err != nil {
		return err
	}
	facts, current := loaded.Facts, loaded.Members

	type timer struct {
		CompanyID  string     `json:"company_id"`
		CustomerID string     `json:"customer_id"`
		DueAt      *time.Time `json:"due_at"`
	}
	var changes []change
	var timers []timer
	for _, id := range ids {
		want := map[string]bool{}
		var next time.Time
		if f := facts[id]; f != nil {
			decided := map[string]bool{}
			nexts := map[string]time.Time{}
			f.Member = func(k string) (bool, time.Time) { return decided[k], nexts[k] }
			for _, c := range rules {
				in, n := segment.Decide(c.rule, *f, at)
				decided[c.key], nexts[c.key] = in, n
				if in {
					want[c.key] = true
				}
				if !n.IsZero() && (next.IsZero() || n.Before(next)) {
					next = n
				}
			}
		}
		cause := causeOf(id)
		for _, k := range sortedKeys(want) {
			if !current[id][k] {
				changes = append(changes, change{company, k, id, true, at, cause})
			}
		}
		for _, k := range sortedKeys(current[id]) {
			if !want[k] {
				changes = append(changes, change{company, k, id, false, at, cause})
			}
		}
		t := timer{CompanyID: company, CustomerID: id}
		if !next.IsZero() {
			t.DueAt = &next
		}
		timers = append(timers, t)
	}
	// Each statement only when it has rows, and the deletions by key
	// arrays (a join on the primary key), not by a join with a decoded
	// recordset, whose row count the planner cannot guess.
	var b pgx.Batch
	var exitSeg, exitCust, noTimer []string
	var entries []change
	for _, c := range changes {
		if c.Member {
			entries = append(entries, c)
		} else {
			exitSeg, exitCust = append(exitSeg, c.SegmentKey), append(exitCust, c.CustomerID)
		}
	}
	var due []timer
	for _, t := range timers {
		if t.DueAt == nil {
			noTimer = append(noTimer, t.CustomerID)
		} else {
			due = append(due, t)
		}
	}
	if len(exitSeg) > 0 {
		b.Queue(`DELETE FROM segment_members m USING unnest($2::text[], $3::text[]) AS x(segment_key, customer_id)
			WHERE m.company_id = $1 AND m.segment_key = x.segment_key AND m.customer_id = x.customer_id`, company, exitSeg, exitCust)
	}
	if err := bulk.QueueRows(&b, "segment_members", `INSERT INTO segment_members (company_id, segment_key, customer_id, entered_at)
		SELECT company_id, segment_key, customer_id, at FROM jsonb_to_recordset($1::jsonb)
			AS r(company_id text, segment_key text, customer_id text, at timestamptz)`, entries); err != nil {
		return err
	}
	if err := bulk.QueueRows(&b, "segment_members", `INSERT INTO segment_history (company_id, segment_key, customer_id, member, at, cause)
		SELECT company_id, segment_key, customer_id, member, at, cause FROM jsonb_to_recordset($1::jsonb)
			AS r(company_id text, segment_key text, customer_id text, member boolean, at timestamptz, cause text)`, changes); err != nil {
		return err
	}
	if len(noTimer) > 0 {
		b.Queue(`DELETE FROM segment_timers WHERE company_id = $1 AND customer_id = ANY($2)`, company, noTimer)
	}
	if err := bulk.QueueRows(&b, "segment_members", `INSERT INTO segment_timers (company_id, customer_id, due_at)
		SELECT company_id, customer_id, due_at FROM jsonb_to_recordset($1::jsonb) AS r(company_id text, customer_id text, due_at timestamptz)
		ON CONFLICT (company_id, customer_id) DO UPDATE SET due_at = excluded.due_at`, due); err != nil {
		return err
	}
	if b.Len() > 0 {
		if err := bulk.SendBatch(ctx, tx, "segment_members", &b); err != nil {
			return err
		}
	}
	return feed(ctx, tx, company, pos, changes, loaded.Docs)
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
// the facts it has.
func fireDue(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, ids []string, by time.Time) error {
	if len(ids) == 0 {
		return nil
	}
	for {
		rows, err := tx.Query(ctx, `SELECT customer_id, due_at FROM segment_timers
			WHERE company_id = $1 AND customer_id = ANY($2) AND due_at <= $3 ORDER BY due_at, customer_id`, company, ids, by)
		if err != nil {
			return err
		}
		type due struct {
			id string
			at time.Time
		}
		list, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (due, error) {
			var d due
			return d, r.Scan(&d.id, &d.at)
		})
		if err != nil || len(list) == 0 {
			return err
		}
		for _, d := range list {
			if err := evaluate(ctx, tx, company, pos, []string{d.id}, nil, d.at.UTC(), func(string) string { return CauseTime }); err != nil {
				return err
			}
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
