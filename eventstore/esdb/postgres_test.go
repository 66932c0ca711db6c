package esdb_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/esdb/esdbtest"
	"github.com/clientele/clientele/eventstore/storetest"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/pg/pgtest"
)

// coupled opens a store coupled with a fresh database that has a table
// state(id) for the tests' write-side rows. prefix "" picks new streams.
func coupled(t *testing.T, url, prefix string, pool *pgxpool.Pool) *esdb.Coupled {
	t.Helper()
	if pool == nil {
		pool = statePool(t)
	}
	c := open(t, url, prefix).WithPostgres(pool)
	if err := c.Check(context.Background()); err != nil {
		t.Fatal(err)
	}
	return c
}

func statePool(t *testing.T) *pgxpool.Pool {
	t.Helper()
	pool := pgtest.NewPool(t)
	if _, err := pool.Exec(context.Background(), `CREATE TABLE state (id text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	// A failed test may leave transactions prepared, which hold the
	// database: roll them back before it is dropped.
	t.Cleanup(func() {
		rows, _ := pool.Query(context.Background(), `SELECT gid FROM pg_prepared_xacts WHERE database = current_database()`)
		gids, _ := pgx.CollectRows(rows, pgx.RowTo[string])
		for _, gid := range gids {
			_, _ = pool.Exec(context.Background(), `ROLLBACK PREPARED '`+gid+`'`)
		}
	})
	return pool
}

// writeState writes the row id and stages a commit of one event to
// stream id, in one transaction of c.
func writeState(ctx context.Context, c *esdb.Coupled, id string) error {
	return c.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO state VALUES ($1)`, id); err != nil {
			return err
		}
		_, err := c.AppendTx(ctx, tx, oneEvent(id))
		return err
	})
}

func oneEvent(stream string) eventstore.Commit {
	return eventstore.Commit{
		Metadata: eventstore.Metadata{CompanyID: "c1"},
		Streams: []eventstore.StreamAppend{{StreamID: stream, ExpectedVersion: eventstore.NoStream,
			Events: []eventstore.Event{{Type: "Written", Data: []byte(`{"id":"` + stream + `"}`)}}}},
	}
}

// hasState reports whether the row id is committed.
func hasState(t *testing.T, pool *pgxpool.Pool, id string) bool {
	t.Helper()
	var ok bool
	if err := pool.QueryRow(context.Background(), `SELECT EXISTS (SELECT FROM state WHERE id = $1)`, id).Scan(&ok); err != nil {
		t.Fatal(err)
	}
	return ok
}

