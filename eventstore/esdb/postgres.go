package esdb

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/EventStore/EventStore-Client-Go/v4/esdb"
	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg"
)

// Coupled is the EventStoreDB store with PostgreSQL as a participant in
// its commits, for a service whose write-side state and read models stay
// in PostgreSQL: a commit changes both, or neither.
//
// The commit is decided by its record's append to the commit stream; the
// PostgreSQL transaction of the same commit is prepared first (two-phase
// commit, PostgreSQL's PREPARE TRANSACTION) and then committed or rolled
// back by what the append did:
//
//  1. The caller's work runs in a transaction (InTx) and stages the
//     commit (AppendTx: checks its versions, marks the transaction).
//  2. Under the store's append lock: the commit is placed (the next
//     revision of the commit stream, its versions checked again), the
//     hooks run in the transaction with the commit's final positions
//     (inline projectors, the outbox), and the transaction is prepared
//     under a name that holds the revision and the record's event id.
//  3. The record is appended with the commit stream's expected revision.
//     Written: COMMIT PREPARED. Another record got the revision first:
//     ROLLBACK PREPARED, and a *ConflictError on the commit stream (a lost
//     race, which callers retry as they retry any conflict).
//
// A prepared transaction whose writer died (or lost its answer) is
// settled from the commit stream (Recover, and at once when the append's
// answer is lost): the record at its revision decides. Its own record:
// commit. Another: roll back. None: the writer may be slow, not dead, and
// could still land its record; so the revision is first taken with a
// void record (an append with the expected revision before it, which a
// late writer's append then fails), and only then is the transaction
// rolled back. Either way the log and PostgreSQL agree, whatever the
// timing, and several nodes may recover at once.
//
// PostgreSQL needs max_prepared_transactions above zero (Check).
type Coupled struct {
	*Store
	pool  *pgxpool.Pool
	hooks []eventstore.TxHook

	// open holds the commits staged in each transaction of InTx, by its
	// connection (a savepoint's transaction has the same).
	openMu sync.Mutex
	open   map[*pgx.Conn]txCommits

	// crash, set by tests, stops a commit at a step ("prepared",
	// "appended") as if the process died there.
	crash func(step string) bool
}

// errCrashed is the error of a commit a test stopped (crash).
var errCrashed = errors.New("esdb: stopped by the test")

var _ eventstore.TxStore = (*Coupled)(nil)

// WithPostgres couples the store with PostgreSQL on pool; hooks run in
// every commit's transaction, in order. The store's reads of the log
// (ReadLog, ReadCompanyLog, Head) then stop before a commit whose
// transaction may still be undecided.
func (s *Store) WithPostgres(pool *pgxpool.Pool, hooks ...eventstore.TxHook) *Coupled {
	c := &Coupled{Store: s, pool: pool, hooks: hooks, open: map[*pgx.Conn]txCommits{}}
	s.undecided = c.undecided
	return c
}

// Pool returns the PostgreSQL pool the commits join.
func (c *Coupled) Pool() *pgxpool.Pool { return c.pool }

// AddHook adds a hook; call it before the store is used.
func (c *Coupled) AddHook(h eventstore.TxHook) { c.hooks = append(c.hooks, h) }

// Check reports whether PostgreSQL can prepare transactions, under names
// that fit.
func (c *Coupled) Check(ctx context.Context) error {
	if n := len(c.gid(math.MaxUint64, uuid.UUID{})); n > maxGID {
		return fmt.Errorf("esdb: the prefix %q is too long: the names of prepared transactions would take %d bytes, PostgreSQL allows %d", c.prefix, n, maxGID)
	}
	var n int
	if err := c.pool.QueryRow(ctx, `SELECT current_setting('max_prepared_transactions')::int`).Scan(&n); err != nil {
		return fmt.Errorf("esdb: read max_prepared_transactions: %w", err)
	}
	if n == 0 {
		return errors.New("esdb: PostgreSQL's max_prepared_transactions is 0: the commits of the EventStoreDB event store prepare their PostgreSQL transaction (two-phase commit); set it to at least the number of connections that write, then restart PostgreSQL")
	}
	return nil
}

