package bus_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg/pgtest"
	"github.com/clientele/clientele/projections"
)

// consume acks n messages of the commits topic as group.
func consume(t *testing.T, pool *pgxpool.Pool, group string, n int) {
	t.Helper()
	transport, err := bus.NewPostgres(pool, bus.PostgresConfig{PollInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	sub, err := transport.Subscriber(group)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	msgs, err := sub.Subscribe(ctx, bus.CommitsTopic)
	if err != nil {
		t.Fatal(err)
	}
	for range n {
		select {
		case msg := <-msgs:
			msg.Ack()
		case <-ctx.Done():
			t.Fatalf("%s: too few messages", group)
		}
	}
	// The subscriber stores an ack with its batch: wait until the group's
	// offset is the last message's (every call here consumes them all)
	// before closing, which would otherwise roll the batch back.
	for {
		var caughtUp bool
		if err := pool.QueryRow(ctx, `SELECT coalesce((SELECT offset_acked FROM watermill_offsets_commits WHERE consumer_group = $1), -1)
			= (SELECT max("offset") FROM watermill_commits)`, group).Scan(&caughtUp); err != nil {
			t.Fatal(err)
		}
		if caughtUp {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("%s: acks not stored", group)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := sub.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestPrune deletes the outbox messages every listed consumer group has
// acked, and no other.
func TestPrune(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	store := postgres.New(pool, projections.CommitPublisher{})
	left := func() int {
		var n int
		if err := pool.QueryRow(ctx, `SELECT count(*) FROM watermill_commits`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	prune := func(groups ...string) int64 {
		n, err := bus.Prune(ctx, pool, bus.CommitsTopic, groups)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	for _, s := range []string{"a", "b", "c"} {
		if _, err := store.Append(ctx, commit("acme", "tick-acme-"+s, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if n := prune("slow"); n != 0 {
		t.Errorf("pruned %d before the group consumed anything", n)
	}
	consume(t, pool, "slow", 3)
	consume(t, pool, "fast", 3)
	if _, err := store.Append(ctx, commit("acme", "tick-acme-d", 1)); err != nil {
		t.Fatal(err)
	}
	consume(t, pool, "fast", 1)
	if n := prune("slow", "fast", "new"); n != 0 {
		t.Errorf("pruned %d while a group consumed nothing", n)
	}
	if n := prune("slow", "fast"); n != 3 || left() != 1 {
		t.Errorf("pruned %d, %d left; want the 3 both groups acked, 1 left", n, left())
	}
	consume(t, pool, "slow", 1)
	if n := prune("slow", "fast"); n != 1 || left() != 0 {
		t.Errorf("pruned %d, %d left; want 1, 0", n, left())
	}
}

// TestPruneOrdersTransactionsNumerically checks that the oldest acked
// position is found by transaction id as a number: as text, a group at
// transaction 1001 would look behind one at 999, and the messages the
// latter has not consumed would be deleted.
func TestPruneOrdersTransactionsNumerically(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(ctx, `
		INSERT INTO watermill_commits ("offset", uuid, payload, transaction_id)
		SELECT o, gen_random_uuid()::text, '{}', (997 + o)::text::xid8 FROM generate_series(1, 4) o;
		INSERT INTO watermill_offsets_commits (consumer_group, offset_acked, last_processed_transaction_id)
		VALUES ('behind', 2, '999'), ('ahead', 4, '1001')`); err != nil {
		t.Fatal(err)
	}
	n, err := bus.Prune(ctx, pool, bus.CommitsTopic, []string{"behind", "ahead"})
	if err != nil {
		t.Fatal(err)
	}
	var left []int64
	rows, err := pool.Query(ctx, `SELECT "offset" FROM watermill_commits ORDER BY "offset"`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var o int64
		if err := rows.Scan(&o); err != nil {
			t.Fatal(err)
		}
		left = append(left, o)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n != 2 || len(left) != 2 || left[0] != 3 || left[1] != 4 {
		t.Errorf("pruned %d, left %v; want 2 pruned and offsets [3 4] left (group behind has not consumed them)", n, left)
	}
}
