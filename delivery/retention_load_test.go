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
	// waitOutSnapshots waits until no snapshot taken before now is left,
	// in any database of the server: PostgreSQL 15 recycles a deleted
	// index page only once no snapshot of the whole server may still
	// see it (BTPageIsRecyclable asks the shared horizon), so on the
	// test server, shared by every test process, another package's
	// transaction kept this one's index pages from reuse (CI: the
	// queue's index grew 32 kB a round, the log's 136 kB, rounds 3
	// to 8). VACUUM removes heap rows only once no snapshot of this
	// database may still see them, which the same wait covers.
	waitOutSnapshots := func() {
		t.Helper()
		var now uint64
		if err := h.pool.QueryRow(ctx, `SELECT txid_current()::text::bigint`).Scan(&now); err != nil {
			t.Fatal(err)
		}
		waitFor(t, 60*time.Second, "the snapshots older than the pruning to end", func() bool {
			var older int
			if err := h.pool.QueryRow(ctx, `SELECT count(*) FROM pg_stat_activity WHERE pid <> pg_backend_pid()
					AND (age(backend_xmin) > age($1::text::xid) OR age(backend_xid) > age($1::text::xid))`,
				fmt.Sprint(uint32(now))).Scan(&older); err != nil {
				t.Fatal(err)
			}
			return older == 0
		})
	}
	measure := func() sizes {
		t.Helper()
		// Twice, as autovacuum would within the day: the first pass
		// removes the pruned rows and deletes the index pages they
		// emptied; the second, once no snapshot older than that
		// deletion is left, recycles those pages for the next round.
		for range 2 {
			waitOutSnapshots()
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