// stagedSetting is the transaction-local setting that names the commit a
// transaction holds: rolled back with a savepoint, as the commit it names
// must be.
const stagedSetting = "clientele.esdb_commit"

// txCommits are the commits staged in one InTx, by name.
type txCommits map[string]*pending

// Append writes the commit in a transaction of its own, running the
// hooks. A lost race on the commit stream is retried here: nothing else
// was done in the transaction.
func (c *Coupled) Append(ctx context.Context, commit eventstore.Commit) (eventstore.Committed, error) {
	for {
		out, err := c.inTx(ctx, func(tx pgx.Tx) error {
			_, err := c.AppendTx(ctx, tx, commit)
			return err
		})
		if !c.lostRace(err) {
			return out, err
		}
	}
}

// InTx runs fn in a transaction on the pool and ends it: if fn staged a
// commit in it (AppendTx), by writing the commit (a lost race on the
// commit stream is a *ConflictError, to retry), else by committing it.
func (c *Coupled) InTx(ctx context.Context, fn func(tx pgx.Tx) error) error {
	_, err := c.inTx(ctx, fn)
	return err
}

// The transaction's connection is held until inTx returns, not given
// back to the pool when the transaction ends: its prepared transaction is
// decided on it (COMMIT PREPARED), since waiting for another connection
// then may wait for ever, when every connection of the pool is held by
// a commit of the company waiting for the company's lock that the
// prepared transaction holds; and its entry in c.open is its own until
// it is deleted.
func (c *Coupled) inTx(ctx context.Context, fn func(tx pgx.Tx) error) (eventstore.Committed, error) {
	conn, err := c.pool.Acquire(ctx)
	if err != nil {
		return eventstore.Committed{}, err
	}
	defer conn.Release()
	tx, err := conn.Begin(ctx)
	if err != nil {
		return eventstore.Committed{}, err
	}
	defer tx.Rollback(context.WithoutCancel(ctx)) //nolint:errcheck // after Commit, a no-op
	staged := txCommits{}
	c.openMu.Lock()
	c.open[tx.Conn()] = staged
	c.openMu.Unlock()
	defer func() {
		c.openMu.Lock()
		delete(c.open, tx.Conn())
		c.openMu.Unlock()
	}()
	if err := fn(tx); err != nil {
		return eventstore.Committed{}, err
	}
	var p *pending
	if len(staged) > 0 {
		// Which commit the transaction still holds: a savepoint rolled
		// back took its own back with the setting.
		var name *string
		if err := tx.QueryRow(ctx, `SELECT current_setting($1, true)`, stagedSetting).Scan(&name); err != nil {
			return eventstore.Committed{}, fmt.Errorf("esdb: read the transaction's commit: %w", err)
		}
		if name != nil {
			p = staged[*name]
		}
	}
	if p == nil {
		return eventstore.Committed{}, tx.Commit(ctx)
	}
	return c.commit(ctx, tx, p)
}

