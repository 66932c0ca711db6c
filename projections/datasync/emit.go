package datasync

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
)

// datasyncFeed follows one datatype for the Datasync projector.
type datasyncFeed interface {
	// eventTypes are the types of the events that change an entity of
	// the datatype, each one change.
	eventTypes() []string
	// states returns, for each change (events of eventTypes in log order,
	// possibly of several companies), the entity as retrieval shows it
	// right after that change. It must depend on the log (and the keys)
	// only, never on another projection's tables, so that a rebuild
	// gives the same states.
	states(ctx context.Context, tx pgx.Tx, log eventstore.EventLog, changes []*eventstore.RecordedEvent) ([]entityState, error)
	// alwaysSent are the fields every message carries whatever the
	// datatarget's fields, so that a receiver can always tell which
	// entity changed and whether it is gone.
	alwaysSent() []string
}

// entityState is an entity as retrieval shows it after a change.
type entityState struct {
	id string
	// fields are the retrieved entity's fields, each encoded, the
	// feed's alwaysSent among them.
	fields  map[string]json.RawMessage
	deleted bool
	// forgets marks the change that forgot the entity: every earlier
	// message about it is anonymised then.
	forgets bool
}

// forgetting is an entity forgotten in a call, and the datatargets that
// may hold messages about it.
type forgetting struct {
	entity  string
	targets []string
}

// emit turns changes of datatype dt into messages: numbered in log order
// per datatarget, anonymised when their entity is forgotten, written. The
// earlier messages of a forgotten entity are anonymised in place.
func (p *Datasync) emit(ctx context.Context, tx pgx.Tx, dt datatarget.Datatype, ts *syncTargets, changes []syncChange) error {
	evs := make([]*eventstore.RecordedEvent, len(changes))
	for i, c := range changes {
		evs[i] = c.event
	}
	feed := p.feeds[dt]
	states, err := feed.states(ctx, tx, p.log, evs)
	if err != nil {
		return err
	}
	if len(states) != len(changes) {
		return fmt.Errorf("projections: datasync: %s: %d states for %d changes", dt, len(states), len(changes))
	}
	var rows SyncRows
	var forgets []forgetting
	gone := map[string]bool{} // company and entity
	for i, c := range changes {
		st, e := states[i], c.event
		updateID := strconv.FormatInt(e.Position.Global, 10)
		for _, t := range c.targets {
			body, err := EncodeSyncMessage(updateID, dt, Restrict(st.fields, feed.alwaysSent(), t.fields))
			if err != nil {
				return err
			}
			t.last++
			t.dirty = true
			if t.applied.Less(e.Position) {
				t.applied = e.Position
			}
			rows.Add(t.id, t.company, st.id, updateID, t.last, body, e.RecordedAt, st.deleted)
		}
		if st.forgets {
			company := e.Metadata.CompanyID
			gone[company+"\x00"+st.id] = true
			f := forgetting{entity: st.id}
			for _, t := range ts.byCompany[company] {
				if t.datatype == dt {
					f.targets = append(f.targets, t.id)
				}
			}
			forgets = append(forgets, f)
		}
	}
	// The rows of this call first: no row version of them ever holds the
	// data of a person forgotten by now.
	for i := range rows.numbers {
		if gone[rows.companies[i]+"\x00"+rows.entities[i]] {
			if rows.bodies[i], err = EncodeSyncMessage(rows.updateIDs[i], dt, forgottenData(rows.entities[i], rows.deleted[i])); err != nil {
				return err
			}
		}
	}
	if err := anonymiseStored(ctx, tx, dt, forgets); err != nil {
		return err
	}
	return rows.insert(ctx, tx)
}
