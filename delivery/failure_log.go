package delivery

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/clientele/clientele/domain/datatarget"
)

// FailureLogInterval is the least time between two log lines of an
// outlet's failed deliveries: a receiver that is down fails every retry,
// and a line per attempt would drown the rest.
const FailureLogInterval = time.Minute

// failureLog logs failed deliveries, at most one line per outlet per
// FailureLogInterval; the next line says how many failures it left out
// meanwhile. It lives as long as the Deliverer, so the limit holds across
// the workers an outlet gets one after another.
type failureLog struct {
	logger *slog.Logger
	now    func() time.Time

	mu      sync.Mutex
	outlets map[string]*outletFailures
}

// outletFailures is what failureLog remembers of an outlet.
type outletFailures struct {
	logged     time.Time // when the last line was written
	suppressed int       // failures not logged since
}

func newFailureLog(logger *slog.Logger, now func() time.Time) *failureLog {
	return &failureLog{logger: logger, now: now, outlets: map[string]*outletFailures{}}
}

// note records a failed attempt of o and logs it unless a line of the
// outlet was written less than FailureLogInterval ago. The reason is
// written with every URL in it masked (datatarget.MaskText), as non-admins
// see it, and the outlet is named by its ids only: a log line never holds
// a credential (the worker's reasons hold none, but those of the rules of
// before are masked here too).
func (f *failureLog) note(o outletRef, e datatarget.LogEntry) {
	now := f.now()
	f.mu.Lock()
	st := f.outlets[o.outletID]
	if st == nil {
		st = &outletFailures{}
		f.outlets[o.outletID] = st
	}
	if !st.logged.IsZero() && now.Sub(st.logged) < FailureLogInterval {
		st.suppressed++
		f.mu.Unlock()
		return
	}
	suppressed := st.suppressed
	st.logged, st.suppressed = now, 0
	f.prune(now)
	f.mu.Unlock()

	attrs := []slog.Attr{
		slog.String("outlet", o.outletID), slog.String("datatarget", o.datatargetID), slog.String("company", o.companyID),
		slog.Int64("batch_number", e.BatchNumber), slog.Int("batch_size", e.BatchSize),
		slog.String("reason", datatarget.MaskText(e.FailReason)),
		slog.Int("suppressed", suppressed),
	}
	if e.HTTPStatus != 0 {
		attrs = append(attrs, slog.Int("http_status", e.HTTPStatus))
	}
	f.logger.LogAttrs(context.Background(), slog.LevelWarn, "delivery: a delivery failed", attrs...)
}

// prune forgets outlets that have not failed for a while, so the map
// stays as small as the set of failing outlets. f.mu is held.
func (f *failureLog) prune(now time.Time) {
	if len(f.outlets) < 1024 {
		return
	}
	for id, st := range f.outlets {
		if now.Sub(st.logged) > FailureLogInterval && st.suppressed == 0 {
			delete(f.outlets, id)
		}
	}
}
