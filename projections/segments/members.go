package segments

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/activity"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/domain/sale"
	"github.com/clientele/clientele/domain/segment"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections/internal/document"
)

// Members keeps the membership of segments as a projection of the log
// (docs/segments.md): the members now (segment_members), every entry and
// exit with its instant and cause (segment_history), and when each
// customer's answers next change with no new data (segment_timers).
//
// It keeps the facts rules are decided on itself, as of the commits it
// has applied: the rules (segment_rules), each customer's document
// (folded from its stream with the customers projector's own code), its
// events and its sales. Reading the retrieval tables instead would read
// another projection, ahead or behind this one (and at the log's end in a
// rebuild), and the instants of the history would then depend on timing.
//
// A commit is applied at its own time T (the events' recorded time):
// first the timers of the customers it touches that fall due by T fire
// (the facts before the commit decide them, at their due instant); then
// the facts change, and the touched customers are decided again at T. A
// commit that creates, changes, archives or reactivates a segment decides
// every customer of the company again (the backfill). Timers that fall
// due with no new commit are fired by RunTimers, under the same lock.
type Members struct {
	keys crypto.KeyStore
	log  eventstore.EventLog
}

// NewMembers returns the projector; keys opens the customers' sealed
// changes, log is the log it reads the customers' and sales' streams
// from (the runtime's).
func NewMembers(keys crypto.KeyStore, log eventstore.EventLog) *Members {
	if keys.Keyring == nil || log == nil {
		panic("projections: segments: NewMembers: KeyStore without a keyring, or no log")
	}
	return &Members{keys: keys, log: log}
}

// Name implements Projector.
func (*Members) Name() string { return "segment_members" }

// Tables implements Projector.
func (*Members) Tables() []string {
	return []string{"segment_rules", "segment_customers", "segment_activity", "segment_sales",
		"segment_members", "segment_history", "segment_timers", "segment_clock"}
}

// EventTypes implements TypeFilter: the facts, the segments, and the
// creations and deletions of datatargets (the feed of a segment,
// feed.go).
func (*Members) EventTypes() []string {
	return append(memberTypes(), datatarget.CreatedType, datatarget.DeletedType)
}

// memberTypes are the types of the events that can move members.
func memberTypes() []string {
	return append(slices.Clone(factTypes), segment.EventTypes...)
}

// EventLog returns the log the projector reads.
func (m *Members) EventLog() eventstore.EventLog { return m.log }

// ForgetTypes implements Forgetter: a forgotten customer's document goes,
// and so does the customer document of its entries in the feeds.
func (*Members) ForgetTypes() []string { return []string{customer.TypeForgotten} }

// Forget implements Forgetter.
func (*Members) Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for _, e := range events {
		var d customer.Deleted
		if err := json.Unmarshal(e.Data, &d); err != nil {
			return fmt.Errorf("projections: segment_members: %w", err)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM segment_customers WHERE company_id = $1 AND customer_id = $2`,
			e.Metadata.CompanyID, d.CustomerID); err != nil {
			return fmt.Errorf("projections: segment_members: forget: %w", err)
		}
		if err := forgetFeed(ctx, tx, e.Metadata.CompanyID, []string{d.CustomerID}); err != nil {
			return fmt.Errorf("projections: segment_members: forget: %w", err)
		}
	}
	return nil
}

// WantsCommit implements projections.CommitFilter: a commit concerns the
// projector when its company has a segment (the gate is open, Apply), or
// when it creates the company's first one. An import of a company
// without segments is then not read at all.
//
// Whether the commit creates one the header says, when it lists the
// commit's types; the log is asked only when the company has none and
// the header does not (a header written before headers listed them).
func (m *Members) WantsCommit(ctx context.Context, tx pgx.Tx, h bus.CommitHeader) (bool, error) {
	if h.Types != nil && slices.Contains(h.Types, segment.CreatedType) {
		return true, nil
	}
	var wants bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM segment_rules WHERE company_id = $1)`, h.CompanyID).Scan(&wants)
	if err == nil && !wants && h.Types == nil {
		wants, err = m.log.CommitHasType(ctx, tx, h.TxID, segment.CreatedType)
	}
	if err != nil {
		return false, fmt.Errorf("segment_members: wants commit: %w", err)
	}
	return wants, nil
}

