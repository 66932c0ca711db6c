package projections

import (
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/bus"
)

// RuntimeConfig configures a Runtime. Zero optional fields take the
// defaults documented on each.
type RuntimeConfig struct {
	// Pool is the database of the read models and the checkpoints.
	// Required.
	Pool *pgxpool.Pool
	// Store is the event store; async projectors read each commit from it
	// (ReadCommit, ReadCommitTypes), the log when they catch up (ReadLog),
	// and a parked company's commits when they retry it (ReadCompanyLog).
	// Required.
	Store eventstore.Store
	// Log is what the runtime and its projectors read of Store's log
	// besides the port (catch-up, lag, the rebuild's swap, the data
	// sync), in Pool. Default the log Store offers (eventstore.LogOf):
	// the PostgreSQL store's is read in Pool, which must then be the
	// store's database. A projector that reads the
	// log itself (Datasync) must read this one (Validate checks).
	Log eventstore.EventLog
	// Inline projectors run in the append transaction (see InlineHook):
	// a client reads its own write at once, at the cost of a slower append.
	Inline []Projector
	// Async projectors follow the log, one Watermill handler each, named
	// and grouped by the projector's Name.
	Async []Projector
	// Transport delivers the commit messages. Default: Watermill over
	// PostgreSQL on Pool (bus.NewPostgres) polling every PollInterval.
	Transport bus.Transport
	// Registerer, when set, gets the runtime's metrics at NewRuntime (see
	// also Runtime.Register).
	Registerer prometheus.Registerer
	// ConsumerSettings are the Logger (the runtime's and Watermill's
	// logs), PollInterval (how often an idle async projector looks for
	// new commits: its latency when the log is quiet), RetryMaxInterval,
	// MessageAttempts and StallAfter of the async projectors' commit
	// consumer, whose keys are projectors. Two of them do more here:
	// MessageAttempts is the number of attempts of one delivery of a
	// commit (catchup.go), and then of the catch-up loop before it parks
	// the commit's company when the failure is not transient (stall.go):
	// the commit is never skipped, since that would silently corrupt the
	// read model. StallAfter is how long a projector's checkpoint may
	// stand still while the log has more before the lag watcher catches
	// it up itself (every LagInterval), and how long a parked company
	// waits for its first retry (stall.go).
	bus.ConsumerSettings
	// LagInterval is how often the lag gauge is refreshed. Default 5s.
	LagInterval time.Duration
	// StallRetryMax caps the wait between the retries of a parked
	// company, which otherwise waits as long again as it has been parked.
	// Default 10m.
	StallRetryMax time.Duration
	// PruneInterval is how often the commit messages that every async
	// projector of the runtime acked are deleted from the outbox. Run
	// every async projector of the deployment in the runtime (serve
	// does): a projector left out would find its messages pruned, and
	// catch up from the log. Default 10m.
	PruneInterval time.Duration
	// AfterApply, when set, is called by an async projector right after the
	// transaction that applied a commit and advanced its checkpoint
	// committed, before the message is acked. It is a test seam (the crash
	// test kills the process there); leave it nil.
	AfterApply func(name string)
}

func (c *RuntimeConfig) setDefaults() {
	if c.Log == nil {
		c.Log = eventstore.LogOf(c.Store) // Validate refused a store without one
	}
	c.ConsumerSettings.SetDefaults()
	if c.Wake == nil {
		c.Wake = eventstore.CommitsOf(c.Store)
	}
	if c.LagInterval == 0 {
		c.LagInterval = 5 * time.Second
	}
	if c.PruneInterval == 0 {
		c.PruneInterval = 10 * time.Minute
	}
	if c.StallRetryMax == 0 {
		c.StallRetryMax = 10 * time.Minute
	}
}

// Validate reports every problem of the configuration at once.
func (c RuntimeConfig) Validate() error {
	var errs []error
	if c.Pool == nil {
		errs = append(errs, errors.New("projections: Pool is required"))
	}
	if c.Store == nil {
		errs = append(errs, errors.New("projections: Store is required"))
	}
	errs = append(errs, c.ConsumerSettings.Validate("projections: "))
	if c.LagInterval < 0 {
		errs = append(errs, errors.New("projections: LagInterval is negative"))
	}
	if c.StallRetryMax < 0 || c.PruneInterval < 0 {
		errs = append(errs, errors.New("projections: StallRetryMax or PruneInterval is negative"))
	}
	log, err := logOf(c.Store, c.Log)
	if err != nil && c.Store != nil {
		errs = append(errs, err)
	}
	// Names key checkpoints and consumer groups: they must be unique
	// across both kinds.
	seen := map[string]Kind{}
	check := func(kind Kind, ps []Projector) {
		for i, p := range ps {
			if p == nil {
				errs = append(errs, fmt.Errorf("projections: %s projector %d is nil", kind, i))
				continue
			}
			name := p.Name()
			switch {
			case name == "":
				errs = append(errs, fmt.Errorf("projections: %s projector %d has no name", kind, i))
			case len(name) > maxNameLen:
				errs = append(errs, fmt.Errorf("projections: name %q is longer than %d bytes", name, maxNameLen))
			case seen[name] != "":
				errs = append(errs, fmt.Errorf("projections: name %q is used twice (%s and %s)", name, seen[name], kind))
			default:
				seen[name] = kind
			}
			if log != nil {
				if err := checkLog(p, log); err != nil {
					errs = append(errs, err)
				}
			}
		}
	}
	check(KindInline, c.Inline)
	check(KindAsync, c.Async)
	return errors.Join(errs...)
}

// maxNameLen is the size of Watermill's consumer_group column.
const maxNameLen = 255
