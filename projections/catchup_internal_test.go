package projections

import (
	"context"
	"testing"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// TestNextCommit: the next commit is the next in log order, transaction
// ids compared as numbers (the text of 1000 sorts before 999's), and none
// past the bound.
func TestNextCommit(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	// Commit 999 took its positions last, as a commit that started first
	// and committed last does.
	_, err := pool.Exec(ctx, `INSERT INTO events (global_position, transaction_id, stream_id, stream_key, stream_version, company_id, event_type, data, metadata)
		SELECT g, x::xid8, 'tick-co-' || g, g, 1, 'co', 'Ticked', '{}', '{}'
		FROM (VALUES (1, '1000'), (2, '1001'), (3, '999'), (4, '999')) AS v(g, x)`)
	if err != nil {
		t.Fatal(err)
	}
	r := &Runtime{cfg: RuntimeConfig{Pool: pool, Log: postgres.EventLog{}}}
	for _, c := range []struct {
		name   string
		after  eventstore.Position
		upTo   uint64
		next   uint64
		exists bool
	}{
		{"from the start", eventstore.Position{}, 1001, 999, true},
		{"within a commit", eventstore.Position{TxID: 999, Global: 3}, 1001, 999, true},
		{"after 999", eventstore.Position{TxID: 999, Global: 4}, 1001, 1000, true},
		{"after 999, up to 1000", eventstore.Position{TxID: 999, Global: 4}, 1000, 1000, true},
		{"after 999, up to 999", eventstore.Position{TxID: 999, Global: 4}, 999, 0, false},
		{"after 1000", eventstore.Position{TxID: 1000, Global: 1}, 1001, 1001, true},
		{"at the end", eventstore.Position{TxID: 1001, Global: 2}, 1001, 0, false},
	} {
		next, ok, err := r.nextCommit(ctx, c.after, c.upTo)
		if err != nil || next != c.next || ok != c.exists {
			t.Errorf("%s: nextCommit(%v, %d) = %d, %v, %v; want %d, %v", c.name, c.after, c.upTo, next, ok, err, c.next, c.exists)
		}
	}
}