// lock serialises Apply and the timers on the membership tables.
func lock(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock(hashtext('segment_members'))`)
	return err
}

// Causes of entries and exits.
const (
	CauseCustomer  = "customer"  // the customer's fields changed
	CauseEvent     = "event"     // an event of the customer came or went
	CauseSale      = "sale"      // a sale of the customer came or changed
	CauseRule      = "rule"      // a segment was created, changed, archived or made active
	CauseTime      = "time"      // a window passed
	CauseDeleted   = "deleted"   // the customer was deleted
	CauseForgotten = "forgotten" // the customer was forgotten
)

// Apply implements Projector: the events' commits one after the other, in
// log order.
//
// A company's facts are kept only once it has a segment (the gate: a row
// of segment_rules, asked once per company and batch; a row is never
// deleted, so the gate only opens). A commit of a company without one
// writes nothing, unless it holds a segment event (its first
// SegmentCreated): the gate then opens (open), and the commit is applied.
func (m *Members) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	if err := lock(ctx, tx); err != nil {
		return fmt.Errorf("projections: segment_members: lock: %w", err)
	}
	gates := map[string]bool{}
	for start := 0; start < len(events); {
		end := start + 1
		for end < len(events) && events[end].Position.TxID == events[start].Position.TxID &&
			events[end].Metadata.CompanyID == events[start].Metadata.CompanyID {
			end++
		}
		commit := events[start:end]
		start = end
		company := commit[0].Metadata.CompanyID
		kept, asked := gates[company]
		if !asked {
			if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM segment_rules WHERE company_id = $1)`, company).Scan(&kept); err != nil {
				return fmt.Errorf("projections: segment_members: %w", err)
			}
			gates[company] = kept
		}
		if !kept {
			if !slices.ContainsFunc(commit, func(e eventstore.RecordedEvent) bool { return slices.Contains(segment.EventTypes, e.Type) }) {
				continue
			}
			if err := m.open(ctx, tx, company, commit[0].Position); err != nil {
				return fmt.Errorf("projections: segment_members: the facts of %s: %w", company, err)
			}
			gates[company] = true
		}
		// A datatarget's creation or deletion (its own commit) moves no
		// member: it starts or stops a feed (feed.go), and the clock
		// stays.
		facts := commit[:0:0]
		for _, e := range commit {
			var err error
			switch e.Type {
			case datatarget.CreatedType:
				err = follow(ctx, tx, e)
			case datatarget.DeletedType:
				err = unfollow(ctx, tx, e)
			default:
				facts = append(facts, e)
			}
			if err != nil {
				return fmt.Errorf("projections: segment_members: %w", err)
			}
		}
		if len(facts) == 0 {
			continue
		}
		if err := m.applyCommit(ctx, tx, facts); err != nil {
			return fmt.Errorf("projections: segment_members: %w", err)
		}
		if err := advanceFeeds(ctx, tx, company, facts[len(facts)-1].Position); err != nil {
			return fmt.Errorf("projections: segment_members: %w", err)
		}
	}
	return nil
}

// factTypes are the types of the events the facts are folded from.
var factTypes = []string{customer.TypeUpserted, customer.TypeDeleted, customer.TypeForgotten,
	activity.TypeRecorded, activity.TypeDeleted, sale.TypeUpserted}

// openPage is how many events of a company's history the opening of its
// gate reads and folds at a time: memory stays bounded by a page.
const openPage = 5_000

// open gives a company its facts as of its commits before the position
// before (its first segment event's), when the gate opens: it reads the
// company's fact events strictly before it from the log, in pages, and
// each page's commits go through the same parsing and writeFacts as a
// commit applied with the gate open, and nothing else: no timers, no
// evaluation, no history, no clock (no segment existed, nobody was a
// member). A page may end inside a commit; a customer's stream in two
// pages is folded twice, to the same document.
//
// It runs in the transaction that applies the segment event, as the
// datasync backlog of a datatarget created from_start does
// (projections/datasync/backlog.go): every event before it is visible
// then (the runtime hands a commit over only once no earlier transaction
// can commit), and a rebuild reads the same prefix of the same log.
func (m *Members) open(ctx context.Context, tx pgx.Tx, company string, before eventstore.Position) error {
	var after eventstore.Position
	for {
		evs, err := m.log.ReadCompanyTypes(ctx, tx, company, factTypes, after, before, openPage)
		if err != nil {
			return err
		}
		for start := 0; start < len(evs); {
			end := start + 1
			for end < len(evs) && evs[end].Position.TxID == evs[start].Position.TxID {
				end++
			}
			f, err := readCommit(ctx, tx, evs[start:end])
			if err != nil {
				return err
			}
			sales, err := m.foldSales(ctx, tx, f.saleUpto)
			if err != nil {
				return err
			}
			if _, _, err := m.writeFacts(ctx, tx, &f, sales); err != nil {
				return err
			}
			start = end
		}
		if len(evs) < openPage {
			return nil
		}
		after = evs[len(evs)-1].Position
	}
}

// commitFacts are what one commit changes.
type commitFacts struct {
	company  string
	at       time.Time
	rules    []segment.Segment // as the commit leaves each changed segment
	custIDs  map[string]string // customer stream -> customer id
	custUpto map[string]int64
	recorded []activity.Recorded
	deleted  []int64
	saleUpto map[string]int64
	touched  map[string]string // customer id -> cause
}

