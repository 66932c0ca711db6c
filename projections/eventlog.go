package projections

import (
	"fmt"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/eventstore/postgres"
)

// LogOrPostgres returns l, the PostgreSQL log (postgres.EventLog) when it
// is nil.
func LogOrPostgres(l eventstore.EventLog) eventstore.EventLog {
	if l == nil {
		return postgres.EventLog{}
	}
	return l
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
		return fmt.Errorf("projections: projector %q reads another log (%T) than the runtime (%T): give it the same with WithLog", p.Name(), r.EventLog(), l)
	}
	return nil
}
