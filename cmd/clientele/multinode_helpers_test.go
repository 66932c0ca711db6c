package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/nats-io/nats.go"

	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/natstest"
)

// nodeAppName is the application_name of node i's database connections,
// by which the test tells whose transaction holds what.
func nodeAppName(i int) string { return fmt.Sprintf("clientele-node-%d", i) }

// withAppName returns the connection string db with application_name set.
func withAppName(db, name string) string {
	if !strings.HasPrefix(db, "postgres://") && !strings.HasPrefix(db, "postgresql://") {
		return db + " application_name=" + name // key=value form
	}
	sep := "?"
	if strings.Contains(db, "?") {
		sep = "&"
	}
	return db + sep + "application_name=" + url.QueryEscape(name)
}

// asyncProjectorNames are the names of serve's async projectors, with
// segment membership on (its default): their checkpoints' and their
// consumer groups' names.
func asyncProjectorNames(t *testing.T) []string {
	t.Helper()
	kr, err := crypto.NewKeyring(crypto.NewMasterKey())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range asyncProjectors(crypto.KeyStore{Keyring: kr}, postgres.EventLog{}, true) {
		names = append(names, p.Name())
	}
	return names
}

// heldChunk is an import chunk whose row lock a transaction holds, that
// is one being applied (imports.ImportChunkHandler locks the chunk for
// the whole transaction that applies it).
type heldChunk struct {
	node  string // the application_name of the holder's connection
	runID string
	seq   int
	// waiting is true when the holder's transaction waits for its client:
	// it cannot end unless the client sends something.
	waiting bool
}

// heldChunks lists the chunks being applied, with the connection that
// applies each: the transaction whose xid is in the row's xmax (a FOR
// UPDATE lock) and still running (it holds the lock on its own xid).
func heldChunks(ctx context.Context, conn *pgx.Conn) ([]heldChunk, error) {
	rows, err := conn.Query(ctx, `SELECT a.application_name, c.run_id, c.seq,
			a.state = 'idle in transaction' OR a.wait_event_type IS NOT DISTINCT FROM 'Client'
		FROM import_chunks c
		JOIN pg_locks l ON l.locktype = 'transactionid' AND l.transactionid = c.xmax
			AND l.mode = 'ExclusiveLock' AND l.granted
		JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE c.processed_at IS NULL`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (heldChunk, error) {
		var h heldChunk
		err := r.Scan(&h.node, &h.runID, &h.seq, &h.waiting)
		return h, err
	})
}

// leaseHolderNode is the index of the node holding the outlet's lease,
// -1 when none of nodes does.
func leaseHolderNode(ctx context.Context, conn *pgx.Conn, nodes []*node) int {
	var holder string
	_ = conn.QueryRow(ctx, `SELECT lease_holder FROM outlet_deliveries`).Scan(&holder)
	if parts := strings.Split(holder, ":"); len(parts) == 3 {
		pid, _ := strconv.Atoi(parts[1])
		for i, n := range nodes {
			if n.cmd.Process.Pid == pid {
				return i
			}
		}
	}
	return -1
}

// processStopped reports whether the process is stopped (SIGSTOP).
func processStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold spaces, the state follows its ')'.
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'T'
}

