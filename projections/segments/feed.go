package segments

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// The feed of a segment (docs/segments.md, The feed; migration 00038).
//
// A datasync datatarget of datatype segment takes each entry and exit of
// its segment as one message {"update_id", "datatype": "segment", "data":
// {"segment_key", "id", "member", "customer"}}, the customer as retrieval
// shows it (the document the facts hold), restricted to the datatarget's
// fields, in entries only. Entries and exits are this projection's, and
// not events of the log, so it writes those messages itself, as
// campaign_stats writes those of campaigns: in the transaction that
// records the entry or exit, one message per datatarget of the segment,
// numbered and encoded as the datasync projection's, into queues of its
// own (segment_sync_targets, segment_sync_messages), which retrieval and
// outlets read as they read the others.
//
// Exactly once. The queues are not rebuilt with the projection (they are
// not in Tables): a rebuild writes the same entries and exits again, but
// not commit by commit as they were (the timers of a rebuild fire when a
// commit touches their customer, or after the rebuild), so it could not
// number the messages again as they were. Instead, as campaign_stats, a
// datatarget records the log position of the last commit of its company
// it took (its creation's at first; advanceFeeds, at the end of each
// commit) and takes nothing decided by a commit at or before it; and
// segment_sync_members keeps, per datatarget and customer, the membership
// it was last told (the members at its creation to begin with), and an
// entry or exit is sent only when it tells something new: a timer fired
// on its own (no position) that fires again in the rebuilt tables tells
// nothing new. A batch applied again, and a rebuild replaying the log
// (whose Apply takes the same lock as the live projector, and these
// tables are the live ones), then send nothing twice; a rebuild that
// overtakes the live projector sends the commits it applies first, and
// the live projector, behind it, none of them.

// feedAlwaysSent are the customer fields an entry carries whatever the
// datatarget's fields: the customer's identity.
var feedAlwaysSent = []string{"id"}

// change is an entry (Member) or exit of a segment.
type change struct {
	CompanyID  string    `json:"company_id"`
	SegmentKey string    `json:"segment_key"`
	CustomerID string    `json:"customer_id"`
	Member     bool      `json:"member"`
	At         time.Time `json:"at"`
	Cause      string    `json:"cause"`
}

// feedTarget is a segment_sync_targets row.
type feedTarget struct {
	id, segment string
	fields      []string
	last        int64
	applied     eventstore.Position
}

// told is what a datatarget was last told of a customer: the membership
// and the instant of that entry or exit (kept for an auditor; the rule
// compares the membership only).
type told struct {
	member bool
	at     time.Time
}

// feedMessages are the messages a call writes, with the datatargets'
// new states.
type feedMessages struct {
	company string
	rows    datasync.SyncRows
	// The datatarget, customer, membership and instant of each row.
	targets, customers []string
	members            []bool
	ats                []time.Time
	numbered           map[string]*feedTarget // the datatargets with rows
	// docs are the entered customers' documents as read, customerDocs
	// as entries show them.
	docs         map[string]json.RawMessage
	customerDocs map[string]map[string]json.RawMessage
}

// updateID identifies an entry or exit: its segment, customer, instant
// and direction, the same in every datatarget of the segment and in
// every rebuild (the history is the same).
func updateID(key, customer string, member bool, at time.Time) string {
	dir := "out"
	if member {
		dir = "in"
	}
	return key + "/" + customer + "/" + at.UTC().Format("2006-01-02T15:04:05.000000Z") + "/" + dir
}

