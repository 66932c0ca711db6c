package pg

import (
	"context"
	"fmt"
)

// Crash stops the server the way a crash or a power cut would, with
// `pg_ctl stop -m immediate`: every connection is dropped at once and
// nothing is checkpointed, so the next start runs crash recovery. It is
// for tests that prove the service lives through losing its database;
// only a server the caller alone uses (a private Dir) may be crashed.
func (e *Embedded) Crash(ctx context.Context) error {
	if err := e.pgctl(ctx, "stop", "-w", "-m", "immediate"); err != nil {
		return fmt.Errorf("embedded postgres: crash: %w", err)
	}
	return nil
}

// Restart starts the server again, at the address it had, after Crash,
// and returns once it accepts connections (crash recovery done), so that
// the connection strings already handed out work again.
//
// A server that may be crashed should listen on a socket directory of its
// own (EmbeddedOptions.SocketDir): a TCP port sits free while the server
// is down, and any other process may take it, so that Restart fails.
func (e *Embedded) Restart(ctx context.Context) error {
	if err := e.start(ctx, e.port); err != nil {
		return fmt.Errorf("embedded postgres: restart (log: %s): %w", e.logPath(), err)
	}
	return nil
}
