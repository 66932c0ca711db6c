package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/commands/imports"
	"github.com/clientele/clientele/domain/importing"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/eventstore/telemetry"
	"github.com/clientele/clientele/internal/backoff"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/crypto"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/projections"
	"github.com/clientele/clientele/projections/campaignstats"
	"github.com/clientele/clientele/projections/datasync"
	"github.com/clientele/clientele/projections/projectors"
	"github.com/clientele/clientele/projections/retrieval"
	"github.com/clientele/clientele/projections/segments"
)

// globals are the flags every subcommand takes.
type globals struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	databaseURL string
	dataDir     string
	logLevel    string
	logFormat   string
	masterKey   string
	// busURL chooses the message transport (bus.go).
	busURL string
	// eventStore chooses the event store (eventstore.go).
	eventStore string
	// segmentMembers runs the segment membership projection
	// (docs/segments.md, "The cost on imports").
	segmentMembers bool
	// databaseWait bounds the wait for an unavailable database at start
	// (connect).
	databaseWait time.Duration
}

func (g *globals) bind(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.databaseURL, "database-url", g.getenv("DATABASE_URL"), "PostgreSQL connection string (env DATABASE_URL); without it an embedded server runs in --data-dir")
	f.StringVar(&g.dataDir, "data-dir", envOr(g.getenv, "CLIENTELE_DATA_DIR", "./.clientele"), "directory of the embedded PostgreSQL (env CLIENTELE_DATA_DIR)")
	f.StringVar(&g.logLevel, "log-level", envOr(g.getenv, "CLIENTELE_LOG_LEVEL", "info"), "debug, info, warn or error (env CLIENTELE_LOG_LEVEL)")
	f.StringVar(&g.masterKey, "master-key-file", g.getenv("CLIENTELE_MASTER_KEY_FILE"), "file holding the base64 master key that wraps the customers' data keys (env CLIENTELE_MASTER_KEY_FILE; env CLIENTELE_MASTER_KEY gives the key itself; default <data-dir>/master.key, created on first use)")
	f.StringVar(&g.logFormat, "log-format", envOr(g.getenv, "CLIENTELE_LOG_FORMAT", "json"), "json or text (env CLIENTELE_LOG_FORMAT)")
	f.StringVar(&g.eventStore, "event-store", envOr(g.getenv, "CLIENTELE_EVENT_STORE", "postgres"), "event store: postgres (the log of --database-url), or EventStoreDB at an esdb:// or esdb+discover:// connection string (esdb://host:2113?tls=false); write-side state and read models stay in PostgreSQL, which then needs max_prepared_transactions (env CLIENTELE_EVENT_STORE; docs/operations.md)")
	f.BoolVar(&g.segmentMembers, "segment-members", g.getenv("CLIENTELE_SEGMENT_MEMBERS") != "false", "compute the members of segments (the segment_members projection and its timers); --segment-members=false turns it off (env CLIENTELE_SEGMENT_MEMBERS=false; docs/segments.md)")
	f.DurationVar(&g.databaseWait, "database-wait", envDuration(g.getenv, "CLIENTELE_DATABASE_WAIT", time.Minute), "how long to wait at start for a database that is unavailable (refused, unanswered, starting, failing over) before giving up; 0 gives up at the first failure (env CLIENTELE_DATABASE_WAIT)")
	f.StringVar(&g.busURL, "bus", envOr(g.getenv, "CLIENTELE_BUS_URL", "postgres"), "message transport of the projections and the import worker: postgres, or NATS JetStream at nats://HOST:PORT[,nats://HOST:PORT...][?ack_wait=30s&replicas=3] (env CLIENTELE_BUS_URL; docs/operations.md)")
}

// connect opens the pool and applies the migrations, waiting up to
// --database-wait while the database is unavailable: a node restarted
// during a failover, or started before its database, comes up once the
// database does instead of exiting (docs/operations.md). A failure that
// waiting does not mend (a wrong password, a missing database, a broken
// migration) ends it at once.
func (g *globals) connect(ctx context.Context, log *slog.Logger, url string) (*pgxpool.Pool, error) {
	giveUp := time.Now().Add(g.databaseWait)
	delays := backoff.Doubling{Min: 250 * time.Millisecond, Max: 5 * time.Second, Jitter: 0.2}
	for failures := 1; ; failures++ {
		pool, err := pg.Open(ctx, url)
		if err == nil {
			if err = pg.Migrate(ctx, pool); err == nil {
				return pool, nil
			}
			pool.Close()
		}
		wait := delays.After(failures)
		if !pg.Transient(err) || ctx.Err() != nil || time.Now().Add(wait).After(giveUp) {
			return nil, err
		}
		log.Warn("the database is unavailable; waiting for it", "err", err, "attempt", failures, "retry_in", wait.Round(time.Millisecond), "gives_up_in", time.Until(giveUp).Round(time.Second))
		select {
		case <-ctx.Done():
			return nil, err
		case <-time.After(wait):
		}
	}
}

// envDuration reads a duration (Go's form, such as 720h) from the
// environment, def when unset or unreadable.
func envDuration(getenv func(string) string, key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(getenv(key)); err == nil {
		return v
	}
	return def
}

func envOr(getenv func(string) string, key, def string) string {
	if v := getenv(key); v != "" {
		return v
	}
	return def
}

