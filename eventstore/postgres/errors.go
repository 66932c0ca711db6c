package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg"
)

// storeError returns err as the port's error: a PostgreSQL that cannot
// be reached or cannot answer now (pg.Transient: an outage, a restart, a
// lost serialization race) is eventstore.ErrUnavailable, wrapping err, as
// EventStoreDB's outage is in the esdb adapter, so that a caller of the
// port reads both alike. The caller's own cancellation or deadline is not
// the store's outage and passes as it is, as does any other error.
func storeError(err error) error {
	if err == nil || !pg.Transient(err) || errors.Is(err, eventstore.ErrUnavailable) ||
		errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w (%w)", eventstore.ErrUnavailable, err)
}
