package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/pg"
)

// checkEventStore checks the --event-store setting before anything
// starts: empty or "postgres" is the PostgreSQL log of --database-url; an
// esdb:// or esdb+discover:// connection string is EventStoreDB. The
// connection string is never echoed: it may hold a password.
func checkEventStore(v string) error {
	switch {
	case isPostgresStore(v):
		return nil
	case isESDB(v):
		if _, err := url.Parse(v); err != nil {
			// url.Parse's error quotes the string: say less.
			return errors.New("--event-store: not a valid EventStoreDB connection string: not a URL")
		}
		if _, err := esdbclient.ParseConnectionString(v); err != nil {
			return fmt.Errorf("--event-store: not a valid EventStoreDB connection string: %w", err)
		}
		return nil
	}
	return errors.New("--event-store: want postgres or an EventStoreDB connection string (esdb://host:2113?tls=false, esdb+discover://...)")
}

func isPostgresStore(v string) bool { return v == "" || v == "postgres" }

func isESDB(v string) bool {
	return strings.HasPrefix(v, "esdb://") || strings.HasPrefix(v, "esdb+discover://")
}

// recoverEvery and recoverAfter pace the recovery of commits prepared in
// PostgreSQL whose writer died (esdb.Coupled.Recover): a commit is
// prepared for milliseconds, so one prepared for recoverAfter has lost its
// writer, or its writer is late enough to lose it (it then gets a
// conflict and its caller retries). Meanwhile the prepared transaction
// holds back every reader of PostgreSQL's outbox.
const (
	recoverEvery = 5 * time.Second
	recoverAfter = 15 * time.Second
)

// openEventStore opens the event store --event-store names: the
// PostgreSQL log on a.pool, or EventStoreDB with PostgreSQL as a
// participant in each commit (the write-side state and the read models
// stay there), whose dead writers' commits a loop settles until a.close.
func (g *globals) openEventStore(ctx context.Context, a *app) (eventstore.TxStore, *esdb.Coupled, error) {
	v := strings.TrimSpace(g.eventStore)
	if err := checkEventStore(v); err != nil {
		return nil, nil, err
	}
	if isPostgresStore(v) {
		return postgres.New(a.pool), nil, nil
	}
	s, err := esdb.Open(ctx, v, esdb.Options{Logger: a.log})
	if err != nil {
		return nil, nil, fmt.Errorf("--event-store: %w", err)
	}
	c := s.WithPostgres(a.pool)
	if err := c.Check(ctx); err != nil {
		_ = s.Close()
		return nil, nil, err
	}
	loopCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		recoverLoop(loopCtx, a, c)
	}()
	a.closers = append(a.closers, func() {
		cancel()
		<-done
		_ = s.Close()
	})
	a.log.Info("event store: EventStoreDB", "commit_stream", s.Prefix()+"-commits")
	return c, c, nil
}

// recoverLoop settles, every recoverEvery until ctx ends, the commits
// prepared for longer than recoverAfter.
func recoverLoop(ctx context.Context, a *app, c *esdb.Coupled) {
	t := time.NewTicker(recoverEvery)
	defer t.Stop()
	for {
		committed, rolledBack, err := c.Recover(ctx, recoverAfter)
		switch {
		case err != nil && ctx.Err() == nil:
			a.log.Log(ctx, pg.Level(err), "settling the commits of dead writers failed; retrying", "err", err)
		case committed+rolledBack > 0:
			a.log.Warn("settled commits whose writer died or was late", "committed", committed, "rolled_back", rolledBack)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