// AppendTx stages the commit in tx, a transaction of InTx:
// it is written when InTx commits tx, if tx still holds it then (a
// savepoint rolled back drops it). A transaction holds at most one commit
// (eventstore.ErrTxHasCommit). The versions are checked now, and again when
// the commit is written.
//
// The Committed returned has the commit's events with their streams and
// versions, but no positions yet: those are given when the commit is
// written (the hooks see them).
func (c *Coupled) AppendTx(ctx context.Context, tx pgx.Tx, commit eventstore.Commit) (eventstore.Committed, error) {
	c.openMu.Lock()
	staged, ok := c.open[tx.Conn()]
	c.openMu.Unlock()
	if !ok {
		return eventstore.Committed{}, errors.New("esdb: AppendTx outside a transaction of the coupled store's InTx")
	}
	p, err := c.newPending(ctx, commit)
	if err != nil {
		return eventstore.Committed{}, err
	}
	for {
		err := c.prepare(p)
		var ce *eventstore.ConflictError
		if !errors.As(err, &ce) || p.fresh {
			if err != nil {
				return eventstore.Committed{}, err
			}
			break
		}
		if err := c.catchUp(ctx); err != nil {
			return eventstore.Committed{}, err
		}
		p.fresh = true
	}
	// One round trip: the setting is taken only when the transaction
	// holds no commit yet (NULL, or '' once a savepoint gave one back).
	name := p.id.String()
	var took bool
	if err := tx.QueryRow(ctx, `SELECT CASE WHEN coalesce(current_setting($1, true), '') = ''
		THEN set_config($1, $2, true) IS NOT NULL ELSE false END`, stagedSetting, name).Scan(&took); err != nil {
		return eventstore.Committed{}, fmt.Errorf("esdb: stage the commit: %w", err)
	}
	if !took {
		return eventstore.Committed{}, eventstore.ErrTxHasCommit
	}
	staged[name] = p
	p.fresh = false // checked again when written
	events := p.rec.recorded(p.rev, p.evs, 0, all)
	for i := range events {
		events[i].Position = eventstore.Position{}
	}
	return eventstore.Committed{Events: events}, nil
}