func (f *commitFacts) touch(id, cause string) {
	if id == "" {
		return
	}
	if _, ok := f.touched[id]; !ok {
		f.touched[id] = cause
	}
}

// readCommit parses one commit's events: what it changes.
func readCommit(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) (commitFacts, error) {
	f := commitFacts{company: events[0].Metadata.CompanyID, at: events[0].RecordedAt.UTC(),
		custIDs: map[string]string{}, custUpto: map[string]int64{}, saleUpto: map[string]int64{}, touched: map[string]string{}}
	ruleAt := map[string]int{}
	for _, e := range events {
		switch e.Type {
		case customer.TypeUpserted, customer.TypeDeleted, customer.TypeForgotten:
			var d customer.Deleted // every customer event starts with customer_id
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return f, err
			}
			f.custIDs[e.StreamID], f.custUpto[e.StreamID] = d.CustomerID, max(f.custUpto[e.StreamID], e.StreamVersion)
			f.touch(d.CustomerID, CauseCustomer)
		case activity.TypeRecorded:
			var r activity.Recorded
			if err := document.DecodeNumbersEvent(e, &r); err != nil {
				return f, err
			}
			f.recorded = append(f.recorded, r)
			f.touch(r.CustomerID, CauseEvent)
		case activity.TypeDeleted:
			var d activity.Deleted
			if err := json.Unmarshal(e.Data, &d); err != nil {
				return f, err
			}
			f.deleted = append(f.deleted, d.ID)
		case sale.TypeUpserted:
			var u struct {
				CustomerID string `json:"customer_id"`
			}
			if err := json.Unmarshal(e.Data, &u); err != nil {
				return f, err
			}
			f.saleUpto[e.StreamID] = max(f.saleUpto[e.StreamID], e.StreamVersion)
			f.touch(u.CustomerID, CauseSale)
		default:
			ev, err := segment.Decode(e.Type, e.Data)
			if err != nil {
				return f, err
			}
			if ev == nil {
				continue
			}
			i, ok := ruleAt[ev.SegmentKey()]
			if !ok {
				s, err := loadRule(ctx, tx, f.company, ev.SegmentKey())
				if err != nil {
					return f, err
				}
				i = len(f.rules)
				ruleAt[ev.SegmentKey()] = i
				f.rules = append(f.rules, s)
			}
			f.rules[i] = f.rules[i].Apply(ev)
		}
	}
	return f, nil
}

func (m *Members) applyCommit(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	f, err := readCommit(ctx, tx, events)
	if err != nil {
		return err
	}
	// The clock ticks (tick), and records the commit as applied.
	last := events[len(events)-1].Position
	if _, err := tx.Exec(ctx, `INSERT INTO segment_clock (company_id, computed_at, applied_tx, applied_global) VALUES ($1, $2, $3, $4)
		ON CONFLICT (company_id) DO UPDATE SET computed_at = greatest(segment_clock.computed_at, excluded.computed_at),
			applied_tx = excluded.applied_tx, applied_global = excluded.applied_global`,
		f.company, f.at, int64(last.TxID), last.Global); err != nil {
		return err
	}
	// The customers whose events were deleted, and the former customers
	// of sales that changed hands, are touched too.
	if len(f.deleted) > 0 {
		rows, err := tx.Query(ctx, `SELECT customer_id FROM segment_activity WHERE company_id = $1 AND event_id = ANY($2)`, f.company, f.deleted)
		if err != nil {
			return err
		}
		ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range ids {
			f.touch(id, CauseEvent)
		}
	}
	sales, err := m.foldSales(ctx, tx, f.saleUpto)
	if err != nil {
		return err
	}
	if len(sales) > 0 {
		ids := make([]string, len(sales))
		for i, s := range sales {
			ids[i] = s.SaleID
		}
		rows, err := tx.Query(ctx, `SELECT customer_id FROM segment_sales WHERE company_id = $1 AND sale_id = ANY($2)`, f.company, ids)
		if err != nil {
			return err
		}
		old, err := pgx.CollectRows(rows, pgx.RowTo[string])
		if err != nil {
			return err
		}
		for _, id := range old {
			f.touch(id, CauseSale)
		}
	}

	// Every timer of the company due by the commit fires first, on the
	// facts and rules before it: the touched customers' (decided on the
	// facts before the commit), a backfill's (it decides everyone at T
	// on the new rules), and every other: the history then holds a
	// window that passed before the commit ahead of the commit's rows,
	// as the timer loop recorded it live, and a rebuild, which replays
	// the commits before any timer loop runs, records it in the same
	// place (it recorded it after the commit's rows: the history's order
	// differed from the live one's).
	if err := fireDueCompany(ctx, tx, f.company, &last, f.at); err != nil {
		return err
	}

	// Then the facts change.
	docs, gone, err := m.writeFacts(ctx, tx, &f, sales)
	if err != nil {
		return err
	}
	if len(gone) > 0 {
		if err := leave(ctx, tx, f.company, &last, gone, f.at); err != nil {
			return err
		}
		var forgotten []string
		for _, id := range sortedKeys(boolSet(gone)) {
			if gone[id] == CauseForgotten {
				forgotten = append(forgotten, id)
			}
		}
		if err := forgetFeed(ctx, tx, f.company, forgotten); err != nil {
			return err
		}
	}
	if len(f.rules) > 0 {
		// The backfill decides the changed segments and those that name
		// them for every customer but the ones the commit touched, which
		// are decided on every segment below (their facts changed).
		changed := make([]string, len(f.rules))
		for i, r := range f.rules {
			changed[i] = r.Key
		}
		if err := backfill(ctx, tx, f.company, &last, f.at, changed, f.touched); err != nil {
			return err
		}
	}
	var decide []string
	for id := range f.touched {
		if _, ok := gone[id]; !ok {
			decide = append(decide, id)
		}
	}
	slices.Sort(decide)
	return evaluate(ctx, tx, f.company, &last, decide, docs, func(string) time.Time { return f.at },
		func(id string) string { return f.touched[id] })
}

