package delivery_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/clientele/clientele/delivery"
)

// TestRetentionKeepsSizesFlat measures the queue and the outlet log
// under a steady load with retention: each round posts 500 messages,
// lets an unbatched outlet deliver them (500 attempts, each with its raw
// texts), then a "day" later (the pruner's clock two days further each
// round, retention one day, raw texts one day) prunes and VACUUMs, as
// autovacuum would within the day. Rows and on-disk sizes stay flat
// round after round, where without pruning they would grow by 500 rows
// a round each. Its log is the table of docs/benchmarks.md ("Retention
// under a steady load").
func TestRetentionKeepsSizesFlat(t *testing.T) {
	const rounds, perRound = 10, 500
	h := newHarness(t)
	h.keepDays(1)
	rcv := newReceiver(t)
	o := h.outlet(rcv.url(), false)
	h.run(h.config())
	ctx := context.Background()
	type sizes struct {
		messages, entries, texts int64
		queueBytes, logBytes     int64
	}
	measure := func() sizes {
		t.Helper()
		// VACUUM removes only the rows no snapshot may still see: one
		// taken before the pruning committed (a deliverer's poll, slow on
		// a loaded machine) keeps them, and the next round's rows would go
		// to new pages. So wait for the snapshots older than now to end.
		var now uint64
		if err := h.pool.QueryRow(ctx, `SELECT txid_current()::text::bigint`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the snapshots older than the pruning to end", func() bool {
			var older int
			if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()
					AND pid <> pg_backend_pid() AND (age(backend_xmin) > age($1::text::xid) OR age(backend_xid) > age($1::text::xid))`,
				fmt.Sprint(uint32(now))).Scan(&older); err != nil {
				t.Fatal(err)
			}
			return older == 0
		})
		// Twice, as autovacuum would within the day: the second pass
		// recycles the index pages the first deleted (a page deleted by
		// one VACUUM is free for reuse once no snapshot older than its
		// deletion runs, which the first pass itself cannot wait for).
		// With one pass, the log's indexes grew round after round on a
		// loaded machine (CI: 800 kB after round 3, 1,272 kB after 10).
		for range 2 {
			for _, table := range []string{"datatarget_messages", "outlet_log"} {
				if _, err := h.pool.Exec(ctx, "VACUUM "+table); err != nil {
					t.Fatal(err)
				}
			}
		}
		var s sizes
		if err := h.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM datatarget_messages), (SELECT count(*) FROM outlet_log),
				(SELECT count(*) FROM outlet_log WHERE raw_key IS NOT NULL),
				pg_total_relation_size('datatarget_messages'), pg_total_relation_size('outlet_log')`).Scan(
			&s.messages, &s.entries, &s.texts, &s.queueBytes, &s.logBytes); err != nil {
			t.Fatal(err)
		}
		return s
	}
	var after []sizes
	start := time.Now()
	for r := 1; r <= rounds; r++ {
		h.post(perRound)
		waitFor(t, 60*time.Second, fmt.Sprintf("round %d delivered", r), func() bool {
			return h.outletState(o.ID).Progress.LastDeliveredMessageNumber == int64(r*perRound)
		})
		before := measure()
		p := h.prune(time.Duration(r)*48*time.Hour, func(c *delivery.Config) {
			c.Retention.OKTexts, c.Retention.FailedTexts = 24*time.Hour, 24*time.Hour
		})
		s := measure()
		after = append(after, s)
		t.Logf("round %2d: before pruning %4d messages %4d entries (%6d kB + %6d kB); pruned %+v; after %d messages, %d entries, %d with texts, queue %d kB, log %d kB",
			r, before.messages, before.entries, before.queueBytes/1024, before.logBytes/1024, p, s.messages, s.entries, s.texts, s.queueBytes/1024, s.logBytes/1024)
		if s.messages != 1 || s.entries != 1 || s.texts != 0 {
			t.Errorf("round %d: %d messages, %d entries, %d with texts kept; want 1, 1, 0", r, s.messages, s.entries, s.texts)
		}
	}
	t.Logf("%d messages delivered and pruned in %v", rounds*perRound, time.Since(start).Round(time.Millisecond))
	// On disk: space freed by a round is reused by the next.
	settled := after[2]
	for r, s := range after[3:] {
		if s.queueBytes > settled.queueBytes*3/2 || s.logBytes > settled.logBytes*3/2 {
			t.Errorf("round %d: queue %d B, log %d B, growing from %d B and %d B after round 3", r+4, s.queueBytes, s.logBytes, settled.queueBytes, settled.logBytes)
		}
	}
}
