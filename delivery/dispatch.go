package delivery

import (
	"context"
	"errors"
	"time"
)

// dispatch starts a worker for every outlet that has messages to deliver
// and whose lease it can take, up to MaxWorkers.
func (d *Deliverer) dispatch(ctx context.Context) error {
	d.mu.Lock()
	free := d.cfg.MaxWorkers - len(d.running)
	skip := make([]string, 0, len(d.running))
	for id := range d.running {
		skip = append(skip, id)
	}
	d.mu.Unlock()
	if free <= 0 {
		return nil
	}
	list, err := d.candidates(ctx, skip, free)
	if err != nil {
		return err
	}
	for _, o := range list {
		st, ok, err := d.acquire(ctx, o)
		if err != nil {
			return err
		}
		if !ok {
			continue
		}
		d.start(ctx, o, st)
	}
	return nil
}

// start runs a worker for o, whose lease is held, until it has nothing
// left to do now, loses the lease, or ctx ends.
func (d *Deliverer) start(ctx context.Context, o outletRef, st state) {
	d.mu.Lock()
	d.running[o.outletID] = true
	d.mu.Unlock()
	d.metrics.workers.Inc()
	d.wg.Add(1)
	go func() {
		defer d.wg.Done()
		defer func() {
			d.mu.Lock()
			delete(d.running, o.outletID)
			d.mu.Unlock()
			d.metrics.workers.Dec()
		}()
		// held lasts while the lease does, through a stop: the worker
		// ends the attempt in flight and records it, under the lease
		// (see work). wctx ends at a stop too.
		held, loseLease := context.WithCancel(context.WithoutCancel(ctx))
		defer loseLease()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopWork := context.AfterFunc(held, cancel)
		defer stopWork()
		renewed := make(chan struct{})
		go func() {
			defer close(renewed)
			d.keepLease(held, loseLease, o.outletID)
		}()
		err := d.work(wctx, held, o, st)
		loseLease()
		<-renewed
		if err != nil && !errors.Is(err, context.Canceled) {
			d.cfg.Logger.Warn("delivery: outlet worker stopped", "outlet", o.outletID, "company", o.companyID, "err", err)
		}
		if !errors.Is(err, errLeaseLost) {
			// The worker's context may be over: release with a short one of
			// its own, or the next process waits for the lease to expire.
			rctx, done := context.WithTimeout(context.Background(), 5*time.Second)
			if err := d.release(rctx, o.outletID); err != nil {
				d.cfg.Logger.Warn("delivery: releasing a lease", "outlet", o.outletID, "err", err)
			}
			done()
		}
	}()
}

// keepLease renews the lease every third of its time to live and cancels
// the worker as soon as the lease is lost, or cannot be renewed before it
// may have expired.
func (d *Deliverer) keepLease(ctx context.Context, cancel context.CancelFunc, outletID string) {
	every := d.cfg.LeaseTTL / 3
	t := time.NewTicker(every)
	defer t.Stop()
	lastRenewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		err := d.renew(ctx, outletID)
		switch {
		case err == nil:
			lastRenewed = time.Now()
		case errors.Is(err, errLeaseLost):
			d.cfg.Logger.Warn("delivery: lease lost", "outlet", outletID)
			cancel()
			return
		case time.Since(lastRenewed) > d.cfg.LeaseTTL-every:
			d.cfg.Logger.Warn("delivery: lease could not be renewed", "outlet", outletID, "err", err)
			cancel()
			return
		}
	}
}
