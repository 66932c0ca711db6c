package datasync

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/internal/bulk"
)

// syncTarget is a datasync datatarget as the projector follows it.
type syncTarget struct {
	id, company string
	datatype    datatarget.Datatype
	fields      []string // nil: every field
	fromStart   bool     // only while its creation is applied
	// last is the number of its last message.
	last int64
	// applied is the position of the last change it took, its creation's
	// at first: it takes only changes after it.
	applied eventstore.Position
	dirty   bool
}

// syncTargets are the datasync datatargets of the companies of a call.
type syncTargets struct {
	byID      map[string]*syncTarget
	byCompany map[string][]*syncTarget
}

// syncChange is a change and the datatargets that take it.
type syncChange struct {
	event   *eventstore.RecordedEvent
	targets []*syncTarget
}

// loadSyncTargets reads the datasync datatargets of the companies.
func loadSyncTargets(ctx context.Context, tx pgx.Tx, companies []string) (*syncTargets, error) {
	rows, err := tx.Query(ctx, `SELECT datatarget_id, company_id, datatype, fields, last_message_number,
		applied_tx::text, applied_position FROM datasync_targets WHERE company_id = ANY($1) ORDER BY datatarget_id`, companies)
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: load datatargets: %w", err)
	}
	ts := &syncTargets{byID: map[string]*syncTarget{}, byCompany: map[string][]*syncTarget{}}
	t := syncTarget{}
	_, err = pgx.ForEachRow(rows, []any{&t.id, &t.company, &t.datatype, &t.fields, &t.last, projections.TxID{To: &t.applied.TxID}, &t.applied.Global}, func() error {
		ts.add(&syncTarget{id: t.id, company: t.company, datatype: t.datatype, fields: t.fields, last: t.last, applied: t.applied})
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("projections: datasync: load datatargets: %w", err)
	}
	return ts, nil
}

func (ts *syncTargets) add(t *syncTarget) {
	ts.byID[t.id] = t
	ts.byCompany[t.company] = append(ts.byCompany[t.company], t)
}

// created adds the datasync datatarget that e creates, and returns it; nil
// when e creates a messages datatarget, or one already known (a commit
// applied again).
func (ts *syncTargets) created(e eventstore.RecordedEvent) (*syncTarget, error) {
	var ev datatarget.Created
	if err := bulk.Decode(e, &ev); err != nil {
		return nil, err
	}
	if ev.Type != datatarget.Datasync || ev.Settings == nil || ts.byID[ev.ID] != nil {
		return nil, nil
	}
	t := &syncTarget{id: ev.ID, company: e.Metadata.CompanyID, datatype: ev.Settings.Datatype, fields: ev.Settings.Fields,
		fromStart: ev.Settings.FromStart, applied: e.Position, dirty: true}
	ts.add(t)
	return t, nil
}

// takers returns the change e of an entity of datatype dt with the
// datatargets that take it: those of its company and datatype that have
// not taken it or a later change yet.
func (ts *syncTargets) takers(e *eventstore.RecordedEvent, dt datatarget.Datatype) syncChange {
	c := syncChange{event: e}
	for _, t := range ts.byCompany[e.Metadata.CompanyID] {
		if t.datatype == dt && t.applied.Less(e.Position) {
			c.targets = append(c.targets, t)
		}
	}
	return c
}

// syncTargetRow is a datasync_targets row as write sends it.
type syncTargetRow struct {
	ID       string   `json:"datatarget_id"`
	Company  string   `json:"company_id"`
	Datatype string   `json:"datatype"`
	Fields   []string `json:"fields"`
	Last     int64    `json:"last_message_number"`
	TxID     string   `json:"applied_tx"`
	Position int64    `json:"applied_position"`
}

// write saves the datatargets that changed, in one statement.
func (ts *syncTargets) write(ctx context.Context, tx pgx.Tx) error {
	var rows []syncTargetRow
	for _, t := range ts.byID {
		if t.dirty {
			rows = append(rows, syncTargetRow{ID: t.id, Company: t.company, Datatype: string(t.datatype), Fields: t.fields,
				Last: t.last, TxID: strconv.FormatUint(t.applied.TxID, 10), Position: t.applied.Global})
		}
	}
	return bulk.ExecRows(ctx, tx, "datasync", `
		INSERT INTO datasync_targets (datatarget_id, company_id, datatype, fields, last_message_number, applied_tx, applied_position)
		SELECT datatarget_id, company_id, datatype, fields, last_message_number, applied_tx::xid8, applied_position
		FROM jsonb_to_recordset($1::jsonb) AS r(datatarget_id text, company_id text, datatype text, fields text[],
			last_message_number bigint, applied_tx text, applied_position bigint)
		ON CONFLICT (datatarget_id) DO UPDATE SET last_message_number = EXCLUDED.last_message_number,
			applied_tx = EXCLUDED.applied_tx, applied_position = EXCLUDED.applied_position`, rows)
}
