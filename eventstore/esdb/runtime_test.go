package esdb_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/esdb"
	"github.com/clientele/clientele/internal/bus"
	"github.com/clientele/clientele/projections"
)

// seen is an async projector that records the commits it applies.
type seen struct{}

func (seen) Name() string     { return "seen" }
func (seen) Tables() []string { return []string{"seen"} }
func (seen) Apply(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error {
	_, err := tx.Exec(ctx, `INSERT INTO seen VALUES ($1) ON CONFLICT DO NOTHING`, events[0].StreamID)
	return err
}

// Two nodes commit at once, so that the later commit (node b's) is
// announced while the earlier (node a's) is written but undecided: the
// projection runtime leaves the later to its catch-up, which stops before
// the undecided one. Once the earlier is decided and applied from its own
// announcement, the later must follow at once, not wait for the lag
// watcher (StallAfter, an hour here).
func TestRuntimeAnnouncedBeforeAnEarlierCommitDecided(t *testing.T) {
	ctx := context.Background()
	srv, _ := standIn()
	pool := statePool(t)
	if _, err := pool.Exec(ctx, `CREATE TABLE seen (stream text PRIMARY KEY)`); err != nil {
		t.Fatal(err)
	}
	a := coupled(t, srv.URL(), "", pool)
	b := coupled(t, srv.URL(), a.Prefix(), pool)
	a.AddHook(projections.CommitPublisher{})
	b.AddHook(projections.CommitPublisher{})
	reg := prometheus.NewRegistry()
	rt, err := projections.NewRuntime(projections.RuntimeConfig{
		Pool: pool, Store: b, Log: esdb.NewLog(b.Store), Async: []projections.Projector{seen{}}, Registerer: reg,
		ConsumerSettings: bus.ConsumerSettings{PollInterval: 10 * time.Millisecond, StallAfter: time.Hour},
		LagInterval:      time.Hour,
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(ctx)
	ran := make(chan error, 1)
	go func() { ran <- rt.Run(runCtx) }()
	t.Cleanup(func() {
		cancel()
		<-ran
	})

	// b's transaction starts first (its transaction id is the lower: the
	// outbox shows its announcement while a's transaction is prepared),
	// and commits after a's record is written.
	bWrote, aAppended, releaseA := make(chan struct{}), make(chan struct{}), make(chan struct{})
	bDone := make(chan error, 1)
	go func() {
		bDone <- b.InTx(ctx, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, `INSERT INTO state VALUES ('b')`); err != nil {
				return err
			}
			close(bWrote)
			<-aAppended
			_, err := b.AppendTx(ctx, tx, companyEvent("company-b", "b"))
			return err
		})
	}()
	<-bWrote
	a.OnStep(func(step string) bool {
		if step == "appended" {
			close(aAppended)
			<-releaseA
		}
		return false
	})
	aDone := make(chan error, 1)
	go func() { aDone <- writeState(ctx, a, "a") }()
	if err := <-bDone; err != nil {
		t.Fatal(err)
	}
	// b's commit is announced now; a's is written, undecided.
	waitUntil(t, "b's announcement to be left to the catch-up", func() bool {
		return counter(t, reg, "clientele_projection_commits_skipped_total") > 0
	})
	close(releaseA)
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	waitUntil(t, "both commits applied", func() bool {
		var n int
		_ = pool.QueryRow(ctx, `SELECT count(*) FROM seen`).Scan(&n)
		return n == 2
	})
}

// counter returns the value of the registry's counter name, 0 when it
// has none yet.
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == name {
			sum := 0.0
			for _, m := range f.GetMetric() {
				sum += m.GetCounter().GetValue()
			}
			return sum
		}
	}
	return 0
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited 30s for %s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
