package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/cobra"

	"github.com/clientele/clientele/commands"
	"github.com/clientele/clientele/eventstore/postgres"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/internal/pg"
	"github.com/clientele/clientele/internal/telemetry"
	"github.com/clientele/clientele/projections"
)

// globals are the flags every subcommand takes.
type globals struct {
	stdout, stderr io.Writer
	getenv         func(string) string

	databaseURL string
	dataDir     string
	logLevel    string
	logFormat   string
}

func (g *globals) bind(root *cobra.Command) {
	f := root.PersistentFlags()
	f.StringVar(&g.databaseURL, "database-url", g.getenv("DATABASE_URL"), "PostgreSQL connection string (env DATABASE_URL); without it an embedded server runs in --data-dir")
	f.StringVar(&g.dataDir, "data-dir", envOr(g.getenv, "CLIENTELE_DATA_DIR", "./.clientele"), "directory of the embedded PostgreSQL (env CLIENTELE_DATA_DIR)")
	f.StringVar(&g.logLevel, "log-level", envOr(g.getenv, "CLIENTELE_LOG_LEVEL", "info"), "debug, info, warn or error (env CLIENTELE_LOG_LEVEL)")
	f.StringVar(&g.logFormat, "log-format", envOr(g.getenv, "CLIENTELE_LOG_FORMAT", "json"), "json or text (env CLIENTELE_LOG_FORMAT)")
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
	log      *slog.Logger
	metrics  *prometheus.Registry
	pool     *pgxpool.Pool
	store    *postgres.Store
	runtime  *projections.Runtime
	commands commands.Commands
	closers  []func()
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
	if a.pool, err = pg.Open(ctx, url); err != nil {
		a.close()
		return nil, err
	}
	a.closers = append(a.closers, a.pool.Close)
	if err := pg.Migrate(ctx, a.pool); err != nil {
		a.close()
		return nil, err
	}
	a.store = postgres.New(a.pool)
	a.runtime, err = projections.NewRuntime(projections.RuntimeConfig{
		Pool:       a.pool,
		Store:      a.store,
		Inline:     projections.Inline(),
		Async:      asyncProjectors(),
		Logger:     log,
		Registerer: a.metrics,
	})
	if err != nil {
		a.close()
		return nil, err
	}
	a.store.AddHook(a.runtime.InlineHook())
	a.store.AddHook(bus.CommitPublisher{})
	instrumented, err := telemetry.InstrumentStore(a.store, a.metrics)
	if err != nil {
		a.close()
		return nil, err
	}
	a.commands = commands.New(instrumented, time.Now)
	return a, nil
}

// asyncProjectors are the projectors that follow the log.
func asyncProjectors() []projections.Projector { return nil }

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
