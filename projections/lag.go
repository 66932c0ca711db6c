package projections

import (
	"context"
	"time"
)

// watchLag refreshes the lag gauge and the gauge of parked companies
// every LagInterval until ctx ends, and hands to the catch-up loop the
// projectors that stalled (resumeStalled) and those with a parked company
// due for a retry (wakeParked): every one at the first pass that reaches
// the database.
func (r *Runtime) watchLag(ctx context.Context) {
	for _, p := range r.cfg.Inline {
		r.metrics.lag.WithLabelValues(p.Name()).Set(0)
	}
	if len(r.cfg.Async) == 0 {
		return
	}
	t := time.NewTicker(r.cfg.LagInterval)
	defer t.Stop()
	for first := true; ; {
		if err := r.updateLag(ctx); err != nil && ctx.Err() == nil {
			r.cfg.Logger.Warn("projections: measure lag", "err", err)
		}
		r.updateStalled(ctx)
		if err := r.wakeParked(ctx, first); err == nil {
			first = false
		} else if ctx.Err() == nil {
			r.cfg.Logger.Warn("projections: look for parked companies to retry", "err", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// lagCountedUpTo bounds the count of the lag gauge: a projector a
// million events behind is counted up to it (a gauge at it reads "at
// least"), so the gauge costs a few milliseconds however far behind it
// is, where the whole count cost what the lag was (823 ms a call at
// 300,000 events behind, every LagInterval, taken from the projector
// catching up). `clientele projections status` counts it all.
const lagCountedUpTo = 100_000

func (r *Runtime) updateLag(ctx context.Context) error {
	head, err := r.cfg.Store.Head(ctx)
	if err != nil {
		return err
	}
	for _, p := range r.cfg.Async {
		cp, err := readCheckpoint(ctx, r.cfg.Pool, p.Name())
		if err != nil {
			return err
		}
		n, err := countEvents(ctx, r.cfg.Log, r.cfg.Pool, cp.Position, head, lagCountedUpTo)
		if err != nil {
			return err
		}
		r.metrics.lag.WithLabelValues(p.Name()).Set(float64(n))
	}
	r.resumeStalled(ctx, head)
	return nil
}
