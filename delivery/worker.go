package delivery

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/clientele/clientele/domain/datatarget"
)

// work delivers one outlet while it holds the lease: batch after batch in
// message order, a failed batch again and again (never overtaken) until
// it succeeds. It returns nil when there is nothing to deliver now, when
// the next retry is further away than a lease lasts (the dispatcher starts
// the outlet again when it is due), or when the outlet was disabled.
//
// ctx ends when the worker is to stop (a deploy, a shutdown) or loses the
// lease; held ends only when it loses the lease. A stop lets the attempt
// in flight end, within RequestTimeout, and records it: cut short, its
// batch would reach the receiver again from the next worker. The lease is
// renewed meanwhile, so no other worker takes the outlet before. Only a
// crash, or a lost lease, sends a batch twice.
//
// The outlet's configuration is read again before every attempt: an
// outlet disabled, or gone, meanwhile (its datatarget disabled, its
// company removed) stops its worker before its next request, rather than
// after retries that each look its host up again, and a change applies
// from the next request.
func (d *Deliverer) work(ctx, held context.Context, o outletRef, st state) error {
	rec := &recorder{maxReq: d.cfg.MaxRequestLog, maxReply: d.cfg.MaxReplyLog}
	client := d.cfg.newClient(rec)
	defer client.CloseIdleConnections()
	s := sender{cfg: d.cfg, client: client, rec: rec}

	var queued []message // messages after st.lastDelivered, in order
	lastStart := st.lastAttemptAt
	for {
		deliver, err := d.configure(ctx, o, &s)
		if err != nil || !deliver {
			return err
		}
		out := s.outlet
		if s.rewind.seq > st.rewindApplied {
			if err := d.applyRewind(ctx, o, &st, s.rewind); err != nil {
				return err
			}
			queued = nil
			continue
		}
		if p, ok, err := d.nextRedelivery(ctx, o); err != nil || ok {
			if err != nil {
				return err
			}
			if err := sleep(ctx, time.Until(lastStart.Add(out.MinRequestInterval))); err != nil {
				return err
			}
			lastStart = d.cfg.Now()
			if err := d.redeliver(ctx, held, o, &s, &st, p); err != nil {
				return err
			}
			if ctx.Err() != nil {
				return ctx.Err()
			}
			continue
		}
		if out.FailurePolicy.Exceeded(st.failedAttempts, st.firstFailedAt, d.cfg.Now()) && st.pendingSize > 0 {
			if err := d.park(ctx, o, &st); err != nil {
				return err
			}
			queued = dropThrough(queued, st.lastDelivered)
			continue
		}
		size := out.MaxBatchSize
		if st.pendingSize > 0 {
			size = st.pendingSize // a retried batch is the same batch
		}
		if len(queued) < size {
			after := st.lastDelivered
			if len(queued) > 0 {
				after = queued[len(queued)-1].number
			}
			more, err := d.fetch(ctx, o, after, max(d.cfg.Prefetch, size))
			if err != nil {
				return err
			}
			queued = append(queued, more...)
		}
		if len(queued) == 0 {
			return nil
		}
		if queued[0].number > st.lastDelivered+1 && st.pendingSize == 0 {
			// The messages before were pruned (a new outlet, a rewind
			// below what the queue keeps): start at the first one kept.
			if err := d.skipPruned(ctx, o, &st, queued[0].number); err != nil {
				return err
			}
			continue
		}
		if queued[0].number != st.lastDelivered+1 {
			return fmt.Errorf("delivery: outlet %s: message %d follows %d", o.outletID, queued[0].number, st.lastDelivered)
		}
		batch := queued[:min(size, len(queued))]

		if err := sleep(ctx, time.Until(lastStart.Add(out.MinRequestInterval))); err != nil {
			return err
		}
		date := d.cfg.Now().UTC().Truncate(time.Microsecond)
		res := s.send(held, batch, date, st.batchCount+1)
		if held.Err() != nil {
			// The lease is lost: the attempt was cut short by us, not by
			// the receiver, and the next holder sends the batch again.
			return errLeaseLost
		}
		lastStart = date
		var retryIn time.Duration
		if res.entry.Status != datatarget.StatusOK {
			retryIn = d.cfg.backoff(st.failedAttempts + 1)
			if res.retryAfter != nil {
				retryIn = min(*res.retryAfter, d.cfg.MaxRetryAfter)
			}
		}
		rctx, cancel := context.WithTimeout(held, recordTimeout)
		err = d.record(rctx, o, res.entry, retryIn, batch)
		cancel()
		if err != nil {
			return err
		}
		d.metrics.observe(res.entry)
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if res.entry.Status == datatarget.StatusOK {
			st.lastDelivered += int64(len(batch))
			st.batchCount++
			st.pendingSize, st.failedAttempts = 0, 0
			queued = queued[len(batch):]
			continue
		}
		st.pendingSize = len(batch)
		if st.failedAttempts == 0 {
			st.firstFailedAt = date
		}
		st.failedAttempts++
		if o.datasync {
			// The retry reads its batch again: a person forgotten meanwhile
			// must not be sent with the data the queue held before.
			queued = nil
		}
		if res.gone {
			return d.cfg.Disable(ctx, o.companyID, o.datatargetID, o.outletID, "the receiver answered 410 Gone")
		}
		if out.FailurePolicy.Exceeded(st.failedAttempts, st.firstFailedAt, d.cfg.Now()) {
			continue // parked at the top, without waiting
		}
		if retryIn > d.cfg.LeaseTTL {
			return nil
		}
		if err := sleep(ctx, retryIn); err != nil {
			return err
		}
	}
}

// dropThrough drops the queued messages numbered up to n.
func dropThrough(queued []message, n int64) []message {
	for len(queued) > 0 && queued[0].number <= n {
		queued = queued[1:]
	}
	return queued
}

// configure loads the outlet's configuration into s; deliver is false
// when the outlet is disabled or no longer exists.
func (d *Deliverer) configure(ctx context.Context, o outletRef, s *sender) (deliver bool, err error) {
	out, rw, err := d.loadOutlet(ctx, o)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil
	}
	if err != nil || !out.Enabled {
		return false, err
	}
	tmpl, err := datatarget.CompileTemplate(out.Request.Content)
	if err != nil {
		return false, fmt.Errorf("delivery: outlet %s: content: %w", o.outletID, err)
	}
	var key []byte
	if out.Secret != "" {
		if key, err = datatarget.SecretKey(out.Secret); err != nil {
			return false, fmt.Errorf("delivery: outlet %s: secret: %w", o.outletID, err)
		}
	}
	s.outlet, s.tmpl, s.key, s.rewind = out, tmpl, key, rw
	return true, nil
}

// recordTimeout bounds the recording of an attempt when the worker is
// stopping (which lets the attempt in flight end and be recorded).
const recordTimeout = 10 * time.Second

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
