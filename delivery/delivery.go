// Package delivery runs the webhook outlets of datatargets: it sends each
// outlet's messages to its receiver, in order, in batches, retrying a
// failed batch until it succeeds, and logs every attempt with the raw
// request and reply.
//
// One worker delivers an outlet at a time, across every serve process on
// the database: the outlet's row in outlet_deliveries is a lease (holder,
// expiry) taken with a conditional upsert, renewed while the worker runs,
// and checked by every write the worker makes, so a worker that lost its
// lease (paused, partitioned) can never record progress. Workers exist only
// while an outlet has something to deliver; a dispatcher polls for such
// outlets and starts them.
//
// Delivery is at least once. Progress (last delivered message, batch
// count) and the attempt's log entry are written in one statement after
// the receiver answered, so a process killed between the answer and that
// write sends the same batch again: only the batch in flight can be
// duplicated. Signed requests carry the same webhook-id when a batch is
// sent again, so receivers can drop the duplicate.
package delivery

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/clientele/clientele/internal/pg"
)

// Deliverer runs the outlets' workers of one process.
type Deliverer struct {
	cfg      Config
	metrics  *metrics
	failures *failureLog

	mu      sync.Mutex
	running map[string]bool // outlet ids with a worker here
	wg      sync.WaitGroup
}

// New checks cfg and returns a Deliverer; Run starts it.
func New(cfg Config) (*Deliverer, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	d := &Deliverer{cfg: cfg, metrics: newMetrics(), failures: newFailureLog(cfg.Logger, cfg.Now), running: map[string]bool{}}
	if cfg.Registerer != nil {
		if err := d.metrics.register(cfg.Registerer); err != nil {
			return nil, err
		}
		if err := cfg.Registerer.Register(newOutletGauges(cfg.Pool)); err != nil {
			return nil, fmt.Errorf("delivery: register metrics: %w", err)
		}
	}
	return d, nil
}

// Holder is the name this Deliverer holds leases under.
func (d *Deliverer) Holder() string { return d.cfg.Holder }

// Run delivers until ctx is cancelled, then stops its workers (a request
// in flight is abandoned and its batch will be sent again), releases their
// leases and returns nil.
func (d *Deliverer) Run(ctx context.Context) error {
	defer d.wg.Wait()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		d.prune(ctx)
	}()
	t := time.NewTicker(d.cfg.PollInterval)
	defer t.Stop()
	// While the database is away the dispatcher fails at every poll; it
	// says so when that starts and when it ends. Its workers stop at their
	// first failed write and are started again by a later dispatch, which
	// takes back the leases they hold (see candidates): a batch whose
	// answer could not be recorded is sent again, the batch in flight.
	var outage pg.Outage
	for {
		err := d.dispatch(ctx)
		switch {
		case ctx.Err() != nil:
		case err != nil && outage.Failed(err):
			d.cfg.Logger.Warn("delivery: looking for outlets to deliver; retrying at every poll", "err", err)
		case err == nil && outage.Succeeded():
			d.cfg.Logger.Info("delivery: the database answers again; delivering")
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
