package datasync

import (
	"context"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
)

// Datasync writes the queues of datasync datatargets: each change of an
// entity becomes one message {"update_id", "datatype", "data"} of every
// datasync datatarget of its company and datatype, data being the entity
// as retrieval shows it right after the change. The messages are numbered
// from 1 per datatarget in log order.
//
// Why a projection and not events: a message holds personal data in clear,
// and the event log must hold it only sealed, so that forgetting a
// customer (destroying its key) erases it. The queues are read models
// instead, and a forgetting anonymises the forgotten customer's earlier
// messages. A rebuild replays the same log in the same order and so gives
// every message its number again, anonymised where the key is gone.
//
// Why the state comes from the log and not from a read model: the message
// must show the entity as it was right after its change, and the customers
// read model is another projection, ahead or behind this one and, in a
// rebuild, already at the end of the log. Each datatype's feed folds the
// entity's own stream up to the change instead (datasyncFeed).
//
// It is async: an import must not wait for it. It is exactly once through
// its checkpoint, like every async projector, and idempotent besides: a
// datatarget records the last change it took, and takes none at or before
// it.
type Datasync struct {
	feeds  map[datatarget.Datatype]datasyncFeed
	byType map[string]datatarget.Datatype // event type -> datatype
	log    eventstore.EventLog
}

// NewDatasync returns the projector; keys opens the customers' sealed
// changes, and it reads log besides the port: its runtime's
// (RuntimeConfig.Log, or the log its store offers), and the log given to
// Rebuild, which both check it. Adding a datatype: write its datasyncFeed, add it here, and mark
// it available in domain/datatarget (datatypes).
func NewDatasync(keys crypto.KeyStore, log eventstore.EventLog) *Datasync {
	if keys.Keyring == nil || log == nil {
		panic("projections: NewDatasync: KeyStore without a keyring, or no log")
	}
	p := &Datasync{feeds: map[datatarget.Datatype]datasyncFeed{
		datatarget.Customers: customersFeed{keys: keys},
		datatarget.Products:  productsFeed(),
		datatarget.Events:    eventsFeed{keys: keys},
		datatarget.Sales:     salesFeed{keys: keys},
		datatarget.Shops:     shopsFeed(),
	}, byType: map[string]datatarget.Datatype{}, log: log}
	for dt, f := range p.feeds {
		for _, t := range f.eventTypes() {
			p.byType[t] = dt
		}
	}
	return p
}

// EventLog returns the log the projector reads, which the
// runtime and the rebuild check against their own.
func (p *Datasync) EventLog() eventstore.EventLog { return p.log }

// Name implements Projector.
func (*Datasync) Name() string { return "datasync" }

// Tables implements Projector.
func (*Datasync) Tables() []string { return []string{"datasync_targets", "datasync_messages"} }

// WantsCommit implements CommitFilter: a commit concerns datasync when its
// company has a datasync datatarget, or when it creates one. An import of
// a company without datatargets (the common case) is then not read at all.
//
// Whether the commit creates one the header says, when it lists the
// commit's types; asking the log instead (for a header written before
// headers listed them) means reading the type of every event of the
// commit, a thousand for an import, so the log is asked only when the
// company has no datatarget.
func (p *Datasync) WantsCommit(ctx context.Context, tx pgx.Tx, h bus.CommitHeader) (bool, error) {
	if h.Types != nil && slices.Contains(h.Types, datatarget.CreatedType) {
		return true, nil
	}
	var wants bool
	err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM datasync_targets WHERE company_id = $1)`, h.CompanyID).Scan(&wants)
	if err == nil && !wants && h.Types == nil {
		wants, err = p.log.CommitHasType(ctx, tx, h.TxID, datatarget.CreatedType)
	}
	if err != nil {
		return false, fmt.Errorf("datasync: wants commit: %w", err)
	}
	return wants, nil
}

// Apply implements Projector: first the datatargets created in events
// (with their backlog when they start from the start of the log), then the
// changes of each datatype in log order, then the forgettings of the
// customers whose personal fields events and sales messages hold, then
// the datatargets' counters.
func (p *Datasync) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	var companies []string
	seen := map[string]bool{}
	for _, e := range events {
		if _, ok := p.byType[e.Type]; (ok || e.Type == datatarget.CreatedType) && !seen[e.Metadata.CompanyID] {
			seen[e.Metadata.CompanyID] = true
			companies = append(companies, e.Metadata.CompanyID)
		}
	}
	if len(companies) == 0 {
		return nil
	}
	ts, err := loadSyncTargets(ctx, tx, companies)
	if err != nil {
		return err
	}
	for _, e := range events {
		if e.Type != datatarget.CreatedType {
			continue
		}
		t, err := ts.created(e)
		if err != nil {
			return err
		}
		if t != nil && p.feeds[t.datatype] == nil {
			// Campaigns: fed by the campaign_stats projection, which
			// keeps its datatargets in its own table.
			t.dirty = false
			continue
		}
		if t == nil || !t.fromStart {
			continue
		}
		if err := p.backlog(ctx, tx, ts, t); err != nil {
			return err
		}
	}
	changes := map[datatarget.Datatype][]syncChange{}
	for i, e := range events {
		dt, ok := p.byType[e.Type]
		if !ok {
			continue
		}
		if c := ts.takers(&events[i], dt); len(c.targets) > 0 {
			changes[dt] = append(changes[dt], c)
		}
	}
	for dt, cs := range changes {
		if err := p.emit(ctx, tx, dt, ts, cs); err != nil {
			return err
		}
	}
	// Events and sales hold their customer's personal fields.
	if err := p.forgetPersonal(ctx, tx, ts, events); err != nil {
		return err
	}
	return ts.write(ctx, tx)
}
