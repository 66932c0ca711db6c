package projections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/clientele/clientele/eventstore"
)

// Kind is how a projector runs.
type Kind string

const (
	// KindInline projectors run in the append transaction.
	KindInline Kind = "inline"
	// KindAsync projectors follow the log with a checkpoint.
	KindAsync Kind = "async"
)

// ErrUnknownProjection reports a projection name the runtime does not run.
var ErrUnknownProjection = errors.New("projections: unknown projection")

// ProjectionStatus is how far one projection is.
type ProjectionStatus struct {
	Name string `json:"name"`
	Kind Kind   `json:"kind"`
	// Checkpoint is the last position applied. An inline projection is
	// always at the head.
	Checkpoint eventstore.Position `json:"checkpoint"`
	// Head is the last position of the log visible to readers.
	Head eventstore.Position `json:"head"`
	// Lag is the number of events after the checkpoint, up to the head.
	Lag int64 `json:"lag"`
	// EventsApplied counts the events the projection applied since it was
	// created or last rebuilt, those of commits it held for a parked
	// company included (the checkpoint passed them). For an inline
	// projection it is the number of events in the log (a full count: it
	// costs a scan of the log).
	EventsApplied int64 `json:"events_applied"`
	// StalledCompanies is the number of companies parked for an async
	// projection: a commit of theirs cannot be applied, and their later
	// commits wait for it (Runtime.Stalls says which).
	StalledCompanies int `json:"stalled_companies"`
	// UpdatedAt is when the checkpoint last moved; zero for inline
	// projections and async ones that never applied anything.
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// SampledAt is when the status was taken; Rate divides by it.
	SampledAt time.Time `json:"sampled_at"`
}

// Rate returns the events per second a projection applied between two
// samples of its status, earlier first; 0 when it cannot tell (the samples
// are simultaneous, or a rebuild reset the count in between).
func Rate(earlier, later ProjectionStatus) float64 {
	dt := later.SampledAt.Sub(earlier.SampledAt).Seconds()
	dn := later.EventsApplied - earlier.EventsApplied
	if dt <= 0 || dn < 0 {
		return 0
	}
	return float64(dn) / dt
}

// Status returns the status of the inline and async projectors, in that
// order, their lags counted in log (nil for the log store offers: see
// RuntimeConfig.Log). It only reads: a projector that never ran is at the
// start of the log.
func Status(ctx context.Context, pool *pgxpool.Pool, store eventstore.Store, log eventstore.EventLog, inline, async []Projector) ([]ProjectionStatus, error) {
	log, err := logOf(store, log)
	if err != nil {
		return nil, fmt.Errorf("projections: status: %w", err)
	}
	now := time.Now()
	head, err := store.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("projections: status: %w", err)
	}
	out := make([]ProjectionStatus, 0, len(inline)+len(async))
	if len(inline) > 0 {
		total, err := countEvents(ctx, log, pool, eventstore.Position{}, head, 0)
		if err != nil {
			return nil, err
		}
		for _, p := range inline {
			out = append(out, ProjectionStatus{
				Name: p.Name(), Kind: KindInline, Checkpoint: head, Head: head,
				EventsApplied: total, SampledAt: now,
			})
		}
	}
	names := make([]string, len(async))
	for i, p := range async {
		names[i] = p.Name()
	}
	stalled, err := countStalls(ctx, pool, names)
	if err != nil {
		return nil, err
	}
	for _, p := range async {
		cp, err := readCheckpoint(ctx, pool, p.Name())
		if err != nil {
			return nil, err
		}
		lag, err := countEvents(ctx, log, pool, cp.Position, head, 0)
		if err != nil {
			return nil, err
		}
		out = append(out, ProjectionStatus{
			Name: p.Name(), Kind: KindAsync, Checkpoint: cp.Position, Head: head, Lag: lag,
			EventsApplied: cp.EventsApplied, UpdatedAt: cp.UpdatedAt, SampledAt: now, StalledCompanies: stalled[p.Name()],
		})
	}
	return out, nil
}

// Status returns the status of the runtime's projectors (see Status).
func (r *Runtime) Status(ctx context.Context) ([]ProjectionStatus, error) {
	return Status(ctx, r.cfg.Pool, r.cfg.Store, r.cfg.Log, r.cfg.Inline, r.cfg.Async)
}

// projector finds one of the runtime's projectors by name.
func (r *Runtime) projector(name string) (Projector, Kind, error) {
	for _, p := range r.cfg.Inline {
		if p.Name() == name {
			return p, KindInline, nil
		}
	}
	for _, p := range r.cfg.Async {
		if p.Name() == name {
			return p, KindAsync, nil
		}
	}
	var names []string
	for _, p := range append(append([]Projector(nil), r.cfg.Inline...), r.cfg.Async...) {
		names = append(names, p.Name())
	}
	return nil, "", fmt.Errorf("%w %q (projections: %s)", ErrUnknownProjection, name, strings.Join(names, ", "))
}
