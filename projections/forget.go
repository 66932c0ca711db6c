package projections

import (
	"context"
	"slices"

	"github.com/clientele/clientele/eventstore"
	"github.com/jackc/pgx/v5"
)

// forgottenIn returns the forgettings among events of p: the events of
// the types it forgets on (Forgetter), none when it holds no personal
// data.
func forgottenIn(p Projector, events []eventstore.RecordedEvent) []eventstore.RecordedEvent {
	f, ok := p.(Forgetter)
	if !ok {
		return nil
	}
	types := f.ForgetTypes()
	var out []eventstore.RecordedEvent
	for _, e := range events {
		if slices.Contains(types, e.Type) {
			out = append(out, e)
		}
	}
	return out
}

// applyForgotten applies forgotten, the forgettings of a held commit, to
// p if it holds personal data (Forgetter), in a savepoint of tx.
func applyForgotten(ctx context.Context, tx pgx.Tx, p Projector, forgotten []eventstore.RecordedEvent) error {
	f, ok := p.(Forgetter)
	if !ok || len(forgotten) == 0 {
		return nil
	}
	return attempt(ctx, tx, func(sp pgx.Tx) error { return f.Forget(ctx, sp, forgotten) })
}

// forgetHeld is applyForgotten for the runtime. A forgetting that fails
// for good is logged and left to the resumption, which applies its commit
// in full: it must not stop the projector for every company again.
func (r *Runtime) forgetHeld(ctx context.Context, tx pgx.Tx, p Projector, forgotten []eventstore.RecordedEvent) error {
	err := applyForgotten(ctx, tx, p, forgotten)
	if err == nil || !Permanent(err) {
		return err
	}
	r.metrics.errors.WithLabelValues(p.Name()).Inc()
	r.cfg.Logger.Error("projections: the forgetting of a held commit cannot be applied ahead of it; it is applied when its company resumes",
		"projector", p.Name(), "company", forgotten[0].Metadata.CompanyID, "commit", forgotten[0].Position.TxID, "err", err)
	return nil
}

// Forgetter is implemented by an async projector whose tables hold
// personal data, and declares what it does on a forget. While a company
// is parked for the projector (stall.go), its commits wait in the log
// behind the one that failed; a forgetting among them must not wait: the
// runtime hands Forget the events of the types ForgetTypes names (the
// customers' CustomerForgotten) of every commit it holds, at once, ahead
// of the commits held before them.
//
// That is safe because the forgetting destroys the personal data's key in
// its own commit: the held events before it open to nothing when they are
// applied later, as in a rebuild. Forget must leave the tables so that
// those commits, and the forgetting itself, applied again in log order
// when the company resumes, end as if nothing had been held.
type Forgetter interface {
	// ForgetTypes lists the event types that forget personal data, which
	// the runtime applies ahead of held commits.
	ForgetTypes() []string
	// Forget applies the forgettings among events (events of
	// ForgetTypes, of one company) within tx.
	Forget(ctx context.Context, tx pgx.Tx, events []eventstore.RecordedEvent) error
}