func (g *globals) logger() (*slog.Logger, error) {
	var level slog.Level
	if err := level.UnmarshalText([]byte(g.logLevel)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: level}
	switch strings.ToLower(g.logFormat) {
	case "json":
		return slog.New(slog.NewJSONHandler(g.stderr, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(g.stderr, opts)), nil
	}
	return nil, fmt.Errorf("--log-format %q: want json or text", g.logFormat)
}

// app is the object graph shared by the subcommands.
type app struct {
	log     *slog.Logger
	metrics *prometheus.Registry
	pool    *pgxpool.Pool
	store   eventstore.TxStore
	// esdb is the store when it is EventStoreDB's (eventstore.go).
	esdb *esdb.Coupled
	keys crypto.KeyStore
	// transport delivers the bus messages; nil is PostgreSQL (bus.go).
	transport bus.Transport
	runtime   *projections.Runtime
	commands  commands.Commands
	// The import pipeline (import.go): the Importers by entity, the
	// upload stager, and the worker (nil when no entity has an Importer).
	importers    map[importing.Entity]imports.Importer
	stageUpload  imports.StageUploadHandler
	importWorker *imports.ImportWorker
	closers      []func()
}

// open connects to the database (starting the embedded server when no URL
// is given), applies the migrations and builds the write side.
func (g *globals) open(ctx context.Context) (*app, error) {
	log, err := g.logger()
	if err != nil {
		return nil, err
	}
	a := &app{log: log, metrics: prometheus.NewRegistry()}
	a.metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	url := g.databaseURL
	if url == "" {
		emb, err := pg.StartEmbedded(ctx, pg.EmbeddedOptions{Dir: g.dataDir})
		if err != nil {
			return nil, err
		}
		a.closers = append(a.closers, func() {
			if err := emb.Close(); err != nil {
				log.Error("stop embedded postgres", "err", err)
			}
		})
		url = emb.URL()
	}
	if a.pool, err = g.connect(ctx, log, url); err != nil {
		a.close()
		return nil, err
	}
	a.closers = append(a.closers, a.pool.Close)
	if a.keys, err = g.keyStore(ctx, a); err != nil {
		a.close()
		return nil, err
	}
	if a.store, a.esdb, err = g.openEventStore(ctx, a); err != nil {
		a.close()
		return nil, err
	}
	if a.transport, err = g.openBus(a); err != nil {
		a.close()
		return nil, err
	}
	a.runtime, err = projections.NewRuntime(projections.RuntimeConfig{
		Pool:             a.pool,
		Store:            a.store,
		Inline:           projectors.Inline(),
		Log:              a.eventLog(),
		Async:            asyncProjectors(a.keys, a.eventLog(), g.segmentMembers),
		Transport:        a.transport,
		Registerer:       a.metrics,
		ConsumerSettings: bus.ConsumerSettings{Logger: log},
	})
	if err != nil {
		a.close()
		return nil, err
	}
	a.store.AddHook(a.runtime.InlineHook())
	a.store.AddHook(projections.CommitPublisher{})
	instrumented, err := telemetry.InstrumentStore(a.store, a.metrics)
	if err != nil {
		a.close()
		return nil, err
	}
	a.commands = commands.New(instrumented, time.Now, commands.WithSealer(a.keys.Keyring))
	if err := a.openImports(); err != nil {
		a.close()
		return nil, err
	}
	return a, nil
}

// keyStore loads the master key (CLIENTELE_MASTER_KEY, else the key file,
// created on first use) and checks it is the one the database was set up
// with.
func (g *globals) keyStore(ctx context.Context, a *app) (crypto.KeyStore, error) {
	var key []byte
	var err error
	if v := g.getenv("CLIENTELE_MASTER_KEY"); v != "" {
		key, err = crypto.ParseMasterKey(v)
	} else {
		path := g.masterKey
		if path == "" {
			path = filepath.Join(g.dataDir, "master.key")
		}
		var created bool
		key, created, err = crypto.LoadMasterKey(path)
		if created {
			a.log.Warn("created a new master key: back it up, the customers' personal data cannot be read without it", "path", path)
		}
	}
	if err != nil {
		return crypto.KeyStore{}, err
	}
	kr, err := crypto.NewKeyring(key)
	if err != nil {
		return crypto.KeyStore{}, err
	}
	if err := kr.CheckDatabase(ctx, a.pool); err != nil {
		return crypto.KeyStore{}, err
	}
	return crypto.KeyStore{Keyring: kr}, nil
}

// asyncProjectors are the projectors that follow the log; keys opens the
// customers' sealed data, and log is the log they read besides the port
// (the runtime's). segmentMembers adds the segments' membership.
func asyncProjectors(keys crypto.KeyStore, log eventstore.EventLog, segmentMembers bool) []projections.Projector {
	out := []projections.Projector{retrieval.NewCustomers(keys), retrieval.NewShops(), retrieval.NewProducts(),
		retrieval.NewEvents(keys), retrieval.NewSales(keys), datasync.NewDatasync(keys, log),
		campaignstats.NewCampaignStats()}
	if segmentMembers {
		out = append(out, segments.NewMembers(keys, log))
	}
	return out
}

// eventLog is the log the projections read besides the event store port:
// the commit stream's when the store is EventStoreDB's, else PostgreSQL's.
func (a *app) eventLog() eventstore.EventLog {
	if a.esdb != nil {
		return esdb.NewLog(a.esdb.Store)
	}
	return postgres.EventLog{}
}

// close releases everything in reverse order of acquisition.
func (a *app) close() {
	for i := len(a.closers) - 1; i >= 0; i-- {
		a.closers[i]()
	}
	a.closers = nil
}

// withApp runs fn with an open app and closes it afterwards.
func (g *globals) withApp(cmd *cobra.Command, fn func(ctx context.Context, a *app) error) error {
	ctx := cmd.Context()
	a, err := g.open(ctx)
	if err != nil {
		return err
	}
	defer a.close()
	return fn(ctx, a)
}