// killChunkApplier kills, with SIGKILL, a node caught applying an import
// chunk that also holds the outlet's lease, and returns the node's index
// and the chunk. The catch is made certain: the node is stopped
// (SIGSTOP) first, and killed only once its chunk's transaction, still
// holding the chunk, waits for the stopped node (twice in a row, so that
// a COMMIT it sent just before stopping would have been seen); otherwise
// it goes on (SIGCONT) and the test looks again.
func killChunkApplier(t *testing.T, conn *pgx.Conn, nodes []*node, timeout time.Duration) (int, heldChunk) {
	t.Helper()
	ctx := context.Background()
	deadline := time.Now().Add(timeout)
	var seen string
	for ; ; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no node holding the outlet's lease was caught applying an import chunk in %v; last seen: %s", timeout, seen)
		}
		lease := leaseHolderNode(ctx, conn, nodes)
		held, err := heldChunks(ctx, conn)
		if err != nil {
			t.Fatal(err)
		}
		seen = fmt.Sprintf("lease holder node %d, chunks held %+v", lease, held)
		if lease < 0 || !slices.ContainsFunc(held, func(h heldChunk) bool { return h.node == nodeAppName(lease) }) {
			continue
		}
		n := nodes[lease]
		if err := n.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		for !processStopped(n.cmd.Process.Pid) {
			if time.Now().After(deadline) {
				t.Fatalf("node %d did not stop on SIGSTOP", lease)
			}
			time.Sleep(time.Millisecond)
		}
		// Stopped, the node sends nothing more: its chunk's transaction
		// ends its statement and then waits for it, or it had already
		// committed.
		waited := 0
		var chunk heldChunk
		// Bounded: a statement may also wait for a lock that another
		// transaction of the stopped node holds; then look again.
		for giveUp := time.Now().Add(time.Second); waited < 2 && time.Now().Before(giveUp); {
			held, err := heldChunks(ctx, conn)
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(held, func(h heldChunk) bool { return h.node == nodeAppName(lease) })
			if i < 0 {
				break
			}
			if chunk = held[i]; chunk.waiting {
				waited++
			} else {
				waited = 0
			}
		}
		if waited == 2 && leaseHolderNode(ctx, conn, nodes) == lease {
			n.kill()
			return lease, chunk
		}
		if err := n.cmd.Process.Signal(syscall.SIGCONT); err != nil {
			t.Fatal(err)
		}
	}
}

// checkNATSConsumers checks that the work went through NATS JetStream:
// the stream of each topic (named after it, see bus.NATS) holds one
// message per commit and per chunk, and its durable consumers are
// exactly the consumer groups (the async projectors on the commits, the
// import worker on the chunks), each of which was delivered and acked
// every message. It waits for the consumers to drain first: the
// projections catch up from the log without their messages.
func checkNATSConsumers(t *testing.T, c *outageClient, natsURL string, conn *pgx.Conn) {
	t.Helper()
	ctx := context.Background()
	js := natstest.JetStream(t, natsURL)
	var commits, chunks uint64
	if err := conn.QueryRow(ctx, `SELECT (SELECT count(DISTINCT transaction_id) FROM events), (SELECT count(*) FROM import_chunks)`).Scan(&commits, &chunks); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []struct {
		stream string
		groups []string
		// msgs is the number of messages the stream must hold: the relay
		// publishes each outbox row with its UUID as message id, so a
		// row published twice (a relay killed before its outbox ack) is
		// dropped as a duplicate.
		msgs uint64
	}{
		{bus.CommitsTopic, asyncProjectorNames(t), commits},
		{imports.ChunksTopic, []string{imports.ImportWorkerName}, chunks},
	} {
		state := func() (*nats.StreamInfo, map[string]*nats.ConsumerInfo, error) {
			si, err := js.StreamInfo(topic.stream)
			if err != nil {
				return nil, nil, err
			}
			infos := map[string]*nats.ConsumerInfo{}
			for ci := range js.ConsumersInfo(topic.stream) {
				infos[ci.Name] = ci
			}
			return si, infos, nil
		}
		var si *nats.StreamInfo
		var infos map[string]*nats.ConsumerInfo
		var err error
		c.waitFor("the consumers of stream "+topic.stream+" drained", time.Minute, func() (bool, string) {
			si, infos, err = state()
			if errors.Is(err, nats.ErrStreamNotFound) {
				// Made when the first node subscribed: the nodes never
				// used NATS.
				t.Fatalf("NATS has no stream %s: %v", topic.stream, err)
			}
			if err != nil {
				return false, err.Error()
			}
			var where []string
			done := si.State.Msgs == topic.msgs
			for _, g := range topic.groups {
				ci := infos[g]
				if ci == nil {
					where = append(where, g+": no consumer")
					done = false
					continue
				}
				where = append(where, fmt.Sprintf("%s: %d pending, %d unacked, acked to %d",
					g, ci.NumPending, ci.NumAckPending, ci.AckFloor.Stream))
				done = done && ci.NumPending == 0 && ci.NumAckPending == 0 && ci.AckFloor.Stream == si.State.LastSeq
			}
			return done, fmt.Sprintf("%d of %d messages in the stream; %s", si.State.Msgs, topic.msgs, strings.Join(where, "; "))
		})
		if si.State.Msgs != topic.msgs {
			t.Errorf("stream %s holds %d messages, want %d", topic.stream, si.State.Msgs, topic.msgs)
		}
		var names []string
		for name, ci := range infos {
			names = append(names, name)
			if ci.Config.Durable != name {
				t.Errorf("consumer %s of stream %s is not durable (%q)", name, topic.stream, ci.Config.Durable)
			}
			if ci.Delivered.Consumer == 0 || ci.Delivered.Stream != si.State.LastSeq {
				t.Errorf("consumer %s of stream %s: delivered %+v, want every message to stream sequence %d",
					name, topic.stream, ci.Delivered, si.State.LastSeq)
			}
		}
		slices.Sort(names)
		want := slices.Sorted(slices.Values(topic.groups))
		if !slices.Equal(names, want) {
			t.Errorf("stream %s has the consumers %v, want %v", topic.stream, names, want)
		}
		t.Logf("NATS stream %s: %d messages, consumers %v", topic.stream, si.State.Msgs, names)
	}
}