// tick records that the company's members reflect its data as of at.
func tick(ctx context.Context, tx pgx.Tx, company string, at time.Time) error {
	_, err := tx.Exec(ctx, `INSERT INTO segment_clock (company_id, computed_at) VALUES ($1, $2)
		ON CONFLICT (company_id) DO UPDATE SET computed_at = greatest(segment_clock.computed_at, excluded.computed_at)`, company, at)
	return err
}

// loadRule is a segment's rule and state as the projector holds them.
func loadRule(ctx context.Context, tx pgx.Tx, company, key string) (segment.Segment, error) {
	s := segment.Segment{CompanyID: company, Key: key}
	var rule string
	err := tx.QueryRow(ctx, `SELECT rule, state FROM segment_rules WHERE company_id = $1 AND segment_key = $2`, company, key).
		Scan(&rule, &s.State)
	if err == pgx.ErrNoRows {
		return s, nil
	}
	s.Rule = json.RawMessage(rule)
	return s, err
}

// saleFacts is a sale as a sales leaf reads it.
type saleFacts struct {
	SaleID     string    `json:"sale_id"`
	CustomerID string    `json:"customer_id"`
	At         time.Time `json:"at"`
	HasAt      bool      `json:"has_at"`
	Revenue    int64     `json:"revenue"`
	Products   []string  `json:"products"`
	Counted    bool      `json:"counted"`
}

// foldSales folds each changed sale's stream up to the commit with the
// sales projector's own code (personal fields are not needed: no key).
func (m *Members) foldSales(ctx context.Context, tx pgx.Tx, upto map[string]int64) ([]saleFacts, error) {
	if len(upto) == 0 {
		return nil, nil
	}
	streams := make([]string, 0, len(upto))
	for s := range upto {
		streams = append(streams, s)
	}
	slices.Sort(streams)
	versions := make([]int64, len(streams))
	for i, s := range streams {
		versions[i] = upto[s]
	}
	history, err := m.log.ReadStreamsUpTo(ctx, tx, streams, versions)
	if err != nil {
		return nil, fmt.Errorf("read sales: %w", err)
	}
	var out []saleFacts
	var r *document.SaleRow
	var stream string
	flush := func() {
		if r == nil {
			return
		}
		s := saleFacts{SaleID: r.SaleID, CustomerID: r.CustomerID, Counted: r.Counted(), Products: []string{}}
		s.At, s.HasAt = r.Date()
		s.Revenue, _ = document.Money(r.Doc[document.SaleFieldTotal])
		if rows, ok := r.Doc["sale_rows"].([]map[string]any); ok {
			for _, row := range rows {
				if p, ok := row["product_id"].(string); ok && !slices.Contains(s.Products, p) {
					s.Products = append(s.Products, p)
				}
			}
		}
		out = append(out, s)
	}
	for i := range history {
		e := &history[i]
		if e.Type != sale.TypeUpserted {
			continue
		}
		var u sale.Upserted
		if err := document.DecodeNumbersEvent(*e, &u); err != nil {
			return nil, err
		}
		if r == nil || e.StreamID != stream {
			flush()
			r, stream = document.NewSaleRow(document.CatalogKey{Company: e.Metadata.CompanyID, ID: u.SaleID}, e.RecordedAt), e.StreamID
		}
		if !r.Advance(e) {
			continue
		}
		if _, err := r.ApplyUpsert(e, u, nil); err != nil {
			return nil, err
		}
	}
	flush()
	return out, nil
}
