// Package storeerr says what a failure of the stores means to whoever
// asked for the work, in the domain's terms: the one translation of the
// errors of PostgreSQL (where write-side state and the read models live)
// and of the event store port into *domain.Error, shared by the layers
// that know the domain (commands, commands/imports, readmodels), so that
// the edge maps them as it maps every other (api/errors.go) without
// knowing either store.
package storeerr

import (
	"errors"
	"fmt"

	"github.com/clientele/clientele/domain"
	"github.com/clientele/clientele/eventstore"
	"github.com/clientele/clientele/internal/pg"
)

// Translate returns err as the typed error (*domain.Error, wrapping err)
// of what a failure of a store means to whoever asked for the work: text
// that PostgreSQL cannot store (invalid UTF-8, U+0000) that got past
// validation is the caller's input (Invalid); a database that is away, a
// lost deadlock (pg.Transient) or an event store that cannot be reached
// (eventstore.ErrUnavailable: EventStoreDB's outage) is Unavailable (the
// same request succeeds later). Any other error, and one a layer below
// has typed already, is returned as it is.
func Translate(err error) error {
	var de *domain.Error
	if err == nil || errors.As(err, &de) {
		return err
	}
	switch {
	case pg.UnstorableText(err):
		return fmt.Errorf("%w (%w)", domain.Errorf(domain.Invalid, "the request holds text that is not valid UTF-8 or contains the character U+0000"), err)
	case errors.Is(err, eventstore.ErrUnavailable), pg.Transient(err):
		return fmt.Errorf("%w (%w)", domain.Errorf(domain.Unavailable, "the service cannot reach its database right now; retry later"), err)
	}
	return err
}