// checkEventsApplied checks that every async projector applied every
// commit of the log once. Each one adds a commit's number of events to
// its checkpoint's events_applied in the very transaction that applies
// the commit and moves the checkpoint past it, whichever way the commit
// came (its message, the catch-up loop, a page of catch-up, a parked
// company's hold): with the checkpoint at the head of the log,
// events_applied equals the number of events in the log exactly when no
// commit was skipped or applied twice (two nodes that both applied one
// would both have added it). The read models cannot tell: upserts, and a
// datasync queue, which takes no change at or before the last it took,
// come out the same from a commit applied twice.
func checkEventsApplied(t *testing.T, c *outageClient, conn *pgx.Conn) {
	t.Helper()
	names := asyncProjectorNames(t)
	type row struct {
		name            string
		applied, events int64
		atHead          bool
	}
	var rows []row
	c.waitFor("every checkpoint at the head of the log", time.Minute, func() (bool, string) {
		res, err := conn.Query(context.Background(), `WITH head AS (
				SELECT transaction_id, global_position FROM events ORDER BY transaction_id DESC, global_position DESC LIMIT 1)
			SELECT c.name, c.events_applied, (SELECT count(*) FROM events),
				(c.transaction_id, c.global_position) = (SELECT transaction_id, global_position FROM head)
			FROM projection_checkpoints c WHERE c.name = ANY($1) ORDER BY c.name`, names)
		if err == nil {
			rows, err = pgx.CollectRows(res, func(r pgx.CollectableRow) (row, error) {
				var x row
				err := r.Scan(&x.name, &x.applied, &x.events, &x.atHead)
				return x, err
			})
		}
		if err != nil {
			return false, err.Error()
		}
		ok := len(rows) == len(names)
		for _, r := range rows {
			ok = ok && r.atHead
		}
		return ok, fmt.Sprintf("%+v", rows)
	})
	for _, r := range rows {
		if r.applied != r.events {
			t.Errorf("projector %s applied %d events of a log of %d: a commit was applied %s", r.name, r.applied, r.events,
				map[bool]string{true: "twice", false: "never"}[r.applied > r.events])
		}
	}
}

// chunkDone reports whether the chunk was applied.
func chunkDone(ctx context.Context, conn *pgx.Conn, h heldChunk) (bool, error) {
	var done bool
	err := conn.QueryRow(ctx, `SELECT processed_at IS NOT NULL FROM import_chunks WHERE run_id = $1 AND seq = $2`, h.runID, h.seq).Scan(&done)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, fmt.Errorf("chunk %d of run %s is gone", h.seq, h.runID)
	}
	return done, err
}
