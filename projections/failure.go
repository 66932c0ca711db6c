package projections

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/clientele/clientele/internal/pg"
	"github.com/jackc/pgx/v5"
)

// panicError is a projector's panic, recovered: a failure like any other,
// which comes back each time the commit is applied.
type panicError struct {
	value any
	stack []byte
}

func (e *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.value, e.stack) }

// recovered turns a panic into a panicError in *err. Defer it.
func recovered(err *error) {
	if v := recover(); v != nil {
		*err = &panicError{value: v, stack: debug.Stack()}
	}
}

// Permanent reports whether a failure to apply a commit will come back
// however often the commit is applied again, through the commit's fault:
// a panic and data that does not decode (malformedJSON) always, and any
// other failure but a transient one (pg.Transient: an outage) and a
// schema the code does not match (pg.SchemaMismatch: an older binary
// during a rolling deploy, whose every commit of every company fails so
// until a newer one takes over). Those two park nothing: the projector
// stops as a whole and retries.
func Permanent(err error) bool {
	var p *panicError
	var m *MalformedJSON
	switch {
	case errors.As(err, &p), errors.As(err, &m):
		return true
	case pg.Transient(err), pg.SchemaMismatch(err):
		return false
	}
	return true
}

// attempt runs fn in a savepoint of tx: when fn fails or panics, what it
// did is undone and tx goes on.
func attempt(ctx context.Context, tx pgx.Tx, fn func(pgx.Tx) error) (err error) {
	sp, err := tx.Begin(ctx)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = sp.Rollback(context.WithoutCancel(ctx))
		}
	}()
	defer recovered(&err)
	if err := fn(sp); err != nil {
		return err
	}
	return sp.Commit(ctx)
}

// MalformedJSON is data that does not decode (decodeNumbers): the fault
// of the commit that holds it, which comes back at every attempt, so its
// company is parked (permanent). It does not unwrap: json.Decoder reports
// data cut short as a bare io.ErrUnexpectedEOF, which pg.Transient reads
// as a connection dropped mid-reply, and the projector would then stop
// for every company, retrying the commit for ever.
type MalformedJSON struct{ Err error }

// Error implements error.
func (e *MalformedJSON) Error() string { return "malformed JSON: " + e.Err.Error() }