func prepared(t *testing.T, pool *pgxpool.Pool) int {
	t.Helper()
	var n int
	if err := pool.QueryRow(context.Background(), `SELECT count(*) FROM pg_prepared_xacts WHERE database = current_database()`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// streamsOf returns the streams of the log's events, in log order.
func streamsOf(t *testing.T, s eventstore.Store) []string {
	t.Helper()
	evs, err := s.ReadLog(context.Background(), eventstore.Position{}, 1000)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range evs {
		out = append(out, e.StreamID)
	}
	return out
}

// The port's contract holds for the coupled store: its Append runs through
// a prepared PostgreSQL transaction.
func TestCoupledContract(t *testing.T) {
	for name, url := range servers(t) {
		t.Run(name, func(t *testing.T) {
			pool := statePool(t)
			storetest.Run(t, func(t *testing.T) eventstore.Store { return coupled(t, url, "", pool) })
		})
	}
}

// The write-side row and the commit land together; the hooks see the
// commit as the log then has it; a failing hook, or a failing fn, leaves
// neither.
func TestCoupledCommitsBoth(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	c := coupled(t, srv.URL(), "", nil)
	var hooked []eventstore.Committed
	c.AddHook(eventstore.TxHookFunc(func(ctx context.Context, tx pgx.Tx, got eventstore.Committed) error {
		if strings.HasPrefix(got.Events[0].StreamID, "hookfails") {
			return errors.New("refused by the hook")
		}
		hooked = append(hooked, got)
		return nil
	}))
	if err := writeState(ctx, c, "a"); err != nil {
		t.Fatal(err)
	}
	if !hasState(t, c.Pool(), "a") {
		t.Fatal("the row of a committed commit is missing")
	}
	log, err := c.ReadLog(ctx, eventstore.Position{}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 1 || len(log) != 1 || hooked[0].TxID != 1 {
		t.Fatalf("hooks saw %+v, the log has %+v", hooked, log)
	}
	if diff := cmp.Diff(log, hooked[0].Events); diff != "" {
		t.Errorf("the hook saw the commit otherwise than the log has it (-log +hook):\n%s", diff)
	}

	if err := writeState(ctx, c, "hookfails"); err == nil || !strings.Contains(err.Error(), "refused by the hook") {
		t.Fatalf("a failing hook: %v", err)
	}
	fnErr := errors.New("fn fails")
	err = c.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := c.AppendTx(ctx, tx, oneEvent("fnfails")); err != nil {
			return err
		}
		return fnErr
	})
	if !errors.Is(err, fnErr) {
		t.Fatalf("a failing fn: %v", err)
	}
	if hasState(t, c.Pool(), "hookfails") || hasState(t, c.Pool(), "fnfails") {
		t.Error("a failed commit left its row")
	}
	if got := streamsOf(t, c); !cmp.Equal(got, []string{"a"}) {
		t.Errorf("the log has %v, want only a", got)
	}
	if n := prepared(t, c.Pool()); n != 0 {
		t.Errorf("%d transactions left prepared", n)
	}
	// A transaction without a commit commits plainly.
	if err := c.InTx(ctx, func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO state VALUES ('plain')`)
		return err
	}); err != nil || !hasState(t, c.Pool(), "plain") {
		t.Fatalf("a transaction without a commit: %v", err)
	}
}

// A commit staged under a savepoint that is rolled back is dropped with
// it; the transaction may then stage another, but not two.
func TestCoupledSavepoint(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	c := coupled(t, srv.URL(), "", nil)
	err := c.InTx(ctx, func(tx pgx.Tx) error {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return err
		}
		if _, err := c.AppendTx(ctx, sp, oneEvent("probe")); err != nil {
			return err
		}
		if err := sp.Rollback(ctx); err != nil {
			return err
		}
		if _, err := c.AppendTx(ctx, tx, oneEvent("kept")); err != nil {
			return err
		}
		if _, err := c.AppendTx(ctx, tx, oneEvent("second")); !errors.Is(err, eventstore.ErrTxHasCommit) {
			return fmt.Errorf("a second commit in one transaction: %v, want ErrTxHasCommit", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := streamsOf(t, c); !cmp.Equal(got, []string{"kept"}) {
		t.Errorf("the log has %v, want only the commit kept", got)
	}
	tx, err := c.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx) //nolint:errcheck
	if _, err := c.AppendTx(ctx, tx, oneEvent("x")); err == nil {
		t.Error("AppendTx in a transaction not of InTx succeeded")
	}
}

// Two nodes (two stores on the same streams and database): a commit whose
// revision another node takes while it is prepared loses the race on the
// commit stream; its transaction is rolled back and it gets a conflict on
// the commit stream, and its retry succeeds. Append retries such a race
// itself. (The nodes write for two companies: one company's commits wait
// for each other, see TestCoupledCompanyOrder.)
func TestCoupledLostRace(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	a := coupled(t, srv.URL(), "", pool)
	b := coupled(t, srv.URL(), a.Prefix(), pool)
	// b prepares, then a commits before b appends: once, then b goes on.
	overtake := func(step string) bool {
		if step == "prepared" {
			b.OnStep(nil)
			if err := writeState(ctx, a, "from-a-"+uuid.NewString()); err != nil {
				t.Error(err)
			}
		}
		return false
	}
	b.OnStep(overtake)
	err := b.InTx(ctx, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `INSERT INTO state VALUES ('from-b')`); err != nil {
			return err
		}
		_, err := b.AppendTx(ctx, tx, companyEvent("c2", "from-b"))
		return err
	})
	var ce *eventstore.ConflictError
	if !errors.As(err, &ce) || ce.StreamID != a.Prefix()+"-commits" {
		t.Fatalf("the commit overtaken: %v, want a conflict on the commit stream", err)
	}
	if hasState(t, pool, "from-b") || prepared(t, pool) != 0 {
		t.Fatal("the lost commit left its row or a prepared transaction")
	}
	b.OnStep(overtake)
	if _, err := b.Append(ctx, companyEvent("c2", "append-b")); err != nil {
		t.Fatalf("Append did not retry its lost race: %v", err)
	}
	got := streamsOf(t, a)
	if len(got) != 3 || got[2] != "append-b" || !strings.HasPrefix(got[0], "from-a-") || !strings.HasPrefix(got[1], "from-a-") {
		t.Errorf("the log has %v, want two of a's commits, then b's", got)
	}
}

// One company's commits, from two nodes, follow each other: the second
// waits for the first's decision, then places itself after it (its node
// catches up first), so that its hooks see the first's effects and its
// versions follow the first's.
func TestCoupledCompanyOrder(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	a := coupled(t, srv.URL(), "", pool)
	b := coupled(t, srv.URL(), a.Prefix(), pool)
	var versions []int64
	b.AddHook(eventstore.TxHookFunc(func(_ context.Context, _ pgx.Tx, c eventstore.Committed) error {
		versions = append(versions, c.Events[0].StreamVersion)
		return nil
	}))
	atPrepared, resume := make(chan struct{}), make(chan struct{})
	a.OnStep(func(step string) bool {
		if step == "prepared" {
			close(atPrepared)
			<-resume
		}
		return false
	})
	any := func(stream string) eventstore.Commit {
		c := oneEvent(stream)
		c.Streams[0].ExpectedVersion = eventstore.Any
		return c
	}
	done := make(chan error, 1)
	go func() { _, err := a.Append(ctx, any("shared")); done <- err }()
	<-atPrepared
	bDone := make(chan error, 1)
	go func() { _, err := b.Append(ctx, any("shared")); bDone <- err }()
	select {
	case err := <-bDone:
		t.Fatalf("b committed while a's commit of the same company was undecided: %v", err)
	case <-time.After(200 * time.Millisecond):
	}
	close(resume)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := <-bDone; err != nil {
		t.Fatalf("b after a: %v", err)
	}
	if !cmp.Equal(versions, []int64{2}) {
		t.Errorf("b's hook saw the stream at versions %v, want [2]: after a's", versions)
	}
}

func companyEvent(company, stream string) eventstore.Commit {
	c := oneEvent(stream)
	c.Metadata.CompanyID = company
	return c
}

// A writer that dies after preparing, before its append: recovery takes
// the revision with a void record and rolls the transaction back; the log
// goes on after it, and a void record is skipped by every reader.
func TestCoupledRecoverUnwritten(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	writer := coupled(t, srv.URL(), "", pool)
	writer.OnStep(func(step string) bool { return step == "prepared" })
	if err := writeState(ctx, writer, "died"); !errors.Is(err, esdb.ErrCrashed) {
		t.Fatalf("the crash: %v", err)
	}
	if prepared(t, pool) != 1 {
		t.Fatal("no prepared transaction after the crash")
	}
	node := coupled(t, srv.URL(), writer.Prefix(), pool)
	if c, r, err := node.Recover(ctx, time.Hour); err != nil || c+r != 0 {
		t.Fatalf("recovery settled a young transaction: %d, %d, %v", c, r, err)
	}
	c, r, err := node.Recover(ctx, 0)
	if err != nil || c != 0 || r != 1 {
		t.Fatalf("recovery: committed %d, rolled back %d, %v; want 0, 1", c, r, err)
	}
	if hasState(t, pool, "died") || prepared(t, pool) != 0 {
		t.Fatal("the unwritten commit's row is there, or its transaction still prepared")
	}
	if err := writeState(ctx, node, "after"); err != nil {
		t.Fatal(err)
	}
	if got := streamsOf(t, node); !cmp.Equal(got, []string{"after"}) {
		t.Errorf("the log has %v, want only the commit after the void record", got)
	}
	evs, err := node.ReadCommit(ctx, 1)
	if err != nil || len(evs) != 0 {
		t.Errorf("the void record reads as %v, %v; want no events", evs, err)
	}
	if head, err := node.Head(ctx); err != nil || head != (eventstore.Position{TxID: 2, Global: 1}) {
		t.Errorf("head %v, %v; want 2:1", head, err)
	}
	// A store opened afterwards reads the void record into its index.
	fresh := open(t, srv.URL(), writer.Prefix())
	if _, err := fresh.Append(ctx, eventstore.Commit{Metadata: eventstore.Metadata{CompanyID: "c1"},
		Streams: []eventstore.StreamAppend{{StreamID: "after", ExpectedVersion: 1, Events: []eventstore.Event{{Type: "Again", Data: []byte(`{}`)}}}}}); err != nil {
		t.Fatalf("after a void record: %v", err)
	}
}

// A writer that dies after its append, before COMMIT PREPARED: recovery
// finds its record and commits its transaction.
func TestCoupledRecoverWritten(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	writer := coupled(t, srv.URL(), "", pool)
	writer.OnStep(func(step string) bool { return step == "appended" })
	if err := writeState(ctx, writer, "landed"); !errors.Is(err, esdb.ErrCrashed) {
		t.Fatalf("the crash: %v", err)
	}
	if hasState(t, pool, "landed") {
		t.Fatal("the row is visible before its transaction is committed")
	}
	node := coupled(t, srv.URL(), writer.Prefix(), pool)
	// Written, undecided: no reader of the log sees it yet (a projector
	// would not find its PostgreSQL state).
	if got := streamsOf(t, node); len(got) != 0 {
		t.Errorf("ReadLog shows the undecided commit: %v", got)
	}
	if evs, err := node.ReadCompanyLog(ctx, "c1", eventstore.Position{}, eventstore.Position{TxID: 1, Global: 1}, 10); err != nil || len(evs) != 0 {
		t.Errorf("ReadCompanyLog shows the undecided commit: %v, %v", evs, err)
	}
	if err := node.EachCompanyEvent(ctx, "c1", eventstore.Position{}, eventstore.Position{TxID: 1, Global: 1}, func(e eventstore.RecordedEvent) error {
		return fmt.Errorf("EachCompanyEvent shows the undecided commit: %v", e)
	}); err != nil {
		t.Error(err)
	}
	if head, err := node.Head(ctx); err != nil || !head.IsZero() {
		t.Errorf("Head %v, %v; want the start of the log while the only commit is undecided", head, err)
	}
	c, r, err := node.Recover(ctx, 0)
	if err != nil || c != 1 || r != 0 {
		t.Fatalf("recovery: committed %d, rolled back %d, %v; want 1, 0", c, r, err)
	}
	if !hasState(t, pool, "landed") || prepared(t, pool) != 0 {
		t.Fatal("the written commit's row is missing, or its transaction still prepared")
	}
	if got := streamsOf(t, node); !cmp.Equal(got, []string{"landed"}) {
		t.Errorf("the log has %v", got)
	}
	if head, err := node.Head(ctx); err != nil || head != (eventstore.Position{TxID: 1, Global: 1}) {
		t.Errorf("Head %v, %v; want 1:1 once decided", head, err)
	}
}

// A writer that is slow, not dead: recovery voids its revision while it
// waits between prepare and append; its append then fails, it gets a
// conflict, and neither its row nor its events exist.
func TestCoupledRecoverSlowWriter(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	writer := coupled(t, srv.URL(), "", pool)
	atPrepared, resume := make(chan struct{}), make(chan struct{})
	writer.OnStep(func(step string) bool {
		if step == "prepared" {
			close(atPrepared)
			<-resume
		}
		return false
	})
	done := make(chan error, 1)
	go func() { done <- writeState(ctx, writer, "slow") }()
	<-atPrepared
	node := coupled(t, srv.URL(), writer.Prefix(), pool)
	if c, r, err := node.Recover(ctx, 0); err != nil || c != 0 || r != 1 {
		t.Fatalf("recovery: committed %d, rolled back %d, %v; want 0, 1", c, r, err)
	}
	close(resume)
	err := <-done
	var ce *eventstore.ConflictError
	if !errors.As(err, &ce) {
		t.Fatalf("the slow writer: %v, want a conflict", err)
	}
	if hasState(t, pool, "slow") || len(streamsOf(t, node)) != 0 || prepared(t, pool) != 0 {
		t.Fatal("the slow writer's commit is half there")
	}
	writer.OnStep(nil)
	if err := writeState(ctx, writer, "slow"); err != nil {
		t.Fatalf("the writer's retry: %v", err)
	}
	if !hasState(t, pool, "slow") {
		t.Fatal("the retry's row is missing")
	}
}

// A prefix with a quote names its prepared transactions safely; one too
// long for PostgreSQL's names of prepared transactions is refused at Check.
func TestCoupledPrefix(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	c := coupled(t, srv.URL(), "it's-"+uuid.NewString(), nil)
	if err := writeState(ctx, c, "quoted"); err != nil {
		t.Fatal(err)
	}
	if !hasState(t, c.Pool(), "quoted") {
		t.Fatal("the row is missing")
	}
	long := open(t, srv.URL(), strings.Repeat("p", 150)).WithPostgres(c.Pool())
	if err := long.Check(ctx); err == nil || !strings.Contains(err.Error(), "too long") {
		t.Fatalf("Check of a long prefix: %v", err)
	}
}

// A server that cannot be reached is an outage (eventstore.ErrUnavailable,
// which pg.Transient reads: work is retried as it is, a client gets 503),
// for reads and for commits, which then leave nothing in PostgreSQL.
func TestCoupledUnavailable(t *testing.T) {
	ctx := context.Background()
	srv, err := esdbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	c := coupled(t, srv.URL(), "", nil)
	if err := c.Ping(ctx); err != nil {
		t.Fatalf("Ping of a server that is there: %v", err)
	}
	srv.Close()
	if err := c.Ping(ctx); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("Ping of a server that is away: %v, want ErrUnavailable", err)
	}
	if _, err := c.ReadLog(ctx, eventstore.Position{}, 10); !errors.Is(err, eventstore.ErrUnavailable) || !pg.Transient(err) {
		t.Errorf("ReadLog from a server that is away: %v, want ErrUnavailable", err)
	}
	if _, err := c.Store.Append(ctx, oneEvent("plain")); !errors.Is(err, eventstore.ErrUnavailable) {
		t.Errorf("the adapter's Append to a server that is away: %v, want ErrUnavailable", err)
	}
	if err := writeState(ctx, c, "away"); !errors.Is(err, eventstore.ErrUnavailable) || !pg.Transient(err) {
		t.Errorf("a commit to a server that is away: %v, want ErrUnavailable", err)
	}
	if hasState(t, c.Pool(), "away") || prepared(t, c.Pool()) != 0 {
		t.Error("the failed commit left its row or a prepared transaction")
	}
}

// Commits of one company from writers sharing a pool of one connection
// all land: a prepared transaction is decided on the connection that
// prepared it, not on one taken from a pool whose connections may all be
// held by commits waiting for the company's lock it holds (they waited
// for ever), and each InTx finds its own staged commit (another InTx took
// the connection back from the pool while the first still knew it as its
// own: "AppendTx outside a transaction").
func TestCoupledOnePoolConnection(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadlock fails, not hangs
	defer cancel()
	srv, _ := standIn()
	cfg := statePool(t).Config()
	cfg.MaxConns = 1
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pool.Close)
	c := coupled(t, srv.URL(), "", pool)
	const writers, each = 4, 50
	errs := make(chan error, writers*each)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				if err := writeState(ctx, c, fmt.Sprintf("w%d-%d", w, i)); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM state`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Errorf("%d rows written, want %d", n, writers*each)
	}
}
