package datasync_test

import (
	"context"
	"encoding/json"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"testing"
	"time"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/domain/access"
	"github.com/clientele/clientele/domain/company"
	"github.com/clientele/clientele/domain/customer"
	"github.com/clientele/clientele/domain/datatarget"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/datasync"
	"github.com/clientele/clientele/projections/internal/projectiontest"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/readmodels"
)

// datasyncEnv runs the datasync projector as serve does (async, behind
// the inline ones), with a company, the commands, and customers appended
// as the write side appends them.
type datasyncEnv struct {
	*projectiontest.Customers
	cmds commands.Commands
	co   company.Company
	sync *datasync.Datasync
	rt   *projections.Runtime
}

func newDatasyncEnv(t *testing.T) *datasyncEnv {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	pool := projectiontest.PgtestPool(t)
	keys := crypto.KeyStore{Keyring: kr}
	store := postgres.New(pool)
	e := &datasyncEnv{Customers: &projectiontest.Customers{T: t, Pool: pool, Store: store, Keys: keys}, sync: datasync.NewDatasync(keys, postgres.EventLog{})}
	e.rt, err = projections.NewRuntime(projections.RuntimeConfig{Pool: pool, Store: store, ConsumerSettings: bus.ConsumerSettings{PollInterval: 50 * time.Millisecond},
		Inline: projectors.Inline(), Async: []projections.Projector{e.sync}})
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
	return e
}

// datatarget creates a datasync datatarget of customers.
func (e *datasyncEnv) datatarget(name string, fields []string, fromStart bool) string {
	e.T.Helper()
	d, err := e.cmds.CreateDatatarget.Handle(context.Background(), commands.CreateDatatarget{
		Principal: access.System(e.co.ID), Type: datatarget.Datasync, Name: name,
		Settings: datatarget.Settings{Datatype: datatarget.Customers, Fields: fields, FromStart: fromStart},
	})
	if err != nil {
		e.T.Fatal(err)
	}
	return d.ID
}

// set upserts a customer of the company with the given fields.
func (e *datasyncEnv) set(id string, fields map[string]any) {
	e.T.Helper()
	e.Upsert(e.co.ID, id, customer.Changes{Set: fields})
}

// syncMessage is a datasync message as retrieved.
type syncMessage struct {
	UpdateID string         `json:"update_id"`
	Datatype string         `json:"datatype"`
	Data     map[string]any `json:"data"`
}

// messages retrieves every message of a datatarget, once the projector
// has caught up with the log.
func (e *datasyncEnv) messages(id string) []syncMessage {
	e.T.Helper()
	projectiontest.WaitCaughtUp(e.T, e.Pool, e.sync)
	page, err := readmodels.NewDatatargets(e.Pool, e.Keys).Messages(context.Background(), e.co.ID, id, 0, datatarget.MaxRetrieveLimit)
	if err != nil {
		e.T.Fatal(err)
	}
	out := make([]syncMessage, len(page.Messages))
	for i, m := range page.Messages {
		if err := json.Unmarshal(m, &out[i]); err != nil {
			e.T.Fatal(err)
		}
	}
	if n := int64(len(out)); page.LastMessageNumber != n {
		e.T.Errorf("last message number %d for %d messages", page.LastMessageNumber, n)
	}
	return out
}

// positions are the global positions of the customer events of the
// company, as update ids, in log order.
func (e *datasyncEnv) positions() []string {
	e.T.Helper()
	return pgtest.EventPositions(e.T, e.Pool, "company_id = $1 AND event_type LIKE 'Customer%'", e.co.ID)
}
