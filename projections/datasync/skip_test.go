package datasync_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/projections/internal/projectiontest"
)

// TestDatasyncWantsCommit: the datasync projector asks for a commit only
// when its company has a datasync datatarget or the commit creates one, so
// imports of companies without datatargets are not read at all; and it
// still misses no change of a company that has one.
func TestDatasyncWantsCommit(t *testing.T) {
	e := newDatasyncEnv(t)
	ctx := context.Background()
	// Asked with and without the commit's types in its header (messages
	// written before headers had them): the answer is the same.
	wants := func(companyID string, txID uint64) bool {
		t.Helper()
		var types []string
		if err := e.Pool.QueryRow(ctx, `SELECT array_agg(DISTINCT event_type ORDER BY event_type) FROM events
			WHERE transaction_id = $1::text::xid8`, strconv.FormatUint(txID, 10)).Scan(&types); err != nil {
			t.Fatal(err)
		}
		var got [2]bool
		for i, h := range []bus.CommitHeader{{TxID: txID, CompanyID: companyID}, {TxID: txID, CompanyID: companyID, Types: types}} {
			err := pgx.BeginFunc(ctx, e.Pool, func(tx pgx.Tx) error {
				var err error
				got[i], err = e.sync.WantsCommit(ctx, tx, h)
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		if got[0] != got[1] {
			t.Errorf("wants commit %d: %v without its types, %v with %v", txID, got[0], got[1], types)
		}
		return got[1]
	}
	lastTx := func() uint64 {
		t.Helper()
		return projectiontest.LastPosition(t, e.Pool).TxID
	}
	e.set("c1", map[string]any{"first_name": "Ann"})
	if wants(e.co.ID, lastTx()) {
		t.Error("wants a commit of a company without datasync datatargets")
	}
	id := e.datatarget("all", nil, false)
	if !wants(e.co.ID, lastTx()) {
		t.Error("does not want the commit creating a datatarget")
	}
	// The projector asks within its checkpoint order: the creation is
	// applied before any later commit is asked about.
	projectiontest.WaitCaughtUp(t, e.Pool, e.sync)
	e.set("c2", map[string]any{"first_name": "Bo"})
	if !wants(e.co.ID, lastTx()) {
		t.Error("does not want a commit of a company with a datatarget")
	}
	if got := e.messages(id); len(got) != 1 || got[0].Data["first_name"] != "Bo" {
		t.Errorf("messages %+v, want the one change after the datatarget", got)
	}
	if wants("globex", lastTx()) {
		t.Error("wants a commit for another company without datatargets")
	}
}
