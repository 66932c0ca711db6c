package datasync_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
)

// breakableSync is the datasync projector, failing every commit holding
// a "Boom" event while broken.
type breakableSync struct {
	*datasync.Datasync
	broken atomic.Bool
}

func (b *breakableSync) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	for _, e := range events {
		if e.Type == "Boom" && b.broken.Load() {
			return projectiontest.ErrBoom
		}
	}
	return b.Datasync.Apply(ctx, tx, events)
}

// TestForgettingIsNeverHeldByDatasync: with the company parked for the
// datasync projector, forgetting a customer anonymises the messages
// already written about it at once; the held changes, resumed, are
// numbered in log order and come out as a rebuild writes them.
func TestForgettingIsNeverHeldByDatasync(t *testing.T) {
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := pgtest.NewPool(t)
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	p := &breakableSync{Datasync: datasync.NewDatasync(keys, postgres.EventLog{})}
	p.broken.Store(true)
	e := &datasyncEnv{Customers: &projectiontest.Customers{T: t, Pool: pool, Store: store, Keys: keys}, sync: p.Datasync}
	e.rt, err = projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, Inline: projectors.Inline(),
		Async: []projections.Projector{p}, ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond,
			RetryMaxInterval: 10 * time.Millisecond, MessageAttempts: 2, StallAfter: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	store.AddHook(e.rt.InlineHook())
	store.AddHook(projections.CommitPublisher{})
	projectiontest.StartRuntime(t, e.rt)
	e.cmds = commands.New(store, time.Now)
	if e.co, err = e.cmds.CreateCompany.Handle(context.Background(), commands.CreateCompany{
		Principal: access.System(""), Slug: "acme", Settings: company.Settings{Name: "Acme"}}); err != nil {
		t.Fatal(err)
	}
	all := e.datatarget("all", nil, false)
	e.set("p1", map[string]any{"email": "zq-secret@example.org"})
	projectiontest.MustAppend(t, store, projectiontest.Boom(e.co.ID, "boom"))
	projectiontest.WaitFor(t, 10*time.Second, "acme parked", func() bool { return len(projectiontest.Stalls(t, e.rt)) == 1 })
	e.set("k1", map[string]any{"email": "keep@example.org"})
	e.set("p1", map[string]any{"first_name": "Xyzzysecret"})
	e.End(e.co.ID, "p1", customer.TypeForgotten)
	if got := e.messages(all); len(got) != 1 || !cmp.Equal(got[0].Data, map[string]any{"id": "p1", "is_deleted": false, "is_forgotten": true}) {
		t.Errorf("messages while acme is parked: %+v, want the first one, anonymised", got)
	}
	if n := e.count("zq-secret", "Xyzzysecret"); n != 0 {
		t.Errorf("%d messages hold the forgotten customer's data", n)
	}

	p.broken.Store(false)
	if _, err := e.rt.RetryStall(context.Background(), "datasync", e.co.ID); err != nil {
		t.Fatal(err)
	}
	got := e.messages(all)
	var ids []string
	for _, m := range got {
		ids = append(ids, m.UpdateID)
	}
	if diff := cmp.Diff(e.positions(), ids); diff != "" {
		t.Errorf("update ids after the retry (-log order +got):\n%s", diff)
	}
	resumed := e.tables()
	e.rebuild()
	if diff := cmp.Diff(resumed, e.tables()); diff != "" {
		t.Errorf("resumed, then rebuilt (-resumed +rebuilt):\n%s", diff)
	}
}