// commit writes the staged commit p and ends tx by it (the numbered steps
// of Coupled).
func (c *Coupled) commit(ctx context.Context, tx pgx.Tx, p *pending) (eventstore.Committed, error) {
	// Before the append lock, so that commits wait here and not behind
	// each other: a pause of appends (Log.LockAppends) holds the first
	// exclusive; the company's lock orders its commits, whatever node
	// makes them, as the PostgreSQL store's lock on their streams does:
	// the hooks of one (its inline projections) see the commits before it
	// committed (held by a prepared transaction, the lock waits for its
	// decision). Those may come from another node: the index catches up
	// with them before the commit is placed, so that its versions, and
	// what the hooks derive from them, follow them.
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock_shared($1), pg_advisory_xact_lock($2, hashtext($3))`,
		AppendLockKey, companyLockClass, p.commit.Metadata.CompanyID); err != nil {
		return eventstore.Committed{}, fmt.Errorf("esdb: wait for appends: %w", err)
	}
	if err := c.catchUp(ctx); err != nil {
		return eventstore.Committed{}, err
	}
	c.appendMu.Lock()
	defer c.appendMu.Unlock()
	if err := c.place(ctx, p); err != nil {
		return eventstore.Committed{}, err
	}
	committed := p.committed()
	for _, h := range c.hooks {
		if err := h.AfterAppend(ctx, tx, committed); err != nil {
			c.dropParts(ctx, p.rec)
			return eventstore.Committed{}, err
		}
	}
	gid := c.gid(p.rev, p.id)
	if _, err := tx.Exec(ctx, `PREPARE TRANSACTION `+pg.QuoteLiteral(gid)); err != nil {
		c.dropParts(ctx, p.rec)
		return eventstore.Committed{}, fmt.Errorf("esdb: prepare the transaction: %w", err)
	}
	// The session is out of the transaction now; this only tells pgx.
	// The connection stays this commit's (inTx) to decide it.
	_ = tx.Commit(ctx)
	conn := tx.Conn()
	if c.crash != nil && c.crash("prepared") {
		return eventstore.Committed{}, errCrashed
	}

	_, err := c.client.AppendToStream(ctx, c.commits, esdb.AppendToStreamOptions{ExpectedRevision: p.expected()}, p.eventData())
	switch {
	case isCode(err, esdb.ErrorCodeWrongExpectedVersion):
		// Another record holds the revision (another node's, or a void
		// one of a recovery that judged this writer dead).
		err := c.finish(ctx, conn, gid, false)
		c.dropParts(ctx, p.rec)
		if cerr := c.catchUp(ctx); cerr != nil && err == nil {
			err = cerr
		}
		if err != nil {
			return eventstore.Committed{}, err
		}
		return eventstore.Committed{}, c.raceLost(p)
	case err != nil:
		// The answer is lost: the record may be written. Settle now if
		// the server answers; else recovery settles later.
		landed, serr := c.settle(context.WithoutCancel(ctx), p.rev, p.id)
		if serr != nil {
			return eventstore.Committed{}, fmt.Errorf("esdb: append to %s: %w; the commit (PostgreSQL transaction %s) is decided by recovery", c.commits, outage(err), gid)
		}
		if ferr := c.finish(ctx, conn, gid, landed); ferr != nil {
			return eventstore.Committed{}, ferr
		}
		if !landed {
			c.dropParts(ctx, p.rec)
			return eventstore.Committed{}, fmt.Errorf("esdb: append to %s: %w", c.commits, outage(err))
		}
	}
	if c.crash != nil && c.crash("appended") {
		return eventstore.Committed{}, errCrashed
	}
	if err := c.finish(ctx, conn, gid, true); err != nil {
		// The commit is in the log; its transaction stays prepared
		// until recovery commits it.
		return eventstore.Committed{}, fmt.Errorf("esdb: commit %d is in the log, but its PostgreSQL transaction %s is not committed yet (recovery commits it): %w", p.rev+1, gid, err)
	}
	return c.landed(p)
}

// raceLost is the error of a commit whose revision another record took.
func (c *Coupled) raceLost(p *pending) error {
	c.mu.RLock()
	actual := int64(c.idx.next)
	c.mu.RUnlock()
	return &eventstore.ConflictError{StreamID: c.commits, Expected: int64(p.rev), Actual: actual}
}

// lostRace reports whether err is a lost race on the commit stream.
func (c *Coupled) lostRace(err error) bool {
	var ce *eventstore.ConflictError
	return errors.As(err, &ce) && ce.StreamID == c.commits
}

// gid names the prepared transaction of the commit of revision rev whose
// record has event id id.
func (c *Coupled) gid(rev uint64, id uuid.UUID) string {
	return c.gidPrefix() + strconv.FormatUint(rev, 10) + ":" + id.String()
}

func (c *Coupled) gidPrefix() string { return "esdb:" + c.commits + ":" }

// maxGID is PostgreSQL's limit on a prepared transaction's name (GIDSIZE
// - 1), which gid's must keep: a prefix, a revision, a UUID.
const maxGID = 199

// execer runs a statement: the pool, or the connection a commit holds.
type execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// finish commits (or rolls back) the prepared transaction gid, on db. One that
// is no longer prepared was finished by a recovery, which decides as the
// caller does (the record at its revision is the caller's exactly when
// the caller commits).
func (c *Coupled) finish(ctx context.Context, db execer, gid string, commit bool) error {
	verb := "ROLLBACK PREPARED "
	if commit {
		verb = "COMMIT PREPARED "
	}
	_, err := db.Exec(context.WithoutCancel(ctx), verb+pg.QuoteLiteral(gid))
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) && pgErr.Code == "42704" { // undefined_object
		return nil
	}
	if err != nil {
		return fmt.Errorf("esdb: %s%s: %w", verb, gid, err)
	}
	return nil
}

// settle reports whether the commit stream's revision rev holds the
// record of event id id, taking the revision with a void record first if
// it is free, so that the answer stays true.
func (c *Coupled) settle(ctx context.Context, rev uint64, id uuid.UUID) (bool, error) {
	for {
		got, ok, err := c.recordID(ctx, rev)
		if err != nil {
			return false, err
		}
		if ok {
			return got == id, nil
		}
		void := &record{Void: id.String()}
		data, err := json.Marshal(void)
		if err != nil {
			return false, err
		}
		p := &pending{rev: rev}
		_, err = c.client.AppendToStream(ctx, c.commits, esdb.AppendToStreamOptions{ExpectedRevision: p.expected()},
			esdb.EventData{EventID: uuid.New(), EventType: recordType, ContentType: esdb.ContentTypeJson, Data: data})
		if isCode(err, esdb.ErrorCodeWrongExpectedVersion) {
			continue // something landed meanwhile: read it
		}
		if err != nil {
			return false, fmt.Errorf("esdb: void revision %d of %s: %w", rev, c.commits, outage(err))
		}
		return false, nil
	}
}

// recordID returns the event id of the record of revision rev, and
// whether there is one.
func (c *Coupled) recordID(ctx context.Context, rev uint64) (uuid.UUID, bool, error) {
	rs, err := c.client.ReadStream(ctx, c.commits, esdb.ReadStreamOptions{From: esdb.Revision(rev), RequiresLeader: true}, 1)
	if err != nil {
		return uuid.UUID{}, false, fmt.Errorf("esdb: read %s: %w", c.commits, outage(err))
	}
	defer rs.Close()
	ev, err := rs.Recv()
	if errors.Is(err, io.EOF) || isCode(err, esdb.ErrorCodeResourceNotFound) {
		return uuid.UUID{}, false, nil
	}
	if err != nil {
		return uuid.UUID{}, false, fmt.Errorf("esdb: read %s: %w", c.commits, outage(err))
	}
	if ev.Event == nil || ev.Event.EventNumber != rev {
		return uuid.UUID{}, false, fmt.Errorf("esdb: read revision %d of %s: got another", rev, c.commits)
	}
	return ev.Event.EventID, true, nil
}

// undecided returns the lowest revision of the commits whose transaction
// is prepared.
func (c *Coupled) undecided(ctx context.Context) (uint64, bool, error) {
	ps, err := c.prepared(ctx, 0)
	if err != nil || len(ps) == 0 {
		return 0, false, err
	}
	lowest := ps[0].rev
	for _, p := range ps {
		lowest = min(lowest, p.rev)
	}
	return lowest, true, nil
}

// preparedCommit is a commit whose PostgreSQL transaction is prepared.
type preparedCommit struct {
	gid string
	rev uint64
	id  uuid.UUID
}

// prepared returns the commits whose transaction has been prepared for
// longer than olderThan.
func (c *Coupled) prepared(ctx context.Context, olderThan time.Duration) ([]preparedCommit, error) {
	rows, err := c.pool.Query(ctx, `SELECT gid FROM pg_prepared_xacts
		WHERE database = current_database() AND starts_with(gid, $1) AND prepared <= now() - make_interval(secs => $2)
		ORDER BY prepared`, c.gidPrefix(), olderThan.Seconds())
	if err != nil {
		return nil, fmt.Errorf("esdb: list prepared transactions: %w", err)
	}
	gids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, fmt.Errorf("esdb: list prepared transactions: %w", err)
	}
	out := make([]preparedCommit, len(gids))
	for i, gid := range gids {
		revText, idText, ok := strings.Cut(strings.TrimPrefix(gid, c.gidPrefix()), ":")
		rev, rerr := strconv.ParseUint(revText, 10, 64)
		id, ierr := uuid.Parse(idText)
		if !ok || rerr != nil || ierr != nil {
			return nil, fmt.Errorf("esdb: prepared transaction %q is not named as a commit's", gid)
		}
		out[i] = preparedCommit{gid: gid, rev: rev, id: id}
	}
	return out, nil
}

// Recover settles the commits whose PostgreSQL transaction has been
// prepared for longer than olderThan: their writer died, or lost its
// answer. It returns how many it committed and rolled back. Several
// nodes may recover at once; a writer that is only slow loses its commit
// to a void record, never half of it.
func (c *Coupled) Recover(ctx context.Context, olderThan time.Duration) (committed, rolledBack int, err error) {
	ps, err := c.prepared(ctx, olderThan)
	if err != nil {
		return 0, 0, err
	}
	for _, p := range ps {
		landed, err := c.settle(ctx, p.rev, p.id)
		if err != nil {
			return committed, rolledBack, err
		}
		if err := c.finish(ctx, c.pool, p.gid, landed); err != nil {
			return committed, rolledBack, err
		}
		if landed {
			committed++
		} else {
			rolledBack++
		}
	}
	if len(ps) > 0 {
		err = c.catchUp(ctx)
	}
	return committed, rolledBack, err
}