// feed writes the messages of the company's entries and exits changes,
// decided by the commit at pos (nil: by a timer fired on its own, after
// every commit applied), to the datatargets of their segments. docs are
// the entered customers' documents.
func feed(ctx context.Context, tx pgx.Tx, company string, pos *eventstore.Position, changes []change, docs map[string]json.RawMessage) error {
	if len(changes) == 0 {
		return nil
	}
	var keys []string
	for _, c := range changes {
		if !slices.Contains(keys, c.SegmentKey) {
			keys = append(keys, c.SegmentKey)
		}
	}
	targets, err := feedTargets(ctx, tx, company, keys)
	if err != nil || len(targets) == 0 {
		return err
	}
	bySegment := map[string][]*feedTarget{}
	var ids []string
	for _, t := range targets {
		if pos == nil || t.applied.Less(*pos) {
			bySegment[t.segment] = append(bySegment[t.segment], t)
			ids = append(ids, t.id)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	customers := make([]string, 0, len(changes))
	for _, c := range changes {
		customers = append(customers, c.CustomerID)
	}
	state, err := toldOf(ctx, tx, ids, customers)
	if err != nil {
		return err
	}
	w := newFeedMessages(company, docs)
	for _, c := range changes {
		for _, t := range bySegment[c.SegmentKey] {
			k := t.id + "\x00" + c.CustomerID
			was := state[k]
			if was.member == c.Member {
				continue
			}
			state[k] = told{member: c.Member, at: c.At}
			if err := w.add(t, c.CustomerID, c.Member, c.At, c.At); err != nil {
				return err
			}
		}
	}
	return w.write(ctx, tx)
}

func newFeedMessages(company string, docs map[string]json.RawMessage) *feedMessages {
	return &feedMessages{company: company, docs: docs, numbered: map[string]*feedTarget{},
		customerDocs: map[string]map[string]json.RawMessage{}}
}

// add adds the message of t for the customer's entry (member) or exit at
// the instant at, posted at posted.
func (w *feedMessages) add(t *feedTarget, customer string, member bool, at, posted time.Time) error {
	id := updateID(t.segment, customer, member, at)
	data := map[string]json.RawMessage{"member": json.RawMessage(strconv.FormatBool(member))}
	var err error
	if data["segment_key"], err = json.Marshal(t.segment); err != nil {
		return err
	}
	if data["id"], err = json.Marshal(customer); err != nil {
		return err
	}
	if member {
		doc, err := w.customer(customer)
		if err != nil {
			return err
		}
		if data["customer"], err = json.Marshal(datasync.Restrict(doc, feedAlwaysSent, t.fields)); err != nil {
			return err
		}
	}
	body, err := datasync.EncodeSyncMessage(id, datatarget.Segment, data)
	if err != nil {
		return err
	}
	t.last++
	w.numbered[t.id] = t
	w.rows.Add(t.id, w.company, customer, id, t.last, body, posted, false)
	w.targets, w.customers = append(w.targets, t.id), append(w.customers, customer)
	w.members, w.ats = append(w.members, member), append(w.ats, at)
	return nil
}

// customer is the customer's document as an entry shows it: decoded once
// a call, and encoded again with every object's keys sorted, so that
// the same customer gives the same bytes however its document was read.
func (w *feedMessages) customer(id string) (map[string]json.RawMessage, error) {
	if doc, ok := w.customerDocs[id]; ok {
		return doc, nil
	}
	text, ok := w.docs[id]
	if !ok {
		return nil, fmt.Errorf("segment feed: no document of the entered customer %s", id)
	}
	d := json.NewDecoder(bytes.NewReader(text))
	d.UseNumber()
	var fields map[string]any
	if err := d.Decode(&fields); err != nil {
		return nil, fmt.Errorf("segment feed: the document of %s: %w", id, err)
	}
	doc := make(map[string]json.RawMessage, len(fields))
	for k, v := range fields {
		b, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("segment feed: the document of %s: %w", id, err)
		}
		doc[k] = b
	}
	w.customerDocs[id] = doc
	return doc, nil
}

// write writes the messages, what each datatarget was told, and the
// datatargets' message counts.
func (w *feedMessages) write(ctx context.Context, tx pgx.Tx) error {
	if len(w.targets) == 0 {
		return nil
	}
	if err := w.rows.InsertInto(ctx, tx, "segment_sync_messages"); err != nil {
		return err
	}
	// A datatarget and customer appear once in the statement: the last
	// of its rows is what it was told.
	latest := map[string]int{}
	for i := range w.targets {
		latest[w.targets[i]+"\x00"+w.customers[i]] = i
	}
	var targets, customers []string
	var members []bool
	var ats []time.Time
	for i := range w.targets {
		if latest[w.targets[i]+"\x00"+w.customers[i]] == i {
			targets, customers = append(targets, w.targets[i]), append(customers, w.customers[i])
			members, ats = append(members, w.members[i]), append(ats, w.ats[i])
		}
	}
	var ids []string
	var numbers []int64
	for id, t := range w.numbered {
		ids, numbers = append(ids, id), append(numbers, t.last)
	}
	var b pgx.Batch
	b.Queue(`INSERT INTO segment_sync_members (datatarget_id, customer_id, member, at)
		SELECT * FROM unnest($1::text[], $2::text[], $3::boolean[], $4::timestamptz[])
		ON CONFLICT (datatarget_id, customer_id) DO UPDATE SET member = excluded.member, at = excluded.at`,
		targets, customers, members, ats)
	b.Queue(`UPDATE segment_sync_targets t SET last_message_number = u.last
		FROM unnest($1::text[], $2::bigint[]) AS u(id, last) WHERE t.datatarget_id = u.id`, ids, numbers)
	return bulk.SendBatch(ctx, tx, "segment_members", &b)
}

// feedTargets reads the company's datatargets of the segments keys.
func feedTargets(ctx context.Context, tx pgx.Tx, company string, keys []string) ([]*feedTarget, error) {
	rows, err := tx.Query(ctx, `SELECT datatarget_id, segment_key, fields, last_message_number, applied_tx::text, applied_position
		FROM segment_sync_targets WHERE company_id = $1 AND segment_key = ANY($2) AND NOT deleted ORDER BY datatarget_id`, company, keys)
	if err != nil {
		return nil, fmt.Errorf("segment feed: datatargets: %w", err)
	}
	var out []*feedTarget
	var t feedTarget
	_, err = pgx.ForEachRow(rows, []any{&t.id, &t.segment, &t.fields, &t.last, projections.TxID{To: &t.applied.TxID}, &t.applied.Global}, func() error {
		c := t
		out = append(out, &c)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("segment feed: datatargets: %w", err)
	}
	return out, nil
}

// toldOf reads what the datatargets ids were last told of the customers,
// by datatarget and customer id (joined by a zero byte).
func toldOf(ctx context.Context, tx pgx.Tx, ids, customers []string) (map[string]told, error) {
	rows, err := tx.Query(ctx, `SELECT datatarget_id, customer_id, member, at FROM segment_sync_members
		WHERE datatarget_id = ANY($1) AND customer_id = ANY($2)`, ids, customers)
	if err != nil {
		return nil, fmt.Errorf("segment feed: told: %w", err)
	}
	out := map[string]told{}
	var id, customer string
	var t told
	if _, err := pgx.ForEachRow(rows, []any{&id, &customer, &t.member, &t.at}, func() error {
		out[id+"\x00"+customer] = t
		return nil
	}); err != nil {
		return nil, fmt.Errorf("segment feed: told: %w", err)
	}
	return out, nil
}

// follow starts the feed of the datatarget e creates when it is a
// datasync datatarget of a segment: its row, what it is told to begin
// with (the segment's members now, entered at their instants) and, with
// from_start, those members as its first messages, entered, posted at
// the creation's instant. A creation applied again (a rebuild) is left
// as it is.
func follow(ctx context.Context, tx pgx.Tx, e eventstore.RecordedEvent) error {
	var ev datatarget.Created
	if err := bulk.Decode(e, &ev); err != nil {
		return err
	}
	s := ev.Settings
	if ev.Type != datatarget.Datasync || s == nil || s.Datatype != datatarget.Segment {
		return nil
	}
	company := e.Metadata.CompanyID
	fields, err := json.Marshal(s.Fields)
	if err != nil {
		return err
	}
	var created bool
	err = tx.QueryRow(ctx, `WITH t AS (
			INSERT INTO segment_sync_targets (datatarget_id, company_id, segment_key, fields, applied_tx, applied_position)
			VALUES ($1, $2, $3, CASE WHEN $4::jsonb = 'null' THEN NULL ELSE ARRAY(SELECT jsonb_array_elements_text($4::jsonb)) END,
				$5::text::xid8, $6)
			ON CONFLICT (datatarget_id) DO NOTHING RETURNING datatarget_id)
		SELECT EXISTS (SELECT FROM t)`, ev.ID, company, s.SegmentKey, string(fields),
		strconv.FormatUint(e.Position.TxID, 10), e.Position.Global).Scan(&created)
	if err != nil {
		return fmt.Errorf("segment feed: datatarget %s: %w", ev.ID, err)
	}
	if !created {
		return nil
	}
	if _, err := tx.Exec(ctx, `INSERT INTO segment_sync_members (datatarget_id, customer_id, member, at)
		SELECT $1, customer_id, true, entered_at FROM segment_members WHERE company_id = $2 AND segment_key = $3`,
		ev.ID, company, s.SegmentKey); err != nil {
		return fmt.Errorf("segment feed: datatarget %s: %w", ev.ID, err)
	}
	if !s.FromStart {
		return nil
	}
	t := &feedTarget{id: ev.ID, segment: s.SegmentKey, fields: s.Fields, applied: e.Position}
	return fromStart(ctx, tx, company, t, e.RecordedAt)
}

// advanceFeeds records that the company's datatargets took the commit
// ending at last: a commit at or before it, applied again, is not for
// them. It runs at the end of each commit, after all its decisions (the
// timers it fires, the exits of the customers it deletes, its backfill),
// which each write their messages with the position as it was.
func advanceFeeds(ctx context.Context, tx pgx.Tx, company string, last eventstore.Position) error {
	_, err := tx.Exec(ctx, `UPDATE segment_sync_targets SET applied_tx = $2::text::xid8, applied_position = $3
		WHERE company_id = $1 AND NOT deleted AND (applied_tx, applied_position) < ($2::text::xid8, $3)`,
		company, strconv.FormatUint(last.TxID, 10), last.Global)
	if err != nil {
		return fmt.Errorf("segment feed: datatargets: %w", err)
	}
	return nil
}

// unfollow stops the feed of the datatarget e deletes, if it is one: it
// takes no more messages, and its queue and what it was told go, as a
// messages datatarget's queue goes with it. The row stays, marked, so
// that a rebuild replaying the creation leaves it alone.
func unfollow(ctx context.Context, tx pgx.Tx, e eventstore.RecordedEvent) error {
	var ev datatarget.Deleted
	if err := bulk.Decode(e, &ev); err != nil {
		return err
	}
	_, err := tx.Exec(ctx, `WITH t AS (UPDATE segment_sync_targets SET deleted = true
			WHERE datatarget_id = $1 AND company_id = $2 AND NOT deleted RETURNING datatarget_id),
		m AS (DELETE FROM segment_sync_messages x USING t WHERE x.datatarget_id = t.datatarget_id)
		DELETE FROM segment_sync_members x USING t WHERE x.datatarget_id = t.datatarget_id`, ev.ID, e.Metadata.CompanyID)
	if err != nil {
		return fmt.Errorf("segment feed: datatarget %s deleted: %w", ev.ID, err)
	}
	return nil
}

// fromStartPage is how many members a from_start datatarget's first
// messages are written for at a time: memory stays bounded by a page.
const fromStartPage = 1000

// fromStart writes the segment's members now as the first messages of
// t, in the order they entered, posted at.
func fromStart(ctx context.Context, tx pgx.Tx, company string, t *feedTarget, posted time.Time) error {
	var afterAt time.Time
	afterID := ""
	for {
		rows, err := tx.Query(ctx, `SELECT m.customer_id, m.entered_at, c.doc::text FROM segment_members m
			JOIN segment_customers c ON c.company_id = m.company_id AND c.customer_id = m.customer_id
			WHERE m.company_id = $1 AND m.segment_key = $2 AND (m.entered_at, m.customer_id) > ($3, $4)
			ORDER BY m.entered_at, m.customer_id LIMIT $5`, company, t.segment, afterAt, afterID, fromStartPage)
		if err != nil {
			return fmt.Errorf("segment feed: from_start of %s: %w", t.id, err)
		}
		type member struct {
			id  string
			at  time.Time
			doc []byte
		}
		page, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (member, error) {
			var m member
			return m, r.Scan(&m.id, &m.at, &m.doc)
		})
		if err != nil {
			return fmt.Errorf("segment feed: from_start of %s: %w", t.id, err)
		}
		docs := make(map[string]json.RawMessage, len(page))
		for _, m := range page {
			docs[m.id] = m.doc
		}
		w := newFeedMessages(company, docs)
		for _, m := range page {
			if err := w.add(t, m.id, true, m.at, posted); err != nil {
				return err
			}
		}
		if err := w.write(ctx, tx); err != nil {
			return err
		}
		if len(page) < fromStartPage {
			return nil
		}
		afterAt, afterID = page[len(page)-1].at, page[len(page)-1].id
	}
}

// forgetFeed removes the customer documents from the stored messages
// about the forgotten customers ids in the company's segment
// datatargets, as the datasync projection removes the personal fields
// of events and sales: an entry keeps its segment_key, id and member.
func forgetFeed(ctx context.Context, tx pgx.Tx, company string, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows, err := tx.Query(ctx, `SELECT datatarget_id FROM segment_sync_targets WHERE company_id = $1 AND NOT deleted
		ORDER BY datatarget_id`, company)
	if err != nil {
		return fmt.Errorf("segment feed: forget: %w", err)
	}
	targets, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil || len(targets) == 0 {
		return err
	}
	for _, id := range ids {
		if err := datasync.RemoveFieldsIn(ctx, tx, "segment_sync_messages", targets, id, []string{"customer"}); err != nil {
			return err
		}
	}
	return nil
}
