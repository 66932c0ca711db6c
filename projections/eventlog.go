package projections

import (
	"fmt"

	"github.com/clientele/clientele/eventstore"
)

// logOf returns l, or the log store offers (eventstore.LogOf) when l is
// nil; an error when there is neither.
func logOf(store eventstore.Store, l eventstore.EventLog) (eventstore.EventLog, error) {
	if l == nil && store != nil {
		l = eventstore.LogOf(store)
	}
	if l == nil {
		return nil, fmt.Errorf("projections: no log: the store (%T) offers none, give one", store)
	}
	return l, nil
}

// logReader is a projector that reads the log besides the port itself
// (Datasync): it must read the log the runtime or the rebuild reads, or it
// would answer from another log (a PostgreSQL log left empty, say).
type logReader interface {
	// EventLog is the log the projector reads.
	EventLog() eventstore.EventLog
}

// checkLog reports a projector that reads another log than l.
func checkLog(p Projector, l eventstore.EventLog) error {
	if r, ok := p.(logReader); ok && r.EventLog() != l {
		return fmt.Errorf("projections: projector %q reads another log (%T) than the runtime (%T): give it the same", p.Name(), r.EventLog(), l)
	}
	return nil
}
